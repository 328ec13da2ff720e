import ArgumentParser
import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SDLAppScripts
import SDLHeadUnitRuntime
import SDLNIO
import SDLRPC
import SDLSession
import SDLTestHeadUnit
import ServiceLifecycle

struct HeadUnitSubcommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "headunit",
        abstract: "Run a test head unit that answers apps as SDL Core 8.2 does; print a transcript.",
        discussion: """
            Listens on TCP (and WebSocket with --websocket-port). Negotiates protocol v1-v5, registers apps \
            (OnHMIStatus NONE, activation, OnPermissionsChange), applies SDL Core's policy table (its stock \
            rules, or --policy FILE in sdl_preloaded_pt.json format), serves app services and remote control \
            by Core's rules, files, menus, choice sets and the screen, answers every other request \
            UNSUPPORTED_REQUEST, accepts audio and video where Core would and counts their bytes, and ends \
            a session above the flood limit as Core does. The driver and the vehicle follow commands from \
            --commands FILE and from standard input, one per line (hmi APP LEVEL, access MODE, consent \
            allow|deny|ask, answer [SUBJECT] allow|deny, set TYPE PARAMETER VALUE, seat occupied|vacant SEAT, \
            vehicle delay DURATION, wait DURATION). The transcript never holds the head unit up: lines a full \
            standard output cannot take are dropped and counted. Stops on Ctrl-C (SIGINT), SIGTERM or after \
            --duration.
            """)

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port apps connect to; 0 picks a free one (printed first).")
    var port = 12345

    @Option(help: "Also take apps over WebSocket on this port (SDL Core's WebEngine port is 2020; 0 picks one).")
    var websocketPort: Int?

    @Option(help: "Offer a secondary transport on this port (0 picks one) in TransportEventUpdate.")
    var secondaryPort: Int?

    @Option(help: "Where audio and video may run when a secondary transport is offered: secondary, primary or both (primary first, as SDL Core's default lists).")
    var mediaTransports = "both"

    @Option(help: "The most sessions at once (1-255).")
    var maxSessions = 255

    @Option(help: "The most connections at once; beyond it the oldest without a registered app is closed. Default 512, lower when the descriptor limit (ulimit -n) is low.")
    var maxConnections: Int?

    @Option(help: "Behave as a head unit of this RPC version: 4.5, 5.0, 5.1, 6.0 or 8.0.")
    var rpcVersion = "8.0.0"

    @Option(help: "The HMI level apps are activated to after registering: full, limited, background or none.")
    var activation = "full"

    @Option(help: "Messages per second one session may send before it is ended, as SDL Core's flood limit; 0 for none.")
    var floodLimit = 1000

    @Option(help: "A policy table in SDL Core's sdl_preloaded_pt.json format; without it, the stock rules of SDL Core 8.2.")
    var policy: String?

    @Option(help: "Remote control access mode when a module another app holds is asked for: auto-allow (SDL Core's default), auto-deny or ask-driver.")
    var accessMode = "auto-allow"

    @Option(help: "How the driver answers consent questions: allow, deny, or ask (each question waits for an 'answer' command).")
    var consent = "allow"

    @Option(help: "The vehicle's remote-control modules: standard (every module type), climate-and-radio, or climate-only.")
    var vehicle = "standard"

    @Option(help: "Driver and vehicle commands to carry out, one per line, after the head unit starts.")
    var commands: String?

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
        if let maxConnections = self.maxConnections {
            guard maxConnections >= 1 else { throw ToolError("--max-connections must be 1 or more") }
            configuration.server.maxConnections = maxConnections
        }
        guard self.floodLimit >= 0 else { throw ToolError("--flood-limit must be 0 or more") }
        configuration.server.session.headUnit.floodLimit = self.floodLimit > 0 ? RateLimit(count: self.floodLimit, per: .seconds(1)) : nil
        configuration.headUnit.rpcVersion = try parseRPCVersion(self.rpcVersion)
        configuration.headUnit.activationLevel = try parseActivation(self.activation)
        switch self.accessMode {
        case "auto-allow": configuration.headUnit.accessMode = .autoAllow
        case "auto-deny": configuration.headUnit.accessMode = .autoDeny
        case "ask-driver": configuration.headUnit.accessMode = .askDriver
        default: throw ToolError("--access-mode must be auto-allow, auto-deny or ask-driver")
        }
        switch self.consent {
        case "allow": configuration.headUnit.driverConsent = .grant
        case "deny": configuration.headUnit.driverConsent = .refuse
        case "ask": configuration.headUnit.driverConsent = .ask
        default: throw ToolError("--consent must be allow, deny or ask")
        }
        switch self.vehicle {
        case "standard": configuration.headUnit.vehicle = .standard
        case "climate-and-radio": configuration.headUnit.vehicle = .climateAndRadio
        case "climate-only": configuration.headUnit.vehicle = .climateOnly
        default: throw ToolError("--vehicle must be standard, climate-and-radio or climate-only")
        }
        if let path = self.policy {
            guard let bytes = FileManager.default.contents(atPath: path) else { throw ToolError("cannot read the policy table \(path)") }
            do {
                configuration.headUnit.policy = try HeadUnitPolicy(json: Array(bytes))
            } catch {
                throw ToolError("\(path): \(error)")
            }
        }
        var script: [SDLTestHeadUnit.HeadUnitCommand] = []
        if let path = self.commands {
            guard let bytes = FileManager.default.contents(atPath: path) else { throw ToolError("cannot read the commands \(path)") }
            do {
                script = try SDLTestHeadUnit.HeadUnitCommand.parseScript(String(decoding: bytes, as: UTF8.self), vehicle: configuration.headUnit.vehicle)
            } catch {
                throw ToolError("\(path): \(error)")
            }
        }

        let printer = TranscriptPrinter(json: self.json)
        let headUnit: SimulatedHeadUnitServer
        do {
            var transports: [any SDLHeadUnitTransport] = [SDLTCPTransport(host: self.host, port: self.port)]
            if let websocket = self.websocketPort {
                transports.append(SDLWebSocketTransport(role: .server(host: self.host, port: websocket)))
            }
            headUnit = try await SimulatedHeadUnitServer.start(
                transports: transports, secondary: self.secondaryPort.map { SDLTCPTransport(host: self.host, port: $0) },
                configuration: configuration
            ) { printer.headUnit($0) }
        } catch {
            printer.error("\(error)")
            throw ExitCode.failure
        }
        printer.listening(
            host: self.host, port: headUnit.primaryPort, webSocketPort: headUnit.server.listeners.dropFirst().first?.advertisedAddress?.port,
            secondaryPort: headUnit.secondaryPort, rpcVersion: configuration.headUnit.rpcVersion)
        let vehicle = configuration.headUnit.vehicle
        let driver = Task {
            await Self.perform(script, on: headUnit, printer: printer)
            // Then whatever comes on standard input, until it ends.
            for await line in StandardInputLines.lines() {
                do {
                    guard let command = try SDLTestHeadUnit.HeadUnitCommand(parsing: line, vehicle: vehicle) else { continue }
                    await Self.perform([command], on: headUnit, printer: printer)
                } catch {
                    printer.error("standard input: \(error)")
                }
            }
        }
        // The head unit runs as a service of a group; SIGINT, SIGTERM or --duration end the
        // watcher, which shuts the group down gracefully: every session ended with EndService,
        // every connection closed, before the end line.
        let watcher = StopWatcher(duration: self.duration)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: headUnit),
                    .init(service: watcher, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                logger: Logger(label: "sdl.headunit", factory: { _ in SwiftLogNoOpLogHandler() })))
        do {
            try await group.run()
        } catch {
            printer.error("\(error)")
        }
        driver.cancel()
        let statistics = await headUnit.statistics
        printer.headUnitEnd(reason: watcher.reason, statistics: statistics)
        await printer.finish()
    }

    /// Carries out commands in order, sleeping through `wait`.
    static func perform(_ commands: [SDLTestHeadUnit.HeadUnitCommand], on headUnit: SimulatedHeadUnitServer, printer: TranscriptPrinter) async {
        for command in commands where !Task.isCancelled {
            await headUnit.perform(command)
            if case .wait(let amount) = command.action, amount > .zero {
                try? await Task.sleep(nanoseconds: UInt64(amount.nanoseconds))
            }
        }
    }
}

