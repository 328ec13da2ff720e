import NIOCore
import Logging
import SDLProtocol
import SDLRPC
import SDLSession

/// An app's connection to a head unit over any ``SDLAppTransport`` (TCP with `SDLNIO`: an SDL Core
/// listens on port 12345 by default): one session, its RPCs as async calls, notifications as
/// `AsyncSequence`s, audio and video with back-pressure (ARCHITECTURE.md §4).
///
/// ```swift
/// let connection = try await SDLAppConnection.connect(host: "127.0.0.1", port: 12345)
/// let registration = try await connection.register(SDLRegisterAppInterfaceRequest(…))
/// let response: SDLAddCommandResponse = try await connection.send(SDLAddCommandRequest(…))
/// for await status in connection.notifications(of: SDLOnHMIStatus.self) { … }
/// await connection.disconnect()
/// ```
///
/// Everything runs on one event loop: the session engine, its connections and timers, the requests
/// waiting for responses. The methods may be called from any task; they are safe to call
/// concurrently.
public final class SDLAppConnection: Sendable {
    /// The event loop the connection runs on.
    public let eventLoop: any EventLoop
    /// What the connection reports besides responses and notifications: the session's end,
    /// services ending, drops, anomalies; it finishes once the session has ended and every
    /// transport closed. Bounded by ``SDLAppConfiguration/eventBufferSize``:
    /// when it is not read the oldest events are dropped and counted
    /// (``SDLAppStatistics/droppedEvents``).
    public let events: AsyncStream<SDLAppEvent>
    /// The session as the head unit's StartServiceACK set it up.
    public let sessionInfo: SessionInfo
    private let core: LoopBound<AppCore>
    /// The core's queue of streams opened here, added before it handles its next message.
    private let preceding: PrecedingWork<AppCore>
    private let configuration: SDLAppConfiguration

    /// A connection dropped without ``disconnect()`` or ``close()`` closes its transports.
    deinit {
        self.core.execute { $0.close(completion: nil) }
    }

    private init(
        core: LoopBound<AppCore>, preceding: PrecedingWork<AppCore>, events: AsyncStream<SDLAppEvent>, sessionInfo: SessionInfo,
        configuration: SDLAppConfiguration
    ) {
        self.core = core
        self.preceding = preceding
        self.eventLoop = core.eventLoop
        self.events = events
        self.sessionInfo = sessionInfo
        self.configuration = configuration
    }

    /// Connects to a head unit over `transport` and starts a session: StartService(RPC) on session
    /// 0, answered by StartServiceACK (protocol spec 5.4.1 §3.1.1). Throws
    /// ``SDLConnectionError/Code/connectFailed`` when the transport does not open and
    /// ``SDLConnectionError/Code/sessionRejected`` when the head unit refuses or does not answer
    /// (``AppSettings/sessionStartTimeout``). Runs on `eventLoop`, or on one of the transport's
    /// ``SDLAppTransport/defaultEventLoopGroup``. Close the connection with ``disconnect()`` or
    /// ``close()``; ``withSDLAppConnection(to:configuration:eventLoop:logger:_:)`` does it for you.
    ///
    /// The event loop must outlive the connection: SwiftNIO drops work sent to a loop that has shut
    /// down (it prints an error), so a call made on the connection afterwards would never return.
    /// End the connection before shutting down an event-loop group of your own; a scope does.
    public static func connect(
        to transport: some SDLAppTransport, configuration: SDLAppConfiguration = SDLAppConfiguration(),
        eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger
    ) async throws(SDLConnectionError) -> SDLAppConnection {
        let loop = eventLoop ?? transport.defaultEventLoopGroup.any()
        let (events, continuation) = AsyncStream<SDLAppEvent>.makeStream(
            bufferingPolicy: .bufferingNewest(max(1, configuration.eventBufferSize)))
        let core: LoopBound<AppCore>
        let preceding = PrecedingWork<AppCore>()
        do {
            core = try await loop.submit {
                LoopBound(
                    AppCore(configuration: configuration, eventLoop: loop, events: continuation, logger: logger, preceding: preceding),
                    eventLoop: loop)
            }.get()
        } catch {
            throw SDLConnectionError(.connectFailed, "the event loop is shut down: \(error)")
        }
        let info = try await core.run { core, completion in
            core.connect(to: transport, completion: completion)
        } onCancel: { core, _ in
            core.cancelConnect()
        }
        return SDLAppConnection(core: core, preceding: preceding, events: events, sessionInfo: info, configuration: configuration)
    }

    /// A logger that logs nothing: the default of every runtime, which stays quiet unless given
    /// a logger.
    public static let silentLogger = Logger(label: "sdl", factory: { _ in SwiftLogNoOpLogHandler() })

