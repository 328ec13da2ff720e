import Foundation
import Testing

/// `sdl headunit` and `sdl app` as subprocesses on ephemeral loopback ports. One test at a time,
/// and every wait of seconds (a script run, a pause) off the cooperative thread pool: waiting on a
/// subprocess blocks its thread, and the pool has one thread per core, which the other suites'
/// event-loop tests need.
@Suite("sdl headunit and sdl app", .serialized)
struct LiveCommandTests {
    /// A running `sdl headunit --json`, its standard output read line by line.
    final class HeadUnitProcess {
        let process = Process()
        private let output = Pipe()
        private var pending = Data()

        /// `sdl headunit --port 0 --json` with `arguments`; with `descriptorLimit`, under that
        /// `ulimit -n`.
        init(_ arguments: [String], descriptorLimit: Int? = nil, pipeCapacity: Int32? = nil) throws {
            let arguments = ["headunit", "--port", "0", "--json"] + arguments
            if let descriptorLimit {
                // The shell lowers its limit and becomes `sdl`: the process id is the head unit's.
                self.process.executableURL = URL(fileURLWithPath: "/bin/sh")
                self.process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", try sdlBinary().path] + arguments
            } else {
                self.process.executableURL = try sdlBinary()
                self.process.arguments = arguments
            }
            if let pipeCapacity {
                // F_SETPIPE_SZ: the kernel's buffer for the pipe, rounded up to a page.
                _ = fcntl(self.output.fileHandleForWriting.fileDescriptor, 1031, pipeCapacity)
            }
            self.process.standardOutput = self.output
            self.process.standardError = FileHandle.nullDevice
            try self.process.run()
        }

