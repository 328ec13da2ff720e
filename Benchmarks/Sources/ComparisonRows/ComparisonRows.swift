import Benchmark
import ComparisonKit
import Foundation

extension Comparison {
    /// Registers both sides as package-benchmark rows, "NAME — SIDE", measuring wall clock and
    /// mallocs (the deterministic metric CI gates on: `Benchmarks/Thresholds`).
    ///
    /// With `SDL_BENCHMARK_MALLOC_ONLY` set in the environment (CI's threshold check), each row
    /// runs a few iterations only: malloc counts do not need more.
    public func registerRows() {
        let mallocOnly = ProcessInfo.processInfo.environment["SDL_BENCHMARK_MALLOC_ONLY"] != nil
        let scalingFactor: BenchmarkScalingFactor =
            switch self.scale {
            case .one: .one
            case .kilo: .kilo
            case .mega: .mega
            }
        let configuration = Benchmark.Configuration(
            metrics: [.wallClock, .mallocCountTotal], warmupIterations: mallocOnly ? 1 : 3, scalingFactor: scalingFactor,
            maxDuration: mallocOnly ? .milliseconds(200) : .seconds(2), maxIterations: mallocOnly ? 5 : 100_000)
        for side in [self.ours] + (self.reference.map { [$0] } ?? []) {
            let prepared = PreparedWorkload(side)
            Benchmark("\(self.name) — \(side.name)", configuration: configuration) { benchmark in
                let run = prepared.runner()
                benchmark.startMeasurement()
                run(benchmark.scaledIterations.count)
                benchmark.stopMeasurement()
            }
        }
    }
}

/// A workload prepared on its first iteration and kept for the following ones (some prepare
/// megabytes, or a pair of engines). The harness runs a benchmark's iterations on one thread.
private final class PreparedWorkload: @unchecked Sendable {
    private let workload: Workload
    private var run: ((Int) -> Void)?

    init(_ workload: Workload) {
        self.workload = workload
    }

    func runner() -> (Int) -> Void {
        if let run = self.run { return run }
        let run = self.workload.prepare()
        self.run = run
        return run
    }
}
