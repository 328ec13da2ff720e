import NIOConcurrencyHelpers
import NIOCore
import SDLManagers
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

/// An `SDLHeadUnitHandler` that is a ``SimulatedHeadUnit``: registrations and requests go in as
/// inputs, the outputs go out: responses as the handler's answers (or, for a request forwarded to
/// an app-service provider, once the provider's answer comes back in), notifications in order per
/// app, forwarded requests through `SDLConnectedApp.send`, timers as tasks. Every request an app
/// sends is recorded, so that tests assert what went over the wire.
final class SimulatedHandler: SDLHeadUnitHandler {
    private struct Waiter: Hashable {
        var app: AppHandle
        var correlationID: UInt32
    }

    private struct State {
        var headUnit: SimulatedHeadUnit
        var apps: [AppHandle: SDLConnectedApp] = [:]
        var outboxes: [AppHandle: AsyncStream<any RPCMessage>.Continuation] = [:]
        var waiters: [Waiter: CheckedContinuation<(any RPCMessage)?, Never>] = [:]
        var nextRegistration: UInt32 = 0xF000_0000
        var received: [(app: AppHandle, message: AnyRPCMessage)] = []
    }

    private let state: NIOLockedValueBox<State>

    init(_ configuration: SimulatedHeadUnit.Configuration) {
        self.state = NIOLockedValueBox(State(headUnit: SimulatedHeadUnit(configuration: configuration)))
    }

    static func handle(_ app: SDLConnectedApp) -> AppHandle { AppHandle(UInt64(app.handle.rawValue)) }

    // MARK: - What the test reads

    /// The requests apps sent (all apps, or one), in the order the head unit got them.
    func requestLog(from app: AppHandle? = nil) -> [AnyRPCMessage] {
        self.state.withLockedValue { state in
            state.received.filter { $0.message.rpcType == .request && (app == nil || $0.app == app) }.map(\.message)
        }
    }

    /// The app handles of the registered apps, in registration order.
    var appHandles: [AppHandle] { self.state.withLockedValue { $0.apps.keys.sorted() } }

    /// Reads the simulated head unit.
    func read<T>(_ body: (SimulatedHeadUnit) -> T) -> T {
        self.state.withLockedValue { body($0.headUnit) }
    }

    /// Sends a notification of the test's own to an app, as a head unit would (OnRCStatus
    /// `allowed` false, a narrower OnPermissionsChange).
    func notify(_ app: AppHandle, _ notification: any RPCMessage) {
        _ = self.state.withLockedValue { $0.outboxes[app] }?.yield(notification)
    }

    /// Acts on the simulated head unit (the driver turns a knob, the user changes an HMI level)
    /// and sends what it produces.
    func act(_ body: (inout SimulatedHeadUnit) -> [HeadUnitOutput]) {
        let outputs = self.state.withLockedValue { body(&$0.headUnit) }
        self.dispatch(outputs)
    }

    // MARK: - SDLHeadUnitHandler

