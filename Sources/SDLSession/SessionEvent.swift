import NIOCore
import SDLProtocol

/// What the engine asks of the layer that drives it. Drain them with
/// ``SessionEngine/nextAction()`` after every input.
public enum SessionAction: Hashable, Sendable {
    /// Something happened that the layer above should know.
    case event(SessionEvent)
    /// Frames are waiting on the transport: pull them with
    /// ``SessionEngine/nextWrite(on:maxBytes:into:)`` when it can take bytes. Raised once per
    /// idle-to-pending change, not per frame.
    case write(TransportID)
    /// App role: open a secondary transport, then call ``SessionEngine/transportOpened(_:as:now:)``
    /// with `.secondary(request.id)`, or ``SessionEngine/connectFailed(_:now:)``.
    case connect(ConnectRequest)
    /// Close the transport. The engine has already forgotten it; frames still unwritten are
    /// dropped, and ``SessionEngine/transportClosed(_:now:)`` afterwards is ignored.
    case close(TransportID, TransportCloseReason)
    /// Call ``SessionEngine/timerFired(now:)`` at this deadline (or earlier: an early call is
    /// harmless). A later `armTimer` replaces an earlier one.
    case armTimer(NIODeadline)
}

/// A secondary transport the app engine wants opened.
public struct ConnectRequest: Hashable, Sendable {
    /// Quote it back when the transport opens or fails.
    public var id: ConnectRequestID
    /// The session the transport is for.
    public var session: SessionHandle
    /// The head unit's address from TransportEventUpdate `tcpIpAddress`.
    public var host: String
    /// The head unit's port from TransportEventUpdate `tcpPort`.
    public var port: Int32
}

/// Why the engine closes a transport.
public enum TransportCloseReason: Hashable, Sendable {
    /// The layer above asked for it (``SessionEngine/closeTransport(_:now:)``).
    case requested
    /// The last session on the transport ended or failed to start.
    case noSessionsLeft
    /// Too many malformed runs in the window (``HeadUnitSettings/malformedLimit``), or a decoder
    /// that stopped after a bad header (``FrameDecoder/InvalidHeaderPolicy/fail``).
    case malformedInput
    /// Too many control frames on session 0 (``HeadUnitSettings/sessionZeroFloodLimit``).
    case flood
    /// The secondary transport was refused, timed out, or is no longer offered or needed.
    case secondaryNotUsable
    /// The primary transport of the sessions this secondary transport served closed.
    case primaryClosed
    /// The peer read nothing of what waited for it for longer than the layer above allows: a peer
    /// that stopped reading is disconnected rather than held on to.
    case peerStoppedReading
    /// The layer above had too many connections and closed one that carried no registered
    /// session to make room.
    case tooManyConnections
}

/// Events the engine reports. Sessions are named by ``SessionHandle``; their wire session id is in
/// ``SessionInfo``.
///
/// Every case but ``message(_:_:)`` is `indirect`: the events of a message's path stay small
/// and are copied cheaply through the action queue, and the rare large ones are boxed.
public enum SessionEvent: Hashable, Sendable {
    /// A session's RPC service is running.
    indirect case sessionStarted(SessionHandle, SessionInfo)
    /// A session did not start (app role: the head unit's NAK, a timeout, a lost transport).
    indirect case sessionStartFailed(SessionHandle, SessionStartFailure)
    /// A session ended; every service it ran has been reported ended before.
    indirect case sessionEnded(SessionHandle, SessionEndReason)
    /// A Single frame marked protected (E=1) arrived on a session without a security context: it
    /// was dropped and the peer told (an InternalError security query). Its payload, as it came,
    /// lets the layer above answer a request in it.
    indirect case unprotectedMessageRefused(SessionHandle, ServiceType, ByteBuffer)
    /// Head unit role, without ``HeadUnitSettings/endsFloodingSessions``: the session crossed
    /// ``HeadUnitSettings/floodLimit``; end it once the app was told.
    case sessionFlooded(SessionHandle)
    /// Head unit role: a session-0 StartService was refused because no session id was free.
    case sessionLimitReached(TransportID)
    /// A service is running.
    indirect case serviceStarted(SessionHandle, ServiceType, ServiceInfo)
    /// A service did not start.
    indirect case serviceStartFailed(SessionHandle, ServiceType, ServiceStartFailure)
    /// A running service stopped.
    indirect case serviceEnded(SessionHandle, ServiceType, ServiceEndReason)
    /// App role: a wanted service cannot start yet, or at all, where it is allowed to run.
    indirect case serviceWaiting(SessionHandle, ServiceType, ServiceWait)
    /// Head unit role, with ``HeadUnitSettings/approvesMediaStarts``: an app asks to start audio
    /// or video (with these parameters); answer with ``SessionEngine/approveServiceStart(_:of:now:)``
    /// or ``SessionEngine/refuseServiceStart(_:of:reason:now:)`` within
    /// ``SessionConfiguration/serviceStartTimeout``, or it is refused.
    indirect case serviceStartRequested(SessionHandle, ServiceType, VideoParameters?)
    /// A whole data message (RPC, hybrid, audio, video) arrived for a running service.
    case message(SessionHandle, ReceivedMessage)
    /// App role: the secondary transport of a session changed state.
    indirect case secondaryTransport(SessionHandle, SecondaryTransportState)
    /// Head unit role: frames of a service this head unit ended kept coming after the grace
    /// period (ARCHITECTURE.md, D-ending); they are dropped.
    case protocolViolation(SessionHandle, ServiceType)
    /// A transport was closed by the engine or reported closed by the I/O layer.
    indirect case transportClosed(TransportID, TransportClosure)
    /// A frame or message the engine could not use: a bad header, a broken reassembly, an
    /// undecodable payload. The transport goes on (unless a limit closes it).
    indirect case protocolError(TransportID, SDLProtocolError)
    /// Something legal but odd, or a peer's departure from the spec the engine worked around.
    indirect case anomaly(Anomaly)
}

