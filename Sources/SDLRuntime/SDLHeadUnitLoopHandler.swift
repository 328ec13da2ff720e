import NIOCore
import SDLProtocol
import SDLRPC
import SDLSession

/// The logic of a head unit, driven synchronously on the server's event loop: every call is made
/// on the loop, in the order things happened, and what the handler does through its
/// ``SDLHeadUnitContext`` takes effect at once, in order. A response sent while handling a request
/// reaches the app before the notifications sent after it, as SDL Core orders them; nothing hops
/// to another task. Made for state machines such as the simulated head unit (`SDLTestHeadUnit`'s
/// `SimulatedHeadUnit`); a head unit written with async/await implements ``SDLHeadUnitHandler``
/// instead.
///
/// The server answers on its own what never reaches the handler: requests before registration
/// (APPLICATION_NOT_REGISTERED), a second RegisterAppInterface (APPLICATION_REGISTERED_ALREADY),
/// requests that break the spec (INVALID_DATA) or name no function of it (UNSUPPORTED_REQUEST), a
/// correlation id still waiting for its answer (INVALID_ID), and more than
/// ``SDLHeadUnitConfiguration/maxPendingRequestsPerApp`` requests waiting (TOO_MANY_PENDING_REQUESTS).
public protocol SDLHeadUnitLoopHandler: AnyObject {
    /// The server runs: `context` is how the handler acts on apps from now on. Called once, first.
    func serverStarted(_ context: SDLHeadUnitContext)

    /// What happened, in order. Answer every ``SDLHeadUnitLoopEvent/request(_:from:)`` once with
    /// ``SDLHeadUnitContext/respond(_:to:of:)``, now or later (a request forwarded to another app
    /// is answered when that app answers); RegisterAppInterface and UnregisterAppInterface
    /// included: a successful answer registers or unregisters the app.
    func handle(_ event: SDLHeadUnitLoopEvent)

    /// An app asks to start audio or video (after registering; the protocol's own checks passed):
    /// accept it, or refuse it with a reason the StartServiceNAK carries.
    func decideServiceStart(_ service: ServiceType, of app: SessionHandle, parameters: VideoParameters?) -> SDLServiceStartDecision
}

/// Whether an app may start audio or video.
public enum SDLServiceStartDecision: Hashable, Sendable {
    /// StartServiceACK.
    case accept
    /// StartServiceNAK with this reason (from protocol version 5.3.0).
    case refuse(reason: String)
}

/// What an ``SDLHeadUnitLoopHandler`` hears.
public enum SDLHeadUnitLoopEvent {
    /// An app started a session (its RPC service).
    case appConnected(SessionHandle, SessionInfo)
    /// A request of the app, read strictly; answer it once.
    case request(AnyRPCMessage, from: SessionHandle)
    /// A notification of the app, read strictly.
    case notification(AnyRPCMessage, from: SessionHandle)
    /// The payload of one audio or video message of the app, which arrived on `transport`
    /// (``SDLHeadUnitContext/holdReads(on:)`` stops reading it while a consumer lags).
    case media(ByteBuffer, ServiceType, from: SessionHandle, transport: TransportID)
    /// An audio or video service of the app runs.
    case serviceStarted(SessionHandle, ServiceType, ServiceInfo)
    /// An audio or video service of the app stopped.
    case serviceEnded(SessionHandle, ServiceType, ServiceEndReason)
    /// The app sent more than ``HeadUnitSettings/floodLimit`` allows. Its transport is no longer
    /// read; tell the app what you want it to know (SDL Core: OnAppInterfaceUnregistered
    /// TOO_MANY_REQUESTS) now: once that left, or after ``SDLTransportConfiguration/closeTimeout``,
    /// the server ends the session and closes the connection when no other session uses it.
    case appFlooded(SessionHandle)
    /// An app's session ended; its services were reported ended before. Requests it sent and
    /// that were not answered are forgotten.
    case appDisconnected(SessionHandle, SessionEndReason)
    /// An RPC of the app that could not be read. A request was answered already (INVALID_DATA,
    /// or UNSUPPORTED_REQUEST for an unknown function); anything else was dropped.
    case unreadableMessage(SessionHandle, RPCError)
    /// Notifications to the app were dropped because it had ``SDLHeadUnitConfiguration/maxQueuedBytesPerApp``
    /// bytes unread: it does not read. `total` counts the drops of this app.
    case notificationsDropped(SessionHandle, total: Int)
    /// Anything else the session engine reported: anomalies, protocol errors, refused starts,
    /// transports closing.
    case session(SessionEvent)
    /// The server stopped: every connection closed. The last event.
    case serverStopped
}

