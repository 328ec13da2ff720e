import NIOConcurrencyHelpers
import NIOCore
import SDLManagers
import SDLNIO
import SDLRPC
import SDLSession

/// One line of an `sdl app` transcript: a step of a script and how it went.
public struct AppTranscriptLine: Hashable, Sendable, CustomStringConvertible {
    /// The app's name, e.g. `Weather-1`.
    public var app: String
    /// The step, e.g. `PublishAppService WEATHER`.
    public var step: String
    /// Whether the step did what the script expects.
    public var ok: Bool
    /// What came of it, e.g. `service weather-1 published and active`.
    public var outcome: String

    /// A line from its parts.
    public init(app: String, step: String, ok: Bool, outcome: String) {
        self.app = app
        self.step = step
        self.ok = ok
        self.outcome = outcome
    }

    /// `Weather-1 PublishAppService WEATHER: ok, service … active`.
    public var description: String {
        "\(self.app) \(self.step): \(self.ok ? "ok" : "FAILED"), \(self.outcome)"
    }
}

/// A step that did not do what the script expects; the script stops there.
public struct AppScriptFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The app and step.
    public var line: AppTranscriptLine

    /// The transcript line of the failed step.
    public var description: String { self.line.description }
}

/// Counters shared by the apps of one run.
final class RunCounters: Sendable {
    private let box = NIOLockedValueBox(Counts())

    struct Counts {
        var steps = 0
        var failures: [AppTranscriptLine] = []
        var roundTrips = 0
        var timedRoundTrips = 0
        var slowestRoundTrip: TimeAmount = .zero
        var mediaBytes = 0
    }

    func update(_ body: (inout Counts) -> Void) {
        self.box.withLockedValue(body)
    }

    var counts: Counts { self.box.withLockedValue { $0 } }
}

/// The managers a scripted app works with, made before it registers.
struct ScriptManagers: OptionSet, Sendable {
    let rawValue: Int

    /// An ``SDLRemoteControlManager``, which hears the OnRCStatus that follows the registration.
    static let remoteControl = ScriptManagers(rawValue: 1)
    /// An ``SDLAppServiceManager`` for the app's id.
    static let appServices = ScriptManagers(rawValue: 2)
}

/// One app of a script run: its connection, its managers and how its steps are recorded. The
/// steps are small methods in extensions (`ScriptedApp+AppServices.swift`,
/// `ScriptedApp+RemoteControl.swift`, …), each one call of a manager or of the connection.
public final class ScriptedApp: Sendable {
    /// The app's name in the transcript and in RegisterAppInterface.
    public let name: String
    /// The connection, once ``connectAndRegister(to:port:types:isMedia:configuration:)`` made it.
    public let connection: SDLAppConnection
    /// The remote control manager, when the script asked for one.
    let remoteControl: SDLRemoteControlManager?
    /// The app-service manager, when the script asked for one.
    let appServices: SDLAppServiceManager?
    let transcript: @Sendable (AppTranscriptLine) -> Void
    let counters: RunCounters

    init(
        name: String, connection: SDLAppConnection, remoteControl: SDLRemoteControlManager?, appServices: SDLAppServiceManager?,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) {
        self.name = name
        self.connection = connection
        self.remoteControl = remoteControl
        self.appServices = appServices
        self.transcript = transcript
        self.counters = counters
    }

    /// Runs one step: `body` returns what came of it; a thrown error, or an `AppScriptFailure`,
    /// fails it. Either way one transcript line is written.
    @discardableResult
    func step<Value>(_ step: String, _ body: () async throws -> (Value, String)) async throws(AppScriptFailure) -> Value {
        do {
            let (value, outcome) = try await body()
            self.record(step, ok: true, outcome)
            return value
        } catch let failure as AppScriptFailure {
            self.counters.update { $0.failures.append(failure.line) }
            self.transcript(failure.line)
            throw failure
        } catch {
            throw self.recordedFailure(step, "\(error)")
        }
    }

    /// A check inside a step: throws a failure of `step` naming what was expected.
    func expect(_ condition: Bool, _ step: String, _ what: @autoclosure () -> String) throws(AppScriptFailure) {
        guard condition else { throw self.failure(step, what()) }
    }

    /// The failure of `step`, with what came of it.
    func failure(_ step: String, _ outcome: String) -> AppScriptFailure {
        AppScriptFailure(line: AppTranscriptLine(app: self.name, step: step, ok: false, outcome: outcome))
    }

    /// The remote control manager, or the failure of `step` when the script made none.
    func remoteControlManager(_ step: String) throws(AppScriptFailure) -> SDLRemoteControlManager {
        guard let manager = self.remoteControl else { throw self.recordedFailure(step, "the app has no remote control manager") }
        return manager
    }

    /// The app-service manager, or the failure of `step` when the script made none.
    func appServiceManager(_ step: String) throws(AppScriptFailure) -> SDLAppServiceManager {
        guard let manager = self.appServices else { throw self.recordedFailure(step, "the app has no app-service manager") }
        return manager
    }

    func recordedFailure(_ step: String, _ outcome: String) -> AppScriptFailure {
        let failure = self.failure(step, outcome)
        self.counters.update { $0.failures.append(failure.line) }
        self.transcript(failure.line)
        return failure
    }

    /// A step that is skipped, e.g. a function the head unit's RPC version does not have.
    func skip(_ step: String, _ why: String) {
        self.record(step, ok: true, "skipped: \(why)")
    }

