import Logging
import NIOCore
import SDLSession

/// What a runtime hears from its driver, always on the driver's event loop.
protocol SessionDriverDelegate: AnyObject {
    /// The engine reported an event.
    func sessionDriver(_ driver: SessionDriver, didReport event: SessionEvent)
    /// A transport opened and the engine knows it.
    func sessionDriver(_ driver: SessionDriver, didOpen transport: TransportID, as opening: TransportOpening)
    /// Frames were handed to the transport: queued messages left the engine, so a sender waiting
    /// for room may go on.
    func sessionDriver(_ driver: SessionDriver, didWriteOn transport: TransportID)
}

/// Drives one ``SessionEngine`` over ``SDLTransportConnection``s (the engine is sans-IO:
/// ARCHITECTURE.md §4).
///
/// Confined to one event loop: every engine call, every connection of the engine and the
/// engine's timer live on it, so the engine needs no lock. After every input the engine's actions
/// are drained: events go to the delegate, `.write` pulls frames while the connection is writable
/// (and again when it becomes writable), `.connect` opens a secondary transport, `.close` closes a
/// connection, `.armTimer` replaces the one scheduled task. Nothing is queued here: frames stay in
/// the engine until the connection can take them, so priorities hold at the socket and a slow
/// reader stops the pulls, not the memory.
final class SessionDriver {
    let eventLoop: any EventLoop
    let transportConfiguration: SDLTransportConfiguration
    let logger: Logger
    weak var delegate: (any SessionDriverDelegate)?
    /// Opens secondary transports the engine asks for; nil: the engine's requests fail at once.
    var secondaryTransport: (@Sendable (String, Int) -> (any SDLAppTransport)?)?

    private(set) var engine: SessionEngine
    private var links: [TransportID: Link] = [:]
    private var nextTransport: UInt64 = 1
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var draining = false
    private var written: [TransportID] = []
    private var globalReadPauses = 0
    /// Connections given up on whose close has not been reported yet.
    private var closing: [TransportID: any SDLTransportConnection] = [:]
    /// Set once the driver stops: no new transports are taken, and the promise completes when the
    /// last connection has closed.
    private var stopping: EventLoopPromise<Void>?
    private var stopped = false

    private struct Link {
        let connection: any SDLTransportConnection
        let opening: TransportOpening
        /// How many parties want reads on the transport held (a consumer that lags).
        var readPauses = 0
        var readsPaused: Bool
        /// Reads held because too much waits for the peer (it does not read).
        var throttled = false
        /// Since when frames wait for a connection that takes none.
        var stalledSince: NIODeadline?
        /// Input read but not handed to the engine yet: the rest of a read beyond the turn's
        /// budget, or beyond the point where the connection was throttled. Reads are held while
        /// it is there.
        var backlog: ByteBuffer?
        /// The size of the pieces its input is handed over in (see ``SessionDriver/feed(_:)``),
        /// kept from one read to the next.
        var pieceSize = SessionDriver.inputSlice
    }

    /// `.message` events reported so far (a connection's turn counts its own).
    private var messagesReported = 0
    /// The task that gives backlogged connections their next turn.
    private var backlogTurn: Scheduled<Void>?
    /// How long the loop is left to other connections' input between two turns of backlogged
    /// ones: long enough that the loop polls its sockets first (tasks due at once run before).
    static let backlogYield = TimeAmount.microseconds(50)
    /// The smallest piece input is handed to the engine in (see ``feed(_:)``).
    static let inputSlice = 2048

    private var stallCheck: Scheduled<Void>?

    init(engine: SessionEngine, eventLoop: any EventLoop, transportConfiguration: SDLTransportConfiguration, logger: Logger) {
        self.engine = engine
        self.eventLoop = eventLoop
        self.transportConfiguration = transportConfiguration
        self.logger = logger
    }

    /// Whether the driver is stopping or stopped.
    var isStopping: Bool { self.stopping != nil }

    /// The open transports.
    var transports: [TransportID] { Array(self.links.keys) }

    /// How many connections are open or closing (for tests that count what a scope leaves).
    var connectionCount: Int { self.links.count + self.closing.count }