struct AppSubcommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Connect to a head unit (sdl headunit or SDL Core) and run a scripted app session; print a transcript.",
        discussion: """
            Scripts: appservice (one app publishes a weather or media service, updates its data and answers \
            consumers, another consumes it; with --apps N app k consumes app k+1's), rc (read, subscribe \
            and set climate and radio, press a button, consent; with --apps N SDL Core's allocation outcomes \
            are the expected results of contention), video (stream at --bitrate for --duration where the head \
            unit's lists put video: the secondary transport when they ask for it; the end must be \
            acknowledged; an app made NOT_STREAMABLE stops writing; with --apps N a start refused for the \
            HMI level is the expected result of contention), ping (round trips for --duration at most --rate per second), all (appservice, rc, \
            video). Every app unregisters before it ends its session. Exits non-zero when a step fails. \
            Stops on Ctrl-C (SIGINT) or SIGTERM.
            """)

    @Option(help: "The head unit: HOST:PORT or tcp://HOST:PORT (SDL Core: 12345), ws://HOST:PORT[/PATH] (SDL Core's WebEngine: 2020).")
    var connect = "127.0.0.1:12345"

    @Option(help: "appservice, rc, video, ping or all.")
    var script = "all"

    @Option(help: "Seconds video streams and ping asks; the run stops at most 60 s later.")
    var duration: Double = 5

    @Option(help: "Apps running the script at once, each on its own connection.")
    var apps = 1

    @Option(help: "The service appservice publishes: weather or media.")
    var service = "weather"

    @Option(help: "ping: requests per second per app at most (SDL Core ends a session above 1,000 messages per second).")
    var rate = 500

    @Option(help: "video: bits per second per app.")
    var bitrate = 8_000_000

    @Flag(help: "One JSON object per line.")
    var json = false

    func run() async throws {
        var configuration = AppScriptConfiguration()
        let transport = try parseAppTransport(self.connect)
        configuration.transport = transport
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
        guard (1...100_000).contains(self.rate) else { throw ToolError("--rate must be 1 to 100000") }
        configuration.rate = self.rate
        guard (8_000...10_000_000_000).contains(self.bitrate) else { throw ToolError("--bitrate must be 8000 to 10000000000") }
        configuration.bitrate = self.bitrate

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
        await printer.finish()
        if let interrupted, interrupted != "cancelled" {
            throw ExitCode(interrupted == "duration" ? 2 : 130)
        }
        guard report.succeeded else { throw ExitCode.failure }
    }
}

