import Logging
import NIOCore
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLRuntime
import SDLSession
import SDLTestHeadUnit
import ServiceLifecycle

/// The settings of a ``SimulatedHeadUnitServer``: the transports and sessions
/// (``SDLHeadUnitServer``'s) and the head unit's behaviour (``SimulatedHeadUnit``'s).
public struct SimulatedHeadUnitServerConfiguration: Sendable {
    /// Listeners (TCP by default: ``SDLHeadUnitConfiguration/host``,
    /// ``SDLHeadUnitConfiguration/primaryPort``, ``SDLHeadUnitConfiguration/secondaryPort``),
    /// session and back-pressure settings.
    public var server = SDLHeadUnitConfiguration()
    /// RPC version, activation level, vehicle, policy, remote-control access mode, provider timeout.
    public var headUnit = SimulatedHeadUnit.Configuration()
    /// Hears every RPC an app sends (its registration, requests, notifications) before the head
    /// unit takes it, with the app's handle: for tests and tools that check what went over the
    /// wire. Called on the server's event loop, in order: keep it short. Default nil.
    public var recorder: (@Sendable (AppHandle, AnyRPCMessage) -> Void)?

    /// The defaults.
    public init() {}
}

/// What a running ``SimulatedHeadUnitServer`` has seen and holds.
public struct SimulatedHeadUnitStatistics: Hashable, Sendable {
    /// Apps with a running session.
    public var connectedApps = 0
    /// Apps registered with the simulated head unit.
    public var registeredApps = 0
    /// Audio bytes received, every app and transport.
    public var audioBytes = 0
    /// Video bytes received, every app and transport.
    public var videoBytes = 0
    /// Requests of apps waiting for the simulated head unit's answer (forwarded to a provider,
    /// or waiting for the driver or the vehicle).
    public var waitingRequests = 0
    /// Audio and video services running.
    public var mediaStreams = 0
    /// Notifications dropped because their app did not read.
    public var droppedNotifications = 0

    /// Zero counters.
    public init() {}
}

/// `sdl headunit`: a ``SimulatedHeadUnit`` served by an ``SDLHeadUnitServer``. The server
/// negotiates sessions (v1–v5), reads RPCs strictly and carries audio and video; the simulated
/// head unit answers registrations and requests as SDL Core 8.2 does. It runs on the server's
/// event loop, synchronously: an app's messages are handled in the order they arrived, and what
/// the head unit sends in one step (a response, then its notifications) goes out in that order.
/// Every input and what the head unit made of it goes to the transcript.
///
/// ```swift
/// var configuration = SimulatedHeadUnitServerConfiguration()
/// configuration.server.primaryPort = 0
/// let headUnit = try await SimulatedHeadUnitServer.start(configuration: configuration) { print($0) }
/// print(headUnit.primaryPort)
/// …
/// await headUnit.shutdown()
/// ```
public final class SimulatedHeadUnitServer: Sendable {
    /// The server carrying the sessions.
    public let server: SDLHeadUnitServer

    private init(server: SDLHeadUnitServer) {
        self.server = server
    }

    /// Listens over TCP (the configuration's host and ports) and starts serving. `transcript`
    /// hears one line per input (an RPC, a connection, a service, a timer) in the order the head
    /// unit took them, on the server's event loop: it must not block (`sdl headunit` hands lines
    /// to a writer thread and counts those it had to drop). Throws
    /// ``SDLConnectionError/Code/connectFailed`` when a port cannot be bound.
    public static func start(
        configuration: SimulatedHeadUnitServerConfiguration = SimulatedHeadUnitServerConfiguration(),
        logger: Logger = SDLAppConnection.silentLogger,
        transcript: @escaping @Sendable (TranscriptLine) -> Void = { _ in }
    ) async throws(SDLConnectionError) -> SimulatedHeadUnitServer {
        let server = configuration.server
        return try await Self.start(
            transports: [SDLTCPTransport(host: server.host, port: server.primaryPort)],
            secondary: server.secondaryPort.map { SDLTCPTransport(host: server.host, port: $0) }, configuration: configuration,
            logger: logger, transcript: transcript)
    }

