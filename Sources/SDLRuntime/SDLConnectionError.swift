/// The error the app and head-unit runtimes throw: a connection that could not be made, a session
/// the head unit refused, a request that timed out or was cancelled, a message that could not be
/// encoded or decoded.
///
/// Equality and hashing consider only ``code``, as swift-asn1's `ASN1Error` does, so a caller can
/// match an error by its kind; ``detail`` says what happened.
public struct SDLConnectionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let code: Code
    /// A human detail: the peer's reason, the underlying error.
    public let detail: String

    /// An error of a kind this module defines, with a detail; for transports and handlers written
    /// outside the package that report through the runtimes.
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `SDLConnectionError.code: detail`.
    public var description: String { "SDLConnectionError.\(self.code): \(self.detail)" }

    /// Compares the codes only.
    public static func == (lhs: SDLConnectionError, rhs: SDLConnectionError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    /// The kinds of error. Only this module mints codes; new ones may be added in minor releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: UInt8 {
            case connectFailed, sessionRejected, registrationFailed, notRegistered, timeout, cancelled
            case disconnected, invalidMessage, invalidResponse, serviceFailed, refused, requestFailed, alreadyAnswered
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }

        /// The stable name of the code.
        public var description: String { "\(self.backing)" }

        /// The TCP connection could not be opened, or a listening socket could not be bound.
        public static let connectFailed = Code(.connectFailed)
        /// The head unit refused the session (StartServiceNAK), or did not answer in time.
        public static let sessionRejected = Code(.sessionRejected)
        /// RegisterAppInterface was answered with `success` false; the detail names the result code.
        public static let registrationFailed = Code(.registrationFailed)
        /// The call needs a registered app (RegisterAppInterface succeeded, and not unregistered).
        public static let notRegistered = Code(.notRegistered)
        /// No response within the request's timeout.
        public static let timeout = Code(.timeout)
        /// The calling task was cancelled; a request already written is not taken back, its late
        /// response is dropped.
        public static let cancelled = Code(.cancelled)
        /// The session ended or its transport closed before the call completed, or the connection
        /// or server was shut down.
        public static let disconnected = Code(.disconnected)
        /// The message to send could not be encoded (it breaks the spec; the detail has the
        /// parameter path), or is too large.
        public static let invalidMessage = Code(.invalidMessage)
        /// The response could not be decoded, or is not the response of the request's function.
        public static let invalidResponse = Code(.invalidResponse)
        /// An audio or video service did not start, or ended while being written to.
        public static let serviceFailed = Code(.serviceFailed)
        /// The session engine refused the call (e.g. a service that is already running); the
        /// detail has its `SessionError`.
        public static let refused = Code(.refused)
        /// The head unit answered a request with `success` false; the detail names its
        /// `resultCode` and `info`.
        public static let requestFailed = Code(.requestFailed)
        /// No request of that correlation id waits for an answer: it was answered already (a
        /// request is answered once), or never received. Nothing was sent.
        public static let alreadyAnswered = Code(.alreadyAnswered)
    }
}
