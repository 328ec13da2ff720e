import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// A test exceeded its time bound.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(self.what)" }
}

/// Runs `body`, failing after `seconds`: every end-to-end test is bounded in time.
func within<T: Sendable>(
    _ seconds: Double = 30, _ what: String = "test", _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(what: what)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// A head-unit handler for the tests: records every event in order (readable as a stream and as a
/// list), registers every app, answers ListFiles with two file names and everything else with
/// UNSUPPORTED_REQUEST, and after a registration sends OnHMIStatus FULL.
final class RecordingHandler: SDLHeadUnitHandler {
    let stream: AsyncStream<SDLHeadUnitEvent>
    private let continuation: AsyncStream<SDLHeadUnitEvent>.Continuation
    private let log = NIOLockedValueBox<[SDLHeadUnitEvent]>([])
    let requests = NIOLockedValueBox<[String]>([])
    /// Delay before a ListFiles response (tests of timeouts and cancellation).
    let listFilesDelay: Duration
    /// Whether events are handled slowly (tests of the handler backlog).
    let eventDelay: Duration

    init(listFilesDelay: Duration = .zero, eventDelay: Duration = .zero) {
        (self.stream, self.continuation) = AsyncStream.makeStream()
        self.listFilesDelay = listFilesDelay
        self.eventDelay = eventDelay
    }

    var events: [SDLHeadUnitEvent] { self.log.withLockedValue { $0 } }

    func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        SDLRegisterAppInterfaceResponse(
            success: true, resultCode: .success, info: "welcome \(request.appName)",
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 7, minorVersion: 1, patchVersion: 0))
    }

    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {

        SDLRequestAnswer(await self.response(to: request, from: app))

    }


    func response(to request: AnyRPCMessage, from app: SDLConnectedApp) async -> (any RPCMessage)? {
        self.requests.withLockedValue { $0.append(request.functionName) }
        if request.message is SDLListFilesRequest {
            if self.listFilesDelay > .zero {
                try? await Task.sleep(for: self.listFilesDelay)
            }
            return SDLListFilesResponse(success: true, resultCode: .success, filenames: ["a.png", "b.png"])
        }
        return nil
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        if self.eventDelay > .zero {
            try? await Task.sleep(for: self.eventDelay)
        }
        self.log.withLockedValue { $0.append(event) }
        self.continuation.yield(event)
        if case .appRegistered(let app, _) = event {
            try? await app.sendNotification(SDLOnHMIStatus(hmiLevel: .full, audioStreamingState: .notAudible, systemContext: .main))
        }
    }

    /// The next event that `match` accepts (earlier ones are skipped).
    func next<T: Sendable>(_ match: @Sendable (SDLHeadUnitEvent) -> T?) async -> T? {
        for await event in self.stream {
            if let value = match(event) { return value }
        }
        return nil
    }
}

extension SDLHeadUnitEvent {
    var name: String {
        switch self {
        case .appConnected: return "appConnected"
        case .appRegistered: return "appRegistered"
        case .appUnregistered: return "appUnregistered"
        case .appDisconnected(_, let reason): return "appDisconnected(\(reason))"
        case .serviceStarted(_, let service, _, _): return "serviceStarted(\(service))"
        case .serviceEnded(_, let service, let reason): return "serviceEnded(\(service), \(reason))"
        case .notification(_, let message): return "notification(\(message.functionName))"
        case .unreadableMessage(_, let error): return "unreadableMessage(\(error.code))"
        case .handlerError: return "handlerError"
        case .notificationsDropped(_, let total): return "notificationsDropped(\(total))"
        case .session: return "session"
        }
    }
}

/// A RegisterAppInterface request of a test app.
func registration(_ name: String = "Test App", appID: String = "1234", hmiTypes: [SDLAppHMIType]? = [.navigation]) -> SDLRegisterAppInterfaceRequest {
    SDLRegisterAppInterfaceRequest(
        syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0), appName: name,
        isMediaApplication: true, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs, appHMIType: hmiTypes, appID: appID)
}

