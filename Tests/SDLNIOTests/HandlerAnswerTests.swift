import NIOConcurrencyHelpers
import NIOCore
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// A handler that answers requests itself (`SDLRequestAnswer.later` and
/// `SDLConnectedApp.respond(_:to:)`): in order with its notifications, exactly once, and not to an
/// app that left. A raw app reads what reaches it, frame by frame, in order.
@Suite(.timeLimit(.minutes(1)))
struct HandlerAnswerTests {
    /// A raw app on a fresh server: its session started and registered; `body` gets the frames
    /// it receives, its session id and the server.
    func withRawApp(
        handler: some SDLHeadUnitHandler, maxPendingRequests: Int = 100,
        _ body: @escaping @Sendable (RawPeer, inout FrameReader, UInt8, SDLHeadUnitServer) async throws -> Void
    ) async throws {
        // A hundred rounds through the async handler's tasks: on a loaded 2-core machine running
        // the whole suite, longer than the default 30 s; the suite's minute still bounds it.
        try await within(55) {
            var configuration = testHeadUnitConfiguration()
            configuration.maxPendingRequestsPerApp = maxPendingRequests
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
            var (peer, frames, session) = try await RawPeer.registered(port: server.primaryPort)
            try await body(peer, &frames, session, server)
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func aResponseTheHandlerSendsGoesBeforeTheNotificationItSendsAfterItAndOnlyOnce() async throws {
        let handler = SelfAnsweringHandler()
        try await self.withRawApp(handler: handler) { peer, frames, session, _ in
            // Forty rounds: each a few tasks of the handler, inside the test's time on a loaded machine.
            let rounds = 40
            var received: [String] = []
            var expected: [String] = []
            for round in 0..<rounds {
                let correlationID = UInt32(10 + round)
                try await peer.send(RawFrames.listFiles(session: session, correlationID: correlationID, messageID: UInt32(2 + round)))
                // A second answer of either kind would arrive before the next round's response.
                received.append(try await frames.nextRPC() ?? "closed")
                received.append(try await frames.nextRPC() ?? "closed")
                expected += ["ListFiles response #\(correlationID) SUCCESS", "OnHashChange notification #4294967295"]
            }
            #expect(received == expected)
            // Each returned response came after the handler had answered: dropped and reported,
            // after the handler's second `respond` was refused.
            var reported = 0
            while reported < rounds, await handler.recorder.next({ event -> SDLConnectionError.Code? in
                if case .handlerError(_, let error) = event { return error.code }
                return nil
            }) == .alreadyAnswered {
                reported += 1
            }
            #expect(reported == rounds)
            #expect(handler.secondAnswers.withLockedValue { $0 } == Array(repeating: .alreadyAnswered, count: rounds))
        }
    }

    @Test func answersLaterCountAsPendingAndACorrelationIDStillWaitingIsInvalidID() async throws {
        let handler = DeferringHandler()
        try await self.withRawApp(handler: handler, maxPendingRequests: 2) { peer, frames, session, _ in
            for (messageID, correlationID) in [(2, 10), (3, 11), (4, 10), (5, 12)] as [(UInt32, UInt32)] {
                try await peer.send(RawFrames.listFiles(session: session, correlationID: correlationID, messageID: messageID))
            }
            // 10 and 11 wait for the handler: a second 10 is refused, and 12 is one too many.
            #expect(try await frames.nextRPC() == "ListFiles response #10 INVALID_ID")
            #expect(try await frames.nextRPC() == "ListFiles response #12 TOO_MANY_PENDING_REQUESTS")
            var taken = handler.taken.makeAsyncIterator()
            let (first, app) = try #require(await taken.next())
            let (second, _) = try #require(await taken.next())
            #expect([first.correlationID, second.correlationID] == [10, 11])

            try await app.respond(SDLListFilesResponse(success: true, resultCode: .success), to: second)
            #expect(try await frames.nextRPC() == "ListFiles response #11 SUCCESS")
            // Answering one made room for another.
            try await peer.send(RawFrames.listFiles(session: session, correlationID: 13, messageID: 6))
            let (third, _) = try #require(await taken.next())
            #expect(third.correlationID == 13)
            // A response of another function is replaced by GENERIC_ERROR: answered all the same.
            let wrong = await #expect(throws: SDLConnectionError.self) {
                try await app.respond(SDLAlertResponse(success: true, resultCode: .success), to: third)
            }
            #expect(wrong?.code == .invalidMessage)
            #expect(try await frames.nextRPC() == "ListFiles response #13 GENERIC_ERROR")
            try await app.respond(SDLListFilesResponse(success: true, resultCode: .success), to: first)
            #expect(try await frames.nextRPC() == "ListFiles response #10 SUCCESS")
            for request in [first, third] {
                let again = await #expect(throws: SDLConnectionError.self) {
                    try await app.respond(SDLListFilesResponse(success: true, resultCode: .success), to: request)
                }
                #expect(again?.code == .alreadyAnswered)
            }
            // A request the app never sent is not answered either.
            let madeUp = AnyRPCMessage(SDLListFilesRequest(), correlationID: 99)
            let unknown = await #expect(throws: SDLConnectionError.self) {
                try await app.respond(SDLListFilesResponse(success: true, resultCode: .success), to: madeUp)
            }
            #expect(unknown?.code == .alreadyAnswered)
        }
    }

    @Test func aResponseToARequestOfAnAppThatLeftIsRefusedAndLeavesNothingBehind() async throws {
        let handler = DeferringHandler()
        try await within {
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let waiting = Task { () async throws(SDLConnectionError) -> SDLListFilesResponse in try await app.send(SDLListFilesRequest()) }
            var taken = handler.taken.makeAsyncIterator()
            let (request, connected) = try #require(await taken.next())
            await app.close()
            let left = await #expect(throws: SDLConnectionError.self) { try await waiting.value }
            #expect(left?.code == .disconnected)
            let reason = await handler.recorder.next { event -> SessionEndReason? in
                if case .appDisconnected(_, let reason) = event { return reason }
                return nil
            }
            #expect(reason == .transportLost)
            let late = await #expect(throws: SDLConnectionError.self) {
                try await connected.respond(SDLListFilesResponse(success: true, resultCode: .success), to: request)
            }
            #expect(late?.code == .disconnected)
            #expect(await server.connectedApps.isEmpty)
            #expect(await server.queuedBytes == 0)
            await server.shutdown()
        }
    }
}

