import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// One connection's input is handled a bounded number of messages at a time: a peer that writes
/// thousands of requests at once delays another app's request by at most one turn of its own,
/// never by all of them. Counted, not timed: the head unit's handler logs each request it is given,
/// in order, over connections the test feeds by hand on the server's loop.
@Suite(.timeLimit(.minutes(1)))
struct FairnessTests {
    /// A connection whose input the test hands over and whose output it keeps.
    final class ManualConnection: SDLTransportConnection {
        let eventLoop: any EventLoop
        var events: SDLTransportEvents?
        var output = ByteBuffer()
        var readsPaused = false
        /// How often reads were paused (the budget, or the throttle).
        var pauses = 0
        private var closed = false

        init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

        func start(reportingTo events: SDLTransportEvents, readsPaused: Bool) {
            self.events = events
            self.readsPaused = readsPaused
        }

        var isWritable: Bool { true }

        func write(_ bytes: ByteBuffer) { self.output.writeImmutableBuffer(bytes) }

        func flush() {}

        func setReadsPaused(_ paused: Bool) {
            if paused && !self.readsPaused { self.pauses += 1 }
            self.readsPaused = paused
        }

        func close(_ mode: SDLTransportCloseMode) {
            guard !self.closed else { return }
            self.closed = true
            self.events?.closed(nil)
        }

        var transportDescription: String { "manual" }
    }

    /// A head-unit transport whose connections the test makes.
    struct ManualTransport: SDLHeadUnitTransport {
        let accept = NIOLockedValueBox<(@Sendable (any SDLTransportConnection) -> Void)?>(nil)

        func listen(
            on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
            accept: @escaping @Sendable (any SDLTransportConnection) -> Void
        ) async throws(SDLConnectionError) -> any SDLTransportListener {
            self.accept.withLockedValue { $0 = accept }
            return Listener()
        }

        var defaultEventLoopGroup: any EventLoopGroup { MultiThreadedEventLoopGroup.singleton }

        struct Listener: SDLTransportListener {
            var advertisedAddress: (host: String, port: Int)? { nil }
            var transportDescription: String { "manual" }
            func close() async {}
        }
    }

    /// Registers every app and answers every other request at once, logging who asked, in order.
    final class OrderLog: SDLHeadUnitLoopHandler {
        let requests: NIOLockedValueBox<[SessionHandle]>
        private var context: SDLHeadUnitContext?

        init(_ requests: NIOLockedValueBox<[SessionHandle]>) { self.requests = requests }

        func serverStarted(_ context: SDLHeadUnitContext) { self.context = context }

        func handle(_ event: SDLHeadUnitLoopEvent) {
            guard case .request(let request, let app) = event, let context = self.context else { return }
            if request.message is SDLRegisterAppInterfaceRequest {
                let response = SDLRegisterAppInterfaceResponse(
                    success: true, resultCode: .success, syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0))
                try? context.respond(response, to: request, of: app)
            } else {
                self.requests.withLockedValue { $0.append(app) }
                try? context.respond(SDLListFilesResponse(success: true, resultCode: .success), to: request, of: app)
            }
        }

        func decideServiceStart(_ service: ServiceType, of app: SessionHandle, parameters: VideoParameters?) -> SDLServiceStartDecision {
            .accept
        }
    }

    @Test func thousandsOfRequestsInOneWriteDelayAnotherAppByOneTurnAtMost() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let transport = ManualTransport()
        let log = NIOLockedValueBox<[SessionHandle]>([])
        var configuration = testHeadUnitConfiguration()
        configuration.session.headUnit.floodLimit = nil
        let server = try await SDLHeadUnitServer.start(transports: [transport], configuration: configuration, eventLoop: loop) { _ in
            OrderLog(log)
        }
        let accept = try #require(transport.accept.withLockedValue { $0 })
        let budget = configuration.transport.maxInputMessagesPerTurn
        let connections = try await loop.submit { () -> NIOLoopBound<(ManualConnection, ManualConnection)> in
            let attacker = ManualConnection(eventLoop: loop)
            let app = ManualConnection(eventLoop: loop)
            accept(attacker)
            accept(app)
            // Sessions start and register at once: the loop handler answers in place.
            var sessions: [UInt8] = []
            for connection in [attacker, app] {
                connection.events!.received(ByteBuffer(bytes: RawFrames.startSession))
                let session = connection.output.getInteger(at: connection.output.readerIndex + 3, as: UInt8.self)!
                connection.events!.received(RawFrames.register(session: session))
                sessions.append(session)
            }
            // 20,000 requests in one read, then one request of the other app.
            attacker.events!.received(HostilePeerTests.requests(20_000, session: sessions[0]))
            app.events!.received(RawFrames.rpc(HostilePeerTests.listFiles(99), session: sessions[1], messageID: 99))
            return NIOLoopBound((attacker, app), eventLoop: loop)
        }.get()
        try await within(30) {
            while log.withLockedValue({ $0.count }) < 20_001 { try await Task.sleep(for: .milliseconds(20)) }
        }
        let order = log.withLockedValue { $0 }
        let attackerHandle = try #require(order.first)
        let position = try #require(order.firstIndex { $0 != attackerHandle })
        // One turn of the attacker came first: its budget, rounded up to the piece of input that
        // crossed it (about 80 of these 26-byte requests), never its 20,000.
        #expect(position >= budget)
        #expect(position <= budget + 100, "\(position) of the attacker's requests were handled before the other app's one")
        #expect(order.filter { $0 == attackerHandle }.count == 20_000)
        // The attacker's reads were held while its backlog waited, and are wanted again.
        let (pauses, pausedNow) = try await loop.submit { (connections.value.0.pauses, connections.value.0.readsPaused) }.get()
        #expect(pauses >= 1)
        #expect(!pausedNow)
        await server.shutdown()
    }
}
