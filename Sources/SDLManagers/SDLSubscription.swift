/// The updates of one subscription (a remote-control module's data, an app service's data), as an
/// `AsyncSequence`: the head unit subscription starts on the first `next()` of the first observer
/// (its answer is the first element), every update follows, and the head unit is unsubscribed
/// once the last observer's iteration ends (its loop exits, its task is cancelled). Each
/// iteration is one observer; several may run at once on one head unit subscription.
///
/// The iteration throws ``SDLManagerError`` when the subscription cannot start (the head unit
/// refuses, a startup condition is not met) and ``SDLManagerError/Code/disconnected`` when the
/// session ends under it. A reader that falls behind loses the oldest updates beyond
/// `bufferSize`, never the latest.
public struct SDLSubscription<Element: Sendable>: AsyncSequence, Sendable {
    /// What an iteration throws.
    public typealias Failure = SDLManagerError

    let open: @Sendable () async throws(SDLManagerError) -> AsyncThrowingStream<Element, any Error>

    init(open: @escaping @Sendable () async throws(SDLManagerError) -> AsyncThrowingStream<Element, any Error>) {
        self.open = open
    }

    /// One observer.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(open: self.open) }

    /// One observer's iteration.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var open: (@Sendable () async throws(SDLManagerError) -> AsyncThrowingStream<Element, any Error>)?
        private var updates: AsyncThrowingStream<Element, any Error>.AsyncIterator?

        init(open: @escaping @Sendable () async throws(SDLManagerError) -> AsyncThrowingStream<Element, any Error>) {
            self.open = open
        }

        /// The next update; the first call subscribes.
        public mutating func next() async throws(SDLManagerError) -> Element? {
            try await self.next(isolation: nil)
        }

        /// The next update; the first call subscribes.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SDLManagerError) -> Element? {
            if self.updates == nil {
                guard let open = self.open else { return nil }
                self.open = nil
                self.updates = try await open().makeAsyncIterator()
            }
            do {
                return try await self.updates?.next(isolation: actor)
            } catch let error as SDLManagerError {
                throw error
            } catch {
                throw SDLManagerError(.disconnected, "\(error)")
            }
        }
    }
}