    // MARK: - Engine calls

    /// Runs an engine input with the current time, then acts on what it produced.
    @discardableResult
    func perform<Result>(_ body: (inout SessionEngine, NIODeadline) throws(SessionError) -> Result) throws(SessionError) -> Result {
        self.eventLoop.assertInEventLoop()
        defer { self.drain() }
        return try body(&self.engine, .now())
    }

    // MARK: - Connections

    /// Takes a connection that is open as `opening`: the engine knows it from now on. Returns its
    /// id, or nil when the driver is stopping (the connection is closed) or the engine no longer
    /// waits for it (a secondary transport whose session ended).
    @discardableResult
    func adopt(_ connection: any SDLTransportConnection, as opening: TransportOpening) -> TransportID? {
        self.eventLoop.assertInEventLoop()
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        guard self.stopping == nil else {
            self.closing[transport] = connection
            connection.start(reportingTo: SDLTransportEvents(driver: self, transport: transport), readsPaused: true)
            connection.close(.now)
            return nil
        }
        let paused = self.globalReadPauses > 0
        self.links[transport] = Link(connection: connection, opening: opening, readsPaused: paused)
        do {
            try self.engine.transportOpened(transport, as: opening, now: .now())
        } catch {
            // A secondary transport the engine no longer waits for.
            self.links[transport] = nil
            self.closing[transport] = connection
            connection.start(reportingTo: SDLTransportEvents(driver: self, transport: transport), readsPaused: true)
            connection.close(.now)
            self.drain()
            return nil
        }
        self.logger.debug("transport opened", metadata: ["transport": "\(transport)", "link": "\(connection.transportDescription)"])
        connection.start(reportingTo: SDLTransportEvents(driver: self, transport: transport), readsPaused: paused)
        self.delegate?.sessionDriver(self, didOpen: transport, as: opening)
        self.drain()
        return transport
    }

    func transportReceived(_ bytes: ByteBuffer, on transport: TransportID) {
        guard let link = self.links[transport] else { return }
        if link.backlog != nil {
            // Older input waits, or is being handed over right now (bytes a connection delivered
            // while the engine's actions were acted on): these go after it.
            self.links[transport]!.backlog!.writeImmutableBuffer(bytes)
            return
        }
        self.links[transport]!.backlog = bytes
        self.feed(transport)
    }

    /// Hands the transport's backlog to the engine within one turn's budget. What is not handed
    /// over stays the backlog, the transport's reads held, until a later turn once the loop has
    /// served the others (and the transport is no longer throttled). The backlog keeps the rest
    /// while the engine works, so that input arriving meanwhile queues behind it.
    private func feed(_ transport: TransportID) {
        let messagesBefore = self.messagesReported
        var fed = 0
        // Small pieces while they carry several messages each, so that a turn ends close to its
        // message budget; doubling while they carry at most one, halving while they carry many:
        // a connection that carries media keeps large pieces from one read to the next (its
        // frames are not copied together from small ones), one that carries small requests small
        // ones.
        while let link = self.links[transport], var backlog = link.backlog {
            guard backlog.readableBytes > 0 else {
                self.links[transport]!.backlog = nil
                break
            }
            let budgetSpent = fed >= self.transportConfiguration.maxInputBytesPerTurn
                || self.messagesReported - messagesBefore >= self.transportConfiguration.maxInputMessagesPerTurn
            if budgetSpent {
                self.updateReadHold(transport)
                self.scheduleBacklogTurn()
                return
            }
            if link.throttled || link.readPauses > 0 || self.globalReadPauses > 0 {
                // Held (the peer does not read, a consumer lags, the app flooded): the rest waits
                // for the hold to end, which gives the backlog its turn.
                self.updateReadHold(transport)
                return
            }
            let piece = backlog.readSlice(length: min(backlog.readableBytes, link.pieceSize))!
            self.links[transport]!.backlog = backlog
            fed += piece.readableBytes
            let messagesBeforePiece = self.messagesReported
            self.engine.received(piece, on: transport, now: .now())
            self.drain()
            guard self.links[transport] != nil else { return }
            self.throttleIfBacklogged(transport)
            let carried = self.messagesReported - messagesBeforePiece
            if carried <= 1 && piece.readableBytes == link.pieceSize {
                self.links[transport]!.pieceSize = min(link.pieceSize * 2, max(Self.inputSlice, self.transportConfiguration.maxInputBytesPerTurn))
            } else if carried > 16 {
                self.links[transport]!.pieceSize = max(Self.inputSlice, link.pieceSize / 2)
            }
        }
        // Everything handed over: reads resume if the backlog held them (what the connection
        // kept meanwhile comes first).
        self.updateReadHold(transport)
    }

