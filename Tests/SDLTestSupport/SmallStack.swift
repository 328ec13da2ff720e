import Foundation

/// Runs `body` on a thread with a 512 KiB stack (Darwin's default for secondary threads, a common
/// size elsewhere) and reports whether it finished within `seconds`. Recursion that does not fit
/// crashes the test process instead, which is the point: readers must stay within this stack at
/// their nesting ceiling.
public func finishesOnA512KiBStack(within seconds: Double = 120, _ body: @escaping @Sendable () -> Void) -> Bool {
    let finished = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        finished.signal()
    }
    thread.stackSize = 512 * 1024
    thread.start()
    return finished.wait(timeout: .now() + seconds) == .success
}

/// Runs CPU-bound work on the background threads kept for it (one per core), and waits for it
/// without holding one of Swift's cooperative threads. Long synchronous tests (seeded schedules,
/// hostile streams) run in parallel would otherwise take every thread of the pool, and the async
/// tests running beside them (network round trips with time bounds) would wait for minutes without
/// being run. A thread per core, not one per call: sixteen CPU-bound threads on a 2-core machine
/// leave the event loops a few percent of the CPU each. The threads run at a lower priority
/// (nice 10 on Linux), so whatever else is runnable goes first; jobs start in the order they came.
public func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { continuation in
        BackgroundWorker.shared.enqueue { continuation.resume(returning: body()) }
    }
}

private final class BackgroundWorker: @unchecked Sendable {
    static let shared = BackgroundWorker()

    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        for _ in 0..<max(1, ProcessInfo.processInfo.activeProcessorCount) {
            let thread = Thread { [self] in self.run() }
            thread.stackSize = 8 * 1024 * 1024
            thread.qualityOfService = .background
            thread.start()
        }
    }

    func enqueue(_ job: @escaping @Sendable () -> Void) {
        self.condition.lock()
        self.jobs.append(job)
        self.condition.signal()
        self.condition.unlock()
    }

    private func run() {
        #if os(Linux)
        // On Linux, PRIO_PROCESS with id 0 names the calling thread, not the whole process.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #endif
        while true {
            self.condition.lock()
            while self.jobs.isEmpty {
                self.condition.wait()
            }
            let job = self.jobs.removeFirst()
            self.condition.unlock()
            job()
        }
    }
}

/// Runs a synchronous test body on the CPU-bound work's background threads (see ``onOwnThread(_:)``)
/// while staying in the calling task: a task executor preference moves the task there, so task
/// locals (the current test, to which `#expect` records its issues) go with it. For the long
/// property and differential tests, which would otherwise hold a cooperative thread for seconds.
public func onCPUThreads<Value>(_ body: () throws -> Value) async rethrows -> Value {
    try await withTaskExecutorPreference(BackgroundTaskExecutor.shared) {
        try body()
    }
}

/// The background threads as a task executor.
private final class BackgroundTaskExecutor: TaskExecutor {
    static let shared = BackgroundTaskExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = self.asUnownedTaskExecutor()
        BackgroundWorker.shared.enqueue { job.runSynchronously(on: executor) }
    }
}
