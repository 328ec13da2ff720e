import NIOConcurrencyHelpers
import NIOCore
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import SDLTestHeadUnit

/// The settings of a ``SimulatedHeadUnitServer``: the sockets and sessions (``SDLHeadUnitServer``'s)
/// and the head unit's behaviour (``SimulatedHeadUnit``'s).
public struct SimulatedHeadUnitServerConfiguration: Sendable {
    /// Listeners, secondary transport, session and back-pressure settings. Default: port 12345,
    /// no secondary transport.
    public var server = SDLHeadUnitConfiguration()
    /// RPC version, activation level, vehicle, remote-control access mode, provider timeout.
    public var headUnit = SimulatedHeadUnit.Configuration()
    /// Hears every RPC an app sends (its registration, requests, notifications) before the head
    /// unit takes it, with the app's handle: for tests and tools that check what went over the
    /// wire. Called from the server's tasks, requests concurrently. Default nil.
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
    /// Requests of apps waiting for the simulated head unit's answer (forwarded to a provider).
    public var waitingRequests = 0
    /// Audio and video streams being read.
    public var mediaStreams = 0

    /// Zero counters.
    public init() {}
}

/// `sdl headunit`: a ``SimulatedHeadUnit`` served over TCP by an ``SDLHeadUnitServer``. The
/// server negotiates sessions (v1–v5), reads RPCs strictly and carries audio and video; the
/// simulated head unit answers registrations and requests as SDL Core 8.2 does (OnHMIStatus NONE,
/// activation, OnPermissionsChange, app services, remote control, UNSUPPORTED_REQUEST for the
/// rest). Every input and what the head unit made of it goes to the transcript.
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
    private let state: SimulationState

    private init(server: SDLHeadUnitServer, state: SimulationState) {
        self.server = server
        self.state = state
    }

    /// Binds the listeners and starts serving. `transcript` hears one line per input (an RPC, a
    /// connection, a service, a timer) in the order the head unit took them. Throws
    /// ``SDLConnectionError/Code/connectFailed`` when a port cannot be bound.
    public static func start(
        configuration: SimulatedHeadUnitServerConfiguration = SimulatedHeadUnitServerConfiguration(),
        transcript: @escaping @Sendable (TranscriptLine) -> Void = { _ in }
    ) async throws(SDLConnectionError) -> SimulatedHeadUnitServer {
        var headUnit = configuration.headUnit
        // The server answers forwarded requests after the provider timeout: its own deadline for
        // the provider must come later, so that the consumer is answered by the head unit first.
        headUnit.providerTimeout = min(headUnit.providerTimeout, .seconds(9))
        let state = SimulationState(headUnit: SimulatedHeadUnit(configuration: headUnit), transcript: transcript)
        let handler = SimulationHandler(state: state)
        let server =
            if let recorder = configuration.recorder {
                try await SDLHeadUnitServer.start(configuration: configuration.server, handler: RecordingHandler(handler, recorder: recorder))
            } else {
                try await SDLHeadUnitServer.start(configuration: configuration.server, handler: handler)
            }
        return SimulatedHeadUnitServer(server: server, state: state)
    }

    /// The port apps connect to.
    public var primaryPort: Int { self.server.primaryPort }
    /// The port of the secondary transport, if one is offered.
    public var secondaryPort: Int? { self.server.secondaryPort }

    /// Counters and what is held now.
    public var statistics: SimulatedHeadUnitStatistics {
        get async { await self.state.statistics() }
    }

    /// Reads the simulated head unit's state (registered apps, services, allocations, vehicle).
    public func inspect<Value: Sendable>(_ body: @Sendable (SimulatedHeadUnit) -> Value) async -> Value {
        await self.state.inspect(body)
    }

    /// Stops serving: ends every session (gracefully, EndService first, by default), then stops the
    /// head unit's timer. Every disconnection reaches the transcript before this returns.
    public func shutdown(graceful: Bool = true) async {
        await self.server.shutdown(graceful: graceful)
        await self.state.stop()
    }
}