    private func scheduleBacklogTurn() {
        guard self.backlogTurn == nil else { return }
        self.backlogTurn = self.eventLoop.assumeIsolated().scheduleTask(in: Self.backlogYield) {
            self.backlogTurn = nil
            self.serveBacklogs()
        }
    }

    /// One turn for every transport with a backlog that may go on (not throttled, not paused by
    /// a lagging consumer: those get theirs when that ends). A turn that spends its budget
    /// schedules the next.
    private func serveBacklogs() {
        for transport in self.links.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let link = self.links[transport], link.backlog != nil, !link.throttled, link.readPauses == 0,
                self.globalReadPauses == 0
            else { continue }
            self.feed(transport)
        }
    }

    /// A peer that lets what we send it pile up is no longer read until it catches up: what it
    /// sends next would only add to the pile (a request's response, a heartbeat's ACK).
    private func throttleIfBacklogged(_ transport: TransportID) {
        guard let link = self.links[transport], !link.throttled,
            self.engine.queuedBytes(on: transport) > self.transportConfiguration.maxQueuedBytesPerTransport
        else { return }
        self.links[transport]!.throttled = true
        self.logger.debug("transport throttled: its peer does not read", metadata: ["transport": "\(transport)"])
        self.updateReadHold(transport)
    }

    /// Follows whether frames wait for a connection that takes none, and closes it once that has
    /// lasted ``SDLTransportConfiguration/stalledReaderTimeout``.
    private func noteStall(_ transport: TransportID, stalled: Bool) {
        guard let link = self.links[transport], let timeout = self.transportConfiguration.stalledReaderTimeout else { return }
        if !stalled {
            if link.stalledSince != nil { self.links[transport]!.stalledSince = nil }
            return
        }
        guard link.stalledSince == nil else { return }
        let now = NIODeadline.now()
        self.links[transport]!.stalledSince = now
        if self.stallCheck == nil {
            self.scheduleStallCheck(at: now + timeout)
        }
    }

    private func scheduleStallCheck(at deadline: NIODeadline) {
        self.stallCheck = self.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.stallCheck = nil
            self.checkStalls()
        }
    }

    private func checkStalls() {
        guard let timeout = self.transportConfiguration.stalledReaderTimeout else { return }
        let now = NIODeadline.now()
        var next: NIODeadline?
        for (transport, link) in self.links {
            guard let since = link.stalledSince else { continue }
            if link.connection.isWritable || !self.engine.hasPendingWrites(on: transport) {
                self.links[transport]!.stalledSince = nil
            } else if since + timeout <= now {
                self.logger.debug("closing a transport whose peer stopped reading", metadata: ["transport": "\(transport)"])
                self.engine.closeTransport(transport, reason: .peerStoppedReading, now: now)
            } else {
                next = min(next ?? since + timeout, since + timeout)
            }
        }
        self.drain()
        if let next, self.stallCheck == nil { self.scheduleStallCheck(at: next) }
    }

    /// Bytes queued in the engine towards every transport (every service, control frames too),
    /// not yet handed to a connection.
    var queuedBytesOnEveryTransport: Int {
        self.links.keys.reduce(0) { $0 + self.engine.queuedBytes(on: $1) }
    }

    func transportClosed(_ transport: TransportID, error: (any Error)?) {
        if self.closing.removeValue(forKey: transport) != nil {
            self.completeStopIfIdle()
            return
        }
        guard let link = self.links[transport] else { return }
        if let backlog = link.backlog {
            // What the peer sent before it went is handled before its close, whatever the budget.
            self.links[transport]!.backlog = nil
            self.engine.received(backlog, on: transport, now: .now())
            self.drain()
            if self.links[transport] == nil {
                // The engine gave up on it meanwhile: that close is this one.
                self.closing[transport] = nil
                self.completeStopIfIdle()
                return
            }
        }
        self.links[transport] = nil
        self.logger.debug(
            "transport closed",
            metadata: ["transport": "\(transport)", "link": "\(link.connection.transportDescription)", "error": "\(error.map { "\($0)" } ?? "none")"])
        self.engine.transportClosed(transport, now: .now())
        self.drain()
        self.completeStopIfIdle()
    }

    func transportWritable(_ transport: TransportID) {
        self.pull(transport)
        self.drain()
    }

    /// Holds reads on a transport (a consumer of its data lags); reads resume when every pause of
    /// the transport, and every pause of all transports, is lifted.
    func pauseReads(on transport: TransportID) {
        guard self.links[transport] != nil else { return }
        self.links[transport]!.readPauses += 1
        self.updateReadHold(transport)
    }

    /// Lifts one ``pauseReads(on:)``.
    func resumeReads(on transport: TransportID) {
        guard let link = self.links[transport], link.readPauses > 0 else { return }
        self.links[transport]!.readPauses -= 1
        self.updateReadHold(transport)
    }

    /// Holds reads on every transport, present and future (the consumer of all events lags).
    func pauseAllReads() {
        self.globalReadPauses += 1
        for transport in self.links.keys { self.updateReadHold(transport) }
    }

    /// Lifts one ``pauseAllReads()``.
    func resumeAllReads() {
        guard self.globalReadPauses > 0 else { return }
        self.globalReadPauses -= 1
        for transport in self.links.keys { self.updateReadHold(transport) }
    }

    private func updateReadHold(_ transport: TransportID) {
        guard let link = self.links[transport] else { return }
        let held = link.readPauses > 0 || self.globalReadPauses > 0 || link.throttled || link.backlog != nil
        if held != link.readsPaused {
            self.links[transport]!.readsPaused = held
            link.connection.setReadsPaused(held)
        }
        if link.backlog != nil, !link.throttled, link.readPauses == 0, self.globalReadPauses == 0 {
            // Free to go on with its backlog.
            self.scheduleBacklogTurn()
        }
    }

    // MARK: - Actions

    /// Acts on the engine's actions until there are none, then tells the delegate which
    /// transports were written to (which may produce more).
    func drain() {
        guard !self.draining else { return }
        self.draining = true
        defer { self.draining = false }
        while true {
            while let action = self.engine.nextAction() {
                switch action {
                case .event(let event):
                    if case .message = event { self.messagesReported &+= 1 }
                    self.delegate?.sessionDriver(self, didReport: event)
                case .write(let transport):
                    self.pull(transport)
                case .connect(let request):
                    self.connect(request)
                case .close(let transport, let reason):
                    self.close(transport, reason: reason)
                case .armTimer(let deadline):
                    self.arm(deadline)
                }
            }
            guard !self.written.isEmpty else { break }
            let written = self.written
            self.written.removeAll(keepingCapacity: true)
            for transport in written {
                self.delegate?.sessionDriver(self, didWriteOn: transport)
            }
        }
        self.completeStopIfIdle()
    }

    /// The payload size from which a frame's payload is written as its own slice rather than
    /// copied after its header: below it, a copy costs less than another write and the buffer it
    /// pins.
    static let payloadSliceThreshold = 16 * 1024

    /// Pulls frames into the connection while it is writable.
    private func pull(_ transport: TransportID) {
        guard let link = self.links[transport] else { return }
        let connection = link.connection
        var wrote = false
        while connection.isWritable, self.engine.hasPendingWrites(on: transport) {
            // Small to start: the buffer stays pinned until the kernel takes it, and most pulls
            // carry a few small frames; a large frame grows it once.
            var buffer = ByteBuffer()
            buffer.reserveCapacity(min(4096, self.transportConfiguration.writeChunkSize))
            // Large payloads (audio, video, bulk data) go out as slices of what was sent, gathered
            // with their headers by a vectored write where the transport has one, not copied.
            // Written once the engine returns: a write can report events that reach it.
            var pieces: [ByteBuffer] = []
            let count = self.engine.nextWrite(
                on: transport, maxBytes: self.transportConfiguration.writeChunkSize, into: &buffer,
                handingOutPayloadsFrom: Self.payloadSliceThreshold
            ) { piece in
                pieces.append(piece)
            }
            guard count > 0 else { break }
            for piece in pieces { connection.write(piece) }
            if buffer.readableBytes > 0 { connection.write(buffer) }
            wrote = true
        }
        if wrote {
            connection.flush()
            if !self.written.contains(transport) { self.written.append(transport) }
        }
        let waiting = self.engine.hasPendingWrites(on: transport)
        self.noteStall(transport, stalled: waiting && !connection.isWritable)
        if link.throttled, self.engine.queuedBytes(on: transport) <= self.transportConfiguration.maxQueuedBytesPerTransport / 2 {
            self.links[transport]?.throttled = false
            self.updateReadHold(transport)
        }
    }

    private func connect(_ request: ConnectRequest) {
        guard self.stopping == nil, let transport = self.secondaryTransport?(request.host, Int(request.port)) else {
            self.engine.connectFailed(request.id, now: .now())
            return
        }
        self.logger.debug("connecting the secondary transport", metadata: ["to": "\(transport.transportDescription)"])
        transport.connect(on: self.eventLoop, configuration: self.transportConfiguration, logger: self.logger) { result in
            switch result {
            case .success(let connection):
                self.adopt(connection, as: .secondary(request.id))
            case .failure(let error):
                self.logger.debug("the secondary transport did not open", metadata: ["error": "\(error)"])
                self.engine.connectFailed(request.id, now: .now())
                self.drain()
            }
        }
    }

    /// Closes a connection the engine gave up on. The engine's last frames (an EndService, a NAK)
    /// were pulled already; they are sent before the connection closes, within
    /// ``SDLTransportConfiguration/closeTimeout``. Malformed input and floods close at once.
    private func close(_ transport: TransportID, reason: TransportCloseReason) {
        guard let link = self.links.removeValue(forKey: transport) else { return }
        self.closing[transport] = link.connection
        if reason == .malformedInput || reason == .flood {
            link.connection.close(.now)
        } else {
            link.connection.close(.afterFlushing(timeout: self.transportConfiguration.closeTimeout))
        }
    }

    private func arm(_ deadline: NIODeadline) {
        if self.timerDeadline == deadline { return }
        self.timer?.cancel()
        self.timerDeadline = deadline
        self.timer = self.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timer = nil
            self.timerDeadline = nil
            self.engine.timerFired(now: .now())
            self.drain()
        }
    }

    /// Whether a timer is armed (for tests that count what a scope leaves).
    var hasTimer: Bool { self.timer != nil }

    // MARK: - Stopping

    /// Stops taking transports and closes every open one at once: the engine ends every session
    /// and service on them and reports it. The future completes when the last connection closed.
    func stop() -> EventLoopFuture<Void> {
        let promise = self.stopping ?? self.eventLoop.makePromise(of: Void.self)
        self.stopping = promise
        for transport in self.links.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            self.engine.closeTransport(transport, now: .now())
        }
        self.drain()
        self.completeStopIfIdle()
        return promise.futureResult
    }

    /// Whether frames still wait in the engine for any open transport.
    var hasPendingWrites: Bool {
        self.links.keys.contains { self.engine.hasPendingWrites(on: $0) }
    }

    private func completeStopIfIdle() {
        guard let stopping = self.stopping, !self.stopped, self.links.isEmpty, self.closing.isEmpty else { return }
        self.stopped = true
        self.stallCheck?.cancel()
        self.stallCheck = nil
        self.backlogTurn?.cancel()
        self.backlogTurn = nil
        self.timer?.cancel()
        self.timer = nil
        self.timerDeadline = nil
        stopping.succeed()
    }
}