        /// The next line of standard output; nil at its end.
        func nextLine() -> String? {
            while true {
                if let newline = self.pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: self.pending[..<newline], as: UTF8.self)
                    self.pending.removeSubrange(...newline)
                    return line
                }
                let data = self.output.fileHandleForReading.availableData
                if data.isEmpty { return nil }
                self.pending.append(data)
            }
        }

        /// Every line left, once the process has ended.
        func remainingLines() -> [String] {
            var lines: [String] = []
            while let line = self.nextLine() { lines.append(line) }
            self.process.waitUntilExit()
            return lines
        }

        /// Bytes written to standard output and not read yet.
        func unreadBytes() -> Int32 {
            var count: Int32 = 0
            _ = ioctl(self.output.fileHandleForReading.fileDescriptor, UInt(FIONREAD), &count)
            return count
        }

        /// Whether the process ends within `limit`, waited for without blocking a thread.
        func ends(within limit: Duration) async throws -> Bool {
            let deadline = ContinuousClock.now + limit
            while self.process.isRunning {
                if ContinuousClock.now > deadline { return false }
                try await Task.sleep(for: .milliseconds(50))
            }
            return true
        }

        /// The CPU time the process has used, in clock ticks (user and system).
        func cpuTicks() throws -> Int {
            let stat = try String(contentsOfFile: "/proc/\(self.process.processIdentifier)/stat", encoding: .utf8)
            // The fields after the command name, which is in parentheses and may hold spaces.
            let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
            return Int(fields[11])! + Int(fields[12])!
        }
    }

    /// Opens `count` TCP connections to the loopback `port` that never send a byte.
    static func idleConnections(_ count: Int, port: Int) -> [Int32] {
        (0..<count).map { _ in
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            return socket
        }
    }

    /// ``runSDL(_:input:)`` on a thread of its own.
    static func runApart(_ arguments: [String]) async throws -> (status: Int32, out: String, err: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try runSDL(arguments, input: nil) }) }
        }
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    @Test("headunit prints its bound port; app --script all against it exits 0 with every step ok; SIGINT stops the head unit with exit 0")
    func headUnitAndApp() async throws {
        let headUnit = try HeadUnitProcess(["--secondary-port", "0", "--media-transports", "secondary", "--duration", "120"])
        defer { if headUnit.process.isRunning { headUnit.process.terminate() } }
        let listening = try #require(headUnit.nextLine().flatMap(Self.object))
        #expect(listening["event"] as? String == "listening")
        #expect(listening["rpcVersion"] as? String == "8.0.0")
        let port = try #require(listening["port"] as? Int)
        #expect(port > 0 && (listening["secondaryPort"] as? Int ?? 0) > 0)

        let app = try await Self.runApart(["app", "--connect", "127.0.0.1:\(port)", "--script", "all", "--duration", "0.3", "--json"])
        #expect(app.status == 0, "\(app.out)\(app.err)")
        let steps = app.out.split(separator: "\n").compactMap { Self.object(String($0)) }
        #expect(steps.filter { $0["event"] as? String == "step" }.allSatisfy { $0["ok"] as? Bool == true })
        let names = steps.compactMap { $0["step"] as? String }
        for step in ["PublishAppService WEATHER", "SetInteriorVehicleData climate.front fan speed 40", "stream video", "disconnect"] {
            #expect(names.contains(step), "\(step)")
        }
        #expect(steps.first { $0["step"] as? String == "start video" }?["outcome"] as? String == "on the secondary transport, MTU 131072")
        let end = try #require(steps.last)
        #expect(end["event"] as? String == "end" && end["failed"] as? Int == 0 && (end["mediaBytes"] as? Int ?? 0) > 0)

        kill(headUnit.process.processIdentifier, SIGINT)
        let lines = headUnit.remainingLines().compactMap(Self.object)
        #expect(headUnit.process.terminationStatus == 0)
        #expect(lines.contains { ($0["outcome"] as? String)?.hasPrefix("registered \"Navigator-1\"") == true })
        #expect(lines.contains { $0["input"] as? String == "VIDEO service started" })
        let stopped = try #require(lines.last)
        #expect(stopped["event"] as? String == "end" && stopped["reason"] as? String == "SIGINT")
        #expect(stopped["videoBytes"] as? Int == end["mediaBytes"] as? Int)
    }

    @Test("app exits 1 with a failed step when the head unit cannot be reached; headunit stops by itself after --duration")
    func failuresAndDuration() async throws {
        let headUnit = try HeadUnitProcess(["--duration", "0.5"])
        defer { if headUnit.process.isRunning { headUnit.process.terminate() } }
        let listening = try #require(headUnit.nextLine().flatMap(Self.object))
        let port = try #require(listening["port"] as? Int)
        let lines = headUnit.remainingLines().compactMap(Self.object)
        #expect(headUnit.process.terminationStatus == 0)
        #expect(lines.last?["reason"] as? String == "duration")

        // The head unit is gone: nothing listens on its port any more.
        let app = try await Self.runApart(["app", "--connect", "127.0.0.1:\(port)", "--script", "rc"])
        #expect(app.status == 1)
        #expect(app.out.contains("Climate-1 connect tcp 127.0.0.1:\(port): FAILED"))
        #expect(app.out.contains("connection refused"))
        #expect(app.out.contains("0 step(s), 1 failed"))

        let usage = try runSDL(["app", "--script", "nope"], input: nil)
        #expect(usage.status != 0 && usage.err.contains("unknown script nope"))
    }

    @Test("out of descriptors, headunit backs off its accepts rather than spinning a core, and takes an app once the idle connections are gone")
    func descriptorsExhausted() async throws {
        // A limit of 64 descriptors and room for 1,000 connections: the kernel runs out first.
        let headUnit = try HeadUnitProcess(["--max-connections", "1000", "--duration", "60"], descriptorLimit: 64)
        defer { if headUnit.process.isRunning { headUnit.process.terminate() } }
        let port = try #require(headUnit.nextLine().flatMap(Self.object)?["port"] as? Int)
        let idle = Self.idleConnections(100, port: port)
        try await Task.sleep(for: .milliseconds(500))
        let before = try headUnit.cpuTicks()
        try await Task.sleep(for: .seconds(1))
        // A listener retrying at once spins (a core, less what a loaded machine leaves it: 27 to
        // 39 ticks were seen); backing off, it wakes four times a second (0 to 2 ticks).
        let used = try headUnit.cpuTicks() - before
        #expect(used < 10, "\(used) ticks of CPU in 1 s while out of descriptors")
        for socket in idle { close(socket) }
        let app = try await Self.runApart(["app", "--connect", "127.0.0.1:\(port)", "--script", "rc"])
        #expect(app.status == 0, "\(app.out)")
        kill(headUnit.process.processIdentifier, SIGINT)
        _ = headUnit.remainingLines()
    }

    @Test("a standard output nobody reads stalls neither headunit's apps nor its end on SIGINT")
    func unreadStandardOutput() async throws {
        let headUnit = try HeadUnitProcess(["--duration", "120"], pipeCapacity: 4096)
        defer { if headUnit.process.isRunning { headUnit.process.terminate() } }
        let port = try #require(headUnit.nextLine().flatMap(Self.object)?["port"] as? Int)
        // From here on nobody reads: the 4 KiB pipe fills within the first script's transcript.
        for _ in 0..<3 {
            let app = try await Self.runApart(["app", "--connect", "127.0.0.1:\(port)", "--script", "rc"])
            #expect(app.status == 0, "\(app.out)")
        }
        // Full: what is left is less than a transcript line (a write of up to 4 KiB goes in whole).
        #expect(headUnit.unreadBytes() > 3_800)
        kill(headUnit.process.processIdentifier, SIGINT)
        // The writer is stuck in write(2): the head unit waits 2 s for it, then ends anyway.
        #expect(try await headUnit.ends(within: .seconds(15)))
        #expect(headUnit.process.terminationStatus == 0)
    }

    @Test("with a low descriptor limit, headunit's default connection maximum stays below it: idle connections cannot keep an app out")
    func idleConnectionsUnderALowDescriptorLimit() async throws {
        let headUnit = try HeadUnitProcess(["--duration", "60"], descriptorLimit: 64)
        defer { if headUnit.process.isRunning { headUnit.process.terminate() } }
        let port = try #require(headUnit.nextLine().flatMap(Self.object)?["port"] as? Int)
        let idle = Self.idleConnections(100, port: port)
        defer { for socket in idle { close(socket) } }
        // 100 idle connections and a limit of 64 descriptors (32 connections): the oldest idle
        // ones make room, and the app registers while all of them are still open on its side.
        let app = try await Self.runApart(["app", "--connect", "127.0.0.1:\(port)", "--script", "rc"])
        #expect(app.status == 0, "\(app.out)")
        kill(headUnit.process.processIdentifier, SIGINT)
        _ = headUnit.remainingLines()
    }
}