/// The lines of standard input, read on a thread of their own so that nothing waits for them.
enum StandardInputLines {
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(64))
        let thread = Thread {
            while let line = readLine() {
                continuation.yield(line)
            }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}

/// Waits for SIGINT, SIGTERM or the end of a duration.
/// A service that returns on SIGINT, SIGTERM or at the end of `duration`, remembering which: in a
/// service group whose graceful shutdown it starts by returning.
final class StopWatcher: Service, Sendable {
    let duration: Double?
    private let stopReason = NIOLockedValueBox("cancelled")

    init(duration: Double?) { self.duration = duration }

    /// "SIGINT", "SIGTERM", "duration", or "cancelled" when the group was cancelled first.
    var reason: String { self.stopReason.withLockedValue { $0 } }

    func run() async {
        let reason = await StopSignal.wait(duration: self.duration) ?? "cancelled"
        self.stopReason.withLockedValue { $0 = reason }
    }
}

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

/// Prints transcript lines as they come, from any thread, with the seconds since the start. A
/// writer thread of its own writes them: whoever emits a line (the head unit's event loop) never
/// waits for standard output. Lines beyond ``capacity`` waiting to be written are dropped and
/// counted, and the count is printed once the output takes lines again.
final class TranscriptPrinter: Sendable {
    let json: Bool
    private let start = NIODeadline.now()
    private let state = NIOLockedValueBox(State())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    /// Lines held for the writer at most.
    static let capacity = 4096

    private struct State {
        var lines: [String] = []
        var dropped = 0
        var finished = false
    }

    init(json: Bool) {
        self.json = json
        let thread = Thread { [self] in self.write() }
        thread.start()
    }

    private var seconds: Double { Double((NIODeadline.now() - self.start).nanoseconds) / 1e9 }

    private func write() {
        while true {
            self.wakeUp.wait()
            let (lines, dropped, finished) = self.state.withLockedValue { state in
                defer {
                    state.lines.removeAll(keepingCapacity: true)
                    state.dropped = 0
                }
                return (state.lines, state.dropped, state.finished)
            }
            var text = lines.joined(separator: "\n")
            if !lines.isEmpty { text += "\n" }
            if dropped > 0 {
                text += self.json
                    ? "{\"event\":\"transcriptDropped\",\"lines\":\(dropped)}\n"
                    : "[transcript] \(dropped) line(s) dropped: standard output did not keep up\n"
            }
            if !text.isEmpty { FileHandle.standardOutput.write(Data(text.utf8)) }
            if finished {
                self.done.signal()
                return
            }
        }
    }