/// What a running session looks like.
public struct SessionInfo: Hashable, Sendable {
    /// The session id on the wire.
    public var sessionID: SessionID
    /// The negotiated protocol version (min of both sides' full versions).
    public var version: SDLVersion
    /// The version every frame of the session carries.
    public var frameVersion: ProtocolVersion
    /// The session's hash id (BSON `hashId` at v5, the raw 4-byte payload at v2–v4), if any.
    public var hashID: UInt32?
    /// The MTU the head unit's StartServiceACK gave, if any (app role); the MTU this head unit
    /// advertised (head unit role).
    public var mtu: Int64?
    /// The primary transport.
    public var transport: TransportID
    /// The head unit's `secondaryTransports` (app role) or those offered (head unit role).
    public var secondaryTransports: [String]
    /// Where audio may run, in order of preference; nil when the ACK did not say (primary only).
    public var audioServiceTransports: [TransportSlot]?
    /// Where video may run, in order of preference; nil when the ACK did not say (primary only).
    public var videoServiceTransports: [TransportSlot]?
    /// The vehicle strings of a 5.4.0 ACK.
    public var vehicle: VehicleInfo
    /// `authToken` of a 5.2.0 ACK (cloud apps).
    public var authToken: String?
}

/// What a running service looks like.
public struct ServiceInfo: Hashable, Sendable {
    /// The transport the service runs on.
    public var transport: TransportID
    /// Primary or secondary.
    public var slot: TransportSlot
    /// Whether the service's frames are protected by the session's security provider.
    public var isProtected: Bool
    /// The MTU negotiated for the service, if its ACK carried one.
    public var mtu: Int64?
    /// The video parameters the head unit accepted (video only).
    public var video: VideoParameters?
}

/// The parameters of a video StartService and of its ACK (protocol spec 5.4.1 §3.1.3.1).
public struct VideoParameters: Hashable, Sendable {
    /// `height`, in pixels.
    public var height: Int32?
    /// `width`, in pixels.
    public var width: Int32?
    /// `videoProtocol`: RAW, RTP, RTSP, RTMP, WEBM.
    public var videoProtocol: String?
    /// `videoCodec`: H264, H265, Theora, VP8, VP9.
    public var videoCodec: String?

    /// Video parameters; nil ones are left out.
    public init(height: Int32? = nil, width: Int32? = nil, videoProtocol: String? = nil, videoCodec: String? = nil) {
        self.height = height
        self.width = width
        self.videoProtocol = videoProtocol
        self.videoCodec = videoCodec
    }
}

/// The content of a NAK: rejected parameters and, from 5.3.0, a reason.
public struct NAKContent: Hashable, Sendable {
    /// `rejectedParams`, empty when absent.
    public var rejectedParams: [String]
    /// `reason`, nil when absent (always absent below 5.3.0).
    public var reason: String?

