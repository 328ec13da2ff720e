import SDLRuntime
import SDLRPC

/// The error the remote-control and app-service managers throw: a startup condition that is not
/// met, a call the head unit's RPC version does not have, data refused before sending, a request
/// the head unit answered with `success` false, or the connection failing under a call.
///
/// Equality and hashing consider only ``code``, as swift-asn1's `ASN1Error` does, so a caller can
/// match an error by its kind; ``detail``, ``resultCode`` and ``connectionError`` say what
/// happened.
public struct SDLManagerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let code: Code
    /// A human detail: the condition not met, the module, the head unit's `info`.
    public let detail: String
    /// The head unit's `resultCode` when it answered a request with `success` false
    /// (``Code/requestFailed``), e.g. IN_USE, REJECTED, UNSUPPORTED_RESOURCE.
    public let resultCode: SDLResult?
    /// The runtime's error when the connection failed under the call (``Code/connectionFailed``).
    public let connectionError: SDLConnectionError?

    init(_ code: Code, _ detail: String, resultCode: SDLResult? = nil, connectionError: SDLConnectionError? = nil) {
        self.code = code
        self.detail = detail
        self.resultCode = resultCode
        self.connectionError = connectionError
    }

    init(_ error: SDLConnectionError) {
        self.init(.connectionFailed, error.description, connectionError: error)
    }

    /// `SDLManagerError.code: detail`.
    public var description: String { "SDLManagerError.\(self.code): \(self.detail)" }

    /// Compares the codes only.
    public static func == (lhs: SDLManagerError, rhs: SDLManagerError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    /// The kinds of error. Only this module mints codes; new ones may be added in minor releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: UInt8 {
            case notRemoteControlApp, notRegistered, unsupportedVersion, remoteControlUnavailable, notAllowed
            case disallowed, unknownModule, mismatchedModuleData, seatLocationUnavailable, consentRefused
            case requestFailed, connectionFailed, disconnected, appServicesUnavailable, unknownService
            case capabilityUnavailable
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }

        /// The stable name of the code.
        public var description: String { "\(self.backing)" }

        /// The app did not register with the HMI type REMOTE_CONTROL.
        public static let notRemoteControlApp = Code(.notRemoteControlApp)
        /// The connection has no registered app (RegisterAppInterface has not succeeded).
        public static let notRegistered = Code(.notRegistered)
        /// The RPC version both sides speak does not have the call: remote control before 4.5,
        /// app services before 5.1, module ids, seats, consent, release, manifest updates and
        /// unpublishing before 6.0.
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// The head unit's RegisterAppInterface response says `hmiCapabilities.remoteControl` false.
        public static let remoteControlUnavailable = Code(.remoteControlUnavailable)
        /// The head unit's last OnRCStatus said `allowed` false: the user turned remote control off.
        public static let notAllowed = Code(.notAllowed)
        /// The app's permissions (OnPermissionsChange) do not allow the function at its HMI level.
        public static let disallowed = Code(.disallowed)
        /// The module id names no module of that type in the REMOTE_CONTROL capability.
        public static let unknownModule = Code(.unknownModule)
        /// Module data whose control data is not that of its `moduleType`, or carries several.
        public static let mismatchedModuleData = Code(.mismatchedModuleData)
        /// The head unit has no seat locations (`hmiCapabilities.seatLocation` false, or no
        /// SEAT_LOCATION capability).
        public static let seatLocationUnavailable = Code(.seatLocationUnavailable)
        /// The user refused consent to control the module (GetInteriorVehicleDataConsent).
        public static let consentRefused = Code(.consentRefused)
        /// The head unit answered `success` false; ``SDLManagerError/resultCode`` says why.
        public static let requestFailed = Code(.requestFailed)
        /// The request could not be sent or answered (timeout, cancellation, session ended);
        /// ``SDLManagerError/connectionError`` has the runtime's error.
        public static let connectionFailed = Code(.connectionFailed)
        /// The session ended: subscriptions end with this error, later calls fail with it.
        public static let disconnected = Code(.disconnected)
        /// The head unit's RegisterAppInterface response says `hmiCapabilities.appServices` false.
        public static let appServicesUnavailable = Code(.appServicesUnavailable)
        /// The service id or type names no service this call can use (not published by this app,
        /// not in the APP_SERVICES capability).
        public static let unknownService = Code(.unknownService)
        /// The head unit answered GetSystemCapability without the capability asked for.
        public static let capabilityUnavailable = Code(.capabilityUnavailable)
    }
}