/// Joins the server's handler calls to the simulated head unit.
struct SimulationHandler: SDLHeadUnitHandler {
    let state: SimulationState

    func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        await self.state.register(request, from: app)
    }

    /// The head unit's response goes out through the app's outbox, before the notifications of
    /// the same step, as on Core.
    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
        await self.state.respond(to: request, from: app)
        return .answeredSeparately
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        await self.state.handle(event)
    }
}

/// Byte counts of media streams, updated by the stream readers without a hop to the actor.
struct MediaCounters: Sendable {
    var audio = 0
    var video = 0
    var byStream: [MediaKey: Int] = [:]
}

struct MediaKey: Hashable, Sendable {
    var app: AppHandle
    var service: ServiceType
}

/// The simulated head unit and what joins it to the server: the apps' outboxes, the requests
/// waiting for its answer, its timer, the media readers.
actor SimulationState {
    private var headUnit: SimulatedHeadUnit
    private let transcript: @Sendable (TranscriptLine) -> Void
    private var links: [AppHandle: AppLink] = [:]
    /// Apps that disconnected, the latest ones (bounded): a handler call of such an app that was
    /// already on its way must not make it a link again (it would outlive the app).
    private var departed: Set<AppHandle> = []
    private var departedOrder = CircularBuffer<AppHandle>()
    private static let departedMemory = 1024
    /// Requests waiting for the head unit's response: in the same step, or once a provider
    /// answered or the provider timeout passed.
    private var waiters: [WaiterKey: Waiter] = [:]
    /// Responses of the head unit to requests the server answered itself (UnregisterAppInterface):
    /// the head unit must see them to stay in step, the app must not get a second answer.
    private var discarded: Set<WaiterKey> = []
    private var timer: Task<Void, Never>?
    private var mediaReaders: [MediaKey: Task<Void, Never>] = [:]
    private let media = NIOLockedValueBox(MediaCounters())
    private var stopped = false

    /// Correlation ids the state gives requests the server answered before the head unit saw them.
    /// An app cannot send its own requests while these are in flight (the server holds them back
    /// until registration is answered), so they cannot clash with the app's ids.
    private static let registrationCorrelationID: UInt32 = 0xFFFF_FFFE
    private static let unregistrationCorrelationID: UInt32 = 0xFFFF_FFFD

    private struct WaiterKey: Hashable {
        var app: AppHandle
        var correlationID: UInt32
    }

    private enum Waiter {
        /// A RegisterAppInterface, whose response the handler returns to the server.
        case registration(CheckedContinuation<(any RPCMessage)?, Never>)
        /// Any other request, whose response goes into the app's outbox.
        case request(AnyRPCMessage)

        /// Gives up waiting (the app went away): a registration is answered nil.
        func abandon() {
            if case .registration(let continuation) = self { continuation.resume(returning: nil) }
        }
    }

    /// One app as the state knows it: where to send, and an outbox that keeps the order of what the
    /// head unit sends it, responses included, so that a response goes before the notifications
    /// of its step, as on Core. While its registration is being answered, the outbox holds back
    /// (the RegisterAppInterface response, which the server sends, must go first).
    private final class AppLink {
        let app: SDLConnectedApp
        let outbox: AsyncStream<Outgoing>.Continuation
        let sender: Task<Void, Never>
        var heldBack: [Outgoing]?

        init(app: SDLConnectedApp, outbox: AsyncStream<Outgoing>.Continuation, sender: Task<Void, Never>) {
            self.app = app
            self.outbox = outbox
            self.sender = sender
        }

        func send(_ item: Outgoing) {
            if self.heldBack != nil {
                self.heldBack!.append(item)
            } else {
                self.outbox.yield(item)
            }
        }

        func release() {
            guard let held = self.heldBack else { return }
            self.heldBack = nil
            for item in held { self.outbox.yield(item) }
        }
    }

    private enum Outgoing: Sendable {
        case response(any RPCMessage, to: AnyRPCMessage)
        case notification(AnyRPCMessage)
        case request(AnyRPCMessage)
    }

    init(headUnit: SimulatedHeadUnit, transcript: @escaping @Sendable (TranscriptLine) -> Void) {
        self.headUnit = headUnit
        self.transcript = transcript
    }

    // MARK: - Handler calls

    func register(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        guard !self.departed.contains(Self.handle(of: app)) else {
            return SDLRegisterAppInterfaceResponse(success: false, resultCode: .genericError, info: "the app disconnected")
        }
        let handle = self.link(app)
        self.links[handle]?.heldBack = self.links[handle]?.heldBack ?? []
        let answer = await withCheckedContinuation { continuation in
            self.wait(for: AnyRPCMessage(request, correlationID: Self.registrationCorrelationID), from: handle, as: .registration(continuation))
        }
        guard let response = answer as? SDLRegisterAppInterfaceResponse else {
            self.links[handle]?.release()
            return SDLRegisterAppInterfaceResponse(success: false, resultCode: .genericError, info: "the head unit did not answer")
        }
        if !response.success {
            self.links[handle]?.release()
        }
        return response
    }

    /// Gives the head unit a request; its response goes into the app's outbox when the head unit
    /// makes it.
    func respond(to request: AnyRPCMessage, from app: SDLConnectedApp) {
        // An app that left meanwhile: the server has nobody to answer.
        guard !self.departed.contains(Self.handle(of: app)) else { return }
        self.wait(for: request, from: self.link(app), as: .request(request))
    }

    /// Gives the head unit a request, `waiter` waiting for its response.
    private func wait(for request: AnyRPCMessage, from app: AppHandle, as waiter: Waiter) {
        // The server answers a correlation id still waiting INVALID_ID; a registration cannot
        // overlap another one. A waiter found here is given up all the same.
        self.waiters.updateValue(waiter, forKey: WaiterKey(app: app, correlationID: request.correlationID))?.abandon()
        self.act(on: self.headUnit.received(request, from: app, now: .now()))
    }

    func handle(_ event: SDLHeadUnitEvent) {
        switch event {
        case .appConnected(let app):
            let handle = self.link(app)
            self.act(on: self.headUnit.appConnected(handle))
        case .appRegistered(let app, _):
            self.links[Self.handle(of: app)]?.release()
        case .appUnregistered(let app):
            let handle = Self.handle(of: app)
            self.discarded.insert(WaiterKey(app: handle, correlationID: Self.unregistrationCorrelationID))
            self.act(on: self.headUnit.received(
                AnyRPCMessage(SDLUnregisterAppInterfaceRequest(), correlationID: Self.unregistrationCorrelationID), from: handle, now: .now()))
        case .appDisconnected(let app, let reason):
            self.disconnected(app, reason: reason)
        case .serviceStarted(let app, let service, let info, let stream):
            self.startReading(stream, of: service, from: app, info: info)
        case .serviceEnded(let app, let service, let reason):
            let key = MediaKey(app: Self.handle(of: app), service: service)
            let bytes = self.media.withLockedValue { $0.byStream[key] ?? 0 }
            self.log(key.app, "\(service) service ended", "\(reason), \(bytes) bytes received")
        case .notification(let app, let message):
            self.act(on: self.headUnit.received(message, from: Self.handle(of: app), now: .now()))
        case .unreadableMessage(let app, let error):
            self.log(Self.handle(of: app), "unreadable message", "\(error)")
        case .handlerError(let app, let error):
            let handle = Self.handle(of: app)
            self.links[handle]?.release()
            self.log(handle, "answer not sent", "\(error)")
        case .session(let event):
            self.log(nil, "session", "\(event)")
        }
    }

    // MARK: - Acting on the head unit's outputs

    private func act(on outputs: [HeadUnitOutput]) {
        for output in outputs {
            switch output {
            case .log(var line):
                // The correlation ids the state made up mean nothing to a reader of the transcript.
                for made in [Self.registrationCorrelationID, Self.unregistrationCorrelationID] {
                    line.input = line.input.replacing(" #\(made)", with: "")
                }
                self.transcript(line)
            case .registered:
                // The server tells the session engine itself, when it sends the response.
                break
            case .armTimer(let deadline):
                self.arm(deadline)
            case .send(let message, let app):
                switch message.rpcType {
                case .response, .erroneousResponse:
                    let key = WaiterKey(app: app, correlationID: message.correlationID)
                    switch self.waiters.removeValue(forKey: key) {
                    case .registration(let continuation):
                        continuation.resume(returning: message.message)
                    case .request(let request):
                        self.links[app]?.send(.response(message.message, to: request))
                    case nil:
                        if self.discarded.remove(key) == nil {
                            self.log(app, "\(message.functionName) response #\(message.correlationID)", "not sent: no request waits for it")
                        }
                    }
                case .request:
                    self.links[app]?.send(.request(message))
                default:
                    self.links[app]?.send(.notification(message))
                }
            }
        }
    }

    private func arm(_ deadline: NIODeadline) {
        self.timer?.cancel()
        guard !self.stopped else { return }
        self.timer = Task { [weak self] in
            let delay = deadline - .now()
            if delay > .zero {
                do { try await Task.sleep(nanoseconds: UInt64(delay.nanoseconds)) } catch { return }
            }
            await self?.timerFired()
        }
    }

    private func timerFired() {
        self.act(on: self.headUnit.timerFired(now: .now()))
    }

    // MARK: - Apps

    private static func handle(of app: SDLConnectedApp) -> AppHandle {
        AppHandle(UInt64(app.handle.rawValue))
    }

    /// The app's handle, its link made on first sight.
    private func link(_ app: SDLConnectedApp) -> AppHandle {
        let handle = Self.handle(of: app)
        guard self.links[handle] == nil else { return handle }
        let (stream, outbox) = AsyncStream<Outgoing>.makeStream()
        let sender = Task { [weak self] in
            for await item in stream {
                switch item {
                case .response(let response, let request):
                    do {
                        try await app.respond(response, to: request)
                    } catch {
                        await self?.log(handle, "\(request.functionName) response #\(request.correlationID)", "not sent: \(error)")
                    }
                case .notification(let message):
                    do {
                        try await app.sendNotification(message.message)
                    } catch {
                        await self?.log(handle, "\(message.functionName) notification", "not sent: \(error)")
                    }
                case .request(let message):
                    Task { await self?.forward(message, to: app, handle: handle) }
                }
            }
        }
        self.links[handle] = AppLink(app: app, outbox: outbox, sender: sender)
        return handle
    }

    /// Sends a request the head unit forwards to a provider and gives it the provider's answer,
    /// under the head unit's own correlation id. A provider that does not answer is the head
    /// unit's timer's business: it answers the consumer at its deadline.
    private nonisolated func forward(_ request: AnyRPCMessage, to app: SDLConnectedApp, handle: AppHandle) async {
        do {
            let answer = try await app.send(request.message, timeout: .seconds(10))
            await self.providerAnswered(
                AnyRPCMessage(answer.message, correlationID: request.correlationID, isErroneousResponse: answer.isErroneousResponse),
                from: handle)
        } catch {
            await self.log(handle, "\(request.functionName) request #\(request.correlationID)", "no answer: \(error)")
        }
    }

    private func providerAnswered(_ answer: AnyRPCMessage, from app: AppHandle) {
        guard self.links[app] != nil else { return }
        self.act(on: self.headUnit.received(answer, from: app, now: .now()))
    }

    private func disconnected(_ app: SDLConnectedApp, reason: SessionEndReason) {
        let handle = Self.handle(of: app)
        self.act(on: self.headUnit.appDisconnected(handle, now: .now()))
        if let link = self.links.removeValue(forKey: handle) {
            link.outbox.finish()
        }
        if self.departed.insert(handle).inserted {
            self.departedOrder.append(handle)
            if self.departedOrder.count > Self.departedMemory {
                self.departed.remove(self.departedOrder.removeFirst())
            }
        }
        for key in self.waiters.keys where key.app == handle {
            self.waiters.removeValue(forKey: key)?.abandon()
        }
        self.discarded = self.discarded.filter { $0.app != handle }
        self.log(handle, "session ended", "\(reason)")
    }

    // MARK: - Media

    private func startReading(_ stream: SDLMediaStream, of service: ServiceType, from app: SDLConnectedApp, info: ServiceInfo) {
        let key = MediaKey(app: Self.handle(of: app), service: service)
        let media = self.media
        media.withLockedValue { $0.byStream[key] = 0 }
        self.mediaReaders[key]?.cancel()
        self.mediaReaders[key] = Task { [weak self] in
            for await bytes in stream {
                let count = bytes.readableBytes
                media.withLockedValue { counters in
                    counters.byStream[key, default: 0] += count
                    if service == .video { counters.video += count } else { counters.audio += count }
                }
            }
            await self?.readerFinished(key)
        }
        let video = info.video.map { " \($0.width ?? 0)x\($0.height ?? 0) \($0.videoCodec ?? "?")/\($0.videoProtocol ?? "?")" } ?? ""
        self.log(key.app, "\(service) service started", "on the \(info.slot) transport, MTU \(info.mtu ?? 0)\(video)")
    }

    private func readerFinished(_ key: MediaKey) {
        self.mediaReaders[key] = nil
    }

    // MARK: - State

    func statistics() -> SimulatedHeadUnitStatistics {
        var statistics = SimulatedHeadUnitStatistics()
        statistics.connectedApps = self.links.count
        statistics.registeredApps = self.links.keys.count { self.headUnit.hmiLevel(of: $0) != nil }
        statistics.waitingRequests = self.waiters.count
        statistics.mediaStreams = self.mediaReaders.count
        self.media.withLockedValue {
            statistics.audioBytes = $0.audio
            statistics.videoBytes = $0.video
        }
        return statistics
    }

    func inspect<Value: Sendable>(_ body: @Sendable (SimulatedHeadUnit) -> Value) -> Value {
        body(self.headUnit)
    }

    func stop() {
        self.stopped = true
        self.timer?.cancel()
        self.timer = nil
        for (_, reader) in self.mediaReaders { reader.cancel() }
        self.mediaReaders = [:]
        for (_, link) in self.links { link.outbox.finish() }
        self.links = [:]
        for (_, waiter) in self.waiters { waiter.abandon() }
        self.waiters = [:]
    }

    private func log(_ app: AppHandle?, _ input: String, _ outcome: String) {
        self.transcript(TranscriptLine(app: app, input: input, outcome: outcome))
    }
}

// MARK: - Driving the head unit from outside

extension SimulatedHeadUnitServer {
    /// Sends a notification of the caller's own to a connected app, after what the head unit sent
    /// it before, as the head unit would (OnRCStatus `allowed` false, a narrower
    /// OnPermissionsChange, a capability update); false when no such app is connected.
    @discardableResult
    public func notify(_ app: AppHandle, _ notification: any RPCMessage) async -> Bool {
        await self.state.notify(app, notification)
    }

    /// Acts on the simulated head unit (the driver turns a knob, the user changes an app's HMI
    /// level) and carries out what it produces, as for an input of an app.
    public func act(_ body: @Sendable (inout SimulatedHeadUnit) -> [HeadUnitOutput]) async {
        await self.state.act(body)
    }
}

extension SimulationState {
    func notify(_ app: AppHandle, _ notification: any RPCMessage) -> Bool {
        guard let link = self.links[app] else { return false }
        link.send(.notification(AnyRPCMessage(notification, correlationID: 0)))
        return true
    }

    func act(_ body: @Sendable (inout SimulatedHeadUnit) -> [HeadUnitOutput]) {
        self.act(on: body(&self.headUnit))
    }
}
