import CHeapInUse
import ComparisonKit
import Foundation
import SDLNIO

/// Heap bytes an idle registered app costs each side: the head unit in this process, the apps in
/// a child process (the same executable, run with ``childFlag``), so that each side's heap is
/// read alone.
///
/// Each side reads glibc's heap in use before and after `apps` apps connect and register, once a
/// first app has connected, registered and left (what the first connection sets up once, the
/// event loop's and the runtime's own, is not any app's).
public enum IdleMemory {
    /// The argument that makes the executable the apps' side: `FLAG PORT APPS`.
    public static let childFlag = "--idle-apps-child"

    /// The head unit's and the app's heap bytes per idle registered app, `apps` apps connected.
    public static func figures(apps: Int) -> [Figure] {
        let (server, _) = blocking { try await BenchmarkHeadUnit.start(secondary: false) }
        let child = Process()
        child.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = [childFlag, "\(server.primaryPort)", "\(apps)"]
        let toChild = Pipe()
        let fromChild = Pipe()
        child.standardInput = toChild
        child.standardOutput = fromChild
        try! child.run()

        expect(line(from: fromChild.fileHandleForReading), "warm")
        waitFor(server) { $0 == 0 }
        usleep(200_000)
        let before = heapInUse()
        toChild.fileHandleForWriting.write(Data("go\n".utf8))
        let reply = line(from: fromChild.fileHandleForReading).split(separator: " ")
        guard reply.count == 2, reply[0] == "apps", let appBytes = Int(reply[1]) else { fatalError("idle apps child: \(reply)") }
        waitFor(server) { $0 == apps }
        usleep(200_000)
        let headUnitBytes = heapInUse() - before
        try! toChild.fileHandleForWriting.close()
        child.waitUntilExit()
        blocking { await server.shutdown() }

        let note = "glibc heap in use (mallinfo2: uordblks + hblkhd) before and after \(apps) apps connected and registered, over \(apps)"
        return [
            Figure(
                "Idle registered app: head unit's memory per app (\(apps) apps)", group: TransportWorkloads.group,
                value: Double(headUnitBytes) / Double(apps), unit: "heap bytes/app", note: note),
            Figure(
                "Idle registered app: the app connection's own memory (\(apps) apps)", group: TransportWorkloads.group,
                value: Double(appBytes) / Double(apps), unit: "heap bytes/app", note: note + ", in the apps' process"),
        ]
    }

    /// The apps' side, run by `figures(apps:)` in a child process: connects, registers and
    /// disconnects a first app, prints "warm", waits for a line, connects and registers `apps`
    /// apps, prints "apps BYTES" (heap bytes they added), keeps them until its input ends.
    public static func runChild(port: Int, apps: Int) -> Never {
        let first = blocking { try await registeredApp(port: port, index: 0) }
        blocking { await first.disconnect() }
        say("warm")
        _ = readLine()
        usleep(200_000)
        let before = heapInUse()
        let connected = blocking {
            var connected: [SDLAppConnection] = []
            for index in 1...apps { connected.append(try await registeredApp(port: port, index: index)) }
            return connected
        }
        usleep(200_000)
        say("apps \(heapInUse() - before)")
        while readLine() != nil {}
        withExtendedLifetime(connected) {}
        exit(0)
    }

    /// A line to the parent, unbuffered.
    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private static func heapInUse() -> Int {
        Int(c_heap_in_use())
    }

    /// Waits until `done` accepts the number of `server`'s registered apps, polling.
    private static func waitFor(_ server: SDLHeadUnitServer, _ done: @escaping @Sendable (Int) -> Bool) {
        while true {
            let registered = blocking {
                var registered = 0
                for app in await server.connectedApps where await app.registration != nil { registered += 1 }
                return registered
            }
            if done(registered) { return }
            usleep(10_000)
        }
    }

    private static func line(from handle: FileHandle) -> String {
        var bytes: [UInt8] = []
        while true {
            let data = handle.readData(ofLength: 1)
            guard let byte = data.first else { fatalError("idle apps child ended early") }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }

    private static func expect(_ line: String, _ expected: String) {
        precondition(line == expected, "idle apps child said \(line), not \(expected)")
    }
}
