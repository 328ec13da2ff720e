import NIOConcurrencyHelpers
import SDLRuntime
import SDLRPC

/// An RPC version as `major.minor.patch`, ordered: what the managers compare the negotiated
/// version against (MOBILE_API.xml `since` attributes).
struct RPCVersionNumber: Comparable, Sendable, CustomStringConvertible {
    var major: Int32
    var minor: Int32
    var patch: Int32

    init(_ major: Int32, _ minor: Int32, _ patch: Int32 = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    init(_ version: SDLSyncMsgVersion) {
        self.init(version.majorVersion, version.minorVersion, version.patchVersion ?? 0)
    }

    /// Remote control (climate, radio, ButtonPress), GetSystemCapability.
    static let v4_5 = RPCVersionNumber(4, 5)
    /// OnRCStatus; seat, audio, light, HMI-settings modules.
    static let v5_0 = RPCVersionNumber(5, 0)
    /// App services; capability subscriptions (GetSystemCapability `subscribe`).
    static let v5_1 = RPCVersionNumber(5, 1)
    /// Module ids, seat locations, consent, release; manifest updates, UnpublishAppService.
    static let v6_0 = RPCVersionNumber(6, 0)

    static func < (lhs: RPCVersionNumber, rhs: RPCVersionNumber) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }

    var description: String { "\(self.major).\(self.minor).\(self.patch)" }
}

/// Whether the app's permissions allow a function at an HMI level: the function must be listed
/// with the level among its allowed ones (any level when the level is not known yet). With no
/// OnPermissionsChange yet the head unit decides, so the answer is yes.
func permits(_ functionName: String, permissions: SDLOnPermissionsChange?, level: SDLHMILevel?) -> Bool {
    guard let permissions else { return true }
    guard let item = permissions.permissionItem.first(where: { $0.rpcName == functionName }) else { return false }
    guard let level else { return !item.hmiPermissions.allowed.isEmpty }
    return item.hmiPermissions.allowed.contains(level)
}

/// `success` and `resultCode` of any response: every response of the spec has both, but no
/// protocol of the generated code names them, so they are read through the JSON parameters.
func outcome(of response: any RPCMessage) -> (success: Bool, resultCode: SDLResult?, info: String?) {
    let options = RPCCodingOptions(validate: false)
    guard let text = try? response.jsonParametersText(options: options),
        case .object(let object)? = try? RPCValue(jsonObject: text, options: options)
    else { return (false, nil, nil) }
    var resultCode: SDLResult?
    if case .string(let name)? = object["resultCode"] {
        resultCode = SDLResult(wireName: name)
    }
    var info: String?
    if case .string(let text)? = object["info"] {
        info = text
    }
    if case .bool(let success)? = object["success"] {
        return (success, resultCode, info)
    }
    return (false, resultCode, info)
}

/// A response of the function with `success` false: every response of the spec has `success`,
/// `resultCode` and `info` and no other mandatory parameter, so one object fits them all; nil when
/// the spec has no response for the function.
func failureResponse(to functionID: FunctionID, _ resultCode: SDLResult, info: String) -> (any RPCMessage)? {
    guard let type = RPCRegistry.messageType(functionID: functionID, rpcType: .response) else { return nil }
    let parameters = RPCValue.object([
        "success": .bool(false), "resultCode": .string(resultCode.wireName),
        "info": .string(String(String.UnicodeScalarView(info.unicodeScalars.prefix(1000)))),
    ])
    guard let text = try? parameters.jsonText() else { return nil }
    return try? type.init(jsonParameters: text)
}

/// The error for a response with `success` false.
func requestFailed(_ functionName: String, _ response: any RPCMessage) -> SDLManagerError {
    let result = outcome(of: response)
    let code = result.resultCode?.wireName ?? "no resultCode"
    return SDLManagerError(
        .requestFailed, "\(functionName): \(code)" + (result.info.map { ": \($0)" } ?? ""), resultCode: result.resultCode)
}

/// The requests of one manager on its connection, and how many of them the head unit answered
/// (successfully or not): the manager's share of the connection's round trips.
struct ManagerRequests: Sendable {
    let connection: SDLAppConnection
    private let answered = NIOLockedValueBox(0)

    init(_ connection: SDLAppConnection) { self.connection = connection }

    /// The requests answered so far.
    var answeredCount: Int { self.answered.withLockedValue { $0 } }

    /// Sends a request and returns its typed response when it says `success`; throws
    /// ``SDLManagerError/Code/requestFailed`` otherwise, ``SDLManagerError/Code/connectionFailed``
    /// when the runtime fails.
    func succeed<Response: RPCMessage>(
        _ request: some RPCMessage, as responseType: Response.Type = Response.self
    ) async throws(SDLManagerError) -> Response {
        let response: Response
        do {
            response = try await self.connection.send(request)
        } catch {
            // A response of another type is an answer all the same.
            if error.code == .invalidResponse { self.countAnswer() }
            throw SDLManagerError(error)
        }
        self.countAnswer()
        guard outcome(of: response).success else {
            throw requestFailed(type(of: request).functionName, response)
        }
        return response
    }

    /// GetSystemCapability of one type, as ``SDLManagerError``s.
    func capability(_ type: SDLSystemCapabilityType, subscribe: Bool?) async throws(SDLManagerError) -> SDLSystemCapability {
        do {
            let capability = try await self.connection.systemCapability(type, subscribe: subscribe)
            self.countAnswer()
            return capability
        } catch where error.code == .requestFailed || error.code == .invalidResponse {
            self.countAnswer()
            throw SDLManagerError(.capabilityUnavailable, error.detail)
        } catch {
            throw SDLManagerError(error)
        }
    }

    private func countAnswer() { self.answered.withLockedValue { $0 += 1 } }
}
