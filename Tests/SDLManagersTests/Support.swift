import NIOConcurrencyHelpers
import SDLHeadUnitRuntime
import SDLNIO
import SDLRPC
import SDLTestHeadUnit
import Testing

/// A test exceeded its time bound.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(self.what)" }
}

/// Waits until `condition` holds, polling; fails the test after `seconds`. For state another task
/// sets (a notification the head unit sends after a response).
func eventually(
    _ what: String, seconds: Double = 10, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @Sendable () async -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !(await condition()) {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// What the apps sent the head unit, in the order it got them.
final class RequestLog: Sendable {
    private let messages = NIOLockedValueBox<[(app: AppHandle, message: AnyRPCMessage)]>([])

    func record(_ app: AppHandle, _ message: AnyRPCMessage) {
        self.messages.withLockedValue { $0.append((app, message)) }
    }

    /// The requests of every app, or of one.
    func requests(from app: AppHandle? = nil) -> [AnyRPCMessage] {
        self.messages.withLockedValue { messages in
            messages.filter { $0.message.rpcType == .request && (app == nil || $0.app == app) }.map(\.message)
        }
    }

    /// The handles of the apps that registered, in registration order.
    var registeredApps: [AppHandle] {
        self.messages.withLockedValue { messages in messages.filter { $0.message.message is SDLRegisterAppInterfaceRequest }.map(\.app) }
    }
}

/// `sdl headunit`'s simulated head unit on a loopback port, recording what apps send, and apps
/// connected to it.
struct TestHeadUnit: Sendable {
    let server: SimulatedHeadUnitServer
    let log: RequestLog

    static func start(
        version: RPCVersion = .v8_0, _ configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in }
    ) async throws -> TestHeadUnit {
        var configuration = SimulatedHeadUnitServerConfiguration()
        configuration.server.primaryPort = 0
        configuration.headUnit.rpcVersion = version
        configuration.headUnit.providerTimeout = .seconds(3)
        configure(&configuration.headUnit)
        let log = RequestLog()
        configuration.recorder = { log.record($0, $1) }
        return TestHeadUnit(server: try await SimulatedHeadUnitServer.start(configuration: configuration), log: log)
    }

    /// Connects an app (not registered yet) and the RegisterAppInterface request it will send.
    func connect(
        _ name: String = "RC App", appID: String = "rc-1", hmiTypes: [SDLAppHMIType] = [.remoteControl]
    ) async throws -> (SDLAppConnection, SDLRegisterAppInterfaceRequest) {
        let connection = try await SDLAppConnection.connect(host: "127.0.0.1", port: self.server.primaryPort)
        let request = SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0), appName: name,
            isMediaApplication: false, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs, appHMIType: hmiTypes,
            appID: appID)
        return (connection, request)
    }

    /// The handle of the app that registered last.
    var lastRegisteredApp: AppHandle? { self.log.registeredApps.last }

    func stop() async {
        await self.server.shutdown(graceful: false)
    }
}
