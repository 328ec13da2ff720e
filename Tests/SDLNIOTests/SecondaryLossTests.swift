import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// The secondary transport lost while video streams on it, and its return (ARCHITECTURE.md,
/// D-secondary, both roles over real sockets): the video service ends on both sides, the app
/// reconnects and registers the secondary again after its back-off, and video starts again on it.
@Suite(.timeLimit(.minutes(1)))
struct SecondaryLossTests {
    /// Every primary whose secondary is TCP (the in-memory network's secondary is in memory,
    /// where no proxy can stand).
    @Test(arguments: [TransportKind.tcp, .webSocket, .byteStream])
    func theSecondaryIsLostMidVideoAndComesBack(primary kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within(45) {
            let proxy = try await CuttingProxy.start()
            let handler = RecordingHandler()
            var configuration = testHeadUnitConfiguration(secondary: true, videoTransports: [.secondary])
            configuration.secondaryAdvertisedPort = proxy.port
            let server = try await bed.server(configuration, handler: handler)
            proxy.target.withLockedValue { $0 = try! #require(server.secondaryPort) }
            let app = try await bed.connect(server)
            try await app.register(registration())

            // Video through the proxy on the secondary.
            let writer = try await app.startVideo()
            #expect(writer.info.slot == .secondary)
            let (_, stream) = try #require(await MediaTests.serviceStarted(handler))
            let reader = Task { await MediaTests.verify(stream) }
            try await writer.write(patternBytes(offset: 0, count: 1 << 20))
            while proxy.forwardedToTarget.withLockedValue({ $0 }) < 1 << 20 { try await Task.sleep(for: .milliseconds(5)) }

            // The secondary's sockets reset: the service ends on both sides, no EndService.
            await proxy.cutEverything()
            let headUnitEnd = await handler.next { event -> ServiceEndReason? in
                if case .serviceEnded(_, .video, let reason) = event { return reason }
                return nil
            }
            #expect(headUnitEnd == .transportLost)
            let (received, mismatches) = await reader.value
            #expect(received == 1 << 20)
            #expect(mismatches == 0)
            var failed: SDLConnectionError?
            while failed == nil {
                do throws(SDLConnectionError) { try await writer.write(patternBytes(offset: 0, count: 1024)) } catch { failed = error }
            }
            #expect(failed?.code == .serviceFailed)
            #expect(await app.hmiStatus?.hmiLevel == .full)  // the primary and the session stay

            // After the back-off (1 s) the app connects and registers the secondary again; video
            // starts on it again, and the primary served requests all along.
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(files.filenames == ["a.png", "b.png"])
            let again = try await app.startVideo()
            #expect(again.info.slot == .secondary)
            #expect(proxy.accepted.withLockedValue { $0 } == 2)
            let (_, secondStream) = try #require(await MediaTests.serviceStarted(handler))
            let secondReader = Task { await MediaTests.verify(secondStream) }
            try await again.write(patternBytes(offset: 0, count: 1 << 20))
            await again.finish()
            let (receivedAgain, mismatchesAgain) = await secondReader.value
            #expect(receivedAgain == 1 << 20)
            #expect(mismatchesAgain == 0)
            await app.disconnect()
            await server.shutdown()
            await proxy.stop()
        }
    }
}

/// A TCP forwarder in front of the head unit's secondary listener that can reset every
/// connection it carries, as a Wi-Fi link that drops.
final class CuttingProxy: Sendable {
    let listener: any Channel
    let port: Int
    let target = NIOLockedValueBox(0)
    let accepted = NIOLockedValueBox(0)
    let forwardedToTarget = NIOLockedValueBox(0)
    private let channels = NIOLockedValueBox<[any Channel]>([])

    private init(listener: any Channel, port: Int) {
        self.listener = listener
        self.port = port
    }

    static func start() async throws -> CuttingProxy {
        let box = NIOLockedValueBox<CuttingProxy?>(nil)
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { inbound in
                let proxy = box.withLockedValue { $0 }!
                return proxy.connect(inbound)
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let proxy = CuttingProxy(listener: listener, port: listener.localAddress!.port!)
        box.withLockedValue { $0 = proxy }
        return proxy
    }

    private func connect(_ inbound: any Channel) -> EventLoopFuture<Void> {
        self.accepted.withLockedValue { $0 += 1 }
        let port = self.target.withLockedValue { $0 }
        return ClientBootstrap(group: inbound.eventLoop).connect(host: "127.0.0.1", port: port).flatMap { outbound in
            self.channels.withLockedValue { $0 += [inbound, outbound] }
            return inbound.eventLoop.makeCompletedFuture {
                try inbound.pipeline.syncOperations.addHandler(Forwarder(to: outbound, counter: self.forwardedToTarget))
                try outbound.pipeline.syncOperations.addHandler(Forwarder(to: inbound, counter: nil))
            }
        }
    }

    /// Closes every connection at once (the app and the head unit see their sockets close).
    func cutEverything() async {
        for channel in self.channels.withLockedValue({ $0 }) {
            try? await channel.close()
        }
    }

    func stop() async {
        await self.cutEverything()
        try? await self.listener.close()
    }

    private final class Forwarder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let peer: any Channel
        let counter: NIOLockedValueBox<Int>?

        init(to peer: any Channel, counter: NIOLockedValueBox<Int>?) {
            self.peer = peer
            self.counter = counter
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = self.unwrapInboundIn(data)
            self.counter?.withLockedValue { $0 += bytes.readableBytes }
            self.peer.writeAndFlush(bytes, promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            self.peer.close(promise: nil)
        }
    }
}
