import NIOCore
import NIOPosix
import SDLSession

/// What a runtime hears from its driver, always on the driver's event loop.
protocol SessionDriverDelegate: AnyObject {
    /// The engine reported an event.
    func sessionDriver(_ driver: SessionDriver, didReport event: SessionEvent)
    /// A transport opened and the engine knows it.
    func sessionDriver(_ driver: SessionDriver, didOpen transport: TransportID, as opening: TransportOpening)
    /// Frames were handed to the transport's socket: queued messages left the engine, so a
    /// sender waiting for room may go on.
    func sessionDriver(_ driver: SessionDriver, didWriteOn transport: TransportID)
}

/// Drives one ``SessionEngine`` over SwiftNIO channels (ARCHITECTURE.md §4: the engine is sans-IO).
///
/// Confined to one event loop: every engine call, every channel of the engine and the engine's
/// timer live on it, so the engine needs no lock. After every input the engine's actions are
/// drained: events go to the delegate, `.write` pulls frames while the channel is writable (and
/// again when it becomes writable), `.connect` opens a secondary transport, `.close` closes a
/// channel, `.armTimer` replaces the one scheduled task. Nothing is queued here: frames stay in
/// the engine until the socket can take them, so priorities hold at the socket (SESSION.md D.11)
/// and a slow reader stops the pulls, not the memory.
final class SessionDriver {
    let eventLoop: any EventLoop
    let transportConfiguration: SDLTransportConfiguration
    weak var delegate: (any SessionDriverDelegate)?

    private(set) var engine: SessionEngine
    private var links: [TransportID: Link] = [:]
    private var nextTransport: UInt64 = 1
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var draining = false
    private var written: [TransportID] = []
    private var globalReadPauses = 0
    /// Channels given up on whose sockets have not closed yet.
    private var closing = 0
    /// Set once the driver stops: no new transports are taken, and the promise completes when the
    /// last channel has closed.
    private var stopping: EventLoopPromise<Void>?
    private var stopped = false

    private struct Link {
        let channel: any Channel
        let handler: SessionChannelHandler
        /// How many parties want reads on the transport held (a consumer that lags).
        var readPauses = 0
    }

    init(engine: SessionEngine, eventLoop: any EventLoop, transportConfiguration: SDLTransportConfiguration) {
        self.engine = engine
        self.eventLoop = eventLoop
        self.transportConfiguration = transportConfiguration
    }

    /// Whether the driver is stopping or stopped.
    var isStopping: Bool { self.stopping != nil }

    /// The open transports.
    var transports: [TransportID] { Array(self.links.keys) }

    // MARK: - Engine calls

    /// Runs an engine input with the current time, then acts on what it produced.
    @discardableResult
    func perform<Result>(_ body: (inout SessionEngine, NIODeadline) throws(SessionError) -> Result) throws(SessionError) -> Result {
        self.eventLoop.assertInEventLoop()
        defer { self.drain() }
        return try body(&self.engine, .now())
    }

    // MARK: - Channels

    /// The handler that joins a channel to the engine as `opening`; add it in the channel's
    /// initializer. The transport is known to the engine once the channel is active.
    func makeHandler(as opening: TransportOpening) -> SessionChannelHandler {
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        return SessionChannelHandler(driver: self, transport: transport, opening: opening)
    }

