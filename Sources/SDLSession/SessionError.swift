import SDLProtocol

/// The error the engine's input methods throw when a call cannot be carried out (an unknown
/// session, a service that needs registration, a role mismatch). Nothing is sent and no state
/// changes when one is thrown. Peer behaviour never throws: it becomes events.
///
/// Equality and hashing consider only ``code``, so tests can match an error by its kind.
public struct SessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let code: Code
    /// A human detail.
    public let detail: String

    init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `SessionError.code: detail`.
    public var description: String { "SessionError.\(self.code): \(self.detail)" }

    /// Compares the codes.
    public static func == (lhs: SessionError, rhs: SessionError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    /// The kinds of error. Only this module mints codes; new ones may be added in minor releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: UInt8 {
            case unknownSession, unknownTransport, wrongRole, sessionNotRunning, notRegistered
            case versionTooLow, serviceActive, serviceNotRunning, notAStartableService
            case invalidMessage, transportBusy
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }

        /// The stable name of the code.
        public var description: String { "\(self.backing)" }

        /// The handle names no session the engine knows, or one that has ended.
        public static let unknownSession = Code(.unknownSession)
        /// The transport id names no open transport, or one of the wrong kind for the call.
        public static let unknownTransport = Code(.unknownTransport)
        /// The call belongs to the other role (``SessionRole``).
        public static let wrongRole = Code(.wrongRole)
        /// The session has not started yet or is ending.
        public static let sessionNotRunning = Code(.sessionNotRunning)
        /// Audio, video and other services start only after registration (protocol spec 5.4.1
        /// §3.1.3: after a successful RegisterAppInterface; ``SessionEngine/sessionRegistered(_:now:)``).
        public static let notRegistered = Code(.notRegistered)
        /// Audio and video need protocol version 3 or later.
        public static let versionTooLow = Code(.versionTooLow)
        /// The service is already running, starting or ending (one of each type at a time).
        public static let serviceActive = Code(.serviceActive)
        /// The service is not running.
        public static let serviceNotRunning = Code(.serviceNotRunning)
        /// Only audio, video and RPC (for protection) can be started; control and hybrid are
        /// implicit.
        public static let notAStartableService = Code(.notAStartableService)
        /// A message the fragmenter refuses: empty, or larger than the limits allow.
        public static let invalidMessage = Code(.invalidMessage)
        /// The transport cannot take the request now (a second secondary transport for a session).
        public static let transportBusy = Code(.transportBusy)
    }
}

/// Why this engine refused a peer's request with a NAK (head unit role). The reason text is sent
/// in the NAK from version 5.3.0.
public enum Refusal: Hashable, Sendable, CustomStringConvertible {
    /// No session id is free (all 255, or ``HeadUnitSettings/maxSessions``, are in use).
    case noFreeSessionID
    /// The session id names no session on this connection.
    case unknownSession
    /// Audio and video need protocol version 3 or later.
    case versionTooLow
    /// Services other than RPC start only after registration (Core answers nothing:
    /// ARCHITECTURE.md, D-answers).
    case notRegistered
    /// One service of each type at a time.
    case alreadyStarted
    /// A StartService on a connection that is neither the session's primary nor its registered
    /// secondary (ARCHITECTURE.md, D-secondary).
    case transportNotRegistered
    /// The service is not allowed on this transport by the service-transport lists, or RPC data on
    /// a secondary.
    case notAllowedOnTransport
    /// Parameters this head unit does not accept (e.g. an unsupported `videoCodec`).
    case rejectedParameters([String])
    /// The protection handshake failed for a service that must be protected.
    case protectionFailed
    /// An EndService(RPC) whose hash does not match the session's.
    case wrongHashID
    /// An EndService for a service that is not running.
    case serviceNotRunning
    /// An EndService for a service that cannot be ended on its own (control, hybrid).
    case cannotEnd
    /// A StartService for a service type this head unit does not run.
    case unsupportedService
    /// The connection runs ``HeadUnitSettings/maxSessionsPerConnection`` sessions already.
    case tooManySessionsOnConnection
    /// The layer above the engine refused the start, for this reason (an app whose type or HMI
    /// level does not allow streaming, as SDL Core decides).
    case refusedByHeadUnit(String)

    /// The reason text sent in the NAK.
    public var description: String {
        switch self {
        case .noFreeSessionID: return "no free session id"
        case .unknownSession: return "session not found"
        case .versionTooLow: return "service needs protocol version 3 or later"
        case .notRegistered: return "application not registered"
        case .alreadyStarted: return "service already started"
        case .transportNotRegistered: return "transport not registered for this session"
        case .notAllowedOnTransport: return "service not allowed on this transport"
        case .rejectedParameters: return "Certain parameters in the StartService request were rejected"
        case .protectionFailed: return "protection handshake failed"
        case .wrongHashID: return "wrong hash id"
        case .serviceNotRunning: return "service not running"
        case .cannotEnd: return "service cannot be ended"
        case .unsupportedService: return "service type not supported"
        case .refusedByHeadUnit(let reason): return reason
        case .tooManySessionsOnConnection: return "too many sessions on this connection"
        }
    }

    /// The parameters named in `rejectedParams`.
    var rejectedParams: [String] {
        switch self {
        case .rejectedParameters(let names): return names
        case .wrongHashID: return ["hashId"]
        default: return []
        }
    }
}