/// What a head unit's logic acts through, on the server's event loop only (it is not
/// `Sendable`: keep it in the handler, which lives on the loop).
public final class SDLHeadUnitContext {
    unowned let core: HeadUnitCore

    init(core: HeadUnitCore) {
        self.core = core
    }

    /// The server's event loop.
    public var eventLoop: any EventLoop { self.core.driver.eventLoop }

    /// Answers a request of the app, once, with a response of its function and its correlation
    /// id (validated strictly). A successful RegisterAppInterface response registers the app,
    /// a successful UnregisterAppInterface response unregisters it. Throws
    /// ``SDLConnectionError/Code/alreadyAnswered`` for a request answered already, not received,
    /// or of an app that left; ``SDLConnectionError/Code/invalidMessage`` for a response of
    /// another function or one that breaks the spec (the app is answered GENERIC_ERROR instead).
    public func respond(_ response: any RPCMessage, to request: AnyRPCMessage, of app: SessionHandle) throws(SDLConnectionError) {
        try self.core.respond(response, to: request, of: app)
    }

    /// Sends a notification to the app (validated strictly; correlation id 0xFFFFFFFF, as SDL
    /// Core's). Returns false when it was dropped: the app has not read what was sent to it
    /// before (``SDLHeadUnitLoopEvent/notificationsDropped(_:total:)``). Throws
    /// ``SDLConnectionError/Code/disconnected`` for an app that left and
    /// ``SDLConnectionError/Code/invalidMessage`` for a message that is not a notification or
    /// breaks the spec.
    @discardableResult
    public func sendNotification(_ notification: any RPCMessage, to app: SessionHandle) throws(SDLConnectionError) -> Bool {
        try self.core.sendNotification(notification, to: app)
    }

    /// Sends a request to the app (an app-service provider is asked for data, an interaction or
    /// an RPC it handles); `completion` gets the app's response (read as requests are), or fails
    /// after `timeout`, when the app leaves, or when the response cannot be read. Called on the
    /// loop, once.
    public func sendRequest(
        _ request: any RPCMessage, to app: SessionHandle, timeout: TimeAmount = .seconds(10),
        completion: @escaping (Result<AnyRPCMessage, SDLConnectionError>) -> Void
    ) {
        self.core.sendRequest(request, to: app, timeout: timeout, completion: completion)
    }

    /// Ends an audio or video service of the app: EndService, then its frames are dropped for
    /// ``HeadUnitSettings/streamingGracePeriod``.
    public func endService(_ service: ServiceType, of app: SessionHandle) throws(SDLConnectionError) {
        try self.core.endService(service, of: app)
    }

    /// Ends the app's session: EndService(RPC); the session ends at once.
    public func endSession(_ app: SessionHandle) throws(SDLConnectionError) {
        try self.core.endSession(app)
    }

    /// Stops reading from a transport until ``releaseReads(on:)`` (a consumer of its media lags):
    /// the app's writes stop once the link's buffers fill.
    public func holdReads(on transport: TransportID) {
        self.core.driver.pauseReads(on: transport)
    }

    /// Lifts one ``holdReads(on:)``.
    public func releaseReads(on transport: TransportID) {
        self.core.driver.resumeReads(on: transport)
    }

    /// The session of a connected app, as it started.
    public func sessionInfo(of app: SessionHandle) -> SessionInfo? {
        self.core.sessionInfo(of: app)
    }

    /// Whether the app is registered (its RegisterAppInterface was answered with success).
    public func isRegistered(_ app: SessionHandle) -> Bool {
        self.core.isRegistered(app)
    }

    /// The apps with a running session, in the order they connected.
    public var connectedApps: [SessionHandle] {
        self.core.connectedHandles
    }

    /// Bytes queued for the app and not yet written to its transports.
    public func queuedBytes(of app: SessionHandle) -> Int {
        self.core.queuedBytes(of: app)
    }
}
