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
    /// The script. Default `all`.
    public var script: AppScriptName = .all
    /// How long `video` streams and `ping` asks, each app from the moment its step starts. Default 5 s.
    public var duration: TimeAmount = .seconds(5)
    /// How many apps run the script at once, each on its own connection. Default 1.
    public var apps = 1
    /// The service `appservice` publishes. Default weather.
    public var service: PublishedServiceKind = .weather
    /// The app runtime's settings (lenient reading by default, as real head units need).
    public var connection = SDLAppConfiguration()

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
        await withTaskGroup(of: Void.self) { group in
            for number in 1...max(1, configuration.apps) {
                group.addTask {
                    await Self.runOneApp(number: number, configuration, transcript: transcript, counters: counters)
                }
            }
        }
        let counts = counters.counts
        var report = AppScriptReport()
        report.steps = counts.steps
        report.failures = counts.failures
        report.roundTrips = counts.roundTrips
        report.mediaBytes = counts.mediaBytes
        report.elapsed = .now() - start
        return report
    }

    private static func runOneApp(
        number: Int, _ configuration: AppScriptConfiguration,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async {
        let scripts: [AppScriptName] = configuration.script == .all ? [.appservice, .rc, .video] : [configuration.script]
        for script in scripts where !Task.isCancelled {
            do {
                try await Self.run(script, number: number, configuration, transcript: transcript, counters: counters)
            } catch {
                // Recorded by the step; the next script runs with a new app.
            }
        }
    }

    /// One app running one script.
    static func run(
        _ script: AppScriptName, number: Int, _ configuration: AppScriptConfiguration,
        transcript: @escaping @Sendable (AppTranscriptLine) -> Void, counters: RunCounters
    ) async throws(AppScriptFailure) {
        let (name, types, isMedia): (String, [SDLAppHMIType], Bool) =
            switch script {
            case .appservice: (configuration.service == .weather ? "Weather" : "Music", [.information], configuration.service == .media)
            case .rc: ("Climate", [.remoteControl], false)
            case .video: ("Navigator", [.navigation], false)
            case .ping, .all: ("Ping", [.default_], false)
            }
        let managers: ScriptManagers =
            switch script {
            case .appservice: .appServices
            case .rc: .remoteControl
            case .video, .ping, .all: []
            }
        let app = try await ScriptedApp.connectAndRegister(
            name: "\(name)-\(number)", to: configuration.host, port: configuration.port, types: types, isMedia: isMedia,
            managers: managers, configuration: configuration.connection, transcript: transcript, counters: counters)
        do {
            try await app.waitForActivation()
            switch script {
            case .appservice: try await app.runAppServiceScript(configuration.service)
            case .rc: try await app.runRemoteControlScript()
            case .video: try await app.runVideoScript(for: configuration.duration)
            case .ping, .all: try await app.runPingScript(for: configuration.duration)
            }
        } catch {
            await app.disconnect()
            throw error
        }
        await app.disconnect()
    }
}

extension ScriptedApp {
    /// `appservice` on the app-service manager: discover the services, publish (the manager
    /// answers consumers), update the data, consume it (through the head unit, which forwards to
    /// the provider: this app) with a subscription, interact, unsubscribe, unpublish (RPC 6.0).
    func runAppServiceScript(_ kind: PublishedServiceKind) async throws(AppScriptFailure) {
        guard await self.speaks(5, 1) else {
            self.skip("app services", "RPC \(await self.rpcVersion) has none (5.1 and later)")
            return
        }
        try await self.subscribeToAppServices()
        let answers = try await self.recordAnswers()
        defer { answers.cancel() }
        let record = try await self.publish(kind)
        try await self.updateData(kind, of: record, number: 1)
        let (data, subscription) = try await self.consumeData(kind)
        try self.expect(data.serviceID == record.serviceID, "GetAppServiceData", "data of \(data.serviceID), not \(record.serviceID)")
        // The head unit sends the update to the other subscribers, not back to its provider.
        try await self.updateData(kind, of: record, number: 2)
        _ = try await self.interact(with: record, uri: "\(kind.rawValue)://refresh")
        try await self.unsubscribe(from: kind, ending: subscription)
        if await self.speaks(6, 0) {
            try await self.unpublish(record)
        } else {
            self.skip("UnpublishAppService", "RPC 6.0 and later")
        }
    }

