/// One side of a comparison: `prepare()` builds whatever state the operation needs (outside any
/// measurement) and returns a runner that performs the operation `count` times.
///
/// The loop lives inside the runner, so a measurement of a nanosecond-sized operation does not
/// time a closure call per operation.
public struct Workload: Sendable {
    /// What runs: "SDLProtocol", "libbson", "memcpy", …
    public var name: String
    /// Builds the state and returns the runner.
    public var prepare: @Sendable () -> (_ count: Int) -> Void

    public init(_ name: String, prepare: @escaping @Sendable () -> (_ count: Int) -> Void) {
        self.name = name
        self.prepare = prepare
    }
}

/// How many operations one package-benchmark iteration runs (its `scalingFactor`): enough that an
/// iteration is far longer than the harness's own overhead.
public enum OperationsPerIteration: Int, Sendable {
    case one = 1
    case kilo = 1_000
    case mega = 1_000_000
}

/// A goal of the issue for a comparison: the least acceptable ratio (reference time / our time).
public struct RatioGoal: Sendable {
    /// The least acceptable ratio.
    public var minimum: Double
    /// The goal as the issue states it, for the report's notes.
    public var statement: String

    public init(_ minimum: Double, _ statement: String) {
        self.minimum = minimum
        self.statement = statement
    }
}

/// Our implementation of an operation next to a reference implementation of the same operation on
/// the same bytes. Its ratio is the reference's time divided by ours: above 1, ours is faster.
///
/// A row without a reference (RPC round trips through a head unit: nothing else does the same
/// work) reports our figure alone.
public struct Comparison: Sendable {
    /// The operation, e.g. "Frame header parse".
    public var name: String
    /// The area it belongs to ("Frames", "BSON", "RPC", "Session"), for grouping.
    public var group: String
    public var ours: Workload
    /// Nil for a row measured alone.
    public var reference: Workload?
    /// What one operation handles, e.g. (10_000, "frame"): times and allocations are reported per
    /// item.
    public var items: (count: Int, noun: String)
    /// For bandwidth rows, the bytes one operation moves: the report then shows MB/s.
    public var bytesPerOperation: Int?
    /// Whether the report shows items per second instead of nanoseconds per item (throughput
    /// rows such as round trips).
    public var perSecond: Bool
    /// The goal for this ratio, if it states one.
    public var goal: RatioGoal?
    /// The most allocations per item the issue allows on our side, if it states a bound.
    public var allocationGoal: Double?
    /// Operations per package-benchmark iteration.
    public var scale: OperationsPerIteration
    /// Whether the work runs on other threads than the caller's (event loops, tasks): the report
    /// then times it by the wall clock instead of the calling thread's CPU time.
    public var usesOtherThreads: Bool

    public init(
        _ name: String, group: String, ours: Workload, reference: Workload?, items: (count: Int, noun: String) = (1, "op"),
        bytesPerOperation: Int? = nil, perSecond: Bool = false, goal: RatioGoal? = nil, allocationGoal: Double? = nil,
        scale: OperationsPerIteration = .one, usesOtherThreads: Bool = false
    ) {
        self.name = name
        self.group = group
        self.ours = ours
        self.reference = reference
        self.items = items
        self.bytesPerOperation = bytesPerOperation
        self.perSecond = perSecond
        self.goal = goal
        self.allocationGoal = allocationGoal
        self.scale = scale
        self.usesOtherThreads = usesOtherThreads
    }
}

/// A figure that is not a timing: measured once, reported beside the comparisons (memory an idle
/// connection holds, for instance).
public struct Figure: Sendable {
    /// What was measured, e.g. "Idle registered app, head unit side (50 apps)".
    public var name: String
    public var group: String
    public var value: Double
    /// The value's unit, e.g. "heap bytes/app".
    public var unit: String
    /// How it was measured, for the table and the JSON.
    public var note: String

    public init(_ name: String, group: String, value: Double, unit: String, note: String) {
        self.name = name
        self.group = group
        self.value = value
        self.unit = unit
        self.note = note
    }
}

/// Keeps a value alive and opaque to the optimiser, so that the work producing it is not dropped.
@_optimize(none)
public func sink(_: some Any) {}

/// State a workload keeps from one run to the next (a buffer it clears, a pair of engines).
///
/// A runner must not mutate a variable it captured: a variable captured by an escaping closure is
/// checked for exclusive access at every use (`swift_beginAccess`), which would cost more than the
/// nanosecond operations measured. `withValue` moves the state into a local for the whole run.
public final class RunState<Value> {
    private var value: Value?

    public init(_ value: Value) {
        self.value = value
    }

    /// Lends the state to `body` as a local variable, then keeps it for the next run.
    @inline(__always)
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        var local = self.value.take()!
        defer { self.value = local }
        return try body(&local)
    }
}