    // MARK: - Registration

    /// Registers the app: sends RegisterAppInterface and keeps the response and the RPC version
    /// both sides speak. Audio and video may start afterwards. Throws
    /// ``SDLConnectionError/Code/registrationFailed`` when the head unit answers `success` false
    /// (the detail names its `resultCode` and `info`).
    @discardableResult
    public func register(_ request: SDLRegisterAppInterfaceRequest) async throws(SDLConnectionError) -> SDLRegisterAppInterfaceResponse {
        let response: SDLRegisterAppInterfaceResponse = try await self.send(request)
        guard response.success else {
            throw SDLConnectionError(.registrationFailed, "\(response.resultCode)" + (response.info.map { ": \($0)" } ?? ""))
        }
        let requested = request.syncMsgVersion
        try await self.core.run { core, completion in
            core.registered(response, requested: requested, completion: completion)
        }
        return response
    }

    /// The head unit's RegisterAppInterface response while the app is registered.
    public var registration: SDLRegisterAppInterfaceResponse? {
        get async { await self.read { $0.registration } }
    }

    /// The RPC version both sides speak: the lower of the app's `syncMsgVersion` and the head
    /// unit's, while registered.
    public var rpcVersion: SDLSyncMsgVersion? {
        get async { await self.read { $0.registeredRPCVersion } }
    }

    /// The last OnHMIStatus of the main window (no `windowID`, or 0).
    public var hmiStatus: SDLOnHMIStatus? {
        get async { await self.read { $0.hmiStatus } }
    }

    /// The last OnPermissionsChange while registered: which RPCs the app may send at which HMI
    /// levels. SDL Core sends one after registration and again when the policy changes.
    public var permissions: SDLOnPermissionsChange? {
        get async { await self.read { $0.permissions } }
    }

    /// Why the head unit unregistered the app (its OnAppInterfaceUnregistered), if it did; kept
    /// after the session ended, so that a caller learns why it ended.
    public var unregisteredReason: SDLAppInterfaceUnregisteredReason? {
        get async { await self.read { $0.unregisteredReason } }
    }

    /// Counters of what the connection dropped or could not match, and the bytes it has queued.
    public var statistics: SDLAppStatistics {
        get async { await self.read { $0.snapshotStatistics() } }
    }

    /// Unregisters the app (UnregisterAppInterface); the session stays up.
    public func unregister() async throws(SDLConnectionError) {
        let response: SDLUnregisterAppInterfaceResponse = try await self.send(SDLUnregisterAppInterfaceRequest())
        guard response.success else {
            throw SDLConnectionError(.refused, "UnregisterAppInterface: \(response.resultCode)")
        }
        self.core.execute { $0.unregistered() }
    }

    // MARK: - Requests

    /// Sends a request and waits for its response (any function; the response is decoded by
    /// ``SDLAppConfiguration/receiveOptions``). A correlation id is assigned per connection. Throws
    /// ``SDLConnectionError/Code/timeout`` after `timeout` (default
    /// ``SDLAppConfiguration/requestTimeout``), ``SDLConnectionError/Code/cancelled`` when the
    /// calling task is cancelled (the request is forgotten; if it was already written its response
    /// is reported unmatched), ``SDLConnectionError/Code/disconnected`` when the session ends
    /// first. A request waits while the RPC queue is full
    /// (``SDLTransportConfiguration/maxQueuedBytesPerService``).
    public func send(
        _ request: any RPCMessage, bulkData: ByteBuffer = ByteBuffer(), timeout: TimeAmount? = nil
    ) async throws(SDLConnectionError) -> AnyRPCMessage {
        let timeout = timeout ?? self.configuration.requestTimeout
        return try await self.core.run { core, completion in
            core.send(request, bulkData: bulkData, timeout: timeout, completion: completion)
        } onCancel: { core, completion in
            core.cancel(completion)
        }
    }

    /// Sends a request and returns its response as the response type of the request's function,
    /// e.g. `let response: SDLShowResponse = try await connection.send(SDLShowRequest(…))`. An
    /// erroneous response (RPC type 0x3) is returned as the response it carries.
    public func send<Response: RPCMessage>(
        _ request: some RPCMessage, bulkData: ByteBuffer = ByteBuffer(), timeout: TimeAmount? = nil, as responseType: Response.Type = Response.self
    ) async throws(SDLConnectionError) -> Response {
        let requestType = type(of: request)
        guard Response.rpcType == .response, Response.functionID == requestType.functionID else {
            throw SDLConnectionError(
                .invalidMessage, "\(Response.self) is not the response of \(requestType.functionName)")
        }
        let message: AnyRPCMessage = try await self.send(request as any RPCMessage, bulkData: bulkData, timeout: timeout)
        guard let response = message.message as? Response else {
            throw SDLConnectionError(.invalidResponse, "expected \(Response.self), got \(type(of: message.message))")
        }
        return response
    }

