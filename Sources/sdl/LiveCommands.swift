import ArgumentParser
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SDLAppScripts
import SDLHeadUnitRuntime
import SDLNIO
import SDLRPC
import SDLSession
import SDLTestHeadUnit

struct HeadUnitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "headunit",
        abstract: "Run a test head unit on TCP that answers apps as SDL Core 8.2 does; print a transcript.",
        discussion: """
            Negotiates protocol v1-v5, registers apps (OnHMIStatus NONE, activation, OnPermissionsChange), \
            serves app services, remote control, files, menus, choice sets and the screen as Core does, \
            answers every other request UNSUPPORTED_REQUEST, \
            accepts audio and video on either transport and counts their bytes. Stops on Ctrl-C \
            (SIGINT), SIGTERM or after --duration.
            """)

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port apps connect to; 0 picks a free one (printed first).")
    var port = 12345

    @Option(help: "Offer a secondary transport on this port (0 picks one) in TransportEventUpdate.")
    var secondaryPort: Int?

    @Option(help: "Where audio and video may run when a secondary transport is offered: secondary, primary or both (primary first, as SDL Core's default lists).")
    var mediaTransports = "both"

    @Option(help: "The most sessions at once (1-255).")
    var maxSessions = 255

    @Option(help: "Behave as a head unit of this RPC version: 4.5, 5.0, 5.1, 6.0 or 8.0.")
    var rpcVersion = "8.0.0"

    @Option(help: "The HMI level apps are activated to after registering: full, limited, background or none.")
    var activation = "full"

    @Option(help: "Messages per second one session may send before it is ended, as SDL Core's flood limit; 0 for none.")
    var floodLimit = 1000

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Flag(help: "One JSON object per line.")
    var json = false

    func run() async throws {
        var configuration = SimulatedHeadUnitServerConfiguration()
        configuration.server.host = self.host
        configuration.server.primaryPort = self.port
        configuration.server.secondaryPort = self.secondaryPort
        let slots: [TransportSlot]
        switch self.mediaTransports {
        case "secondary": slots = [.secondary]
        case "primary": slots = [.primary]
        case "both": slots = [.primary, .secondary]
        default: throw ToolError("--media-transports must be secondary, primary or both")
        }
        configuration.server.audioServiceTransports = slots
        configuration.server.videoServiceTransports = slots
        guard (1...255).contains(self.maxSessions) else { throw ToolError("--max-sessions must be 1 to 255") }
        configuration.server.session.headUnit.maxSessions = self.maxSessions
        configuration.server.session.headUnit.floodLimit = self.floodLimit > 0 ? RateLimit(count: self.floodLimit, per: .seconds(1)) : nil
        configuration.headUnit.rpcVersion = try parseRPCVersion(self.rpcVersion)
        configuration.headUnit.activationLevel = try parseActivation(self.activation)

        let printer = TranscriptPrinter(json: self.json)
        let headUnit: SimulatedHeadUnitServer
        do {
            headUnit = try await SimulatedHeadUnitServer.start(configuration: configuration) { printer.headUnit($0) }
        } catch {
            printer.error("\(error)")
            throw ExitCode.failure
        }
        printer.listening(host: self.host, port: headUnit.primaryPort, secondaryPort: headUnit.secondaryPort, rpcVersion: configuration.headUnit.rpcVersion)
        let reason = await StopSignal.wait(duration: self.duration)
        await headUnit.shutdown()
        let statistics = await headUnit.statistics
        printer.headUnitEnd(reason: reason, statistics: statistics)
    }
}

struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Connect to a head unit (sdl headunit or SDL Core) and run a scripted app session; print a transcript.",
        discussion: """
            Scripts: appservice (publish a weather or media service, update its data, answer consumers), \
            rc (read, subscribe and set climate and radio, press a button, consent), video (stream for \
            --duration where the head unit's lists put video: the secondary transport when they ask for \
            it), ping (round trips for --duration), all (appservice, rc, video). Exits non-zero when a step fails. Stops on Ctrl-C (SIGINT) or SIGTERM.
            """)

    @Option(help: "The head unit, HOST:PORT.")
    var connect = "127.0.0.1:12345"

    @Option(help: "appservice, rc, video, ping or all.")
    var script = "all"

    @Option(help: "Seconds video streams and ping asks; the run stops at most 60 s later.")
    var duration: Double = 5

    @Option(help: "Apps running the script at once, each on its own connection.")
    var apps = 1

    @Option(help: "The service appservice publishes: weather or media.")
    var service = "weather"

    @Flag(help: "One JSON object per line.")
    var json = false

    func run() async throws {
        var configuration = AppScriptConfiguration()
        let (host, port) = try parseHostPort(self.connect)
        configuration.host = host
        configuration.port = port
        guard let script = AppScriptName(rawValue: self.script) else {
            throw ToolError("unknown script \(self.script): \(AppScriptName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        configuration.script = script
        guard let service = PublishedServiceKind(rawValue: self.service) else { throw ToolError("--service must be weather or media") }
        configuration.service = service
        guard self.duration > 0, self.duration < 86_400 else { throw ToolError("--duration must be between 0 and 86400 seconds") }
        configuration.duration = .nanoseconds(Int64(self.duration * 1e9))
        guard (1...255).contains(self.apps) else { throw ToolError("--apps must be 1 to 255") }
        configuration.apps = self.apps

        let printer = TranscriptPrinter(json: self.json)
        let run = Task { await AppScriptRunner.run(configuration) { printer.app($0) } }
        let watcher = Task {
            let reason = await StopSignal.wait(duration: self.duration + 60)
            run.cancel()
            return reason
        }
        let report = await run.value
        watcher.cancel()
        let interrupted = await watcher.value
        printer.appEnd(report: report, interrupted: interrupted)
        if let interrupted, interrupted != "cancelled" {
            throw ExitCode(interrupted == "duration" ? 2 : 130)
        }
        guard report.succeeded else { throw ExitCode.failure }
    }
}

/// Waits for SIGINT, SIGTERM or the end of a duration.
enum StopSignal {
    /// Returns "SIGINT", "SIGTERM", "duration", or "cancelled" when the calling task is
    /// cancelled first (nil is never returned; the optional keeps call sites simple).
    static func wait(duration: Double?) async -> String? {
        let (reasons, continuation) = AsyncStream<String>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            sources.append(source)
        }
        let timer = duration.map { seconds in
            Task {
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                if !Task.isCancelled { continuation.yield("duration") }
            }
        }
        let reason = await withTaskCancellationHandler {
            var iterator = reasons.makeAsyncIterator()
            return await iterator.next() ?? "cancelled"
        } onCancel: {
            continuation.yield("cancelled")
        }
        timer?.cancel()
        for source in sources { source.cancel() }
        for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
        return reason
    }
}