    /// A NAK's content.
    public init(rejectedParams: [String] = [], reason: String? = nil) {
        self.rejectedParams = rejectedParams
        self.reason = reason
    }
}

/// Why a session did not start.
public enum SessionStartFailure: Hashable, Sendable {
    /// The head unit's StartServiceNAK (any header version, with or without payload).
    case rejected(NAKContent)
    /// No ACK or NAK within ``AppSettings/sessionStartTimeout``.
    case timeout
    /// The transport closed first.
    case transportLost
}

/// Why a session ended.
public enum SessionEndReason: Hashable, Sendable {
    /// Our EndService(RPC) was answered (or timed out).
    case local
    /// The peer's EndService(RPC).
    case peer
    /// Its primary transport closed.
    case transportLost
    /// No frame within two heartbeat timeouts.
    case heartbeatTimeout
    /// Head unit role: more messages than ``HeadUnitSettings/floodLimit`` allows.
    case flood
    /// Head unit role: not registered within ``HeadUnitSettings/registrationTimeout``.
    case registrationTimeout
    /// Head unit role: streaming after the grace period with ``HeadUnitSettings/closeSessionOnViolation``.
    case protocolViolation
}

/// Why a service did not start.
public enum ServiceStartFailure: Hashable, Sendable {
    /// The peer's StartServiceNAK.
    case rejectedByPeer(NAKContent)
    /// This engine refused the peer's StartService (head unit role) and sent a NAK.
    case refused(Refusal)
    /// No ACK or NAK within ``SessionConfiguration/serviceStartTimeout``.
    case timeout
    /// Its transport closed first.
    case transportLost
    /// The session ended first.
    case sessionEnded
}

/// Why a running service stopped.
public enum ServiceEndReason: Hashable, Sendable {
    /// Our EndService was answered (ACK or NAK), or, head unit role, its grace ran out.
    case local
    /// Our EndService was not answered within ``SessionConfiguration/serviceEndTimeout``: the
    /// service is over for us, but the peer never said so (SDL Core answers an app's video
    /// EndService only once it has worked through what it buffered).
    case endTimedOut
    /// The peer's EndService (always ACKed).
    case peer
    /// Its transport closed.
    case transportLost
    /// Its session ended.
    case sessionEnded
    /// App role: the service is being moved to the other transport of a `[2, 1]` or `[1, 2]`
    /// list; a ``SessionEvent/serviceStarted(_:_:_:)`` on the new transport follows.
    case moving(to: TransportSlot)
    /// The security context of the session failed; every protected service stops (spec 7.3).
    case securityFailure
}

/// Why a wanted service is not running (app role).
public enum ServiceWait: Hashable, Sendable {
    /// The service may only run on the secondary transport, which is being connected and
    /// registered; it starts once registered.
    case waitingForSecondary
    /// The service may only run on the secondary transport and none is available (not offered,
    /// no address, refused); it starts if one becomes available while still wanted.
    case noSecondary
}

/// The state of a session's secondary transport (app role; ARCHITECTURE.md, D-secondary).
public enum SecondaryTransportState: Hashable, Sendable {
    /// The head unit offers no secondary transport this engine can use.
    case disabled
    /// Offered; `address` is nil until a TransportEventUpdate gives one, "" when TCP is unavailable.
    case configured(address: String?, port: Int32?)
    /// A connection was requested.
    case connecting
    /// RegisterSecondaryTransport was sent and awaits its ACK.
    case registering(TransportID)
    /// Registered: services may run on it.
    case registered(TransportID)
    /// Lost or refused; the next attempt is number `attempt`, after a capped exponential delay.
    case backoff(attempt: Int)
    /// The head unit's RegisterSecondaryTransportNAK, for good until a new TransportEventUpdate.
    case rejected(reason: String?)
    /// A TransportEventUpdate said TCP is unavailable (empty address): no retries.
    case unavailable
}

/// A whole data message received for a running service.
public struct ReceivedMessage: Hashable, Sendable {
    /// The service it arrived on.
    public var service: ServiceType
    /// The payload (for RPC and hybrid: RPC binary header + parameters + bulk data), unprotected.
    public var payload: ByteBuffer
    /// Whether it arrived protected.
    public var wasProtected: Bool
    /// The message id (nil at version 1).
    public var messageID: MessageID?
    /// The transport it arrived on.
    public var transport: TransportID
}

