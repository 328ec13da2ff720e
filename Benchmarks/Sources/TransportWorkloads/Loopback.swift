import Foundation
import NIOCore
import NIOPosix
import SDLNIO
import SDLRPC
import SDLSession

/// Runs `body` on the concurrency pool and waits for it on this thread: the workloads' runners are
/// synchronous (the report and package-benchmark call them so), the transports are not. This
/// thread is never one of the event loops or the pool's, so the wait blocks nothing they need.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> T {
    let outcome = Outcome<T>()
    Task {
        let result: Swift.Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        outcome.finish(result)
    }
    return outcome.wait()
}

/// The result of a `blocking` body, handed from the pool to the waiting thread.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once before `done` is signalled, read once after it is waited for.
    private var result: Swift.Result<T, any Error>?

    func finish(_ result: Swift.Result<T, any Error>) {
        self.result = result
        self.done.signal()
    }

    func wait() -> T {
        self.done.wait()
        switch self.result! {
        case .success(let value): return value
        case .failure(let error): fatalError("loopback workload failed: \(error)")
        }
    }
}

/// Counts bytes a receiver was given and wakes the waiting runner once a run's bytes have all
/// arrived: a run ends when the last byte is received, not when the writer returns.
final class ByteCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var counted = 0
    private var target = Int.max
    private let reached = DispatchSemaphore(value: 0)

    func add(_ bytes: Int) {
        self.lock.lock()
        self.counted += bytes
        let done = self.counted >= self.target
        if done { self.target = .max }
        self.lock.unlock()
        if done { self.reached.signal() }
    }

    /// Writes `bytes` with `write` and waits until they have all been counted.
    func transfer(_ bytes: Int, _ write: @escaping @Sendable () async throws -> Void) {
        self.lock.lock()
        self.target = self.counted + bytes
        self.lock.unlock()
        blocking(write)
        self.reached.wait()
    }
}

/// The event loops of the loopback rows: the app (or client) on one, the head unit (or server) on
/// the other, as two processes would run them on a 2-core machine.
enum Loops {
    static let all = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
    static var app: any EventLoop { all[0] }
    static var headUnit: any EventLoop { all[all.count > 1 ? 1 : 0] }
}

/// A head unit that registers every app, answers ListFiles, and counts the bytes of every video
/// stream into `video`.
final class BenchmarkHeadUnit: SDLHeadUnitHandler {
    let video = ByteCounter()

    func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        SDLRegisterAppInterfaceResponse(
            success: true, resultCode: .success,
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0))
    }

    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {

        SDLRequestAnswer(await self.response(to: request, from: app))

    }


    func response(to request: AnyRPCMessage, from app: SDLConnectedApp) async -> (any RPCMessage)? {
        guard request.message is SDLListFilesRequest else { return nil }
        return SDLListFilesResponse(success: true, resultCode: .success, filenames: ["a.png", "b.png"])
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        guard case .serviceStarted(_, .video, _, let stream) = event else { return }
        let counter = self.video
        // Read apart from the event sequence, which this method must not hold up.
        Task {
            for await message in stream { counter.add(message.readableBytes) }
        }
    }

    /// A head unit on loopback with free ports, a secondary transport offered when `secondary`
    /// (video then goes there only).
    static func start(secondary: Bool) async throws -> (SDLHeadUnitServer, BenchmarkHeadUnit) {
        var configuration = SDLHeadUnitConfiguration()
        configuration.host = "127.0.0.1"
        configuration.primaryPort = 0
        configuration.secondaryPort = secondary ? 0 : nil
        configuration.videoServiceTransports = secondary ? [.secondary] : [.primary]
        // The flood limit (1,000 messages a second per session by default) would end a session
        // that measures how many round trips or video messages a second get through.
        configuration.session.headUnit.floodLimit = nil
        let handler = BenchmarkHeadUnit()
        let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler, eventLoop: Loops.headUnit)
        return (server, handler)
    }
}

/// Connects an app to `port` and registers it.
func registeredApp(port: Int, index: Int) async throws -> SDLAppConnection {
    let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: port, eventLoop: Loops.app)
    try await app.register(
        SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0), appName: "Benchmark \(index)",
            isMediaApplication: true, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs, appHMIType: [.navigation],
            appID: "bench-\(index)"))
    return app
}

/// Counts and discards every byte it reads: the receiving end of the plain copy.
private final class DiscardingCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let counter: ByteCounter

    init(_ counter: ByteCounter) {
        self.counter = counter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.counter.add(Self.unwrapInboundIn(data).readableBytes)
    }
}

/// A NIO server on loopback that discards what it reads, and a client connected to it: the least
/// any stack does to move bytes over TCP. Both use NIO's default channel options, as SDLNIO does.
func plainConnection() async throws -> (client: any Channel, counter: ByteCounter) {
    let counter = ByteCounter()
    let server = try await ServerBootstrap(group: Loops.headUnit)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DiscardingCounter(counter)) }
        }
        .bind(host: "127.0.0.1", port: 0).get()
    let client = try await ClientBootstrap(group: Loops.app).connect(host: "127.0.0.1", port: server.localAddress!.port!).get()
    return (client, counter)
}
