import NIOCore
import SDLManagers

/// One observer of a manager's subscription (a module's data, a service's data), read by the
/// steps with a time bound: a task iterates the subscription and passes each update, or the error
/// that ended it, to a stream the steps read. The observer lives until ``stop()`` or until the
/// observation is dropped; the manager unsubscribes once its last observer is gone.
final class Observation<Element: Sendable>: Sendable {
    private let updates: AsyncStream<Result<Element, SDLManagerError>>
    private let task: Task<Void, Never>

    init(_ subscription: SDLSubscription<Element>) {
        let (updates, continuation) = AsyncStream<Result<Element, SDLManagerError>>.makeStream(
            bufferingPolicy: .bufferingNewest(64))
        self.updates = updates
        self.task = Task {
            do throws(SDLManagerError) {
                for try await element in subscription {
                    continuation.yield(.success(element))
                }
            } catch {
                continuation.yield(.failure(error))
            }
            continuation.finish()
        }
    }

    deinit {
        self.task.cancel()
    }

    /// The first update `accept` takes within `timeout`, nil when none came (after a timeout the
    /// observation is spent: its updates are no longer read). Throws the error that ended the
    /// observer, e.g. the head unit refusing the subscription.
    func first(
        within timeout: TimeAmount, where accept: @escaping @Sendable (Element) -> Bool = { _ in true }
    ) async throws(SDLManagerError) -> Element? {
        let found = await firstElement(of: self.updates, within: timeout) { result in
            guard case .success(let element) = result else { return true }
            return accept(element)
        }
        switch found {
        case .success(let element): return element
        case .failure(let error): throw error
        case nil: return nil
        }
    }

    /// Ends the observer and waits until its iteration is over.
    func stop() async {
        self.task.cancel()
        await self.task.value
    }
}

/// Polls `condition` until it holds or `timeout` passed; returns whether it held. For manager
/// state that follows a request the manager sends on its own (an unsubscription once the last
/// observer left).
func holds(within timeout: TimeAmount, _ condition: () async -> Bool) async -> Bool {
    let deadline = NIODeadline.now() + timeout
    while !(await condition()) {
        guard NIODeadline.now() < deadline, !Task.isCancelled else { return false }
        try? await Task.sleep(nanoseconds: 5_000_000)
    }
    return true
}
