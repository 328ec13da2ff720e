import NIOCore
import SDLProtocol
import SDLRPC
import SDLSession

/// Every setting of an ``SDLAppConnection``, each with a documented default.
public struct SDLAppConfiguration: Sendable {
    /// The session engine's settings (app role): the protocol version offered (default 5.4.1; set
    /// `maxProtocolVersion` to 4.x to connect as a version 4 app), the secondary-transport
    /// policy, timeouts.
    public var session = SessionConfiguration(role: .app)

    /// How bytes move between the sockets and the engine, and the back-pressure bounds.
    public var transport = SDLTransportConfiguration()

    /// How long a request waits for its response before it fails with
    /// ``SDLConnectionError/Code/timeout``; SDL Core answers within 10 s. Default 10 s.
    public var requestTimeout: TimeAmount = .seconds(10)

    /// How RPCs from the head unit are decoded. Default `.lenient` (real peers are read leniently:
    /// ARCHITECTURE.md, D-rpc-reading): what conforms is typed, a non-conforming optional part is
    /// kept out of the typed value with its data in `droppedParameters`, and every violation is
    /// reported with its path (``SDLAppEvent/violations(functionName:rpcType:correlationID:_:)``,
    /// and `AnyRPCMessage.violations` of what ``SDLAppConnection/send(_:bulkData:timeout:)``
    /// returns). SDL Core 8.2.0's RegisterAppInterface response needs it: 10 of its 12
    /// `displayCapabilities.imageFields` lack the mandatory `imageTypeSupported`. Set `.default` to
    /// refuse such messages.
    public var receiveOptions: RPCCodingOptions = .lenient

    /// How our own RPCs are encoded: validated against the spec before they are written. Default
    /// `.default`.
    public var sendOptions: RPCCodingOptions = .default

    /// The format of the parameters we send. Default JSON, which every head unit reads (BSON only
    /// at protocol version 5).
    public var parameterFormat: RPCParameterFormat = .json

    /// How many notifications of one type a subscriber's stream holds when it is not read fast
    /// enough; beyond it the oldest are dropped and each drop is reported
    /// (``SDLAppEvent/notificationsDropped(functionName:total:)``). Default 64.
    public var notificationBufferSize = 64

    /// How many events ``SDLAppConnection/events`` holds when it is not read; beyond it the oldest
    /// are dropped and counted in ``SDLAppStatistics/droppedEvents``. Default 256.
    public var eventBufferSize = 256

    /// The largest audio or video message a media writer sends: longer writes are cut into
    /// messages of this size (slices, not copies), so that the head unit reassembles bounded
    /// messages and back-pressure acts at this granularity (a service's queue may hold
    /// ``SDLTransportConfiguration/maxQueuedBytesPerService`` plus one message). Each message
    /// costs a fixed amount on both sides whatever its size, so a smaller value costs throughput
    /// on large writes: 64 KiB moves loopback video at about 0.4× a plain socket copy, 256 KiB at
    /// about 0.8×. A write smaller than this is one message. Default 256 KiB.
    public var maxMediaMessageSize = 256 * 1024

    /// How long ``SDLAppConnection/startVideo(_:protection:)`` and
    /// ``SDLAppConnection/startAudio(protection:)`` wait for the service to run, the secondary
    /// transport's address, connection and registration included. Default 15 s.
    public var mediaStartTimeout: TimeAmount = .seconds(15)

    /// The largest RPC parameters (JSON or BSON, bulk data aside) the app reads from the head
    /// unit; a larger message is dropped unparsed (a request answered INVALID_DATA, a response
    /// failing its request). Default 1 MiB (SDL Core's largest are about 16 KB).
    public var maxRPCParametersSize = 1 << 20

    /// The defaults.
    public init() {}
}

/// What an app connection reports besides responses and notifications.
public enum SDLAppEvent: Sendable {
    /// The session ended; every request still waiting failed with
    /// ``SDLConnectionError/Code/disconnected``.
    case sessionEnded(SessionEndReason)
    /// An audio or video service stopped.
    case serviceEnded(ServiceType, ServiceEndReason)
    /// The head unit unregistered the app (OnAppInterfaceUnregistered), for this reason: SDL Core
    /// sends TOO_MANY_REQUESTS to an app above its flood limit, then ends the session.
    case unregistered(SDLAppInterfaceUnregisteredReason)
    /// A subscriber did not keep up: notifications of this function were dropped; `total` counts
    /// them since the connection opened.
    case notificationsDropped(functionName: String, total: Int)
    /// An RPC from the head unit that could not be decoded; it was dropped (a request was
    /// answered INVALID_DATA, or UNSUPPORTED_REQUEST for an unknown function).
    case unreadableMessage(RPCError)
    /// An RPC from the head unit that breaks the spec, read leniently
    /// (``SDLAppConfiguration/receiveOptions``): it was delivered with what conforms, and these are
    /// the violations, each with its parameter path, in parameter order.
    case violations(functionName: String, rpcType: RPCType, correlationID: UInt32, [RPCViolation])
    /// A response whose correlation id no request waits for (it timed out or was cancelled).
    case unmatchedResponse(functionID: FunctionID, correlationID: UInt32)
    /// Anything else the session engine reported: anomalies, protocol errors, the secondary
    /// transport's state, transports closing.
    case session(SessionEvent)
}

/// Counters of what an app connection dropped or could not match.
public struct SDLAppStatistics: Hashable, Sendable {
    /// Notifications dropped because a subscriber's buffer was full.
    public var droppedNotifications = 0
    /// Events dropped because ``SDLAppConnection/events`` was not read.
    public var droppedEvents = 0
    /// Responses no request waited for.
    public var unmatchedResponses = 0
    /// RPCs from the head unit that could not be decoded.
    public var unreadableMessages = 0
    /// RPCs from the head unit read leniently with violations (delivered all the same).
    public var messagesWithViolations = 0
    /// Bytes queued in the session engine towards the head unit (messages, media, control frames
    /// such as heartbeat ACKs), not yet written to the transports.
    public var queuedBytes = 0

    /// Zero counters.
    public init() {}
}

/// A request the head unit sent to the app: an app-service provider is asked for its service's
/// data (GetAppServiceData), an interaction (PerformAppServiceInteraction), or an RPC it listed
/// in its manifest's `handledRPCs`. Answer it once with
/// ``SDLAppConnection/respond(_:to:)``; SDL Core answers the consumer itself when the provider
/// stays silent (10 s).
public struct SDLIncomingRequest: Sendable {
    /// The request, decoded by ``SDLAppConfiguration/receiveOptions``.
    public let message: AnyRPCMessage
    /// The head unit's correlation id, which the response carries.
    public var correlationID: UInt32 { self.message.correlationID }
    /// The spec name of the request's function.
    public var functionName: String { self.message.functionName }

    init(message: AnyRPCMessage) { self.message = message }
}
