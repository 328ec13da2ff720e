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
