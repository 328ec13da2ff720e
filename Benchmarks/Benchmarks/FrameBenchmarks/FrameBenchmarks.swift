import Benchmark
import ComparisonRows
import FrameWorkloads
import NIOCore
import SDLProtocol

let benchmarks: @Sendable () -> Void = {
    // The rows the report compares (`FrameWorkloads`): header parse and serialize against a C
    // loop, stream decoding in several chunkings and reassembly against memcpy.
    for comparison in FrameWorkloads.comparisons {
        comparison.registerRows()
    }

    // One iteration slides through 1 MiB of garbage: ns per byte = wall clock / 1,048,576.
    Benchmark(
        "Skip 1 MiB of garbage in two buffers",
        configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(2))
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(skipGarbage(garbageHalves))
        }
    }
}
