import Benchmark
import ComparisonRows
import BSONWorkloads

// The BSON rows (`BSONWorkloads`): every control payload through SDLProtocol's typed payloads,
// the StartServiceACK through SDLBSON's writer alone, and a 2 KB and a 6 KB app-service document,
// each encoded and decoded+read against libbson. Both sides are checked to produce the same bytes
// and the same read checksum before anything is timed.
let benchmarks: @Sendable () -> Void = {
    for comparison in BSONWorkloads.comparisons {
        comparison.registerRows()
    }
}
