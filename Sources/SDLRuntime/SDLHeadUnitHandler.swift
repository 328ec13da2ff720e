#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import SDLProtocol
import SDLRPC
import SDLSession

/// Every setting of an ``SDLHeadUnitServer``, each with a documented default. The session
/// defaults are the engine's (``HeadUnitSettings``, after the decisions of ARCHITECTURE.md §3).
public struct SDLHeadUnitConfiguration: Sendable {
    /// The address the server listens on. Default "127.0.0.1".
    public var host = "127.0.0.1"

    /// The port apps connect to; 0 picks a free one (``SDLHeadUnitServer/primaryPort`` tells
    /// which). Default 12345, SDL Core's.
    public var primaryPort = 12345

    /// The port of the secondary transport, offered to sessions at 5.1.0 or later in
    /// TransportEventUpdate (protocol spec 5.4.1 §3.1.7); 0 picks a free one; nil offers no
    /// secondary transport (multiple transports off). Default nil.
    public var secondaryPort: Int?

    /// The address sent in TransportEventUpdate for the secondary transport; nil sends ``host``
    /// (set it when listening on "0.0.0.0"). Default nil.
    public var secondaryAddress: String?

    /// The port sent in TransportEventUpdate for the secondary transport; nil sends the port the
    /// secondary listener is bound to. Set it when apps reach that listener through a forwarder
    /// (port forwarding, a NAT, `adb reverse`, a test proxy). Default nil.
    public var secondaryAdvertisedPort: Int?

    /// Where audio and video may run when a secondary transport is offered, in order of
    /// preference. Default primary, then secondary (SDL Core's default lists).
    public var audioServiceTransports: [TransportSlot] = [.primary, .secondary]
    /// See ``audioServiceTransports``.
    public var videoServiceTransports: [TransportSlot] = [.primary, .secondary]

    /// The session engine's settings (head unit role). The secondary transport offer is made from
    /// ``secondaryPort`` and the lists above.
    public var session: SessionConfiguration = SessionConfiguration(role: .headUnit)

    /// How bytes move between the sockets and the engine, and the back-pressure bounds.
    public var transport = SDLTransportConfiguration()

    /// How RPCs from apps are decoded: strictly, validated against the spec; a request that
    /// breaks it is answered INVALID_DATA, as SDL Core does. Default `.default`.
    public var receiveOptions: RPCCodingOptions = .default

    /// How our own RPCs are encoded: validated before they are written. Default `.default`.
    public var sendOptions: RPCCodingOptions = .default

    /// Bytes of responses and notifications queued for one app and not yet written to it beyond
    /// which notifications to it are dropped and counted (``SDLHeadUnitEvent/notificationsDropped(_:total:)``):
    /// an app that does not read never makes the head unit hold more. Default 256 KiB.
    public var maxQueuedBytesPerApp = 256 * 1024

    /// The largest RPC parameters (the JSON or BSON after the binary header; bulk data aside) the
    /// server reads; a larger request is answered INVALID_DATA without being parsed, so that one
    /// app's huge request cannot take the event loop from the others. Default 1 MiB (SDL Core's
    /// largest messages are about 16 KB).
    public var maxRPCParametersSize = 1 << 20

    /// The most connections at once. Beyond it the oldest connection that carries no registered
    /// app is closed to make room, so idle connections cannot keep a new app out. It must stay
    /// below the process's descriptor limit (`ulimit -n`), with room for files: a connection the
    /// kernel cannot give a descriptor is never seen, and cannot make room. Default 512, or three
    /// quarters of the descriptor limit less 16 when that is lower (32 with `ulimit -n 64`).
    public var maxConnections = Self.defaultMaxConnections

    /// See ``maxConnections``.
    public static var defaultMaxConnections: Int {
        var limit = rlimit()
        guard getrlimit(descriptorLimitResource, &limit) == 0, limit.rlim_cur < rlim_t(Int32.max) else { return 512 }
        let descriptors = Int(clamping: limit.rlim_cur)
        return max(1, min(512, descriptors / 4 * 3 - 16))
    }

    /// How long a connection may stay open without starting a session before it is closed; nil:
    /// no limit. Default 10 s.
    public var connectionStartTimeout: TimeAmount? = .seconds(10)

    /// Requests of one app being handled at once (given to the handler and not answered yet);
    /// more are answered TOO_MANY_PENDING_REQUESTS without reaching the handler. Default 100.
    public var maxPendingRequestsPerApp = 100

    /// Events and requests waiting for the handler beyond which the server stops reading from
    /// every connection until the handler catches up (below half of it). Default 64.
    public var handlerBacklog = 64

    /// Audio or video messages a media stream holds unread beyond which the server stops reading
    /// from the transport carrying them until the reader catches up (below a quarter of it).
    /// Default 16.
    public var mediaBacklog = 16

    /// The defaults.
    public init() {}
}

