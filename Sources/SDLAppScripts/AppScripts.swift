import NIOCore
import SDLManagers
import SDLNIO
import SDLRPC
import SDLSession

/// The scripts `sdl app --script NAME` runs.
public enum AppScriptName: String, CaseIterable, Sendable {
    /// Publish a weather (or media) service, update its data, answer consumers, consume it.
    case appservice
    /// Read, subscribe to and set climate and radio, press a button, ask consent, release.
    case rc
    /// Open the video service (on the secondary transport when the head unit offers one) and
    /// stream for the run's duration.
    case video
    /// `appservice`, `rc` and `video`, one app each, one after the other.
    case all
    /// Request round trips (ListFiles) for the run's duration, to measure throughput.
    case ping
}

/// The settings of an `sdl app` run.
public struct AppScriptConfiguration: Sendable {
    /// The head unit's address. Default 127.0.0.1.
    public var host = "127.0.0.1"
    /// The head unit's port. Default 12345, SDL Core's.
    public var port = 12345
    /// The transport to reach the head unit; nil: TCP to ``host``:``port``. Default nil.
    public var transport: (any SDLAppTransport)?
    /// The script. Default `all`.
    public var script: AppScriptName = .all
    /// How long `video` streams and `ping` asks, each app from the moment its step starts. Default 5 s.
    public var duration: TimeAmount = .seconds(5)
    /// How many apps run the script at once, each on its own connection. `appservice` with one
    /// app adds a consumer app beside the provider; with several, app k consumes the service of
    /// app k+1 (the last one app 1's). Default 1.
    public var apps = 1
    /// The service `appservice` publishes. Default weather.
    public var service: PublishedServiceKind = .weather
    /// `ping`: requests per second each app sends at most, kept below SDL Core's flood limit
    /// (1,000 messages per second per session, beyond which it ends the session). Default 500.
    public var rate = 500
    /// `video`: the bit rate each app streams at, as a real encoder would. Default 8 Mbit/s.
    public var bitrate = 8_000_000
    /// The app runtime's settings (lenient reading by default, as real head units need).
    public var connection = SDLAppConfiguration()

    /// The transport apps connect with.
    var appTransport: any SDLAppTransport {
        self.transport ?? SDLTCPTransport(host: self.host, port: self.port)
    }

    /// The defaults.
    public init() {}
}

/// What a run did.
public struct AppScriptReport: Hashable, Sendable {
    /// Steps run (successful or skipped).
    public var steps = 0
    /// The steps that failed, in order.
    public var failures: [AppTranscriptLine] = []
    /// Requests answered by the head unit.
    public var roundTrips = 0
    /// Of those, the requests the scripts sent themselves, each timed (the managers' own requests
    /// are counted in ``roundTrips``, not timed).
    public var timedRoundTrips = 0
    /// The longest any timed request waited for its answer; zero when none was timed.
    public var slowestRoundTrip: TimeAmount = .zero
    /// Audio and video bytes written.
    public var mediaBytes = 0
    /// How long the run took.
    public var elapsed: TimeAmount = .zero

    /// Whether every step did what the script expects.
    public var succeeded: Bool { self.failures.isEmpty }

    /// Round trips per second over the run.
    public var roundTripsPerSecond: Double {
        self.elapsed.nanoseconds > 0 ? Double(self.roundTrips) * 1e9 / Double(self.elapsed.nanoseconds) : 0
    }

    /// Media bytes per second over the run.
    public var mediaBytesPerSecond: Double {
        self.elapsed.nanoseconds > 0 ? Double(self.mediaBytes) * 1e9 / Double(self.elapsed.nanoseconds) : 0
    }
}

/// Runs `sdl app` scripts: each app connects, registers, waits for activation, runs its steps and
/// disconnects; a failed step stops its app (the others go on) and is reported.
public enum AppScriptRunner {
    /// Runs the configured script with ``AppScriptConfiguration/apps`` apps at once. Cancelling
    /// the calling task stops every app (they disconnect) and ends the run.
    public static func run(
        _ configuration: AppScriptConfiguration, transcript: @escaping @Sendable (AppTranscriptLine) -> Void = { _ in }
    ) async -> AppScriptReport {
        let counters = RunCounters()
        let start = NIODeadline.now()
        let rendezvous = AppServiceRendezvous()
        await withTaskGroup(of: Void.self) { group in
            for number in 1...max(1, configuration.apps) {
                group.addTask {
                    await Self.runOneApp(number: number, configuration, rendezvous, transcript: transcript, counters: counters)
                }
            }
        }
        let counts = counters.counts
        var report = AppScriptReport()
        report.steps = counts.steps
        report.failures = counts.failures
        report.roundTrips = counts.roundTrips
        report.timedRoundTrips = counts.timedRoundTrips
        report.slowestRoundTrip = counts.slowestRoundTrip
        report.mediaBytes = counts.mediaBytes
        report.elapsed = .now() - start
        return report
    }