    func record(_ step: String, ok: Bool, _ outcome: String) {
        self.counters.update { $0.steps += 1 }
        self.transcript(AppTranscriptLine(app: self.name, step: step, ok: ok, outcome: outcome))
    }

    /// The RPC version both sides speak (the lower of the app's and the head unit's).
    var rpcVersion: (major: Int, minor: Int) {
        get async {
            guard let version = await self.connection.rpcVersion else { return (0, 0) }
            return (Int(version.majorVersion), Int(version.minorVersion))
        }
    }

    /// Whether both sides speak at least `major.minor`.
    func speaks(_ major: Int, _ minor: Int) async -> Bool {
        let version = await self.rpcVersion
        return (version.major, version.minor) >= (major, minor)
    }

    /// Sends a request and returns its response, counting the round trip.
    func request<Response: RPCMessage>(_ request: some RPCMessage, as type: Response.Type = Response.self) async throws -> Response {
        let start = NIODeadline.now()
        let response: Response = try await self.connection.send(request)
        let waited = NIODeadline.now() - start
        self.counters.update {
            $0.roundTrips += 1
            $0.timedRoundTrips += 1
            $0.slowestRoundTrip = max($0.slowestRoundTrip, waited)
        }
        return response
    }

    // MARK: - Steps every script shares

    /// Connects, starts the RPC service, makes the managers and registers the app; its name,
    /// lowercased, is also its app id.
    static func connectAndRegister(
        name: String, to transport: any SDLAppTransport, types: [SDLAppHMIType], isMedia: Bool, managers: ScriptManagers = [],
        configuration: SDLAppConfiguration, transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async throws(AppScriptFailure) -> ScriptedApp {
        let connection: SDLAppConnection
        let target = transport.transportDescription
        do {
            connection = try await SDLAppConnection.connect(to: transport, configuration: configuration)
        } catch {
            let line = AppTranscriptLine(app: name, step: "connect \(target)", ok: false, outcome: "\(error)")
            counters.update { $0.failures.append(line) }
            transcript(line)
            throw AppScriptFailure(line: line)
        }
        let request = SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0), appName: name,
            isMediaApplication: isMedia, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs,
            appHMIType: types, appID: name.lowercased())
        let app = ScriptedApp(
            name: name, connection: connection,
            remoteControl: managers.contains(.remoteControl) ? SDLRemoteControlManager(connection: connection, registeredWith: request) : nil,
            appServices: managers.contains(.appServices) ? SDLAppServiceManager(connection: connection, appID: request.appID) : nil,
            transcript: transcript, counters: counters)
        let info = connection.sessionInfo
        app.record("connect \(target)", ok: true, "session \(info.sessionID), protocol \(info.version)")
        do {
            try await app.step("RegisterAppInterface") {
                let response = try await connection.register(request)
                let version = await connection.rpcVersion.map { "\($0.majorVersion).\($0.minorVersion).\($0.patchVersion ?? 0)" } ?? "?"
                let vehicle = response.vehicleType.map { " on \($0.make ?? "?") \($0.model ?? "?")" } ?? ""
                return ((), "\(response.resultCode), RPC \(version)\(vehicle)")
            }
        } catch {
            await connection.disconnect()
            throw error
        }
        return app
    }

    /// Waits until the head unit has moved the app out of NONE (FULL, LIMITED or BACKGROUND), as
    /// Core does after registration.
    func waitForActivation(within timeout: TimeAmount = .seconds(10)) async throws(AppScriptFailure) {
        try await self.step("wait for activation") {
            let updates = self.connection.hmiStatusUpdates()
            let level = await firstElement(of: updates, within: timeout) { $0.hmiLevel != .none_ }
            guard let level else {
                throw AppScriptFailure(line: AppTranscriptLine(
                    app: self.name, step: "wait for activation", ok: false, outcome: "still NONE after \(timeout)"))
            }
            return ((), "OnHMIStatus \(level.hmiLevel)")
        }
    }

    /// Stops as a well-mannered app does: UnregisterAppInterface (the scripts run one request at a
    /// time, so none is in flight: SDL Core 8.2 can crash when a session ends under a queued RC
    /// request), then EndService; the transports close. The requests the managers had answered
    /// join the run's round trips.
    func stop() async {
        let managed = (self.remoteControl?.answeredRequests ?? 0) + (self.appServices?.answeredRequests ?? 0)
        self.counters.update { $0.roundTrips += managed }
        if await self.connection.registration != nil {
            do {
                try await self.connection.unregister()
                self.record("UnregisterAppInterface", ok: true, "unregistered")
            } catch {
                self.record("UnregisterAppInterface", ok: true, "not answered: \(error)")
            }
        } else if let reason = await self.connection.unregisteredReason {
            self.record("UnregisterAppInterface", ok: true, "skipped: the head unit unregistered the app (\(reason.wireName))")
        }
        await self.connection.disconnect()
        self.record("disconnect", ok: true, "session ended")
    }
}

/// The first element of `sequence` that `accept` takes, or nil once `timeout` passed or the
/// sequence ended.
func firstElement<Element: Sendable>(
    of sequence: AsyncStream<Element>, within timeout: TimeAmount, where accept: @escaping @Sendable (Element) -> Bool
) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await element in sequence where accept(element) {
                return element
            }
            return nil
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(max(0, timeout.nanoseconds)))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
