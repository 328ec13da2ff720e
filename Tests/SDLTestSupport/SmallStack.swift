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

/// Runs CPU-bound work on a thread of its own and waits for it without holding one of Swift's
/// cooperative threads: long synchronous tests (seeded schedules, hostile streams) running in
/// parallel would otherwise take every thread of the pool, and the async tests running beside
/// them (network round trips with time bounds) would wait for minutes without being run.
public func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = 8 * 1024 * 1024
        thread.start()
    }
}
