import NIOCore
import NIOPosix
import SDLProtocol
import SDLRPC
import Testing

/// A bare TCP peer that writes frames the test builds by hand and reads what comes back: to stop
/// a protocol exchange at any step, to vanish abruptly, or to stop reading.
struct RawPeer: Sendable {
    let channel: any Channel
    private let received: AsyncStream<ByteBuffer>

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let continuation: AsyncStream<ByteBuffer>.Continuation

        init(_ continuation: AsyncStream<ByteBuffer>.Continuation) { self.continuation = continuation }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.continuation.yield(self.unwrapInboundIn(data))
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.continuation.finish()
        }
    }

    static func connect(port: Int, receiveBufferSize: Int? = nil) async throws -> RawPeer {
        let (stream, continuation) = AsyncStream<ByteBuffer>.makeStream()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let size = receiveBufferSize {
            bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(size))
        }
        let channel = try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(continuation))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        return RawPeer(channel: channel, received: stream)
    }

    /// A raw app whose session started and whose RegisterAppInterface (#1) was answered: the
    /// frames after the response, and the session id.
    static func registered(port: Int, receiveBufferSize: Int? = nil) async throws -> (peer: RawPeer, frames: FrameReader, session: UInt8) {
        let peer = try await RawPeer.connect(port: port, receiveBufferSize: receiveBufferSize)
        var frames = peer.frames()
        try await peer.send(RawFrames.startSession)
        let session = try #require(try await frames.next()).header.sessionID.rawValue
        try await peer.send(RawFrames.register(session: session))
        _ = try #require(try await frames.next { $0.header.serviceType == .rpc && $0.header.frameType != .control })
        return (peer, frames, session)
    }

    func send(_ bytes: [UInt8]) async throws {
        try await self.channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    func send(_ buffer: ByteBuffer) async throws {
        try await self.channel.writeAndFlush(buffer)
    }

    /// Stops reading the socket: the kernel buffers fill and the peer's writes stall.
    func stopReading() async throws {
        try await self.channel.setOption(ChannelOptions.autoRead, value: false).get()
    }

    /// Closes the socket at once (no EndService).
    func close() async {
        try? await self.channel.close()
    }

    func frames() -> FrameReader {
        FrameReader(self.received.makeAsyncIterator())
    }
}

/// Decodes the frames a ``RawPeer`` receives.
struct FrameReader {
    private var iterator: AsyncStream<ByteBuffer>.AsyncIterator
    private var decoder = FrameDecoder(invalidHeaderPolicy: .fail)

    init(_ iterator: AsyncStream<ByteBuffer>.AsyncIterator) {
        self.iterator = iterator
    }

    /// The next frame, nil when the connection closed.
    mutating func next() async throws -> ProtocolFrame? {
        while true {
            if let frame = try self.decoder.nextFrame() { return frame }
            guard let bytes = await self.iterator.next() else { return nil }
            self.decoder.append(bytes)
        }
    }

    /// The next frame that is not `skipping` (e.g. TransportEventUpdate).
    mutating func next(where accept: (ProtocolFrame) -> Bool) async throws -> ProtocolFrame? {
        while let frame = try await self.next() {
            if accept(frame) { return frame }
        }
        return nil
    }
}

/// Frames a raw app writes.
enum RawFrames {
    /// Golden frame A1 of `Tests/SDLSessionTests/Vectors/golden-frames.json`: StartService(RPC) in
    /// a version 1 header with `{protocolVersion: "5.4.1"}`.
    static let startSession: [UInt8] = [
        0x10, 0x07, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20,
        0x20, 0x00, 0x00, 0x00, 0x02, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x63, 0x6f, 0x6c, 0x56, 0x65, 0x72, 0x73, 0x69,
        0x6f, 0x6e, 0x00, 0x06, 0x00, 0x00, 0x00, 0x35, 0x2e, 0x34, 0x2e, 0x31, 0x00, 0x00,
    ]

    /// One version 5 RPC single frame carrying `payload`.
    static func rpc(_ payload: ByteBuffer, session: UInt8, messageID: UInt32) -> ByteBuffer {
        var buffer = ByteBuffer()
        try! FrameEncoder.writeMessage(
            payload, version: .v5, serviceType: .rpc, sessionID: SessionID(session), messageID: MessageID(messageID),
            maxPayloadPerFrame: 131_072 - 12, to: &buffer)
        return buffer
    }

    /// A RegisterAppInterface request as one version 5 RPC frame.
    static func register(session: UInt8, correlationID: UInt32 = 1) -> ByteBuffer {
        self.rpc(try! registration().payload(correlationID: correlationID), session: session, messageID: 1)
    }
}
