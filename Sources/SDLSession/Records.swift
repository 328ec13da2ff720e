import NIOCore
import SDLProtocol

/// How a transport came to be, as the I/O layer tells the engine.
public enum TransportOpening: Hashable, Sendable {
    /// App role: the link to the head unit, on which sessions are started.
    case primary
    /// App role: the secondary transport the engine asked for.
    case secondary(ConnectRequestID)
    /// Head unit role: an accepted connection; it becomes a primary transport when a session
    /// starts on it, or a secondary one when it registers.
    case accepted
}

/// What a service wants when it starts (app role), kept while it waits for a transport.
struct ServiceRequest: Hashable, Sendable {
    var isProtected: Bool
    /// App role: a start answered unprotected is ended at once.
    var requiresProtection = false
    var video: VideoParameters?
}

/// The state machine of one service of one session, in either role. The RPC service is the session
/// itself; this machine covers audio, video and the protection upgrade of RPC.
enum ServiceState: Hashable, Sendable {
    struct Starting: Hashable, Sendable {
        var request: ServiceRequest
        var transport: TransportID
        var slot: TransportSlot
        var deadline: NIODeadline?
        /// Head unit role: the peer's StartService message id, echoed in the answer.
        var messageID: UInt32
        /// Whether the security handshake for this start is running.
        var handshaking: Bool
        /// Head unit role: the start waits for the layer above to approve or refuse it
        /// (``HeadUnitSettings/approvesMediaStarts``).
        var awaitingApproval = false
    }

    struct Running: Hashable, Sendable {
        var transport: TransportID
        var slot: TransportSlot
        var isProtected: Bool
        var mtu: Int64?
        var video: VideoParameters?
    }

    struct Ending: Hashable, Sendable {
        var running: Running
        var deadline: NIODeadline
        /// App role: once ended, the service is wanted again (it moves to another transport) and its
        /// end is reported with this reason.
        var restart: (request: ServiceRequest, reason: ServiceEndReason)?

        static func == (lhs: Ending, rhs: Ending) -> Bool {
            lhs.running == rhs.running && lhs.deadline == rhs.deadline && lhs.restart?.request == rhs.restart?.request
                && lhs.restart?.reason == rhs.restart?.reason
        }
        func hash(into hasher: inout Hasher) {
            hasher.combine(self.running)
            hasher.combine(self.deadline)
        }
    }

    case stopped
    /// App role: wanted, waiting for its transport (the secondary) or its turn to handshake.
    case wanted(ServiceRequest)
    case starting(Starting)
    case running(Running)
    case ending(Ending)
    /// Head unit role: this head unit ended the service; its frames are dropped silently until the
    /// deadline and reported after it. `reported`: the end was reported (ACKed, or the grace ran out).
    /// `transport`: where it ran, the only transport besides the primary that may answer or end it.
    case draining(until: NIODeadline, reported: Bool, transport: TransportID)

    var isActive: Bool {
        switch self {
        case .stopped, .draining: return false
        default: return true
        }
    }

    var running: Running? {
        if case .running(let running) = self { return running }
        return nil
    }
}

/// Where a session is in its life (protocol spec 5.4.1 §4.2 and §6.1).
enum SessionPhase: Hashable, Sendable {
    /// App role: session-0 StartService queued or sent; waits until the deadline.
    case starting(deadline: NIODeadline?)
    case running
    /// App role: our EndService(RPC) was sent.
    case ending(deadline: NIODeadline)
}

/// Heartbeat bookkeeping of a session (protocol spec 5.4.1 §4.5; ARCHITECTURE.md, D-heartbeat).
struct HeartbeatState: Hashable, Sendable {
    /// Whether this engine watches the session (originates heartbeats).
    var watched = false
    /// Whether a heartbeat of ours awaits any frame.
    var probing = false
    /// When the next step is due: a heartbeat, or the timeout.
    var deadline: NIODeadline?
}

/// The security context of a session (protocol spec 5.4.1 §7).
struct SessionSecurity: Sendable {
    enum State: Hashable, Sendable {
        case none
        /// A handshake runs for `service`; `sequence` is the query's sequential number.
        case handshaking(service: ServiceType, sequence: UInt32)
        case established
    }

    var state: State = .none
    var provider: (any SecurityProvider)?
    var nextSequence: UInt32 = 1
}

/// Everything the engine knows of one session.
struct SessionRecord: Sendable {
    let handle: SessionHandle
    var id = SessionID(0)
    var phase: SessionPhase
    var primary: TransportID
    /// The registered secondary transport (both roles).
    var secondary: TransportID?
    var frameVersion: ProtocolVersion
    var version: SDLVersion
    var hashID: UInt32?
    /// Head unit role, a version 1–4 negotiation: the version of the app's first data frame
    /// becomes the session's (spec: "sets negotiated version"; Core binds it from
    /// RegisterAppInterface's header).
    var versionFromFirstFrame = false
    var registered = false
    var nextMessageID: UInt32 = 1
    /// The MTU of the RPC StartServiceACK (app role) or the one advertised (head unit role).
    var mtu: Int64?
    var rpcProtected = false
    var rpcUpgrade: ServiceState = .stopped
    var audio: ServiceState = .stopped
    var video: ServiceState = .stopped
    var heartbeat = HeartbeatState()
    var security = SessionSecurity()
    var flood: RateMeter?
    var registrationDeadline: NIODeadline?
    var info: SessionInfo?
    var secondaryMachine: SecondaryMachine?
    /// Head unit role: the registered secondary transport was proven (its RegisterSecondaryTransport
    /// carried the session's hash id); an unproven one gives way to a proven one.
    var secondaryProven = false

