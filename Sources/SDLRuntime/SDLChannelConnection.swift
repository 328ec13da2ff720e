import NIOCore

/// A SwiftNIO channel as an ``SDLTransportConnection``: add it as the last handler of a channel
/// whose pipeline reads and writes `ByteBuffer` (a TCP socket as it is; a WebSocket behind a
/// handler that turns binary messages into bytes; a Network.framework connection; a pipe).
///
/// Reads are held until the runtime starts the connection, so nothing read is lost between the
/// channel's activation and the hand-over. Writes go to the channel, whose write-buffer watermarks
/// make ``isWritable``; a read is issued only while the runtime wants reads, so a peer that sends
/// faster than the runtime takes fills its socket buffers, not our memory.
///
/// ```swift
/// let connection = SDLChannelConnection(description: "tcp \(address)")
/// try channel.pipeline.syncOperations.addHandler(connection)
/// ```
public final class SDLChannelConnection: ChannelDuplexHandler, SDLTransportConnection {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?
    private var events: SDLTransportEvents?
    private var readsPaused = true
    private var readPending = false
    /// Bytes read before ``start(reportingTo:readsPaused:)`` (at most the one read a channel may
    /// issue on its own before the handler is added), or while reads were paused within a read
    /// cycle (at most the rest of the cycle: NIO's `maxMessagesPerRead` reads).
    private var held: [ByteBuffer] = []
    private var delivering = false
    private var closedEarly = false
    private var closeReported = false
    private let onActive: ((SDLChannelConnection) -> Void)?
    /// See ``SDLTransportConnection/transportDescription``.
    public private(set) var transportDescription: String

    /// A connection for a channel; `onActive` is called on the channel's loop once the channel is
    /// active and the handler added (a listener hands the connection over there).
    public init(description: String, onActive: ((SDLChannelConnection) -> Void)? = nil) {
        self.transportDescription = description
        self.onActive = onActive
    }

    /// The channel's loop. Only valid once the handler is in a pipeline.
    public var eventLoop: any EventLoop {
        self.context!.eventLoop
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive {
            self.becameActive(context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    public func channelActive(context: ChannelHandlerContext) {
        self.becameActive(context)
        context.fireChannelActive()
    }

    private var activated = false

    private func becameActive(_ context: ChannelHandlerContext) {
        guard !self.activated else { return }
        self.activated = true
        if let remote = context.channel.remoteAddress, !self.transportDescription.contains(":") {
            self.transportDescription += " \(remote.ipAddress ?? "?"):\(remote.port ?? 0)"
        }
        self.onActive?(self)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        self.reportClosed(nil)
        context.fireChannelInactive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = self.unwrapInboundIn(data)
        if let events = self.events, !self.readsPaused {
            events.received(bytes)
        } else {
            // Before the start, or paused while the channel's read cycle goes on: what the cycle
            // still brings waits for the resume, so that a pause takes effect from the next read,
            // not from the next cycle (a throttled peer gets no more of its requests handled).
            self.held.append(bytes)
        }
    }

    /// Delivers what was held, in order, while reads are wanted.
    private func deliverHeld() {
        guard let events = self.events, !self.delivering else { return }
        self.delivering = true
        defer { self.delivering = false }
        while !self.readsPaused, !self.held.isEmpty, !self.closeReported {
            events.received(self.held.removeFirst())
        }
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            self.events?.becameWritable()
        }
        context.fireChannelWritabilityChanged()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset or a failed write: the transport is gone; the close reports it.
        self.pendingError = self.pendingError ?? error
        context.close(promise: nil)
    }

    private var pendingError: (any Error)?

    public func read(context: ChannelHandlerContext) {
        if self.readsPaused {
            self.readPending = true
        } else {
            context.read()
        }
    }

    private func reportClosed(_ error: (any Error)?) {
        guard !self.closeReported else { return }
        if let events = self.events, !self.held.isEmpty {
            // What the peer sent before it went (an UnregisterAppInterface, an EndService) is
            // handled before its close, paused or not.
            let held = self.held
            self.held = []
            for bytes in held { events.received(bytes) }
        }
        guard let events = self.events else {
            self.closedEarly = true
            return
        }
        self.closeReported = true
        events.closed(error ?? self.pendingError)
    }

    // MARK: - SDLTransportConnection

    public func start(reportingTo events: SDLTransportEvents, readsPaused: Bool) {
        self.events = events
        // What came before the start is the peer's first words: delivered whatever the pause.
        let early = self.held
        self.held = []
        for bytes in early { events.received(bytes) }
        if self.closedEarly {
            self.reportClosed(nil)
            return
        }
        self.setReadsPaused(readsPaused)
    }

    public var isWritable: Bool {
        self.context?.channel.isWritable ?? false
    }

    public func write(_ bytes: ByteBuffer) {
        self.context?.write(self.wrapOutboundOut(bytes), promise: nil)
    }

    public func flush() {
        self.context?.flush()
    }

    public func setReadsPaused(_ paused: Bool) {
        self.readsPaused = paused
        guard !paused else { return }
        self.deliverHeld()
        if !self.readsPaused, self.held.isEmpty, self.readPending, let context = self.context {
            self.readPending = false
            context.read()
        }
    }

    public func close(_ mode: SDLTransportCloseMode) {
        guard let context = self.context else {
            self.reportClosed(nil)
            return
        }
        switch mode {
        case .now:
            context.close(promise: nil)
        case .afterFlushing(let timeout):
            let channel = context.channel
            let flushed = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(self.wrapOutboundOut(ByteBuffer()), promise: flushed)
            let fallback = context.eventLoop.scheduleTask(in: timeout) {
                channel.close(promise: nil)
            }
            flushed.futureResult.whenComplete { _ in
                fallback.cancel()
                channel.close(promise: nil)
            }
        }
    }
}
