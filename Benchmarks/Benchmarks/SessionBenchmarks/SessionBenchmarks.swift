import Benchmark
import NIOCore
import SDLProtocol
import SDLSession
import SessionBenchSupport
#if canImport(Glibc)
import Glibc
#endif

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
        warmupIterations: 3,
        maxDuration: .seconds(3),
        maxIterations: 100_000)

    // One iteration: the app sends 1,000 RPC messages of 1 KiB, they are written in 64 KiB writes
    // and delivered by the head unit. Messages/s = 1,000 × throughput; allocations per message =
    // malloc count / 1,000.
    Benchmark("Engine pair: 1,000 RPC messages of 1 KiB, app to head unit") { benchmark in
        var pair = EnginePair(sessions: 1, video: false)
        let payload = ByteBuffer(repeating: 0x42, count: 1024)
        let session = pair.appSessions[0]
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for _ in 0..<1000 {
                try! pair.app.send(payload, on: .rpc, of: session, now: pair.now)
            }
            let delivered = pair.transfer(chunk: 64 << 10)
            precondition(delivered == 1000 * 1024)
        }
        benchmark.stopMeasurement()
    }

    // One iteration: 8 sessions each send 16 video frames of 128 KiB (16 MiB in all), written in
    // 256 KiB writes and delivered. Compare with the memcpy row below: MB/s = throughput × 16.8.
    Benchmark("Engine pair: video, 8 sessions × 16 frames of 128 KiB (16 MiB)") { benchmark in
        var pair = EnginePair(sessions: 8, video: true)
        let frame = ByteBuffer(repeating: 0x17, count: 128 << 10)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for _ in 0..<16 {
                for session in pair.appSessions {
                    try! pair.app.send(frame, on: .video, of: session, now: pair.now)
                }
            }
            let delivered = pair.transfer(chunk: 256 << 10)
            precondition(delivered == 16 << 20)
        }
        benchmark.stopMeasurement()
    }

    // The reference: memcpy of the same 16 MiB in 128 KiB pieces into an existing buffer.
    Benchmark("memcpy 16 MiB in 128 KiB pieces") { benchmark in
        let source = [UInt8](repeating: 0x17, count: 128 << 10)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: 16 << 20, alignment: 16)
        defer { destination.deallocate() }
        for _ in benchmark.scaledIterations {
            source.withUnsafeBytes { raw in
                for piece in 0..<128 {
                    _ = memcpy(destination + piece * (128 << 10), raw.baseAddress!, 128 << 10)
                }
            }
            blackHole(destination.load(fromByteOffset: (16 << 20) - 1, as: UInt8.self))
        }
    }

    // Under continuous video on 8 sessions, an RPC message is queued after every written frame;
    // the custom metric is the most video frames written between an RPC's send and its frame.
    Benchmark(
        "Worst RPC wait under full video (frames)",
        configuration: .init(metrics: [.custom("worst RPC wait (frames)", polarity: .prefersSmaller, useScalingFactor: false)], maxIterations: 20)
    ) { benchmark in
        var pair = EnginePair(sessions: 8, video: true)
        let frame = ByteBuffer(repeating: 0x17, count: 128 << 10)
        let rpc = ByteBuffer(repeating: 0x42, count: 1024)
        var worst = 0
        for round in 0..<200 {
            for session in pair.appSessions { try! pair.app.send(frame, on: .video, of: session, now: pair.now) }
            try! pair.app.send(rpc, on: .rpc, of: pair.appSessions[round % 8], now: pair.now)
            var waited = 0
            while true {
                pair.wire.clear()
                // One frame per write: the smallest budget.
                guard pair.app.nextWrite(on: pair.link, maxBytes: 1, into: &pair.wire) > 0 else { break }
                let header = FrameHeader.peek(in: pair.wire)!
                pair.hu.received(pair.wire, on: pair.link, now: pair.now)
                _ = pair.drainHeadUnit()
                if header.serviceType == .rpc { break }
                waited += 1
            }
            worst = max(worst, waited)
        }
        benchmark.measurement(.custom("worst RPC wait (frames)", polarity: .prefersSmaller, useScalingFactor: false), worst)
    }
    // Idle memory per session is read by SessionProfile (`SessionProfile idle`): glibc's heap
    // statistics mean nothing under this runner's allocator.
}
