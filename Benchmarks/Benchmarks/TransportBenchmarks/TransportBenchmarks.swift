import Benchmark
import ComparisonRows
import TransportWorkloads

// The loopback rows (`TransportWorkloads`): 64 MiB of video from an app to a head unit over the
// secondary transport against a plain NIO copy of the same bytes, and RPC round trips from 1, 10
// and 50 apps to one head unit. Their malloc counts depend a little on how the kernel splits the
// stream into reads, so scripts/benchmark-thresholds checks them within a tolerance.
// The idle memory per app is a report figure (BenchmarkReport), not a row: it needs glibc's heap
// statistics and a second process.
let benchmarks: @Sendable () -> Void = {
    for comparison in TransportWorkloads.comparisons {
        comparison.registerRows()
    }
}
