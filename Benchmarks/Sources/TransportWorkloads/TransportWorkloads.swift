import ComparisonKit
import NIOCore
import SDLNIO
import SDLRPC
import SDLSession

/// The loopback transports (SDLNIO): an app and a head unit in this process connected over
/// 127.0.0.1, each side on its own event loop.
public enum TransportWorkloads {
    public static let group = "Loopback (SDLNIO)"

    /// Bytes one video operation moves.
    static let videoBytes = 64 << 20
    /// What one write hands to the writer; the writer cuts it into media messages of 256 KiB (its
    /// default), the plain copy into writes of 64 KiB.
    static let writeSize = 1 << 20
    static let pieceSize = 64 << 10

    public static var comparisons: [Comparison] {
        [video] + [1, 10, 50].map(roundTrips)
    }

    /// 64 MiB of video from an app to a head unit over the secondary transport (the head unit
    /// counts the bytes its media stream delivers), against the same bytes written by a NIO client
    /// to a NIO server that discards them. Issue 11's goal: at least half the plain copy's rate.
    static var video: Comparison {
        Comparison(
            "Loopback: 64 MiB of video, app to head unit (secondary transport)", group: group,
            ours: Workload("SDLNIO") {
                // The server and the app must outlive the runner: dropped, either closes at once.
                let (server, app, handler, writer) = blocking {
                    let (server, handler) = try await BenchmarkHeadUnit.start(secondary: true)
                    let app = try await registeredApp(port: server.primaryPort, index: 0)
                    let writer = try await app.startVideo(VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264"))
                    precondition(writer.info.slot == .secondary, "video started on the \(writer.info.slot) transport")
                    return (server, app, handler, writer)
                }
                let chunk = ByteBuffer(repeating: 0x17, count: writeSize)
                return { count in
                    withExtendedLifetime((server, app)) {
                        handler.video.transfer(count * videoBytes) {
                            for _ in 0..<(count * videoBytes / writeSize) { try await writer.write(chunk) }
                        }
                    }
                }
            },
            reference: Workload("NIO copy in 64 KiB writes") {
                let (client, counter) = blocking { try await plainConnection() }
                let chunk = ByteBuffer(repeating: 0x17, count: writeSize)
                return { count in
                    counter.transfer(count * videoBytes) {
                        for _ in 0..<(count * videoBytes / writeSize) {
                            // One megabyte in flight at most, as the writer waits for the engine.
                            try await client.eventLoop.flatSubmit {
                                for offset in stride(from: 0, to: writeSize - pieceSize, by: pieceSize) {
                                    client.write(chunk.getSlice(at: offset, length: pieceSize)!, promise: nil)
                                }
                                return client.writeAndFlush(chunk.getSlice(at: writeSize - pieceSize, length: pieceSize)!)
                            }.get()
                        }
                    }
                }
            },
            bytesPerOperation: videoBytes, goal: RatioGoal(0.5, "≥ 50% of a plain NIO loopback copy (issue 11)"),
            usesOtherThreads: true)
    }

    /// ListFiles round trips from `apps` registered apps at once (each waits for its response
    /// before the next request) to one head unit. One operation is one round trip.
    static func roundTrips(apps: Int) -> Comparison {
        Comparison(
            "Loopback: RPC round trips, \(apps) app\(apps == 1 ? "" : "s") on one head unit", group: group,
            ours: Workload("SDLNIO") {
                let (server, connected) = blocking {
                    let (server, _) = try await BenchmarkHeadUnit.start(secondary: false)
                    var connected: [SDLAppConnection] = []
                    for index in 0..<apps { connected.append(try await registeredApp(port: server.primaryPort, index: index)) }
                    return (server, connected)
                }
                return { count in
                    withExtendedLifetime(server) {
                        blocking {
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                for (index, app) in connected.enumerated() {
                                    let share = count / apps + (index < count % apps ? 1 : 0)
                                    group.addTask {
                                        for _ in 0..<share {
                                            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                                            precondition(files.filenames?.count == 2)
                                        }
                                    }
                                }
                                try await group.waitForAll()
                            }
                        }
                    }
                }
            },
            reference: nil, items: (1, "round trip"), perSecond: true, scale: .kilo, usesOtherThreads: true)
    }
}
