import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// Requests that time out, are cancelled, break the spec, or are answered wrongly.
@Suite(.timeLimit(.minutes(1)))
struct RequestTests {
    static func connectRegistered(
        _ handler: RecordingHandler, configuration: SDLAppConfiguration = SDLAppConfiguration()
    ) async throws -> (SDLHeadUnitServer, SDLAppConnection) {
        let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
        let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort, configuration: configuration)
        try await app.register(registration())
        return (server, app)
    }

    static func waitForUnmatched(_ app: SDLAppConnection, count: Int) async throws {
        while await app.statistics.unmatchedResponses < count {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aRequestTimesOutAndItsLateResponseIsUnmatched() async throws {
        try await within {
            let handler = RecordingHandler(listFilesDelay: .milliseconds(400))
            let (server, app) = try await Self.connectRegistered(handler)
            // The timeout fires first: the response would have been a success.
            await #expect {
                let _: SDLListFilesResponse = try await app.send(SDLListFilesRequest(), timeout: .milliseconds(100))
            } throws: {
                ($0 as? SDLConnectionError)?.code == .timeout
            }
            try await Self.waitForUnmatched(app, count: 1)
            // The connection goes on.
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(files.success)
            #expect(await app.statistics.unmatchedResponses == 1)
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test func cancellingTheTaskCancelsItsRequest() async throws {
        try await within {
            let handler = RecordingHandler(listFilesDelay: .milliseconds(300))
            let (server, app) = try await Self.connectRegistered(handler)
            let request = Task { () async -> SDLConnectionError.Code? in
                do throws(SDLConnectionError) {
                    let _: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                    return nil
                } catch {
                    return error.code
                }
            }
            while handler.requests.withLockedValue({ $0.isEmpty }) {
                try await Task.sleep(for: .milliseconds(5))
            }
            request.cancel()
            #expect(await request.value == .cancelled)
            // Its response comes, and nobody waits for it.
            try await Self.waitForUnmatched(app, count: 1)
            // A task cancelled before it sends: nothing goes out.
            let before = handler.requests.withLockedValue { $0.count }
            let cancelled = Task { () async -> SDLConnectionError.Code? in
                withUnsafeCurrentTask { $0?.cancel() }
                do throws(SDLConnectionError) {
                    let _: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                    return nil
                } catch {
                    return error.code
                }
            }
            #expect(await cancelled.value == .cancelled)
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(files.success)
            #expect(handler.requests.withLockedValue { $0.count } == before + 1)
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test func theHeadUnitAnswersInvalidDataToARequestThatBreaksTheSpec() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            // An app that sends without validating: an app name of 101 characters (maxlength 100).
            var configuration = SDLAppConfiguration()
            configuration.sendOptions.validate = false
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort, configuration: configuration)
            await #expect {
                try await app.register(registration(String(repeating: "n", count: 101)))
            } throws: { error in
                guard let error = error as? SDLConnectionError, error.code == .registrationFailed else { return false }
                return error.detail.hasPrefix("INVALID_DATA: ") && error.detail.contains("appName")
            }
            let unreadable = await handler.next { event -> RPCError? in
                if case .unreadableMessage(_, let error) = event { return error }
                return nil
            }
            #expect(unreadable?.pathString == "appName")
            #expect(await app.registration == nil)
            // A valid registration afterwards succeeds: the first was refused, not half-taken.
            try await app.register(registration())
            // Our own strict sending refuses what the spec forbids before it is written.
            let strict = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            await #expect {
                try await strict.register(registration(String(repeating: "n", count: 101)))
            } throws: {
                ($0 as? SDLConnectionError)?.code == .invalidMessage
            }
            await strict.disconnect()
            await app.disconnect()
            await server.shutdown()
        }
    }

    /// A handler that answers every request with a response of another function.
    struct WrongAnswers: SDLHeadUnitHandler {
        func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
            SDLRequestAnswer(await self.response(to: request, from: app))
        }

        func response(to request: AnyRPCMessage, from app: SDLConnectedApp) async -> (any RPCMessage)? {
            SDLAlertResponse(success: true, resultCode: .success)
        }
    }

    @Test func aWrongResponseOfTheHandlerBecomesGenericError() async throws {
        try await within {
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: WrongAnswers())
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(!files.success)
            #expect(files.resultCode == .genericError)
            await app.disconnect()
            await server.shutdown()
        }
    }
}
