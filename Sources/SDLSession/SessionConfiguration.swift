import NIOCore
import SDLProtocol

/// Every setting of a ``SessionEngine``, each with a documented default. The defaults follow the
/// decisions of ARCHITECTURE.md §3 ("Sessions, services and the runtimes") and, where those are
/// silent, SDL Core 8.2's `smartDeviceLink.ini`.
public struct SessionConfiguration: Sendable {
    /// Which side the engine plays.
    public var role: SessionRole

    /// The highest protocol version the engine speaks: offered by an app in its StartService,
    /// answered at most by a head unit. Default 5.4.1 (protocol spec 5.4.1).
    public var maxProtocolVersion: SDLVersion = SDLVersion(major: 5, minor: 4, patch: 1)

    /// Limits of the frame decoder and reassembler of every transport. The MTUs negotiated per
    /// session are clamped to their ceilings.
    public var protocolLimits = ProtocolLimits()

    /// The most bytes the reassemblies of every transport together may hold
    /// (``ProtocolLimits/maxReassemblyBytes`` bounds one transport's): many connections each
    /// starting large messages cannot add up past it. A message that does not fit takes the room
    /// of the connection holding the most, when that one holds more than the message's would
    /// with it (its reassemblies dropped, reported as a protocol error on it): a connection that
    /// fills the budget cannot keep the others' messages out. Default 64 MiB.
    public var maxReassemblyBytesTotal: Int = 64 << 20

    /// What a transport's decoder does after a bad header. Default: resynchronise, as Core does.
    public var invalidHeaderPolicy: FrameDecoder.InvalidHeaderPolicy = .resynchronize

    /// Heartbeat origination and timeout (ARCHITECTURE.md, D-heartbeat). Answering heartbeats is
    /// always on for sessions at version 3 or later.
    public var heartbeat: HeartbeatSettings

    /// How long a StartService for audio, video or a protection upgrade may wait for its ACK or
    /// NAK before the service is reported as failed. Default 10 s.
    public var serviceStartTimeout: TimeAmount = .seconds(10)

    /// How long our EndService may wait for its ACK or NAK before the service is treated as ended
    /// (Core never answers some: ARCHITECTURE.md, D-answers). Default 5 s.
    public var serviceEndTimeout: TimeAmount = .seconds(5)

    /// How often the bulk and lower data classes get a frame while higher data classes have frames
    /// waiting: a waiting class is served after it was passed over this many times in a row (bulk
    /// data ages so it always makes progress under continuous video: ARCHITECTURE.md, D-scheduler).
    /// Control and RPC frames never wait behind data. Default 2.
    public var dataAgingThreshold: Int = 2

    /// Makes the security provider of a session when a protected service is started
    /// (ARCHITECTURE.md, D-security). nil: no security; a handshake is then refused with Internal
    /// Error 3 (app) or the service is started unprotected or refused (head unit, see
    /// ``HeadUnitSettings/forceProtectedServices``). Default nil.
    public var makeSecurityProvider: (@Sendable (SessionHandle) -> any SecurityProvider)?

    /// App role settings; ignored by a head unit.
    public var app = AppSettings()

    /// Head unit role settings; ignored by an app.
    public var headUnit = HeadUnitSettings()

    /// The defaults for `role`.
    public init(role: SessionRole) {
        self.role = role
        self.heartbeat = HeartbeatSettings(role: role)
    }
}

/// Heartbeat settings (protocol spec 5.4.1 §4.5; ARCHITECTURE.md, D-heartbeat).
public struct HeartbeatSettings: Hashable, Sendable {
    /// When the engine sends heartbeats of its own.
    public enum Origination: Hashable, Sendable {
        /// Never; only answer the peer's (the app default: iOS, Java and JS never send any).
        case off
        /// Watch a session once it has sent a heartbeat of its own, as SDL Core does (the head
        /// unit default).
        case afterPeerHeartbeat
        /// Watch every session negotiated at version 3 or later from its start.
        case always
    }