/// A head-unit configuration on loopback with free ports.
func testHeadUnitConfiguration(secondary: Bool = false, videoTransports: [TransportSlot] = [.primary, .secondary]) -> SDLHeadUnitConfiguration {
    var configuration = SDLHeadUnitConfiguration()
    configuration.primaryPort = 0
    configuration.secondaryPort = secondary ? 0 : nil
    configuration.videoServiceTransports = videoTransports
    configuration.session.headUnit.hashSeed = 7
    return configuration
}

/// Deterministic bytes: a video stream whose every byte depends on its offset.
func patternBytes(offset: Int, count: Int) -> ByteBuffer {
    var buffer = ByteBuffer()
    buffer.reserveCapacity(count)
    buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
        for index in 0..<count {
            let position = offset + index
            pointer[index] = UInt8(truncatingIfNeeded: position &* 31 &+ position >> 11)
        }
        return count
    }
    return buffer
}

/// The transports every runtime test runs over.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// TCP and WebSocket on loopback, an in-memory network, and the byte-stream example (a Unix
    /// socket pair read and written with blocking calls, as iAP or a serial port is).
    case tcp, webSocket, memory, byteStream

    var testDescription: String { self.rawValue }
}

/// Starts head units and connects apps over one kind of transport: TCP and WebSocket on loopback
/// with free ports, or an in-memory network of the test's own. A secondary transport, when the
/// configuration asks for one (``SDLHeadUnitConfiguration/secondaryPort`` set), is TCP for the
/// socket kinds and another in-memory port for the in-memory kind. Over byte streams, each app's
/// connect makes a socket pair and hands one end to the head unit's listener.
struct TestBed: Sendable {
    let kind: TransportKind
    let network = SDLInMemoryNetwork(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
    private let streams = AsyncStream<any SDLByteStream>.makeStream()

    init(_ kind: TransportKind) { self.kind = kind }

    func server(
        _ configuration: SDLHeadUnitConfiguration = testHeadUnitConfiguration(), handler: some SDLHeadUnitHandler
    ) async throws(SDLConnectionError) -> SDLHeadUnitServer {
        let secondary: (any SDLHeadUnitTransport)?
        let primary: any SDLHeadUnitTransport
        switch self.kind {
        case .tcp:
            primary = SDLTCPTransport(host: "127.0.0.1", port: 0)
            secondary = configuration.secondaryPort.map { SDLTCPTransport(host: "127.0.0.1", port: $0) }
        case .webSocket:
            primary = SDLWebSocketTransport(role: .server(host: "127.0.0.1", port: 0))
            secondary = configuration.secondaryPort.map { SDLTCPTransport(host: "127.0.0.1", port: $0) }
        case .memory:
            primary = self.network.transport(port: 0)
            secondary = configuration.secondaryPort.map { self.network.transport(port: $0) }
        case .byteStream:
            primary = SDLByteStreamListener(
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, description: "socket pair", connections: self.streams.stream)
            secondary = configuration.secondaryPort.map { SDLTCPTransport(host: "127.0.0.1", port: $0) }
        }
        return try await SDLHeadUnitServer.start(transports: [primary], secondary: secondary, configuration: configuration, handler: handler)
    }

    func transport(to port: Int) -> any SDLAppTransport {
        switch self.kind {
        case .tcp: SDLTCPTransport(host: "127.0.0.1", port: port)
        case .webSocket: SDLWebSocketTransport(role: .client(host: "127.0.0.1", port: port, path: "/"))
        case .memory: self.network.transport(port: port)
        case .byteStream:
            SDLByteStreamTransport(
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, description: "socket pair",
                secondary: { SDLTCPTransport(host: $0, port: $1) }
            ) { [listener = self.streams.continuation] in
                let (app, headUnit) = try SocketPairStream.pair()
                listener.yield(headUnit)
                return app
            }
        }
    }

    func connect(
        _ server: SDLHeadUnitServer, configuration: SDLAppConfiguration = SDLAppConfiguration()
    ) async throws(SDLConnectionError) -> SDLAppConnection {
        try await SDLAppConnection.connect(to: self.transport(to: server.primaryPort), configuration: configuration)
    }
}
