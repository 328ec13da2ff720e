import NIOCore

/// What every listener of the package adds to its server channel: a pause in accepting after a
/// failed accept. Out of descriptors (EMFILE), the pending connection stays in the kernel's queue
/// and the listening socket stays readable: retrying at once spins a core for as long as it
/// lasts. NIO's `AcceptBackoffHandler` waits for the next read request, which a listener whose
/// very first accept of a read cycle failed never makes, so reading itself is paused here.
func addAcceptBackoff(to channel: any Channel, _ configuration: SDLTransportConfiguration) -> EventLoopFuture<Void> {
    channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHandler(AcceptBackoff(pause: configuration.acceptBackoff), name: "SDLAcceptBackoff")
    }
}

/// Pauses a server channel's reads (its accepts) for a while after an accept failed.
final class AcceptBackoff: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    private let pause: TimeAmount
    private var resume: Scheduled<Void>?

    init(pause: TimeAmount) {
        self.pause = pause
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A failed accept (EMFILE, ENFILE, ENOBUFS, ENOMEM) reaches the pipeline as an IOError;
        // the channel stays open.
        guard error is IOError, self.resume == nil, let options = context.channel.syncOptions else {
            context.fireErrorCaught(error)
            return
        }
        try? options.setOption(.autoRead, value: false)
        self.resume = context.eventLoop.assumeIsolated().scheduleTask(in: self.pause) { [weak self] in
            self?.resume = nil
            try? options.setOption(.autoRead, value: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.resume?.cancel()
        self.resume = nil
        context.fireChannelInactive()
    }
}

/// The connections of one listener still in their link's handshake (the WebSocket upgrade),
/// longest waiting first. Confined to the listener's event loop, which its connections share.
final class PendingHandshakes {
    private let limit: Int
    private var channels: [any Channel] = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// How many connections are in their handshake.
    var count: Int { self.channels.count }

    /// A connection starts its handshake; beyond the limit the one waiting longest is closed.
    func add(_ channel: any Channel) {
        self.channels.append(channel)
        while self.channels.count > self.limit {
            self.channels.removeFirst().close(promise: nil)
        }
    }

    /// A connection finished its handshake, or closed.
    func remove(_ channel: any Channel) {
        if let index = self.channels.firstIndex(where: { $0 === channel }) {
            self.channels.remove(at: index)
        }
    }
}

/// Closes a connection that has not finished its handshake within the configured time, and
/// counts it among its listener's ``PendingHandshakes`` meanwhile. Removed when the handshake is
/// done.
final class HandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private let pending: NIOLoopBoundBox<PendingHandshakes>
    private var deadline: Scheduled<Void>?
    private var counted = false

    init(timeout: TimeAmount, pending: NIOLoopBoundBox<PendingHandshakes>) {
        self.timeout = timeout
        self.pending = pending
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        self.counted = true
        self.pending.value.add(channel)
        self.deadline = context.eventLoop.assumeIsolated().scheduleTask(in: self.timeout) {
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.finish(context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.finish(context.channel)
        context.fireChannelInactive()
    }

    private func finish(_ channel: any Channel) {
        self.deadline?.cancel()
        self.deadline = nil
        if self.counted {
            self.counted = false
            self.pending.value.remove(channel)
        }
    }
}