    /// When to originate heartbeats.
    public var origination: Origination
    /// Silence after which a watched session is sent a heartbeat; after as long again without any
    /// frame the session is closed. Default 7 s (Core's `HeartBeatTimeout` in its ini).
    public var timeout: TimeAmount = .seconds(7)
    /// Whether a heartbeat on session 0 is answered (the spec's example shows session 0; Core
    /// ignores it). The answer is reported as an anomaly either way. Default true (head unit).
    public var answerSessionZero: Bool = true

    /// The defaults for `role`: off for apps, Core-compatible for head units.
    public init(role: SessionRole) {
        self.origination = role == .app ? .off : .afterPeerHeartbeat
    }
}

/// App role settings.
public struct AppSettings: Hashable, Sendable {
    /// How long a session start may wait for the head unit's StartServiceACK. A SYNC 3 at boot took
    /// 14 s (sdl_ios#1783); the session-0 StartService is never resent on the same transport, so
    /// this must be long. On expiry the session fails. Default 30 s.
    public var sessionStartTimeout: TimeAmount = .seconds(30)

    /// When to connect a secondary transport the head unit offers (SDL-0214). Default `.lazy`.
    public var secondaryConnection: SecondaryConnectionPolicy = .lazy

    /// How long RegisterSecondaryTransport may wait for its ACK or NAK. Default 10 s (sdl_ios).
    public var secondaryRegisterTimeout: TimeAmount = .seconds(10)

    /// The first reconnect delay after a secondary transport is lost or refused; it doubles per
    /// attempt up to `secondaryRetryCap`. Default 1 s.
    public var secondaryRetryDelay: TimeAmount = .seconds(1)

    /// The longest reconnect delay. Default 30 s.
    public var secondaryRetryCap: TimeAmount = .seconds(30)

    /// How many RegisterSecondaryTransport NAKs in a row are tried again: the next one ends the
    /// retries until the next TransportEventUpdate (sdl_ios retries forever: ARCHITECTURE.md,
    /// D-secondary). Default 3.
    public var secondaryMaxRejections: Int = 3

    /// TransportEventUpdates closer together than this are merged: only the last one is acted on
    /// (Core's emulated adapters sent three in a row: ARCHITECTURE.md, D-transport-events).
    /// Default 100 ms.
    public var transportEventDebounce: TimeAmount = .milliseconds(100)

    /// Whether the primary transport is closed when its last session fails to start or ends.
    /// Default true.
    public var closePrimaryWithLastSession: Bool = true

    /// The defaults.
    public init() {}
}

/// When an app connects the secondary transport the head unit offers.
public enum SecondaryConnectionPolicy: Hashable, Sendable {
    /// When a service that may run on it is wanted (SDL-0214).
    case lazy
    /// As soon as a TransportEventUpdate gives an address.
    case eager
}

/// How a head unit allocates session ids (1–255, unique across all its connections).
public enum SessionIDPolicy: Hashable, Sendable {
    /// The id freed longest ago first, so a freed id is reused as late as possible
    /// (ARCHITECTURE.md, D-session-ids).
    case leastRecentlyFreed
    /// The lowest free id, as SDL Core does (`findGap`).
    case lowestFree
}

/// How a head unit answers a StartService whose BSON has no usable `protocolVersion`.
public enum NegotiationPolicy: Hashable, Sendable {
    /// As the spec says: "not supplied", answered as version 4 with a raw 4-byte hash.
    case spec
    /// As SDL Core 8.2 does: a bare 8-byte version 1 NAK (and a bare v1 NAK when no session id is
    /// free).
    case coreCompatible
}

/// A rate limit: at most `count` events in any window of `period`.
public struct RateLimit: Hashable, Sendable {
    /// The most events allowed in one window.
    public var count: Int
    /// The window.
    public var period: TimeAmount

    /// A limit of `count` per `period`.
    public init(count: Int, per period: TimeAmount) {
        self.count = count
        self.period = period
    }
}