    /// `rc` on the remote control manager: capability, consent (6.0), climate and radio read,
    /// subscribed and set, a button pressed, subscriptions ended, modules released (6.0).
    func runRemoteControlScript() async throws(AppScriptFailure) {
        let (climate, radio) = try await self.remoteControlModules()
        let consent = await self.speaks(6, 0)
        if consent {
            // Asked for each module before its first set, as the manager would on its own.
            try await self.askConsent(for: climate)
            try await self.askConsent(for: radio)
        } else {
            self.skip("GetInteriorVehicleDataConsent", "RPC 6.0 and later")
        }
        let (climateData, climateUpdates) = try await self.readAndSubscribe(climate)
        let fanSpeed: Int32 = (climateData.climateControlData?.fanSpeed ?? 30) >= 90 ? 20 : (climateData.climateControlData?.fanSpeed ?? 30) + 10
        try await self.set(
            climate, SDLModuleData(moduleType: .climate, moduleId: climate.id.wireValue, climateControlData: SDLClimateControlData(fanSpeed: fanSpeed)),
            what: "fan speed \(fanSpeed)", shows: { $0.climateControlData?.fanSpeed == fanSpeed })
        let (radioData, radioUpdates) = try await self.readAndSubscribe(radio)
        let frequency: Int32 = radioData.radioControlData?.frequencyInteger == 99 ? 101 : 99
        try await self.set(
            radio,
            SDLModuleData(
                moduleType: .radio, moduleId: radio.id.wireValue,
                radioControlData: SDLRadioControlData(frequencyInteger: frequency, frequencyFraction: 5)),
            what: "frequency \(frequency).5", shows: { $0.radioControlData?.frequencyInteger == frequency })
        try await self.press(.fanUp, of: climate)
        try await self.unsubscribe(climate, ending: climateUpdates)
        try await self.unsubscribe(radio, ending: radioUpdates)
        if consent {
            try await self.release(climate)
            try await self.release(radio)
        } else {
            self.skip("ReleaseInteriorVehicleDataModule", "RPC 6.0 and later")
        }
    }

    /// `video`: starts the video service where the head unit's `videoServiceTransports` put it
    /// (the secondary transport is connected and registered first when the list asks for it) and
    /// writes 32 KiB messages for `duration` (at least one).
    func runVideoScript(for duration: TimeAmount) async throws(AppScriptFailure) {
        let writer = try await self.step("start video") {
            let writer = try await self.connection.startVideo(VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264"))
            return (writer, "on the \(writer.info.slot) transport, MTU \(writer.info.mtu ?? 0)")
        }
        let chunk = ByteBuffer(repeating: 0x5A, count: 32 * 1024)
        try await self.step("stream video") {
            let start = NIODeadline.now()
            let deadline = start + duration
            var written = 0
            do {
                repeat {
                    try await writer.write(chunk)
                    written += chunk.readableBytes
                } while NIODeadline.now() < deadline && !Task.isCancelled
            } catch {
                self.counters.update { $0.mediaBytes += written }
                throw error
            }
            self.counters.update { $0.mediaBytes += written }
            let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
            let rate = seconds > 0 ? Double(written) / seconds / 1_048_576 : 0
            return ((), "\(written) bytes in \(formatted(seconds)) s (\(formatted(rate)) MiB/s)")
        }
        await writer.finish()
    }

    /// `ping`: ListFiles round trips for `duration`, at least one (any answer counts; Core answers
    /// success, and so does the test head unit).
    func runPingScript(for duration: TimeAmount) async throws(AppScriptFailure) {
        try await self.step("ListFiles round trips") {
            let start = NIODeadline.now()
            let deadline = start + duration
            var count = 0
            repeat {
                let _: SDLListFilesResponse = try await self.request(SDLListFilesRequest())
                count += 1
            } while NIODeadline.now() < deadline && !Task.isCancelled
            let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
            return ((), "\(count) in \(formatted(seconds)) s (\(formatted(seconds > 0 ? Double(count) / seconds : 0))/s)")
        }
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
