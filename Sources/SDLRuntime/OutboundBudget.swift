import NIOCore
import SDLProtocol
import SDLSession

/// Bounds the bytes a runtime queues in the session engine per session and service, and holds the
/// senders that must wait for room (back-pressure end to end: a peer that reads slowly stops the
/// socket, the socket stops the pulls from the engine, and a full engine queue suspends the
/// sender instead of growing).
///
/// The engine takes every message it is given and only says how many of a stream's messages are
/// still queued (``SessionEngine/queuedMessages(_:of:)``); messages of one stream leave in order,
/// so the sizes of those still queued are the last ones recorded here. Loop-confined.
struct OutboundBudget {
    /// A sender waiting for room: called once with success (send now) or the failure that ended
    /// the wait (the session or service is gone).
    typealias Waiter = (Result<Void, SDLConnectionError>) -> Void

    struct StreamKey: Hashable {
        var session: SessionHandle
        var service: ServiceType
    }

    private struct Stream {
        var sizes = CircularBuffer<Int>(initialCapacity: 4)
        var bytes = 0
        var waiters = CircularBuffer<Waiter>(initialCapacity: 1)
    }

    let limit: Int
    private var streams: [StreamKey: Stream] = [:]

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// The bytes of a stream's messages still queued in the engine, as last refreshed.
    func queuedBytes(_ key: StreamKey) -> Int {
        self.streams[key]?.bytes ?? 0
    }

    /// The bytes queued in the engine by every stream, as last refreshed.
    var totalQueuedBytes: Int {
        self.streams.values.reduce(0) { $0 + $1.bytes }
    }

    /// Whether the stream has room now and nobody waits before it (then send at once); if not,
    /// `send` is queued until it has (``takeReady()``). A sender must call
    /// ``recordSent(_:size:)`` for what it hands to the engine.
    mutating func admit(_ key: StreamKey, orQueue send: @escaping Waiter) -> Bool {
        if let stream = self.streams[key], stream.bytes >= self.limit || !stream.waiters.isEmpty {
            self.streams[key]!.waiters.append(send)
            return false
        }
        return true
    }

    /// A message of `size` bytes was queued in the engine.
    mutating func recordSent(_ key: StreamKey, size: Int) {
        self.streams[key, default: Stream()].sizes.append(size)
        self.streams[key]!.bytes += size
    }

    /// Takes back the last ``recordSent(_:size:)`` of a stream: the engine refused the message.
    mutating func withdrawLast(_ key: StreamKey) {
        guard let size = self.streams[key]?.sizes.popLast() else { return }
        self.streams[key]!.bytes -= size
    }

    /// Re-reads what the engine still holds of each stream.
    mutating func refresh(_ engine: SessionEngine) {
        for key in Array(self.streams.keys) {
            var stream = self.streams.removeValue(forKey: key)!
            let queued = engine.queuedMessages(key.service, of: key.session)
            while stream.sizes.count > queued {
                stream.bytes -= stream.sizes.removeFirst()
            }
            if !stream.sizes.isEmpty || !stream.waiters.isEmpty {
                self.streams[key] = stream
            }
        }
    }

    /// The first waiting sender whose stream has room, taken from the queue. Run it before asking
    /// again: what it sends counts against its stream.
    mutating func takeReady() -> Waiter? {
        for (key, stream) in self.streams where stream.bytes < self.limit && !stream.waiters.isEmpty {
            return self.streams[key]!.waiters.removeFirst()
        }
        return nil
    }

    /// Forgets the streams of a session (or one service of it) and returns their waiters, to be
    /// failed by the caller.
    mutating func remove(session: SessionHandle, service: ServiceType? = nil) -> [Waiter] {
        var waiters: [Waiter] = []
        for key in Array(self.streams.keys) where key.session == session && (service == nil || key.service == service) {
            waiters.append(contentsOf: self.streams.removeValue(forKey: key)!.waiters)
        }
        return waiters
    }
}

/// A runtime core that sends through an ``OutboundBudget``: the app's and the head unit's share
/// the admission sequence below.
protocol OutboundBudgetSender: AnyObject {
    /// The budget of the core's streams; only touched on the core's loop.
    var budget: OutboundBudget { get set }
    /// The driver whose engine takes what is sent.
    var driver: SessionDriver { get }
}

extension OutboundBudgetSender {
    /// Hands `payload` to the engine on the stream `key` once the stream has room (at once if it
    /// has and nobody waits before it). `done` gets success once the engine has it, the failure
    /// that ended a wait, or `refusal` with the engine's error when the engine refuses it.
    func enqueue(
        _ payload: ByteBuffer, on key: OutboundBudget.StreamKey, refusal: SDLConnectionError.Code,
        done: @escaping (Result<Void, SDLConnectionError>) -> Void
    ) {
        let send: OutboundBudget.Waiter = { [self] result in
            guard case .success = result else {
                done(result)
                return
            }
            // Counted before the engine has it: the engine may write it before `send` returns.
            self.budget.recordSent(key, size: payload.readableBytes)
            do {
                try self.driver.perform { (engine, now) throws(SessionError) in
                    try engine.send(payload, on: key.service, of: key.session, now: now)
                }
                done(.success(()))
            } catch {
                self.budget.withdrawLast(key)
                done(.failure(SDLConnectionError(refusal, "\(error)")))
            }
        }
        if self.budget.admit(key, orQueue: send) {
            send(.success(()))
        }
    }
}
