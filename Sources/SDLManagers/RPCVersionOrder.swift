import NIOConcurrencyHelpers
import SDLRuntime
import SDLRPC

/// The RPC versions the managers compare the negotiated version against (MOBILE_API.xml `since`
/// attributes), in ``SDLSyncMsgVersion``'s order.
extension SDLSyncMsgVersion {
    init(_ major: Int32, _ minor: Int32, _ patch: Int32 = 0) {
        self.init(majorVersion: major, minorVersion: minor, patchVersion: patch)
    }

    /// Remote control (climate, radio, ButtonPress), GetSystemCapability.
    static let v4_5 = SDLSyncMsgVersion(4, 5)
    /// OnRCStatus; seat, audio, light, HMI-settings modules.
    static let v5_0 = SDLSyncMsgVersion(5, 0)
    /// App services; capability subscriptions (GetSystemCapability `subscribe`).
    static let v5_1 = SDLSyncMsgVersion(5, 1)
    /// Module ids, seat locations, consent, release; manifest updates, UnpublishAppService.
    static let v6_0 = SDLSyncMsgVersion(6, 0)

    /// `major.minor.patch`, for messages.
    var versionText: String { "\(self.majorVersion).\(self.minorVersion).\(self.patchVersion ?? 0)" }
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

/// `success`, `resultCode` and `info` of any response (every response of the spec is an
/// ``RPCResponse``); `success` false and nothing else for a message that is not one.
func outcome(of response: any RPCMessage) -> (success: Bool, resultCode: SDLResult?, info: String?) {
    guard let response = response as? any RPCResponse else { return (false, nil, nil) }
    return (response.success, response.resultCode, response.info)
}

/// A response of the function with `success` false (``RPCRegistry/failureResponse(functionID:resultCode:info:)``).
func failureResponse(to functionID: FunctionID, _ resultCode: SDLResult, info: String) -> any RPCMessage {
    RPCRegistry.failureResponse(functionID: functionID, resultCode: resultCode, info: info)
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
