import NIOConcurrencyHelpers
import NIOCore

/// One awaited result that the event loop completes, or that cancellation of the awaiting task
/// completes first: whichever comes first wins, the other is ignored. The loop side checks
/// ``isCompleted`` before it acts, so work for a cancelled caller is not started.
final class Completion<Value: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Result<Value, SDLConnectionError>, Never>)
        case completedEarly(Result<Value, SDLConnectionError>)
        case finished
    }

    private let state = NIOLockedValueBox(State.idle)

    /// Whether a result was given (or the caller was cancelled).
    var isCompleted: Bool {
        self.state.withLockedValue {
            switch $0 {
            case .idle, .waiting: return false
            case .completedEarly, .finished: return true
            }
        }
    }

    /// Gives the result; false when one was given before.
    @discardableResult
    func complete(_ result: Result<Value, SDLConnectionError>) -> Bool {
        let continuation: CheckedContinuation<Result<Value, SDLConnectionError>, Never>? = self.state.withLockedValue { state in
            switch state {
            case .idle:
                state = .completedEarly(result)
                return nil
            case .waiting(let continuation):
                state = .finished
                return continuation
            case .completedEarly, .finished:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation.resume(returning: result)
        return true
    }

    func succeed(_ value: Value) { self.complete(.success(value)) }

    func fail(_ code: SDLConnectionError.Code, _ detail: String) {
        self.complete(.failure(SDLConnectionError(code, detail)))
    }

    fileprivate func install(_ continuation: CheckedContinuation<Result<Value, SDLConnectionError>, Never>) {
        let early: Result<Value, SDLConnectionError>? = self.state.withLockedValue { state in
            switch state {
            case .idle:
                state = .waiting(continuation)
                return nil
            case .completedEarly(let result):
                state = .finished
                return result
            case .waiting, .finished:
                preconditionFailure("a completion is awaited once")
            }
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Starts the work (`start` typically hops to the event loop) and waits for its result. When
    /// the task is cancelled the result is ``SDLConnectionError/Code/cancelled`` at once, and
    /// `onCancel` runs so the loop can forget the work.
    static func run(
        _ start: (Completion<Value>) -> Void, onCancel: @escaping @Sendable (Completion<Value>) -> Void = { _ in }
    ) async throws(SDLConnectionError) -> Value {
        let completion = Completion<Value>()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                completion.install(continuation)
                start(completion)
            }
        } onCancel: {
            if completion.complete(.failure(SDLConnectionError(.cancelled, "the task was cancelled"))) {
                onCancel(completion)
            }
        }
        return try result.get()
    }
}

extension Completion {
    /// Starts the work and waits for its result whatever happens to the calling task: for work a
    /// scope must see ended before it returns (its last disconnect), cancelled or not.
    static func runToEnd(_ start: (Completion<Value>) -> Void) async -> Result<Value, SDLConnectionError> {
        let completion = Completion<Value>()
        return await withCheckedContinuation { continuation in
            completion.install(continuation)
            start(completion)
        }
    }
}

/// Work handed to a loop-confined value from another thread that must take effect before the
/// value handles its next input, not merely some time later: a stream a caller opened must see
/// every message that arrives after the call returned. The caller appends under the lock and
/// schedules a drain; the value also drains at the start of every input it handles.
final class PrecedingWork<Value: AnyObject>: Sendable {
    private let queue = NIOLockedValueBox<[@Sendable (Value) -> Void]>([])

    func append(_ body: @escaping @Sendable (Value) -> Void) {
        self.queue.withLockedValue { $0.append(body) }
    }

    /// Runs what was appended, in order; on the value's loop.
    func drain(_ value: Value) {
        while true {
            let work = self.queue.withLockedValue { queue -> [@Sendable (Value) -> Void] in
                defer { queue.removeAll() }
                return queue
            }
            if work.isEmpty { return }
            for body in work { body(value) }
        }
    }
}

/// A loop-confined value reachable from any thread: work is sent to its loop.
struct LoopBound<Value: AnyObject>: Sendable {
    let eventLoop: any EventLoop
    private let bound: NIOLoopBound<Value>

    init(_ value: Value, eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.bound = NIOLoopBound(value, eventLoop: eventLoop)
    }

    /// The value; only on its loop.
    var value: Value { self.bound.value }

    /// Runs `body` with the value on its loop before the value handles any input that comes after
    /// this call: through `preceding`, which the value drains at the start of each input.
    func executeBeforeNextInput(_ preceding: PrecedingWork<Value>, _ body: @escaping @Sendable (Value) -> Void) {
        preceding.append(body)
        self.execute { preceding.drain($0) }
    }

    /// Runs `body` with the value on its loop.
    func execute(_ body: @escaping @Sendable (Value) -> Void) {
        let bound = self.bound
        if self.eventLoop.inEventLoop {
            body(bound.value)
        } else {
            self.eventLoop.execute { body(bound.value) }
        }
    }

    /// Runs `body` with the value on its loop and waits for what it completes; cancellation of
    /// the calling task gives `.cancelled` and runs `onCancel` on the loop.
    func run<Result: Sendable>(
        _ body: @escaping @Sendable (Value, Completion<Result>) -> Void,
        onCancel: @escaping @Sendable (Value, Completion<Result>) -> Void = { _, _ in }
    ) async throws(SDLConnectionError) -> Result {
        let bound = self.bound
        let loop = self.eventLoop
        return try await Completion<Result>.run { completion in
            loop.execute { body(bound.value, completion) }
        } onCancel: { completion in
            loop.execute { onCancel(bound.value, completion) }
        }
    }

    /// Runs `body` with the value on its loop and waits for what it completes, even when the
    /// calling task is cancelled.
    func runToEnd<Result: Sendable>(
        _ body: @escaping @Sendable (Value, Completion<Result>) -> Void
    ) async -> Swift.Result<Result, SDLConnectionError> {
        let bound = self.bound
        let loop = self.eventLoop
        return await Completion<Result>.runToEnd { completion in
            loop.execute { body(bound.value, completion) }
        }
    }
}