/// The application logic of a head unit written with async/await: answers registrations and
/// requests, hears everything else as events. Its methods are called from tasks of the server:
/// events one at a time and in order, requests concurrently (each in a child task of the
/// server's). A head unit whose logic is a state machine on the event loop implements
/// ``SDLHeadUnitLoopHandler`` instead, and answers in order with its notifications without any
/// task.
public protocol SDLHeadUnitHandler: Sendable {
    /// Answers an app's RegisterAppInterface (read strictly). A `success` response registers the
    /// app: its other requests reach ``answer(_:from:)`` from then on, and audio and video may
    /// start. The default accepts every app, answering RPC version 8.0.0 (the spec's).
    func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse

    /// Answers a request of a registered app (read strictly: requests that break the spec are
    /// answered INVALID_DATA, a correlation id still waiting for its answer INVALID_ID (SDL-0162),
    /// a request beyond ``SDLHeadUnitConfiguration/maxPendingRequestsPerApp``
    /// TOO_MANY_PENDING_REQUESTS, without reaching here; UnregisterAppInterface is answered by the
    /// server). The default answers UNSUPPORTED_REQUEST, as SDL Core answers what it does not
    /// implement.
    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer

    /// Hears what happens: apps connecting, registering, disconnecting, services, notifications.
    /// The server stops reading from the apps while too many events wait
    /// (``SDLHeadUnitConfiguration/handlerBacklog``): a slow handler slows the apps down, it does
    /// not make the server's memory grow. The default ignores events.
    func handle(_ event: SDLHeadUnitEvent) async
}

extension SDLHeadUnitHandler {
    /// Accepts the app with RPC version 8.0.0.
    public func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        SDLRegisterAppInterfaceResponse(
            success: true, resultCode: .success,
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0))
    }

    /// Answers UNSUPPORTED_REQUEST.
    public func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer { .unsupported }

    /// Ignores the event.
    public func handle(_ event: SDLHeadUnitEvent) async {}
}

/// How an ``SDLHeadUnitHandler`` answers a request of an app (``SDLHeadUnitHandler/answer(_:from:)``).
/// Every request is answered exactly once, with its function and correlation id.
public enum SDLRequestAnswer: Sendable {
    /// The server sends this response, which must be of the request's function; one that is not,
    /// or breaks the spec, is replaced by GENERIC_ERROR and reported
    /// (``SDLHeadUnitEvent/handlerError(_:_:)``).
    case response(any RPCMessage)
    /// The server answers UNSUPPORTED_REQUEST, as SDL Core answers what it does not implement.
    case unsupported
    /// The handler answers later through ``SDLConnectedApp/respond(_:to:)`` (e.g. once an
    /// app-service provider answered), in order with its notifications. Until then the request
    /// counts against ``SDLHeadUnitConfiguration/maxPendingRequestsPerApp``; the session's end
    /// forgets it.
    case later

    /// ``response(_:)``, or ``unsupported`` for nil.
    public init(_ response: (any RPCMessage)?) {
        self = response.map { .response($0) } ?? .unsupported
    }
}

/// What a head unit server reports to its handler.
public enum SDLHeadUnitEvent: Sendable {
    /// An app started a session (StartService RPC answered with ACK).
    case appConnected(SDLConnectedApp)
    /// An app's RegisterAppInterface was answered with success.
    case appRegistered(SDLConnectedApp, SDLRegisterAppInterfaceRequest)
    /// An app unregistered (UnregisterAppInterface, answered by the server with success); its
    /// session stays and it may register again.
    case appUnregistered(SDLConnectedApp)
    /// An app's session ended; its services were reported ended before.
    case appDisconnected(SDLConnectedApp, SessionEndReason)
    /// An app started audio or video. Its messages arrive on `stream`: read it, or drop it to
    /// discard them. While more than ``SDLHeadUnitConfiguration/mediaBacklog`` messages wait
    /// unread, the transport carrying them is not read (the app's writer waits).
    case serviceStarted(SDLConnectedApp, ServiceType, ServiceInfo, SDLMediaStream)
    /// An app's audio or video service stopped; its stream ends.
    case serviceEnded(SDLConnectedApp, ServiceType, ServiceEndReason)
    /// A notification from an app.
    case notification(SDLConnectedApp, AnyRPCMessage)
    /// An RPC from an app that could not be read. A request was answered (INVALID_DATA, or
    /// UNSUPPORTED_REQUEST for an unknown function); anything else was dropped.
    case unreadableMessage(SDLConnectedApp, RPCError)
    /// A response of the handler that could not be sent (wrong function, breaks the spec: the
    /// app was answered GENERIC_ERROR instead), or a second answer to a request (dropped:
    /// ``SDLConnectionError/Code/alreadyAnswered``).
    case handlerError(SDLConnectedApp, SDLConnectionError)
    /// Notifications to the app were dropped: it has not read
    /// ``SDLHeadUnitConfiguration/maxQueuedBytesPerApp`` bytes sent to it. `total` counts its drops.
    case notificationsDropped(SDLConnectedApp, total: Int)
    /// Anything else the session engine reported: anomalies, protocol errors, refused starts,
    /// transports closing.
    case session(SessionEvent)
}

#if canImport(Glibc)
/// RLIMIT_NOFILE, whose type differs between C libraries.
private let descriptorLimitResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
private let descriptorLimitResource = RLIMIT_NOFILE
#endif