/// Answers ListFiles itself and then sends OnHashChange; then tries twice more to answer, with
/// `respond` (refused: recorded in ``secondAnswers``) and by returning a response (dropped and
/// reported as a handler error).
final class SelfAnsweringHandler: SDLHeadUnitHandler {
    let recorder = EventLog()
    let secondAnswers = NIOLockedValueBox<[SDLConnectionError.Code]>([])

    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
        do {
            try await app.respond(SDLListFilesResponse(success: true, resultCode: .success), to: request)
            try await app.sendNotification(SDLOnHashChange(hashID: "after #\(request.correlationID)"))
        } catch {
            Issue.record("the first answer failed: \(error)")
        }
        do {
            try await app.respond(SDLListFilesResponse(success: false, resultCode: .genericError), to: request)
        } catch {
            self.secondAnswers.withLockedValue { $0.append(error.code) }
        }
        return .response(SDLListFilesResponse(success: false, resultCode: .genericError))
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        self.recorder.append(event)
    }
}

/// Takes every request to answer later: each is handed to the test through ``taken``.
final class DeferringHandler: SDLHeadUnitHandler {
    let recorder = EventLog()
    let taken: AsyncStream<(AnyRPCMessage, SDLConnectedApp)>
    private let continuation: AsyncStream<(AnyRPCMessage, SDLConnectedApp)>.Continuation

    init() {
        (self.taken, self.continuation) = AsyncStream.makeStream()
    }

    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
        self.continuation.yield((request, app))
        return .later
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        self.recorder.append(event)
    }
}

/// The events a handler heard, read in order (a ``RecordingHandler`` would also send OnHMIStatus,
/// which a raw app reading an exact sequence must not get).
final class EventLog: Sendable {
    private let stream: AsyncStream<SDLHeadUnitEvent>
    private let continuation: AsyncStream<SDLHeadUnitEvent>.Continuation

    init() {
        (self.stream, self.continuation) = AsyncStream.makeStream()
    }

    func append(_ event: SDLHeadUnitEvent) {
        self.continuation.yield(event)
    }

    /// The next event that `match` accepts (earlier ones are skipped).
    func next<T: Sendable>(_ match: @Sendable (SDLHeadUnitEvent) -> T?) async -> T? {
        for await event in self.stream {
            if let value = match(event) { return value }
        }
        return nil
    }
}

extension RawFrames {
    /// A ListFiles request as one version 5 RPC frame.
    static func listFiles(session: UInt8, correlationID: UInt32, messageID: UInt32) -> ByteBuffer {
        self.rpc(try! SDLListFilesRequest().payload(correlationID: correlationID), session: session, messageID: messageID)
    }
}

extension FrameReader {
    /// The next RPC message, `Function rpcType #correlationID`, and the result code of a
    /// ListFiles response; nil when the connection closed.
    mutating func nextRPC() async throws -> String? {
        guard let frame = try await self.next(where: { $0.header.serviceType == .rpc && $0.header.frameType == .single }) else {
            return nil
        }
        let message = try AnyRPCMessage(payload: frame.payload, options: .lenient)
        let line = "\(message.functionName) \(message.rpcType) #\(message.correlationID)"
        guard let files = message.message as? SDLListFilesResponse else { return line }
        return line + " \(files.resultCode.wireName)"
    }
}
