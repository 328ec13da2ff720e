import NIOCore
import NIOPosix
import SDLProtocol
import SDLRPC

/// A TCP relay between apps and a head unit: passes the bytes both ways untouched and records the
/// RPCs the head unit sends, `Function rpcType`, in the order they reach the app. An app's own API
/// cannot tell that order: a response resumes the task that waits for it while a notification
/// goes into a buffered stream, so only the bytes on the way say which came first.
final class RecordingRelay: Sendable {
    let port: Int
    /// The head unit's RPCs, every app together, in order of arrival.
    let received: Collected<String>
    private let listener: any Channel

    private init(port: Int, received: Collected<String>, listener: any Channel) {
        self.port = port
        self.received = received
        self.listener = listener
    }

    /// Listens on a free loopback port; every app connecting to it is joined to `headUnitPort`.
    static func start(to headUnitPort: Int) async throws -> RecordingRelay {
        let received = Collected<String>()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { app in
                ClientBootstrap(group: app.eventLoop)
                    .channelInitializer { headUnit in
                        headUnit.eventLoop.makeCompletedFuture {
                            let reader = RPCReader(into: received)
                            try headUnit.pipeline.syncOperations.addHandler(Forwarder(to: app) { reader.read($0) })
                        }
                    }
                    .connect(host: "127.0.0.1", port: headUnitPort)
                    .flatMapThrowing { headUnit in try app.pipeline.syncOperations.addHandler(Forwarder(to: headUnit) { _ in }) }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return RecordingRelay(port: listener.localAddress!.port!, received: received, listener: listener)
    }

    /// Stops listening; relayed connections end with their ends.
    func stop() async {
        try? await self.listener.close()
    }
}

/// Writes what its channel reads to the other end of the relay, after showing it to `inspect`.
private final class Forwarder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let peer: any Channel
    private let inspect: (ByteBuffer) -> Void

    init(to peer: any Channel, inspect: @escaping (ByteBuffer) -> Void) {
        self.peer = peer
        self.inspect = inspect
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = self.unwrapInboundIn(data)
        self.inspect(bytes)
        self.peer.writeAndFlush(bytes, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.peer.close(promise: nil)
    }
}

/// Reads a byte stream of the head unit as frames and records each RPC message it completes.
private final class RPCReader {
    private var decoder = FrameDecoder(invalidHeaderPolicy: .fail)
    private var reassembler = Reassembler()
    private let sink: Collected<String>

    init(into sink: Collected<String>) { self.sink = sink }

    func read(_ bytes: ByteBuffer) {
        self.decoder.append(bytes)
        do {
            while let frame = try self.decoder.nextFrame() {
                guard frame.header.frameType != .control, frame.header.serviceType == .rpc,
                    let message = try self.reassembler.process(frame, now: .now())
                else { continue }
                let header = try RPCPayload(parsing: message.payload).header
                self.sink.append("\(FunctionID(rawValue: header.functionID)) \(header.rpcType)")
            }
        } catch {
            self.sink.append("unreadable: \(error)")
        }
    }
}