/// Observers of keyed updates and the head-unit subscriptions behind them, with the cache of the
/// latest value per key. One reconciliation at a time per key moves the head unit's subscription
/// towards "subscribed while anyone observes": observers that come and go while a request is out
/// are settled by the next round, never by a second concurrent request.
actor SubscriptionHub<Key: Hashable & Sendable, Value: Sendable> {
    /// Subscribes (true) or unsubscribes (false) on the head unit; returns the value the answer
    /// carries, if any.
    typealias Change = @Sendable (Key, Bool) async throws(SDLManagerError) -> Value?

    private struct Observer {
        var continuation: AsyncThrowingStream<Value, any Error>.Continuation
        /// Whether it has had a value (the current one, or an update).
        var primed = false
    }

    private struct Entry {
        var observers: [Int: Observer] = [:]
        /// Whether the head unit has the subscription.
        var subscribed = false
        var reconciling = false
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var lastError: SDLManagerError?
    }

    private let change: Change
    private let merge: @Sendable (Value?, Value) -> Value
    private let bufferSize: Int
    private var entries: [Key: Entry] = [:]
    private(set) var cache: [Key: Value] = [:]
    private var nextObserver = 0
    private var ended: SDLManagerError?

    init(bufferSize: Int, merge: @escaping @Sendable (Value?, Value) -> Value = { $1 }, change: @escaping Change) {
        self.bufferSize = max(1, bufferSize)
        self.merge = merge
        self.change = change
    }

    /// Whether the head unit holds a subscription for the key that nothing is changing.
    func isSubscribed(_ key: Key) -> Bool {
        guard let entry = self.entries[key] else { return false }
        return entry.subscribed && !entry.reconciling
    }

    /// How many observers the key has.
    func observerCount(_ key: Key) -> Int { self.entries[key]?.observers.count ?? 0 }

    /// The keys the head unit is subscribed to.
    var subscribedKeys: [Key] { self.entries.filter { $0.value.subscribed }.map(\.key) }

    func value(for key: Key) -> Value? { self.cache[key] }

    /// Adds an observer and waits until the head unit holds the subscription; its stream starts
    /// with the current value.
    func observe(_ key: Key) async throws(SDLManagerError) -> AsyncThrowingStream<Value, any Error> {
        if let ended = self.ended { throw ended }
        let (stream, continuation) = AsyncThrowingStream<Value, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(self.bufferSize))
        let id = self.nextObserver
        self.nextObserver += 1
        // Strong: a live observer keeps the hub, so that its leaving still unsubscribes when the
        // manager is dropped with it; the stream releases this closure once it has run.
        continuation.onTermination = { _ in
            Task { await self.removeObserver(key, id) }
        }
        self.entries[key, default: Entry()].observers[id] = Observer(continuation: continuation)
        if !self.isSubscribed(key) {
            do {
                try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                    self.entries[key, default: Entry()].waiters.append(waiter)
                    self.startReconciling(key)
                }
            } catch let error as SDLManagerError {
                throw error
            } catch {
                throw SDLManagerError(.disconnected, "\(error)")
            }
        }
        if let value = self.cache[key], self.entries[key]?.observers[id]?.primed == false {
            self.entries[key]?.observers[id]?.primed = true
            continuation.yield(value)
        }
        return stream
    }

    /// A value for the key from the head unit (a notification, an answer to a read): cached,
    /// merged into what was there, and given to the key's observers.
    func received(_ value: Value, for key: Key) {
        let merged = self.merge(self.cache[key], value)
        self.cache[key] = merged
        guard var entry = self.entries[key] else { return }
        for id in Array(entry.observers.keys) {
            entry.observers[id]?.primed = true
            entry.observers[id]?.continuation.yield(merged)
        }
        self.entries[key] = entry
    }

    /// The session ended: every observer's iteration ends with `error`, and later observers fail.
    func end(_ error: SDLManagerError) {
        self.ended = error
        let entries = self.entries
        self.entries = [:]
        for entry in entries.values {
            for observer in entry.observers.values { observer.continuation.finish(throwing: error) }
            for waiter in entry.waiters { waiter.resume(throwing: error) }
        }
    }

    private func removeObserver(_ key: Key, _ id: Int) {
        guard self.entries[key]?.observers.removeValue(forKey: id) != nil else { return }
        self.startReconciling(key)
    }

    private func startReconciling(_ key: Key) {
        guard let entry = self.entries[key], !entry.reconciling else { return }
        self.entries[key]?.reconciling = true
        Task { await self.reconcile(key) }
    }

    private func reconcile(_ key: Key) async {
        while let entry = self.entries[key] {
            let wanted = !entry.observers.isEmpty
            guard wanted != entry.subscribed, entry.lastError == nil || !wanted else { break }
            do {
                let value = try await self.change(key, wanted)
                self.entries[key]?.subscribed = wanted
                if let value {
                    self.received(value, for: key)
                }
            } catch {
                if wanted {
                    // The observers waiting for it fail; later ones try again.
                    self.entries[key]?.lastError = error
                    for observer in self.entries[key]?.observers.values ?? [:].values {
                        observer.continuation.finish(throwing: error)
                    }
                    self.entries[key]?.observers = [:]
                } else {
                    // The head unit kept a subscription it would not end: it only sends data
                    // nobody reads, and a new observer subscribes afresh.
                    self.entries[key]?.subscribed = false
                }
            }
        }
        guard var entry = self.entries[key] else { return }
        entry.reconciling = false
        let waiters = entry.waiters
        let error = entry.lastError
        entry.waiters = []
        entry.lastError = nil
        if entry.observers.isEmpty && !entry.subscribed {
            self.entries[key] = nil
        } else {
            self.entries[key] = entry
        }
        for waiter in waiters {
            if let error {
                waiter.resume(throwing: error)
            } else if entry.subscribed {
                waiter.resume()
            } else {
                waiter.resume(throwing: SDLManagerError(.disconnected, "the subscription ended before it started"))
            }
        }
    }
}
