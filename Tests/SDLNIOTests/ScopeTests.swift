import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLRPC
import Testing

/// The scopes, `withSDLHeadUnitServer` and `withSDLAppConnection`: what was started inside has
/// ended when the scope returns, throws or is cancelled, counted on the in-memory network (open
/// connection ends, listening ports) and in the handler (answers still running).
@Suite(.timeLimit(.minutes(1)))
struct ScopeTests {
    /// Answers ListFiles only once its task is cancelled, counting the answers under way.
    final class StallingHandler: SDLHeadUnitHandler {
        let running = NIOLockedValueBox(0)
        let started = NIOLockedValueBox(0)

        func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
            self.running.withLockedValue { $0 += 1 }
            self.started.withLockedValue { $0 += 1 }
            defer { self.running.withLockedValue { $0 -= 1 } }
            try? await Task.sleep(for: .seconds(120))
            return .response(SDLListFilesResponse(success: false, resultCode: .aborted))
        }
    }

    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        case returning, throwing, cancelled
        var testDescription: String { self.rawValue }
    }

    struct Thrown: Error {}

    @Test(arguments: Ending.allCases)
    func nothingOutlivesTheScopes(ending: Ending) async throws {
        let network = SDLInMemoryNetwork(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let handler = StallingHandler()
        let endsAfterTheAppScope = NIOLockedValueBox<Int?>(nil)
        try await within {
            let scope = Task {
                try await withSDLHeadUnitServer(transports: [network.transport(port: 0)], handler: handler) { server in
                    defer { endsAfterTheAppScope.withLockedValue { $0 = network.openConnectionEnds } }
                    try await withSDLAppConnection(to: network.transport(port: server.primaryPort)) { app in
                        try await app.register(registration())
                        // Two requests the handler holds: one waited for here, one left running.
                        let held = Task { () async throws(SDLConnectionError) -> SDLListFilesResponse in try await app.send(SDLListFilesRequest()) }
                        _ = held
                        while handler.running.withLockedValue({ $0 }) < 1 { try await Task.sleep(for: .milliseconds(5)) }
                        #expect(network.openConnectionEnds == 2)
                        #expect(network.listeningPorts == 1)
                        switch ending {
                        case .returning:
                            return
                        case .throwing:
                            throw Thrown()
                        case .cancelled:
                            let _: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                        }
                    }
                }
            }
            if ending == .cancelled {
                while handler.started.withLockedValue({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
                scope.cancel()
            }
            let result = await scope.result
            switch ending {
            case .returning: #expect(throws: Never.self) { try result.get() }
            case .throwing: #expect(throws: Thrown.self) { try result.get() }
            case .cancelled: #expect(throws: (any Error).self) { try result.get() }
            }
            // Once the app's scope is left its end of the connection is closed (the head unit's
            // may still be closing); once the head unit's is left, nothing is open, nothing
            // listens, no answer runs.
            #expect(try #require(endsAfterTheAppScope.withLockedValue { $0 }) <= 1)
            #expect(network.openConnectionEnds == 0)
            #expect(network.listeningPorts == 0)
            #expect(handler.running.withLockedValue { $0 } == 0)
        }
    }
}