    private static func runOneApp(
        number: Int, _ configuration: AppScriptConfiguration, _ rendezvous: AppServiceRendezvous,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async {
        let scripts: [AppScriptName] = configuration.script == .all ? [.appservice, .rc, .video] : [configuration.script]
        for script in scripts where !Task.isCancelled {
            if script == .appservice {
                await Self.runAppServices(number: number, configuration, rendezvous, transcript: transcript, counters: counters)
                continue
            }
            do {
                try await Self.run(script, number: number, configuration, transcript: transcript, counters: counters)
            } catch {
                // Recorded by the step; the next script runs with a new app.
            }
        }
    }

    /// `appservice` for app `number`: it publishes its service and consumes that of app
    /// `number + 1` (the first app's for the last); alone, it is the provider and a consumer app
    /// of its own runs beside it. A provider never consumes its own service (SDL Core answers it
    /// IGNORED): consuming goes through another app.
    private static func runAppServices(
        number: Int, _ configuration: AppScriptConfiguration, _ rendezvous: AppServiceRendezvous,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async {
        let apps = max(1, configuration.apps)
        if apps == 1 {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    try? await Self.runProvider(number: 1, consumedBy: 1, configuration, rendezvous, transcript: transcript, counters: counters)
                }
                group.addTask {
                    try? await Self.runConsumer(
                        name: "Consumer-1", consuming: 1, alsoProvider: nil, configuration, rendezvous, transcript: transcript, counters: counters)
                }
            }
            return
        }
        // Each app provides and consumes: app k consumes app k+1's service.
        let target = number % apps + 1
        try? await Self.runConsumer(
            name: nil, consuming: target, alsoProvider: number, configuration, rendezvous, transcript: transcript, counters: counters)
    }

    /// One app running one script other than `appservice`.
    static func run(
        _ script: AppScriptName, number: Int, _ configuration: AppScriptConfiguration,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async throws(AppScriptFailure) {
        let (name, types): (String, [SDLAppHMIType]) =
            switch script {
            case .rc: ("Climate", [.remoteControl])
            case .video: ("Navigator", [.navigation])
            case .appservice, .ping, .all: ("Ping", [.default_])
            }
        let app = try await ScriptedApp.connectAndRegister(
            name: "\(name)-\(number)", to: configuration.appTransport, types: types, isMedia: false,
            managers: script == .rc ? .remoteControl : [], configuration: configuration.connection, transcript: transcript,
            counters: counters)
        do {
            try await app.waitForActivation()
            switch script {
            case .rc: try await app.runRemoteControlScript(contended: configuration.apps > 1)
            case .video: try await app.runVideoScript(for: configuration.duration, bitrate: configuration.bitrate, contended: configuration.apps > 1)
            case .appservice, .ping, .all: try await app.runPingScript(for: configuration.duration, rate: configuration.rate)
            }
        } catch {
            await app.stop()
            throw error
        }
        await app.stop()
    }

    private static func appName(_ configuration: AppScriptConfiguration, _ number: Int) -> String {
        "\(configuration.service == .weather ? "Weather" : "Music")-\(number)"
    }

    /// A provider alone: publish, update, answer consumers until its consumer is done, unpublish.
    private static func runProvider(
        number: Int, consumedBy consumers: Int, _ configuration: AppScriptConfiguration, _ rendezvous: AppServiceRendezvous,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async throws(AppScriptFailure) {
        let app = try await ScriptedApp.connectAndRegister(
            name: Self.appName(configuration, number), to: configuration.appTransport, types: [.information],
            isMedia: configuration.service == .media, managers: .appServices, configuration: configuration.connection,
            transcript: transcript, counters: counters)
        do {
            try await app.waitForActivation()
            try await app.provide(configuration.service, number: number, rendezvous)
        } catch {
            await rendezvous.fail(provider: number)
            await app.stop()
            throw error
        }
        await app.stop()
    }

    /// A consumer (and, in a ring of apps, the provider of its own service too).
    private static func runConsumer(
        name: String?, consuming target: Int, alsoProvider number: Int?, _ configuration: AppScriptConfiguration,
        _ rendezvous: AppServiceRendezvous, transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async throws(AppScriptFailure) {
        let app = try await ScriptedApp.connectAndRegister(
            name: name ?? Self.appName(configuration, number ?? target), to: configuration.appTransport, types: [.information],
            isMedia: configuration.service == .media, managers: .appServices, configuration: configuration.connection,
            transcript: transcript, counters: counters)
        do {
            try await app.waitForActivation()
            guard await app.speaks(5, 1) else {
                app.skip("app services", "RPC \(await app.rpcVersion) has none (5.1 and later)")
                await rendezvous.fail(provider: number ?? 0)
                await app.stop()
                return
            }
            if let number {
                // Publishing and consuming run side by side: each waits for the other apps.
                let provided = Task { () async -> AppScriptFailure? in
                    do throws(AppScriptFailure) {
                        try await app.provide(configuration.service, number: number, rendezvous)
                        return nil
                    } catch {
                        return error
                    }
                }
                var consumeError: AppScriptFailure?
                do {
                    try await app.consume(configuration.service, of: target, rendezvous, providesToo: true)
                } catch {
                    consumeError = error
                }
                let provideError = await provided.value
                if let error = consumeError ?? provideError { throw error }
            } else {
                try await app.consume(configuration.service, of: target, rendezvous, providesToo: false)
            }
        } catch let failure as AppScriptFailure {
            if let number { await rendezvous.fail(provider: number) }
            await rendezvous.consumed(target)
            await app.stop()
            throw failure
        } catch {
            await app.stop()
        }
        await app.stop()
    }
}

/// A number with one decimal, without Foundation.
func formatted(_ value: Double) -> String {
    guard value.isFinite else { return "\(value)" }
    let tenths = (value * 10).rounded()
    let whole = Int(tenths / 10)
    let fraction = Int(abs(tenths).truncatingRemainder(dividingBy: 10))
    return "\(tenths < 0 && whole == 0 ? "-" : "")\(whole).\(fraction)"
}