    /// Sends a notification to the head unit (e.g. OnAppCapabilityUpdated); returns once the
    /// session engine has it, after waiting while the RPC queue is full.
    public func sendNotification(_ notification: any RPCMessage) async throws(SDLConnectionError) {
        try await self.core.run { core, completion in
            core.sendNotification(notification, completion: completion)
        }
    }

    // MARK: - Notifications

    /// The notifications of one function, from the moment the subscription reaches the
    /// connection's event loop until the stream is dropped or the session ends (the stream then
    /// finishes). The stream
    /// holds up to `bufferSize` (default ``SDLAppConfiguration/notificationBufferSize``)
    /// notifications; when the reader falls behind the oldest are dropped and each drop is
    /// reported as ``SDLAppEvent/notificationsDropped(functionName:total:)``.
    public func notifications<Notification: RPCMessage>(
        of type: Notification.Type, bufferSize: Int? = nil
    ) -> AsyncStream<Notification> {
        self.stream(of: type, bufferSize: bufferSize) { $0 }
    }

    /// The HMI status of the main window: the current one first if there is one, then every
    /// change (OnHMIStatus without `windowID`, or 0).
    public func hmiStatusUpdates() -> AsyncStream<SDLOnHMIStatus> {
        self.stream(of: SDLOnHMIStatus.self, current: { $0.hmiStatus }) { $0.windowID == nil || $0.windowID == 0 ? $0 : nil }
    }

    /// The app's permissions: the current ones first if there are, then every OnPermissionsChange.
    public func permissionUpdates() -> AsyncStream<SDLOnPermissionsChange> {
        self.stream(of: SDLOnPermissionsChange.self, current: { $0.permissions }) { $0 }
    }