    func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        let handle = Self.handle(app)
        let correlationID = self.state.withLockedValue { state -> UInt32 in
            state.nextRegistration += 1
            return state.nextRegistration
        }
        let response = await self.input(AnyRPCMessage(request, correlationID: correlationID), from: handle)
        return response as? SDLRegisterAppInterfaceResponse
            ?? SDLRegisterAppInterfaceResponse(success: false, resultCode: .genericError, info: "no response")
    }

    func respond(to request: AnyRPCMessage, from app: SDLConnectedApp) async -> (any RPCMessage)? {
        await self.input(request, from: Self.handle(app))
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        switch event {
        case .appConnected(let app):
            let handle = Self.handle(app)
            let (outbox, continuation) = AsyncStream<any RPCMessage>.makeStream()
            let outputs = self.state.withLockedValue { state in
                state.apps[handle] = app
                state.outboxes[handle] = continuation
                return state.headUnit.appConnected(handle)
            }
            // Notifications to one app go out one after the other, in the head unit's order.
            Task {
                for await message in outbox { try? await app.sendNotification(message) }
            }
            self.dispatch(outputs)
        case .appDisconnected(let app, _):
            let handle = Self.handle(app)
            let outputs = self.state.withLockedValue { state in
                state.outboxes.removeValue(forKey: handle)?.finish()
                state.apps[handle] = nil
                for (waiter, continuation) in state.waiters where waiter.app == handle {
                    state.waiters[waiter] = nil
                    continuation.resume(returning: nil)
                }
                return state.headUnit.appDisconnected(handle, now: .now())
            }
            self.dispatch(outputs)
        case .notification(let app, let message):
            let handle = Self.handle(app)
            let outputs = self.state.withLockedValue { state in
                state.received.append((handle, message))
                return state.headUnit.received(message, from: handle, now: .now())
            }
            self.dispatch(outputs)
        default:
            break
        }
    }

    // MARK: - Driving the simulated head unit

    /// Gives a request to the head unit and waits for its response to the app, now or after a
    /// provider answered.
    private func input(_ request: AnyRPCMessage, from app: AppHandle) async -> (any RPCMessage)? {
        let waiter = Waiter(app: app, correlationID: request.correlationID)
        var outputs: [HeadUnitOutput] = []
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<(any RPCMessage)?, Never>) in
            outputs = self.state.withLockedValue { state in
                state.received.append((app, request))
                state.waiters[waiter] = continuation
                return state.headUnit.received(request, from: app, now: .now())
            }
            self.dispatch(outputs)
        }
        return response
    }

    /// Acts on outputs: responses resume the requests waiting for them, notifications go to the
    /// app's outbox, requests to providers are sent and their answers fed back, timers armed.
    private func dispatch(_ outputs: [HeadUnitOutput]) {
        for output in outputs {
            switch output {
            case .send(let message, let app):
                switch message.rpcType {
                case .response, .erroneousResponse:
                    let waiting = self.state.withLockedValue {
                        $0.waiters.removeValue(forKey: Waiter(app: app, correlationID: message.correlationID))
                    }
                    waiting?.resume(returning: message.message)
                case .notification:
                    _ = self.state.withLockedValue { $0.outboxes[app] }?.yield(message.message)
                default:
                    self.forward(message, to: app)
                }
            case .armTimer(let deadline):
                Task {
                    let delay = deadline.uptimeNanoseconds > NIODeadline.now().uptimeNanoseconds
                        ? deadline.uptimeNanoseconds - NIODeadline.now().uptimeNanoseconds : 0
                    try? await Task.sleep(nanoseconds: delay)
                    let outputs = self.state.withLockedValue { $0.headUnit.timerFired(now: .now()) }
                    self.dispatch(outputs)
                }
            case .registered, .log:
                break
            }
        }
    }

    /// A request the head unit forwards to an app-service provider: sent with the runtime's own
    /// correlation id, its answer fed back under the head unit's.
    private func forward(_ request: AnyRPCMessage, to provider: AppHandle) {
        guard let app = self.state.withLockedValue({ $0.apps[provider] }) else { return }
        Task {
            guard let answer = try? await app.send(request.message, timeout: .seconds(5)) else { return }
            let routed = AnyRPCMessage(
                answer.message, correlationID: request.correlationID, bulkData: answer.bulkData,
                isErroneousResponse: answer.isErroneousResponse)
            let outputs = self.state.withLockedValue { $0.headUnit.received(routed, from: provider, now: .now()) }
            self.dispatch(outputs)
        }
    }
}

/// A simulated head unit served over loopback, and apps connected to it.
struct TestHeadUnit: Sendable {
    let handler: SimulatedHandler
    let server: SDLHeadUnitServer

    static func start(
        version: RPCVersion = .v8_0, _ configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in }
    ) async throws -> TestHeadUnit {
        var configuration = SimulatedHeadUnit.Configuration()
        configuration.rpcVersion = version
        configuration.providerTimeout = .seconds(3)
        configure(&configuration)
        let handler = SimulatedHandler(configuration)
        var serverConfiguration = SDLHeadUnitConfiguration()
        serverConfiguration.primaryPort = 0
        let server = try await SDLHeadUnitServer.start(configuration: serverConfiguration, handler: handler)
        return TestHeadUnit(handler: handler, server: server)
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

    func stop() async {
        await self.server.shutdown(graceful: false)
    }
}