    /// Listens on `transports` (and `secondary`) and starts serving; as
    /// ``start(configuration:logger:transcript:)``.
    public static func start(
        transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)?,
        configuration: SimulatedHeadUnitServerConfiguration, logger: Logger = SDLAppConnection.silentLogger,
        transcript: @escaping @Sendable (TranscriptLine) -> Void = { _ in }
    ) async throws(SDLConnectionError) -> SimulatedHeadUnitServer {
        let headUnit = configuration.headUnit
        let recorder = configuration.recorder
        let server = try await SDLHeadUnitServer.start(
            transports: transports, secondary: secondary, configuration: configuration.server, logger: logger
        ) { _ in
            SimulationHandler(headUnit: SimulatedHeadUnit(configuration: headUnit), transcript: transcript, recorder: recorder)
        }
        return SimulatedHeadUnitServer(server: server)
    }

    /// The port apps connect to.
    public var primaryPort: Int { self.server.primaryPort }
    /// The port of the secondary transport, if one is offered.
    public var secondaryPort: Int? { self.server.secondaryPort }

    /// Runs `body` on the event loop with the simulation.
    private func onLoop<Value: Sendable>(_ body: @escaping @Sendable (SimulationHandler) -> Value) async -> Value? {
        await self.server.withLoopHandler { handler, _ in
            (handler as? SimulationHandler).map(body)
        } ?? nil
    }

    /// Counters and what is held now.
    public var statistics: SimulatedHeadUnitStatistics {
        get async { await self.onLoop { $0.statistics } ?? SimulatedHeadUnitStatistics() }
    }

    /// Reads the simulated head unit's state (registered apps, services, allocations, vehicle).
    public func inspect<Value: Sendable>(_ body: @escaping @Sendable (SimulatedHeadUnit) -> Value) async -> Value {
        guard let value = await self.onLoop({ body($0.headUnit) }) else {
            preconditionFailure("a simulated head unit server always runs a SimulationHandler")
        }
        return value
    }

    /// Acts on the simulated head unit (the driver turns a knob, the user changes an app's HMI
    /// level) and carries out what it produces, as for an input of an app.
    public func act(_ body: @escaping @Sendable (inout SimulatedHeadUnit) -> [HeadUnitOutput]) async {
        _ = await self.onLoop { $0.act(body(&$0.headUnit)) }
    }

    /// Performs a command of the driver or the vehicle (``HeadUnitCommand``), as `sdl headunit`
    /// reads them from a file or from its standard input.
    public func perform(_ command: HeadUnitCommand) async {
        await self.act { $0.perform(command, now: .now()) }
    }

    /// Sends a notification of the caller's own to a connected app, after what the head unit sent
    /// it before, as the head unit would (OnRCStatus `allowed` false, a narrower
    /// OnPermissionsChange, a capability update); false when no such app is connected or the
    /// notification was dropped (the app does not read).
    @discardableResult
    public func notify(_ app: AppHandle, _ notification: any RPCMessage) async -> Bool {
        await self.onLoop { handler in
            (try? handler.context?.sendNotification(notification, to: SessionHandle(rawValue: UInt32(app.rawValue)))) ?? false
        } ?? false
    }

    /// Stops serving: ends every session (gracefully, EndService first, by default). Every
    /// disconnection reaches the transcript before this returns.
    public func shutdown(graceful: Bool = true) async {
        await self.server.shutdown(graceful: graceful)
    }
}

/// The simulated head unit as the server's loop handler: inputs from the server go to it at
/// once, its outputs go back to the server in order. No task, no actor, no queue of its own.
final class SimulationHandler: SDLHeadUnitLoopHandler {
    var headUnit: SimulatedHeadUnit
    private let transcript: @Sendable (TranscriptLine) -> Void
    private let recorder: (@Sendable (AppHandle, AnyRPCMessage) -> Void)?
    private(set) var context: SDLHeadUnitContext?
    private var timer: Scheduled<Void>?
    /// Requests of apps the head unit has not answered yet, by app and correlation id: its
    /// response (which carries the request's correlation id) is sent as the answer to them.
    private var waiting: [WaiterKey: AnyRPCMessage] = [:]
    private var audioBytes = 0
    private var videoBytes = 0
    private var streamBytes: [WaiterKey: Int] = [:]
    private var droppedNotifications = 0

    private struct WaiterKey: Hashable {
        var app: SessionHandle
        var number: UInt32
    }

    init(
        headUnit: SimulatedHeadUnit, transcript: @escaping @Sendable (TranscriptLine) -> Void,
        recorder: (@Sendable (AppHandle, AnyRPCMessage) -> Void)?
    ) {
        self.headUnit = headUnit
        self.transcript = transcript
        self.recorder = recorder
    }