    /// Whether protection was ever set up or is being set up for the session.
    var hasSecurityContext: Bool {
        if case .none = self.security.state { return self.security.provider != nil }
        return true
    }

    init(handle: SessionHandle, phase: SessionPhase, primary: TransportID, frameVersion: ProtocolVersion, version: SDLVersion) {
        self.handle = handle
        self.phase = phase
        self.primary = primary
        self.frameVersion = frameVersion
        self.version = version
    }

    /// The state of a startable service (audio, video, or the RPC protection upgrade).
    subscript(service service: ServiceType) -> ServiceState {
        get {
            switch service {
            case .audio: return self.audio
            case .video: return self.video
            default: return self.rpcUpgrade
            }
        }
        set {
            switch service {
            case .audio: self.audio = newValue
            case .video: self.video = newValue
            default: self.rpcUpgrade = newValue
            }
        }
    }

    var isRunning: Bool { self.phase == .running }

    /// The transport a slot names, if the session has it.
    func transport(for slot: TransportSlot) -> TransportID? {
        slot == .primary ? self.primary : self.secondary
    }

    /// Where and how a data message of `service` goes: the transport, whether it is protected,
    /// the frame version and the wire id; throws when the session or service cannot carry it.
    /// Mutating only so that a call through ``RecordTable/subscript(existing:)`` borrows the
    /// record in place (a non-mutating call there copies it).
    mutating func sendRoute(for service: ServiceType) throws(SessionError) -> SendRoute {
        guard self.isRunning else { throw SessionError(.sessionNotRunning, "\(self.handle) is not running") }
        switch service {
        case .rpc, .hybrid:
            return SendRoute(transport: self.primary, isProtected: self.rpcProtected, version: self.frameVersion, id: self.id)
        case .audio, .video:
            guard let running = self[service: service].running else {
                throw SessionError(.serviceNotRunning, "\(service) is not running on \(self.handle)")
            }
            return SendRoute(transport: running.transport, isProtected: running.isProtected, version: self.frameVersion, id: self.id)
        default:
            throw SessionError(.notAStartableService, "\(service) carries no data messages")
        }
    }

    mutating func takeMessageID() -> UInt32 {
        let id = self.nextMessageID
        self.nextMessageID = id == .max ? 1 : id + 1
        return id
    }
}

/// What a transport is used for.
enum TransportKind: Hashable, Sendable {
    /// Head unit role: accepted, nothing started or registered on it yet.
    case unbound
    /// Sessions were started on it.
    case primary
    /// Sessions registered it as their secondary transport.
    case secondary
}

/// Everything the engine knows of one transport.
struct TransportRecord: Sendable {
    let id: TransportID
    var kind: TransportKind
    var decoder: FrameDecoder
    var reassembler: Reassembler
    var scheduler: FrameScheduler
    /// Whether `.write` was raised and not yet answered by an emptying `nextWrite`.
    var writeRequested = false
    /// The sessions on this transport by wire id: started on it (primary) or registered on it
    /// (secondary).
    var sessions = RecordTable<UInt8, SessionHandle>()
    /// App role: sessions whose session-0 StartService waits on this transport, the first one
    /// sent (one outstanding at a time, answers matched in order: ARCHITECTURE.md, D-negotiation).
    var pendingStarts = CircularBuffer<SessionHandle>(initialCapacity: 1)
    /// App role: the session-0 StartService of the first pending start is on its way.
    var startSent = false
    /// App role: the request this secondary transport answers.
    var connectRequest: ConnectRequestID?
    /// App role: a TransportEventUpdate that arrived before the StartServiceACK of the session it
    /// names (a reordering head unit), applied after the ACK (ARCHITECTURE.md, D-transport-events).
    var earlyTransportEvent: (session: SessionID, payload: ByteBuffer)?
    /// App role: a secondary transport being left: closed once no service runs on it (their
    /// EndServices answered) or at this deadline.
    var retiring: NIODeadline?
    /// Close the transport once every queued frame is written (an EndService before a hang-up), or
    /// at the deadline, whichever comes first.
    var closeAfterFlush: (reason: TransportCloseReason, deadline: NIODeadline)?
    var malformed: RateMeter?
    var sessionZeroFlood: RateMeter?

    init(id: TransportID, kind: TransportKind, configuration: SessionConfiguration) {
        self.id = id
        self.kind = kind
        self.decoder = FrameDecoder(
            limits: configuration.protocolLimits, invalidHeaderPolicy: configuration.invalidHeaderPolicy)
        self.reassembler = Reassembler(limits: configuration.protocolLimits)
        self.scheduler = FrameScheduler(agingThreshold: configuration.dataAgingThreshold)
        if configuration.role == .headUnit {
            self.malformed = configuration.headUnit.malformedLimit.map(RateMeter.init)
            self.sessionZeroFlood = configuration.headUnit.sessionZeroFloodLimit.map(RateMeter.init)
        }
    }
}

/// What ``SessionRecord/sendRoute(for:)`` finds for a data message.
struct SendRoute {
    var transport: TransportID
    var isProtected: Bool
    var version: ProtocolVersion
    var id: SessionID
}