    /// A stream of what `transform` makes of the notifications of one type (nil skips one),
    /// starting with `current` when the connection keeps such a value.
    private func stream<Notification: RPCMessage, Element: Sendable>(
        of type: Notification.Type, bufferSize: Int? = nil, current: (@Sendable (AppCore) -> Element?)? = nil,
        _ transform: @escaping @Sendable (Notification) -> Element?
    ) -> AsyncStream<Element> {
        let size = max(1, bufferSize ?? self.configuration.notificationBufferSize)
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(size))
        let functionID = Notification.functionID
        self.core.executeBeforeNextInput(self.preceding) { core in
            if let value = current?(core) {
                continuation.yield(value)
            }
            let id = core.subscribe(functionID: functionID, functionName: Notification.functionName, finish: { continuation.finish() }) { message in
                guard let notification = message.message as? Notification, let element = transform(notification) else { return .delivered }
                return AsyncStreamYieldOutcome(continuation.yield(element))
            }
            guard let id else { return }
            let bound = self.core
            continuation.onTermination = { _ in
                bound.execute { $0.unsubscribe(id, functionID: functionID) }
            }
        }
        return stream
    }

    // MARK: - System capabilities

    /// Asks the head unit for one system capability (GetSystemCapability, RPC 4.5+) and, with
    /// `subscribe` (RPC 5.1+), subscribes to its updates: read them with
    /// ``systemCapabilityUpdates(of:)``. Throws ``SDLConnectionError/Code/requestFailed`` when
    /// the head unit answers `success` false, ``SDLConnectionError/Code/invalidResponse`` when
    /// a successful answer carries no capability of that type.
    public func systemCapability(
        _ type: SDLSystemCapabilityType, subscribe: Bool? = nil
    ) async throws(SDLConnectionError) -> SDLSystemCapability {
        let response: SDLGetSystemCapabilityResponse = try await self.send(
            SDLGetSystemCapabilityRequest(systemCapabilityType: type, subscribe: subscribe))
        guard response.success else {
            throw SDLConnectionError(.requestFailed, "GetSystemCapability \(type): \(response.resultCode)" + (response.info.map { ": \($0)" } ?? ""))
        }
        guard let capability = response.systemCapability, capability.systemCapabilityType == type else {
            throw SDLConnectionError(.invalidResponse, "GetSystemCapability \(type): no \(type) capability in a successful response")
        }
        return capability
    }

    /// The OnSystemCapabilityUpdated notifications of one capability type, as they come (for
    /// APP_SERVICES each carries only the services that changed, with their update reasons).
    public func systemCapabilityUpdates(of type: SDLSystemCapabilityType) -> AsyncStream<SDLSystemCapability> {
        self.stream(of: SDLOnSystemCapabilityUpdated.self) { $0.systemCapability.systemCapabilityType == type ? $0.systemCapability : nil }
    }

    // MARK: - Requests from the head unit

    /// The requests the head unit sends to this app, of `functions` (every function when nil),
    /// from the moment the stream reaches the connection's event loop until it is dropped or the
    /// session ends. An app-service provider reads GetAppServiceData,
    /// PerformAppServiceInteraction and the RPCs of its `handledRPCs` here and answers each with
    /// ``respond(_:to:)``. A request goes to the first open stream that takes its function; one
    /// no stream takes is answered UNSUPPORTED_REQUEST, and one that finds its stream's buffer
    /// (`bufferSize`, default ``SDLAppConfiguration/notificationBufferSize``) full is answered
    /// TOO_MANY_PENDING_REQUESTS: the head unit always gets an answer.
    public func incomingRequests(of functions: [FunctionID]? = nil, bufferSize: Int? = nil) -> AsyncStream<SDLIncomingRequest> {
        let size = max(1, bufferSize ?? self.configuration.notificationBufferSize)
        let (stream, continuation) = AsyncStream<SDLIncomingRequest>.makeStream(bufferingPolicy: .bufferingOldest(size))
        let filter = functions.map { Set($0.map(\.rawValue)) }
        self.core.executeBeforeNextInput(self.preceding) { core in
            let id = core.listenForRequests(functions: filter, finish: { continuation.finish() }) { request in
                AsyncStreamYieldOutcome(continuation.yield(request))
            }
            guard let id else { return }
            let bound = self.core
            continuation.onTermination = { _ in
                bound.execute { $0.stopListeningForRequests(id) }
            }
        }
        return stream
    }

    /// Answers a request of the head unit with a response of its function (validated strictly,
    /// with the request's correlation id), once. Throws ``SDLConnectionError/Code/alreadyAnswered``
    /// for a request answered already (or never received); ``SDLConnectionError/Code/invalidMessage``
    /// for a response of another function or one that breaks the spec (the request may then be
    /// answered again); ``SDLConnectionError/Code/disconnected`` when the session has ended.
    public func respond(_ response: any RPCMessage, to request: SDLIncomingRequest) async throws(SDLConnectionError) {
        try await self.core.run { core, completion in
            core.respond(response, to: request, completion: completion)
        }
    }

    // MARK: - Audio and video

    /// Starts the video service (protocol spec 5.4.1 §3.1.3.4) where the head unit's
    /// `videoServiceTransports` put it, connecting and registering the secondary transport first if
    /// needed (ARCHITECTURE.md, D-secondary), and returns a writer for the byte stream. Needs a
    /// registered app. Throws ``SDLConnectionError/Code/serviceFailed`` when the head unit refuses
    /// or no transport allows it.
    public func startVideo(
        _ parameters: VideoParameters? = nil, protection: ServiceProtection = .none
    ) async throws(SDLConnectionError) -> SDLMediaWriter {
        try await self.startMedia(.video, video: parameters, protection: protection)
    }

    /// Starts the audio service (protocol spec 5.4.1 §3.1.3) and returns a writer for the byte
    /// stream; as ``startVideo(_:protection:)``.
    public func startAudio(protection: ServiceProtection = .none) async throws(SDLConnectionError) -> SDLMediaWriter {
        try await self.startMedia(.audio, video: nil, protection: protection)
    }

    private func startMedia(
        _ service: ServiceType, video: VideoParameters?, protection: ServiceProtection
    ) async throws(SDLConnectionError) -> SDLMediaWriter {
        let info = try await self.core.run { core, completion in
            core.startMedia(service, video: video, protection: protection, completion: completion)
        } onCancel: { core, completion in
            core.cancelStart(service, completion)
        }
        return SDLMediaWriter(core: self.core, service: service, info: info, maxMessageSize: self.configuration.maxMediaMessageSize)
    }

    // MARK: - Ending

    /// Ends the session gracefully: EndService(RPC) with the session's hash, answered by the head
    /// unit or timed out (``SessionConfiguration/serviceEndTimeout``), then every transport
    /// closes. Requests still waiting fail with ``SDLConnectionError/Code/disconnected``.
    public func disconnect() async {
        _ = try? await self.core.run { core, completion in
            core.disconnect(completion: completion)
        }
    }

    /// ``disconnect()``, waited for to its end even by a cancelled task.
    func disconnectToTheEnd() async {
        _ = await self.core.runToEnd { core, completion in
            core.disconnect(completion: completion)
        }
    }

    /// Closes every transport at once, without EndService: the session ends as if the transport
    /// was lost.
    public func close() async {
        _ = try? await self.core.run { core, completion in
            core.close(completion: completion)
        }
    }

    private func read<Value: Sendable>(_ body: @escaping @Sendable (AppCore) -> Value) async -> Value {
        // Reading cannot fail; cancellation only makes it return early, which `try?` cannot express
        // for a non-optional value, so the read itself ignores cancellation.
        await withCheckedContinuation { continuation in
            self.core.execute { continuation.resume(returning: body($0)) }
        }
    }
}