    private func emit(_ text: String, _ object: [(String, OutputJSON)]) {
        let time = self.seconds
        let line: String
        if self.json {
            line = OutputJSON.object([("t", .double((time * 1000).rounded() / 1000))] + object).text
        } else {
            line = "[\(String(format: "%8.3f", time))] \(text)"
        }
        let wake: Bool = self.state.withLockedValue { state in
            guard !state.finished else { return false }
            guard state.lines.count < Self.capacity else {
                state.dropped += 1
                return false
            }
            state.lines.append(line)
            return state.lines.count == 1
        }
        if wake { self.wakeUp.signal() }
    }

    /// Writes what is left and stops the writer, waiting for standard output at most `patience`:
    /// an output nobody reads (a full pipe) does not keep the process from ending. What could not
    /// be written is then counted on standard error.
    func finish(patience: Duration = .seconds(2)) async {
        self.state.withLockedValue { $0.finished = true }
        self.wakeUp.signal()
        let written = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global().async {
                let nanoseconds = patience.components.seconds * 1_000_000_000 + patience.components.attoseconds / 1_000_000_000
                continuation.resume(returning: self.done.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success)
            }
        }
        if !written {
            let unwritten = self.state.withLockedValue { $0.lines.count + $0.dropped }
            FileHandle.standardError.write(
                Data("sdl: standard output took nothing for \(patience): the transcript's last \(unwritten) line(s) and what the writer was writing are not written\n".utf8))
        }
    }

    func listening(host: String, port: Int, webSocketPort: Int?, secondaryPort: Int?, rpcVersion: RPCVersion) {
        let webSocket = webSocketPort.map { ", WebSocket on port \($0)" } ?? ""
        let secondary = secondaryPort.map { ", secondary transport on port \($0)" } ?? ""
        self.emit(
            "listening on \(host):\(port)\(webSocket)\(secondary), RPC \(rpcVersion)",
            [
                ("event", .string("listening")), ("host", .string(host)), ("port", .int(port)),
                ("webSocketPort", webSocketPort.map { .int($0) } ?? .null),
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
            "stopped (\(reason ?? "?")): \(statistics.audioBytes) audio bytes, \(statistics.videoBytes) video bytes received, "
                + "\(statistics.droppedNotifications) notification(s) dropped for apps that did not read",
            [
                ("event", .string("end")), ("reason", .string(reason ?? "?")), ("audioBytes", .int(statistics.audioBytes)),
                ("videoBytes", .int(statistics.videoBytes)), ("droppedNotifications", .int(statistics.droppedNotifications)),
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
        let slowest = Double(report.slowestRoundTrip.nanoseconds) / 1e6
        let stop = interrupted.map { $0 == "cancelled" ? "" : " (stopped by \($0))" } ?? ""
        self.emit(
            "\(report.steps) step(s), \(report.failures.count) failed; \(report.roundTrips) round trips in \(String(format: "%.2f", seconds)) s "
                + "(\(String(format: "%.0f", report.roundTripsPerSecond))/s"
                + (report.timedRoundTrips > 0 ? ", slowest \(String(format: "%.1f", slowest)) ms of \(report.timedRoundTrips) timed" : "") + "); "
                + "\(report.mediaBytes) media bytes "
                + "(\(String(format: "%.1f", report.mediaBytesPerSecond / 1_048_576)) MiB/s)\(stop)",
            [
                ("event", .string("end")), ("steps", .int(report.steps)), ("failed", .int(report.failures.count)),
                ("roundTrips", .int(report.roundTrips)), ("roundTripsPerSecond", .double(report.roundTripsPerSecond.rounded())),
                ("timedRoundTrips", .int(report.timedRoundTrips)),
                ("slowestRoundTripMs", report.timedRoundTrips > 0 ? .double((slowest * 10).rounded() / 10) : .null),
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

/// The transport of `sdl app --connect`: `HOST:PORT`, `tcp://HOST:PORT` or `ws://HOST:PORT[/PATH]`.
func parseAppTransport(_ text: String) throws -> any SDLAppTransport {
    if text.hasPrefix("ws://") {
        let rest = text.dropFirst("ws://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let (host, port) = try parseHostPort(String(rest[..<slash]))
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        return SDLWebSocketTransport(role: .client(host: host, port: port, path: path))
    }
    if text.hasPrefix("wss://") { throw ToolError("--connect: wss:// (TLS) is not supported; use ws://") }
    let address = text.hasPrefix("tcp://") ? String(text.dropFirst("tcp://".count)) : text
    let (host, port) = try parseHostPort(address)
    return SDLTCPTransport(host: host, port: port)
}