/// What a head unit offers for secondary transports (protocol spec 5.4.1 §3.1.3.2, SDL-0141).
public struct SecondaryTransportOffer: Hashable, Sendable {
    /// The transport types listed in `secondaryTransports`. Default `["TCP_WIFI"]`.
    public var transportTypes: [String] = ["TCP_WIFI"]
    /// Where audio may run, in order of preference. Default primary, then secondary.
    public var audioServiceTransports: [TransportSlot] = [.primary, .secondary]
    /// Where video may run, in order of preference. Default primary, then secondary.
    public var videoServiceTransports: [TransportSlot] = [.primary, .secondary]
    /// The TCP address sent in TransportEventUpdate; empty means "TCP not available".
    public var tcpAddress: String
    /// The TCP port sent in TransportEventUpdate; nil sends the address alone.
    public var tcpPort: Int32?

    /// An offer of a TCP secondary transport at `tcpAddress`:`tcpPort`.
    public init(tcpAddress: String, tcpPort: Int32?) {
        self.tcpAddress = tcpAddress
        self.tcpPort = tcpPort
    }
}

/// The vehicle strings a version 5.4.0 StartServiceACK carries.
public struct VehicleInfo: Hashable, Sendable {
    /// `make`.
    public var make: String?
    /// `model`.
    public var model: String?
    /// `modelYear`.
    public var modelYear: String?
    /// `trim`.
    public var trim: String?
    /// `systemSoftwareVersion`.
    public var systemSoftwareVersion: String?
    /// `systemHardwareVersion`.
    public var systemHardwareVersion: String?

    /// Vehicle strings; each nil one is left out.
    public init(
        make: String? = nil, model: String? = nil, modelYear: String? = nil, trim: String? = nil,
        systemSoftwareVersion: String? = nil, systemHardwareVersion: String? = nil
    ) {
        self.make = make
        self.model = model
        self.modelYear = modelYear
        self.trim = trim
        self.systemSoftwareVersion = systemSoftwareVersion
        self.systemHardwareVersion = systemHardwareVersion
    }
}

/// What a head unit asks of a RegisterSecondaryTransport before it lets the connection carry a
/// session's audio and video. The protocol gives the frame no proof of ownership; this package's
/// apps send the session's hash id (`{hashId}`, as EndService carries it), which only the app that
/// started the session learned.
public enum SecondaryTransportProof: Hashable, Sendable {
    /// A hash id, when given, must be the session's; a registration without one is taken (the
    /// official app libraries send none) but gives way to a later one that proves ownership, so an
    /// app of this package always gets its secondary back from a connection that claimed it.
    case hashIDWhenGiven
    /// Only a registration with the session's hash id is taken.
    case hashIDRequired
}

/// Head unit role settings.
public struct HeadUnitSettings: Hashable, Sendable {
    /// How session ids are picked. Default `.leastRecentlyFreed`.
    public var sessionIDPolicy: SessionIDPolicy = .leastRecentlyFreed

    /// The most sessions alive at once, across all connections (1…255). Default 255.
    public var maxSessions: Int = 255

    /// The most sessions one connection may run at once (an app runs one; a router several):
    /// beyond it a session-0 StartService is refused, so that one connection cannot take every
    /// session id. Default 16.
    public var maxSessionsPerConnection: Int = 16

    /// How long a session must have waited without registering before it may give its id up to
    /// a new session when every id is taken (the longest waiting one does). Default 2 s.
    public var unregisteredSessionGrace: TimeAmount = .seconds(2)

    /// What a RegisterSecondaryTransport must prove to be taken. Default `.hashIDWhenGiven`.
    public var secondaryTransportProof: SecondaryTransportProof = .hashIDWhenGiven

    /// Whether an app's audio and video starts wait for the layer above, which knows the app's
    /// type and HMI level (SDL Core streams only for NAVIGATION and PROJECTION apps in FULL or
    /// LIMITED): the engine reports ``SessionEvent/serviceStartRequested(_:_:_:)`` and answers once
    /// told. false: every start that passes the protocol's checks is accepted. Default false.
    public var approvesMediaStarts = false