    private static func appHandle(_ session: SessionHandle) -> AppHandle { AppHandle(UInt64(session.rawValue)) }
    private static func session(_ app: AppHandle) -> SessionHandle { SessionHandle(rawValue: UInt32(truncatingIfNeeded: app.rawValue)) }

    var statistics: SimulatedHeadUnitStatistics {
        var statistics = SimulatedHeadUnitStatistics()
        let apps = self.context?.connectedApps ?? []
        statistics.connectedApps = apps.count
        statistics.registeredApps = apps.count { self.headUnit.hmiLevel(of: Self.appHandle($0)) != nil }
        statistics.waitingRequests = self.waiting.count
        statistics.mediaStreams = self.streamBytes.count
        statistics.audioBytes = self.audioBytes
        statistics.videoBytes = self.videoBytes
        statistics.droppedNotifications = self.droppedNotifications
        return statistics
    }

    // MARK: - SDLHeadUnitLoopHandler

    func serverStarted(_ context: SDLHeadUnitContext) {
        self.context = context
    }

    func decideServiceStart(_ service: ServiceType, of app: SessionHandle, parameters: VideoParameters?) -> SDLServiceStartDecision {
        let media: MediaService = service == .video ? .video : .audio
        let decision = self.headUnit.mediaStartDecision(for: Self.appHandle(app), service: media)
        switch decision {
        case .accept:
            return .accept
        case .refuse(let reason):
            let text = reason ?? "Service type: \(media.serviceType) disallowed"
            self.log(Self.appHandle(app), "\(service) StartService", "refused: \(text)")
            return .refuse(reason: text)
        }
    }

    func handle(_ event: SDLHeadUnitLoopEvent) {
        let now = NIODeadline.now()
        switch event {
        case .appConnected(let session, _):
            self.act(self.headUnit.appConnected(Self.appHandle(session)))
        case .request(let message, let session):
            let app = Self.appHandle(session)
            self.recorder?(app, message)
            self.waiting[WaiterKey(app: session, number: message.correlationID)] = message
            self.act(self.headUnit.received(message, from: app, now: now))
        case .notification(let message, let session):
            let app = Self.appHandle(session)
            self.recorder?(app, message)
            self.act(self.headUnit.received(message, from: app, now: now))
        case .media(let bytes, let service, let session, _):
            let count = bytes.readableBytes
            if service == .video { self.videoBytes += count } else { self.audioBytes += count }
            self.streamBytes[WaiterKey(app: session, number: UInt32(service.rawValue)), default: 0] += count
        case .serviceStarted(let session, let service, let info):
            let app = Self.appHandle(session)
            self.streamBytes[WaiterKey(app: session, number: UInt32(service.rawValue))] = 0
            let video = info.video.map { " \($0.width ?? 0)x\($0.height ?? 0) \($0.videoCodec ?? "?")/\($0.videoProtocol ?? "?")" } ?? ""
            self.log(app, "\(service) service started", "on the \(info.slot) transport, MTU \(info.mtu ?? 0)\(video)")
            self.act(self.headUnit.mediaServiceStarted(service == .video ? .video : .audio, by: app, now: now))
        case .serviceEnded(let session, let service, let reason):
            let app = Self.appHandle(session)
            let bytes = self.streamBytes.removeValue(forKey: WaiterKey(app: session, number: UInt32(service.rawValue))) ?? 0
            self.log(app, "\(service) service ended", "\(reason), \(bytes) bytes received")
            self.act(self.headUnit.mediaServiceEnded(service == .video ? .video : .audio, by: app, now: now))
        case .appFlooded(let session):
            self.act(self.headUnit.appFlooded(Self.appHandle(session), now: now))
        case .appDisconnected(let session, let reason):
            let app = Self.appHandle(session)
            self.act(self.headUnit.appDisconnected(app, now: now))
            self.waiting = self.waiting.filter { $0.key.app != session }
            self.streamBytes = self.streamBytes.filter { $0.key.app != session }
            self.log(app, "session ended", "\(reason)")
        case .unreadableMessage(let session, let error):
            self.logLimited(Self.appHandle(session), "unreadable message", "\(error)")
        case .notificationsDropped(let session, let total):
            self.droppedNotifications += 1
            // One line per power of two: an app that stops reading does not flood the transcript.
            if total & (total - 1) == 0 {
                self.log(Self.appHandle(session), "notification dropped", "the app does not read; \(total) dropped so far")
            }
        case .session(let event):
            self.logLimited(nil, "session", "\(event)")
        case .serverStopped:
            self.timer?.cancel()
            self.timer = nil
            self.waiting = [:]
        }
    }

