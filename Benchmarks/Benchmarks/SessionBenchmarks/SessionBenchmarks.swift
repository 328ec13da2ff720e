import Benchmark
import ComparisonRows
import NIOCore
import SDLProtocol
import SDLSession
import SessionBenchSupport

let benchmarks: @Sendable () -> Void = {
    // The engine pair against memcpy (`SessionWorkloads`): 1,000 RPC messages of 1 KiB, and
    // video on 8 sessions.
    for comparison in SessionWorkloads.comparisons {
        comparison.registerRows()
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
