import NIOConcurrencyHelpers

/// Fans values out to any number of `AsyncStream` readers (OnRCStatus, app-service updates): each
/// reader gets every value from the moment it joins, a reader that stops reading is dropped, and
/// all streams end with the session.
final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var readers: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextReader = 0
        var finished = false
    }

    private let state = NIOLockedValueBox(State())
    private let bufferSize: Int

    init(bufferSize: Int) { self.bufferSize = max(1, bufferSize) }

    /// A new reader's stream, starting with `current` when there is one.
    func makeStream(current: Element? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(self.bufferSize))
        let id = self.state.withLockedValue { state -> Int? in
            guard !state.finished else { return nil }
            if let current { continuation.yield(current) }
            let id = state.nextReader
            state.nextReader += 1
            state.readers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { _ = $0.readers.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ value: Element) {
        let readers = self.state.withLockedValue { Array($0.readers.values) }
        for reader in readers { reader.yield(value) }
    }

    /// Ends every stream; later ones end at once.
    func finish() {
        let readers = self.state.withLockedValue { state -> [AsyncStream<Element>.Continuation] in
            state.finished = true
            defer { state.readers = [:] }
            return Array(state.readers.values)
        }
        for reader in readers { reader.finish() }
    }
}