/// Why a transport went away.
public enum TransportClosure: Hashable, Sendable {
    /// The engine closed it.
    case closedByEngine(TransportCloseReason)
    /// The I/O layer reported it closed (the peer hung up, or an error).
    case closedByPeer
}

/// Something legal but odd, or a peer's departure from the spec that the engine worked around.
public struct Anomaly: Hashable, Sendable, CustomStringConvertible {
    /// What kind of anomaly.
    public var code: Code
    /// The session it concerns, if any.
    public var session: SessionHandle?
    /// The transport it arrived on, if any.
    public var transport: TransportID?
    /// A human detail.
    public var detail: String

    /// Creates an anomaly report.
    init(_ code: Code, session: SessionHandle? = nil, transport: TransportID? = nil, _ detail: String) {
        self.code = code
        self.session = session
        self.transport = transport
        self.detail = detail
    }

    /// `code (session, transport): detail`.
    public var description: String {
        var text = "\(self.code)"
        if let session { text += " \(session)" }
        if let transport { text += " \(transport)" }
        return text + ": " + self.detail
    }

    /// The kinds of anomaly. New kinds may be added in minor releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: StaticString
        private init(_ name: StaticString) { self.name = name }

        /// The stable name.
        public var description: String { "\(self.name)" }

        /// `==` on the names.
        public static func == (lhs: Code, rhs: Code) -> Bool { lhs.description == rhs.description }
        /// Hashes the name.
        public func hash(into hasher: inout Hasher) { hasher.combine(self.description) }

        /// The ACK's header major and its `protocolVersion` major differ; frames use the header's.
        public static let versionMismatch = Code("versionMismatch")
        /// `protocolVersion` is present but not a string, or not a version.
        public static let unusableProtocolVersion = Code("unusableProtocolVersion")
        /// A control payload is not valid BSON, or a field has an unexpected type; it was read as
        /// far as possible.
        public static let malformedControlPayload = Code("malformedControlPayload")
        /// An empty service-transport list, treated as absent (ARCHITECTURE.md,
        /// D-lenient-payloads), or entries other than 1 and 2, ignored.
        public static let oddServiceTransportList = Code("oddServiceTransportList")
        /// A heartbeat on session 0 (the spec's example), answered leniently.
        public static let heartbeatOnSessionZero = Code("heartbeatOnSessionZero")
        /// A heartbeat on a session below version 3: not answered, as Core does.
        public static let heartbeatUnsupported = Code("heartbeatUnsupported")
        /// A TransportEventUpdate with a port but no address (ignored), or one on a transport
        /// other than the primary.
        public static let oddTransportEventUpdate = Code("oddTransportEventUpdate")
        /// A frame for a session or service that is not running on the transport it arrived on;
        /// dropped.
        public static let unexpectedFrame = Code("unexpectedFrame")
        /// A control frame this role does not expect (a TransportEventUpdate sent to a head unit),
        /// or an unknown control frame info; ignored.
        public static let unexpectedControlFrame = Code("unexpectedControlFrame")
        /// An ACK or NAK that answers nothing outstanding; ignored.
        public static let unsolicitedAnswer = Code("unsolicitedAnswer")
        /// A protected frame with no established security context, or one that failed to
        /// unprotect; dropped.
        public static let unprotectFailed = Code("unprotectFailed")
        /// A flood limit was crossed; the session or transport is closed next.
        public static let floodDetected = Code("floodDetected")
        /// The malformed-input limit was crossed; the transport is closed next.
        public static let malformedLimitReached = Code("malformedLimitReached")
        /// A security query that could not be used (wrong id, type, or no handshake running).
        public static let unexpectedSecurityQuery = Code("unexpectedSecurityQuery")
        /// A protected start was answered unprotected (ACK with E=0 after a failed handshake).
        public static let protectionDowngraded = Code("protectionDowngraded")
        /// An EndService for a service or session that is not running; answered anyway.
        public static let endForStoppedService = Code("endForStoppedService")
        /// A frame for a session the transport does not carry, or a control frame acting on a
        /// session from a transport that may not (another app's session): counted against the
        /// transport's malformed limit.
        public static let foreignSessionFrame = Code("foreignSessionFrame")
        /// A connection asked for more sessions than ``HeadUnitSettings/maxSessionsPerConnection``.
        public static let sessionsPerConnectionLimit = Code("sessionsPerConnectionLimit")
        /// Every session id was taken: the session that waited longest without registering gave
        /// its id up.
        public static let sessionReclaimed = Code("sessionReclaimed")
    }
}