    /// Seeds the generator of hashIds (random non-zero int32 values, unique per head unit). nil
    /// seeds it from the system's random source; tests pass a value for repeatable frames.
    public var hashSeed: UInt64?

    /// How a StartService without a usable `protocolVersion` is answered. Default `.spec`.
    public var negotiationPolicy: NegotiationPolicy = .spec

    /// The `mtu` advertised in StartServiceACKs: the largest payload this head unit receives per
    /// frame, as Core writes it. Default 131,072.
    public var advertisedMTU: Int64 = 131_072

    /// Secondary transports offered to sessions at 5.1.0 or later; nil: multiple transports off
    /// (no secondary lists, no TransportEventUpdate). Default nil.
    public var secondaryTransport: SecondaryTransportOffer?

    /// Vehicle strings for sessions at 5.4.0 or later. Default: none.
    public var vehicleInfo = VehicleInfo()

    /// How long a session may run its RPC service without being registered
    /// (``SessionEngine/sessionRegistered(_:now:)``) before the head unit ends it; nil: never.
    /// Default 30 s (Core has no such timer: ARCHITECTURE.md, D-registration-timeout).
    public var registrationTimeout: TimeAmount? = .seconds(30)

    /// Messages per session (control and data, audio and video excluded; a multi-frame message
    /// counts once) above which the session is closed as a flood; nil: no limit. Default 1,000 per
    /// second (Core's `FrequencyCount`/`FrequencyTime`, which counts frames).
    public var floodLimit: RateLimit? = RateLimit(count: 1000, per: .seconds(1))

    /// Whether the engine ends a session that crosses ``floodLimit`` at once (EndService(RPC)).
    /// false: it reports ``SessionEvent/sessionFlooded(_:)`` and stops metering the session, and
    /// the layer above ends it with ``SessionEngine/endSession(_:reason:now:)`` once it has told the
    /// app why (SDL Core's OnAppInterfaceUnregistered TOO_MANY_REQUESTS). Default true.
    public var endsFloodingSessions = true

    /// Control frames on session 0 per connection above which the connection is closed with all
    /// its sessions (Core parity). Default 1,000 per second.
    public var sessionZeroFloodLimit: RateLimit? = RateLimit(count: 1000, per: .seconds(1))

    /// Malformed runs per connection (a continuous run of garbage counts once) above which the
    /// connection is closed without EndService frames; nil: never. Default 10 per second (Core's
    /// `MalformedFrequencyCount`/`MalformedFrequencyTime`).
    public var malformedLimit: RateLimit? = RateLimit(count: 10, per: .seconds(1))

    /// After this head unit ends an audio or video service, frames of that service are dropped
    /// silently for this long; later ones raise ``SessionEvent/protocolViolation(_:_:)``. The
    /// service is considered ended after it whether or not the app ACKed. Default 1 s.
    public var streamingGracePeriod: TimeAmount = .seconds(1)

    /// Whether a protocol violation (streaming after the grace period) ends the session. Default
    /// false.
    public var closeSessionOnViolation: Bool = false

    /// Services whose protected start must succeed: a failed handshake is a NAK. For any other
    /// service a failed handshake starts the service unprotected (ACK with E=0), as Core does.
    /// Default: none.
    public var forceProtectedServices: Set<ServiceType> = []

    /// Video protocols accepted in a video StartService (`videoProtocol`). Default: the spec's
    /// RAW, RTP, RTSP, RTMP, WEBM.
    public var videoProtocols: Set<String> = ["RAW", "RTP", "RTSP", "RTMP", "WEBM"]

    /// Video codecs accepted in a video StartService (`videoCodec`). Default: the spec's H264,
    /// H265, Theora, VP8, VP9.
    public var videoCodecs: Set<String> = ["H264", "H265", "Theora", "VP8", "VP9"]

    /// The defaults.
    public init() {}
}