/// What a subscriber's stream did with a notification.
enum AsyncStreamYieldOutcome {
    case delivered, dropped, terminated

    init<Element>(_ result: AsyncStream<Element>.Continuation.YieldResult) {
        switch result {
        case .enqueued: self = .delivered
        case .dropped: self = .dropped
        case .terminated: self = .terminated
        @unknown default: self = .delivered
        }
    }
}

/// Writes an audio or video byte stream to a running service, with back-pressure: a write returns
/// once the session engine has taken the bytes, and waits while the service's queue holds
/// ``SDLTransportConfiguration/maxQueuedBytesPerService`` or more (a head unit that reads slowly
/// makes the writer wait; it never makes the queue grow). Writes are cut into messages of at most
/// ``SDLAppConfiguration/maxMediaMessageSize`` bytes, slices of the buffer given.
public struct SDLMediaWriter: Sendable {
    /// `.audio` or `.video`.
    public let service: ServiceType
    /// The service as it started: its transport, MTU, protection, accepted video parameters.
    public let info: ServiceInfo
    private let core: LoopBound<AppCore>
    private let maxMessageSize: Int

    init(core: LoopBound<AppCore>, service: ServiceType, info: ServiceInfo, maxMessageSize: Int) {
        self.core = core
        self.service = service
        self.info = info
        self.maxMessageSize = max(1, maxMessageSize)
    }

    /// Writes bytes of the stream. Throws ``SDLConnectionError/Code/serviceFailed`` when the
    /// service has ended (by either side, or with its transport) and
    /// ``SDLConnectionError/Code/cancelled`` when the task is cancelled (bytes written before stay
    /// written).
    public func write(_ bytes: ByteBuffer) async throws(SDLConnectionError) {
        guard bytes.readableBytes > 0 else { return }
        let service = self.service
        let maxMessageSize = self.maxMessageSize
        // One hop to the event loop per write, not per message: the loop cuts and queues the
        // messages while the stream has room.
        try await self.core.run { core, completion in
            core.writeMedia(service, bytes, maxMessageSize: maxMessageSize, completion: completion)
        }
    }

    /// Ends the service: what was written goes out first, then EndService, answered by the head
    /// unit or timed out (``SessionConfiguration/serviceEndTimeout``). Returns how it ended:
    /// ``ServiceEndReason/local`` when the head unit answered, ``ServiceEndReason/endTimedOut``
    /// when it did not, or the reason it had ended before (the head unit's EndService, the
    /// transport or the session gone).
    @discardableResult
    public func finish() async -> ServiceEndReason {
        let service = self.service
        return (try? await self.core.run { core, completion in
            core.endMedia(service, completion: completion)
        }) ?? .local
    }
}

/// Runs `body` with a connection to a head unit: connects over `transport` and starts a session
/// (as ``SDLAppConnection/connect(to:configuration:eventLoop:logger:)`` does), gives `body` the
/// connection, and when `body` returns or throws, or the calling task is cancelled, ends the
/// session as ``SDLAppConnection/disconnect()`` does (UnregisterAppInterface is the app's to
/// send) and waits until it has ended: nothing the connection started (transports, timers,
/// streams) outlives this call, cancelled or not.
///
/// ```swift
/// try await withSDLAppConnection(to: SDLTCPTransport(host: "127.0.0.1", port: 12345)) { app in
///     try await app.register(registration)
///     …
/// }
/// ```
public func withSDLAppConnection<Result: Sendable>(
    to transport: some SDLAppTransport, configuration: SDLAppConfiguration = SDLAppConfiguration(),
    eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger,
    _ body: (SDLAppConnection) async throws -> Result
) async throws -> Result {
    let connection = try await SDLAppConnection.connect(to: transport, configuration: configuration, eventLoop: eventLoop, logger: logger)
    let result: Result
    do {
        result = try await body(connection)
    } catch {
        await connection.disconnectToTheEnd()
        throw error
    }
    await connection.disconnectToTheEnd()
    return result
}
