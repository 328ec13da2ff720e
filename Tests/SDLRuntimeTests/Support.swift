import NIOConcurrencyHelpers
import NIOCore
import SDLHeadUnitRuntime
import SDLNIO
import SDLRPC
import SDLSession
import SDLTestHeadUnit
import Testing

@testable import SDLAppScripts

/// Lines collected from any thread.
final class Collected<Line: Sendable>: Sendable {
    private let box = NIOLockedValueBox<[Line]>([])

    func append(_ line: Line) { self.box.withLockedValue { $0.append(line) } }
    var lines: [Line] { self.box.withLockedValue { $0 } }
}

/// A simulated head unit on an ephemeral loopback port, its transcript collected, Core's flood
/// limit off (the load tests send faster than 1,000 messages per second).
func startHeadUnit(
    secondary: Bool = false, _ configure: (inout SimulatedHeadUnitServerConfiguration) -> Void = { _ in }
) async throws -> (SimulatedHeadUnitServer, Collected<TranscriptLine>) {
    var configuration = SimulatedHeadUnitServerConfiguration()
    configuration.server.primaryPort = 0
    configuration.server.secondaryPort = secondary ? 0 : nil
    configuration.server.session.headUnit.floodLimit = nil
    configure(&configuration)
    let transcript = Collected<TranscriptLine>()
    let headUnit = try await SimulatedHeadUnitServer.start(configuration: configuration) { transcript.append($0) }
    return (headUnit, transcript)
}

/// A script run against a head unit, its transcript collected.
func runScript(
    _ script: AppScriptName, against headUnit: SimulatedHeadUnitServer, apps: Int = 1, duration: TimeAmount = .milliseconds(300),
    service: PublishedServiceKind = .weather
) async -> (AppScriptReport, [AppTranscriptLine]) {
    var configuration = AppScriptConfiguration()
    configuration.port = headUnit.primaryPort
    configuration.script = script
    configuration.apps = apps
    configuration.duration = duration
    configuration.service = service
    let transcript = Collected<AppTranscriptLine>()
    let report = await AppScriptRunner.run(configuration) { transcript.append($0) }
    return (report, transcript.lines)
}

/// `step: ok|FAILED` of each line, the outcome left out where it holds numbers or timings.
func steps(_ lines: [AppTranscriptLine], of app: String? = nil) -> [String] {
    lines.filter { app == nil || $0.app == app }.map { "\($0.step): \($0.ok ? "ok" : "FAILED")" }
}

/// Waits until the head unit's statistics satisfy `condition` (sessions end asynchronously), at
/// most 10 s; returns the last statistics read.
@discardableResult
func waitFor(
    _ headUnit: SimulatedHeadUnitServer, _ condition: (SimulatedHeadUnitStatistics) -> Bool
) async throws -> SimulatedHeadUnitStatistics {
    let deadline = NIODeadline.now() + .seconds(10)
    while true {
        let statistics = await headUnit.statistics
        if condition(statistics) || NIODeadline.now() > deadline { return statistics }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
}

/// Connects and registers a scripted app with both managers.
func scriptedApp(
    _ name: String, to headUnit: SimulatedHeadUnitServer, types: [SDLAppHMIType] = [.information], counters: RunCounters = RunCounters(),
    transcript: Collected<AppTranscriptLine> = Collected()
) async throws -> ScriptedApp {
    let app = try await ScriptedApp.connectAndRegister(
        name: name, to: SDLTCPTransport(host: "127.0.0.1", port: headUnit.primaryPort), types: types, isMedia: false, managers: [.remoteControl, .appServices],
        configuration: SDLAppConfiguration(), transcript: { transcript.append($0) }, counters: counters)
    try await app.waitForActivation()
    return app
}

/// Head-unit transcript lines as `appN input: outcome`.
func described(_ lines: [TranscriptLine]) -> [String] { lines.map(\.description) }