    // MARK: - Acting on the head unit's outputs

    func act(_ outputs: [HeadUnitOutput]) {
        guard let context = self.context else { return }
        for output in outputs {
            switch output {
            case .log(let line):
                self.transcript(line)
            case .registered:
                // The server registers the app when its successful response goes out.
                break
            case .armTimer(let deadline):
                self.arm(deadline)
            case .send(let message, let app):
                let session = Self.session(app)
                switch message.rpcType {
                case .response, .erroneousResponse:
                    guard let request = self.waiting.removeValue(forKey: WaiterKey(app: session, number: message.correlationID)) else {
                        self.log(app, "\(message.functionName) response #\(message.correlationID)", "not sent: no request waits for it")
                        continue
                    }
                    do {
                        try context.respond(message.message, to: request, of: session)
                    } catch {
                        self.log(app, "\(message.functionName) response #\(message.correlationID)", "not sent: \(error)")
                    }
                case .request:
                    self.forward(message, to: app)
                default:
                    do {
                        try context.sendNotification(message.message, to: session)
                    } catch {
                        self.log(app, "\(message.functionName) notification", "not sent: \(error)")
                    }
                }
            }
        }
    }

    /// Sends a request the head unit forwards to a provider and gives it the provider's answer
    /// under the head unit's own correlation id. A provider that does not answer is the head
    /// unit's timer's business: it answers the consumer at its deadline.
    private func forward(_ request: AnyRPCMessage, to app: AppHandle) {
        let number = request.correlationID
        self.context?.sendRequest(request.message, to: Self.session(app), timeout: .seconds(10)) { result in
            switch result {
            case .success(let answer):
                self.act(self.headUnit.received(
                    AnyRPCMessage(answer.message, correlationID: number, isErroneousResponse: answer.isErroneousResponse), from: app,
                    now: .now()))
            case .failure(let error):
                self.log(app, "\(request.functionName) request #\(number)", "no answer: \(error)")
            }
        }
    }

    private func arm(_ deadline: NIODeadline) {
        self.timer?.cancel()
        guard let loop = self.context?.eventLoop else { return }
        self.timer = loop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timer = nil
            self.act(self.headUnit.timerFired(now: .now()))
        }
    }

    private func log(_ app: AppHandle?, _ input: String, _ outcome: String) {
        self.transcript(TranscriptLine(app: app, input: input, outcome: outcome))
    }

    /// The lines a peer can provoke at will (protocol errors, anomalies, unreadable messages):
    /// at most ``limitedLinesPerSecond`` a second, and then one line saying how many were left out,
    /// so that a flood of bad frames cannot flood the transcript.
    private func logLimited(_ app: AppHandle?, _ input: String, _ outcome: String) {
        let now = NIODeadline.now()
        if now - self.limitedWindowStart >= .seconds(1) {
            if self.limitedSuppressed > 0 {
                self.log(nil, "transcript", "\(self.limitedSuppressed) session event line(s) left out in the last second")
            }
            self.limitedWindowStart = now
            self.limitedCount = 0
            self.limitedSuppressed = 0
        }
        guard self.limitedCount < Self.limitedLinesPerSecond else {
            self.limitedSuppressed += 1
            return
        }
        self.limitedCount += 1
        self.log(app, input, outcome)
    }

    private static let limitedLinesPerSecond = 100
    private var limitedWindowStart = NIODeadline.uptimeNanoseconds(0)
    private var limitedCount = 0
    private var limitedSuppressed = 0
}

/// `sdl headunit`'s head unit is a swift-service-lifecycle `Service` as ``SDLHeadUnitServer`` is:
/// the group's graceful shutdown ends every session with EndService and closes the connections.
extension SimulatedHeadUnitServer: Service {
    /// Serves until the service group shuts down gracefully or the calling task is cancelled, then
    /// stops gracefully; every disconnection has reached the transcript when this returns.
    public func run() async {
        try? await gracefulShutdown()
        await self.shutdown()
    }
}