    /// Channel options every transport gets.
    func configure(_ channel: any Channel) throws {
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: self.transportConfiguration.writeBufferLowWatermark, high: self.transportConfiguration.writeBufferHighWatermark)
        try channel.syncOptions?.setOption(.writeBufferWaterMark, value: watermark)
        try channel.syncOptions?.setOption(.tcpOption(.tcp_nodelay), value: 1)
    }

    func channelActive(_ handler: SessionChannelHandler, channel: any Channel) {
        let transport = handler.transport
        guard self.links[transport] == nil else { return }
        guard self.stopping == nil else {
            channel.close(promise: nil)
            return
        }
        self.links[transport] = Link(channel: channel, handler: handler)
        self.updateReadHold(transport)
        do {
            try self.engine.transportOpened(transport, as: handler.opening, now: .now())
        } catch {
            // A secondary transport the engine no longer waits for.
            self.links[transport] = nil
            channel.close(promise: nil)
            self.drain()
            return
        }
        self.delegate?.sessionDriver(self, didOpen: transport, as: handler.opening)
        self.drain()
    }

    func channelRead(_ bytes: ByteBuffer, on transport: TransportID) {
        guard self.links[transport] != nil else { return }
        self.engine.received(bytes, on: transport, now: .now())
        self.drain()
    }

    func channelInactive(_ transport: TransportID) {
        guard self.links.removeValue(forKey: transport) != nil else { return }
        self.engine.transportClosed(transport, now: .now())
        self.drain()
        self.completeStopIfIdle()
    }

    func channelWritable(_ transport: TransportID) {
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
        let held = link.readPauses > 0 || self.globalReadPauses > 0
        if held {
            link.handler.readsHeld = true
        } else if link.handler.readsHeld {
            link.handler.releaseReads()
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
    /// copied after its header: below it, a copy costs less than another iovec and the buffer it
    /// pins.
    static let payloadSliceThreshold = 16 * 1024

    /// Pulls frames into the socket while it is writable.
    private func pull(_ transport: TransportID) {
        guard let link = self.links[transport] else { return }
        let channel = link.channel
        var wrote = false
        while channel.isWritable, self.engine.hasPendingWrites(on: transport) {
            // Small to start: the buffer stays pinned until the kernel takes it, and most pulls
            // carry a few small frames; a large frame grows it once.
            var buffer = channel.allocator.buffer(capacity: min(4096, self.transportConfiguration.writeChunkSize))
            // Large payloads (audio, video, bulk data) go to the socket as slices of what was sent,
            // gathered with their headers by NIO's vectored write, not copied into the buffer.
            // Written once the engine returns: a write can fire pipeline events that reach it.
            var pieces: [ByteBuffer] = []
            let count = self.engine.nextWrite(
                on: transport, maxBytes: self.transportConfiguration.writeChunkSize, into: &buffer,
                handingOutPayloadsFrom: Self.payloadSliceThreshold
            ) { piece in
                pieces.append(piece)
            }
            guard count > 0 else { break }
            for piece in pieces { channel.write(piece, promise: nil) }
            if buffer.readableBytes > 0 { channel.write(buffer, promise: nil) }
            wrote = true
        }
        if wrote {
            channel.flush()
            if !self.written.contains(transport) { self.written.append(transport) }
        }
    }

    private func connect(_ request: ConnectRequest) {
        let handler = self.makeHandler(as: .secondary(request.id))
        let bound = NIOLoopBound(handler, eventLoop: self.eventLoop)
        let driver = NIOLoopBound(self, eventLoop: self.eventLoop)
        ClientBootstrap(group: self.eventLoop)
            .connectTimeout(self.transportConfiguration.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try driver.value.configure(channel)
                    try channel.pipeline.syncOperations.addHandler(bound.value)
                }
            }
            .connect(host: request.host, port: Int(request.port))
            .assumeIsolated()
            .whenFailure { _ in
                self.engine.connectFailed(request.id, now: .now())
                self.drain()
            }
    }

    /// Closes a channel the engine gave up on. The engine's last frames (an EndService, a NAK)
    /// were pulled already; they are flushed to the kernel before the socket closes, within
    /// ``SDLTransportConfiguration/closeTimeout``. Malformed input and floods close at once.
    private func close(_ transport: TransportID, reason: TransportCloseReason) {
        guard let link = self.links.removeValue(forKey: transport) else { return }
        let channel = link.channel
        self.closing += 1
        channel.closeFuture.assumeIsolated().whenComplete { _ in
            self.closing -= 1
            self.completeStopIfIdle()
        }
        if reason == .malformedInput || reason == .flood {
            channel.close(promise: nil)
            return
        }
        let flushed = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(ByteBuffer(), promise: flushed)
        let fallback = channel.eventLoop.scheduleTask(in: self.transportConfiguration.closeTimeout) {
            channel.close(promise: nil)
        }
        flushed.futureResult.whenComplete { _ in
            fallback.cancel()
            channel.close(promise: nil)
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

    // MARK: - Stopping

    /// Stops taking transports and closes every open one at once: the engine ends every session
    /// and service on them and reports it. The future completes when the last channel closed.
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
        guard let stopping = self.stopping, !self.stopped, self.links.isEmpty, self.closing == 0 else { return }
        self.stopped = true
        self.timer?.cancel()
        self.timer = nil
        self.timerDeadline = nil
        stopping.succeed()
    }
}

/// Joins one channel to its ``SessionDriver``: bytes read go to the engine, the channel's opening
/// and closing are the transport's, writability changes pull frames. Reads can be held while a
/// consumer of the transport's data lags (back-pressure towards the peer).
final class SessionChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let transport: TransportID
    let opening: TransportOpening
    private let driver: SessionDriver
    private var context: ChannelHandlerContext?
    /// Whether reads are held; a read asked for meanwhile is issued when they are released.
    var readsHeld = false
    private var readPending = false

    init(driver: SessionDriver, transport: TransportID, opening: TransportOpening) {
        self.driver = driver
        self.transport = transport
        self.opening = opening
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive {
            self.driver.channelActive(self, channel: context.channel)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        self.driver.channelActive(self, channel: context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.driver.channelInactive(self.transport)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.driver.channelRead(self.unwrapInboundIn(data), on: self.transport)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            self.driver.channelWritable(self.transport)
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset or a failed write: the transport is gone; channelInactive reports it.
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if self.readsHeld {
            self.readPending = true
        } else {
            context.read()
        }
    }

    /// Releases held reads, issuing the one asked for meanwhile.
    func releaseReads() {
        self.readsHeld = false
        if self.readPending, let context = self.context {
            self.readPending = false
            context.read()
        }
    }
}
