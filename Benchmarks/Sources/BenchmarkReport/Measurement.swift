import Foundation
import ComparisonKit
import MallocInterposerSwift

/// What one comparison measured.
struct Result {
    let comparison: Comparison
    /// Median nanoseconds per operation.
    let oursNanoseconds: Double
    /// Nil for a row without a reference.
    let referenceNanoseconds: Double?
    /// Allocations per item; nil when the allocator is not interposed.
    let oursAllocations: Double?
    let referenceAllocations: Double?

    /// The reference's time over ours: above 1, ours is faster.
    var ratio: Double? { self.referenceNanoseconds.map { $0 / self.oursNanoseconds } }

    var goalMet: Bool? {
        guard let goal = self.comparison.goal, let ratio = self.ratio else { return nil }
        return ratio >= goal.minimum
    }

    /// Whether our allocations per item stay within the stated bound, at the precision reported
    /// (two decimals: a setup allocation spread over 10,000 frames is not "per frame").
    var allocationGoalMet: Bool? {
        guard let bound = self.comparison.allocationGoal, let ours = self.oursAllocations else { return nil }
        return (ours * 100).rounded() / 100 <= bound
    }
}

/// How the runs are made.
struct MeasurementPlan {
    /// Runs of each side; the median is kept.
    var runs = 11
    /// The least time one run should take, in nanoseconds.
    var runNanoseconds = 25_000_000.0
    /// A fixed number of operations per run instead of a calibrated one (for instruction
    /// profiles: per-operation counts are then a division away).
    var operations: Int?
}

private let clock = ContinuousClock()

private func wallNanoseconds(_ body: () -> Void) -> Double {
    let elapsed = clock.measure(body)
    return Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
}

private func threadCPUNanoseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}

/// The CPU time this thread spent running `body`: on a shared machine a run that is descheduled
/// is not charged for the time others had the core, so the two sides of a comparison are not
/// judged by their luck with the scheduler.
private func cpuNanoseconds(_ body: () -> Void) -> Double {
    let start = threadCPUNanoseconds()
    body()
    return threadCPUNanoseconds() - start
}

private func nanoseconds(wallClock: Bool, _ body: () -> Void) -> Double {
    wallClock ? wallNanoseconds(body) : cpuNanoseconds(body)
}

/// The number of operations that makes one run last about `plan.runNanoseconds`.
private func calibrate(_ run: (Int) -> Void, _ plan: MeasurementPlan, wallClock: Bool) -> Int {
    var count = 1
    while true {
        let elapsed = nanoseconds(wallClock: wallClock) { run(count) }
        if elapsed >= plan.runNanoseconds / 4 || count >= 1 << 30 {
            return max(1, Int((Double(count) * plan.runNanoseconds / max(elapsed, 1)).rounded(.up)))
        }
        count *= 4
    }
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Whether the malloc interposer is loaded (`LD_PRELOAD`): only then are allocations counted.
let allocationsCounted: Bool = {
    MallocInterposerSwift.initialize()
    MallocInterposerSwift.hook()
    let probe = [UInt64](repeating: 7, count: 100)
    sink(probe)
    MallocInterposerSwift.unhook()
    return MallocInterposerSwift.getStatistics().mallocCount > 0
}()

/// Allocations per operation over `count` operations (after a warm run has filled any caches).
private func allocations(_ run: (Int) -> Void, count: Int) -> Double? {
    guard allocationsCounted else { return nil }
    MallocInterposerSwift.initialize()
    MallocInterposerSwift.hook()
    run(count)
    MallocInterposerSwift.unhook()
    return Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(count)
}

/// Runs both sides of `comparison` in this process, interleaved (the side that goes first
/// alternates), `plan.runs` times each, and keeps the medians. A side that runs on this thread
/// alone is timed in this thread's CPU time; one that works on other threads (the loopback rows)
/// in wall-clock time.
func measure(_ comparison: Comparison, _ plan: MeasurementPlan) -> Result {
    let wallClock = comparison.usesOtherThreads
    let ours = comparison.ours.prepare()
    let reference = comparison.reference?.prepare()
    ours(1)
    reference?(1)
    let oursCount = plan.operations ?? calibrate(ours, plan, wallClock: wallClock)
    let referenceCount = reference.map { plan.operations ?? calibrate($0, plan, wallClock: wallClock) } ?? 0
    var oursTimes: [Double] = []
    var referenceTimes: [Double] = []
    for round in 0..<plan.runs {
        let measureOurs = { oursTimes.append(nanoseconds(wallClock: wallClock) { ours(oursCount) } / Double(oursCount)) }
        let measureReference = {
            guard let reference else { return }
            referenceTimes.append(nanoseconds(wallClock: wallClock) { reference(referenceCount) } / Double(referenceCount))
        }
        if round % 2 == 0 {
            measureOurs()
            measureReference()
        } else {
            measureReference()
            measureOurs()
        }
    }
    let items = Double(comparison.items.count)
    return Result(
        comparison: comparison,
        oursNanoseconds: median(oursTimes),
        referenceNanoseconds: reference == nil ? nil : median(referenceTimes),
        oursAllocations: allocations(ours, count: oursCount).map { $0 / items },
        referenceAllocations: reference.flatMap { allocations($0, count: referenceCount) }.map { $0 / items })
}