/// Prints transcript lines as they come, from any thread, with the seconds since the start.
final class TranscriptPrinter: Sendable {
    let json: Bool
    private let start = NIODeadline.now()
    private let lock = NIOLock()

    init(json: Bool) {
        self.json = json
    }

    private var seconds: Double { Double((NIODeadline.now() - self.start).nanoseconds) / 1e9 }

    private func emit(_ text: String, _ object: [(String, OutputJSON)]) {
        let time = self.seconds
        let line: String
        if self.json {
            line = OutputJSON.object([("t", .double((time * 1000).rounded() / 1000))] + object).text
        } else {
            line = "[\(String(format: "%8.3f", time))] \(text)"
        }
        self.lock.withLock {
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    func listening(host: String, port: Int, secondaryPort: Int?, rpcVersion: RPCVersion) {
        let secondary = secondaryPort.map { ", secondary transport on port \($0)" } ?? ""
        self.emit(
            "listening on \(host):\(port)\(secondary), RPC \(rpcVersion)",
            [
                ("event", .string("listening")), ("host", .string(host)), ("port", .int(port)),
                ("secondaryPort", secondaryPort.map { .int($0) } ?? .null), ("rpcVersion", .string("\(rpcVersion)")),
            ])
    }

    func headUnit(_ line: TranscriptLine) {
        self.emit(
            line.description,
            [
                ("event", .string("transcript")), ("app", line.app.map { .int(Int($0.rawValue)) } ?? .null),
                ("input", .string(line.input)), ("outcome", .string(line.outcome)),
            ])
    }

    func headUnitEnd(reason: String?, statistics: SimulatedHeadUnitStatistics) {
        self.emit(
            "stopped (\(reason ?? "?")): \(statistics.audioBytes) audio bytes, \(statistics.videoBytes) video bytes received",
            [
                ("event", .string("end")), ("reason", .string(reason ?? "?")), ("audioBytes", .int(statistics.audioBytes)),
                ("videoBytes", .int(statistics.videoBytes)),
            ])
    }

    func app(_ line: AppTranscriptLine) {
        self.emit(
            line.description,
            [
                ("event", .string("step")), ("app", .string(line.app)), ("step", .string(line.step)), ("ok", .bool(line.ok)),
                ("outcome", .string(line.outcome)),
            ])
    }

    func appEnd(report: AppScriptReport, interrupted: String?) {
        let seconds = Double(report.elapsed.nanoseconds) / 1e9
        let stop = interrupted.map { $0 == "cancelled" ? "" : " (stopped by \($0))" } ?? ""
        self.emit(
            "\(report.steps) step(s), \(report.failures.count) failed; \(report.roundTrips) round trips in \(String(format: "%.2f", seconds)) s "
                + "(\(String(format: "%.0f", report.roundTripsPerSecond))/s); \(report.mediaBytes) media bytes "
                + "(\(String(format: "%.1f", report.mediaBytesPerSecond / 1_048_576)) MiB/s)\(stop)",
            [
                ("event", .string("end")), ("steps", .int(report.steps)), ("failed", .int(report.failures.count)),
                ("roundTrips", .int(report.roundTrips)), ("roundTripsPerSecond", .double(report.roundTripsPerSecond.rounded())),
                ("mediaBytes", .int(report.mediaBytes)), ("seconds", .double((seconds * 1000).rounded() / 1000)),
                ("stoppedBy", interrupted.flatMap { $0 == "cancelled" ? nil : .string($0) } ?? .null),
            ])
    }

    func error(_ text: String) {
        FileHandle.standardError.write(Data("sdl: \(text)\n".utf8))
    }
}

func parseRPCVersion(_ text: String) throws -> RPCVersion {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
    guard (2...3).contains(parts.count), let major = parts[0], let minor = parts[1], (1...99).contains(major), minor >= 0,
        parts.count == 2 || (parts[2].map { $0 >= 0 } ?? false)
    else { throw ToolError("--rpc-version must be MAJOR.MINOR[.PATCH], e.g. 6.0 (not \(text))") }
    return RPCVersion(major, minor, parts.count == 3 ? parts[2]! : 0)
}

func parseActivation(_ text: String) throws -> SDLHMILevel? {
    switch text.lowercased() {
    case "full": return .full
    case "limited": return .limited
    case "background": return .background
    case "none": return nil
    default: throw ToolError("--activation must be full, limited, background or none")
    }
}

func parseHostPort(_ text: String) throws -> (String, Int) {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
        throw ToolError("--connect must be HOST:PORT (not \(text))")
    }
    var host = String(text[..<colon])
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return (host.isEmpty ? "127.0.0.1" : host, port)
}
