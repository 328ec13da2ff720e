import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import ServiceLifecycle
import Testing

/// Peers that vanish at every step of the protocol, and both kinds of shutdown: no crash, no
/// session left behind, every end reported once.
@Suite(.timeLimit(.minutes(1)))
struct DisconnectTests {
    /// Waits until the server has no connected app.
    static func waitUntilEmpty(_ server: SDLHeadUnitServer) async throws {
        while await !server.connectedApps.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    enum Step: CaseIterable {
        case connected, startSent, sessionStarted, registered, halfAMessage, garbage
    }

    @Test func rawAppsVanishingAtEveryStepLeaveNoSession() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            for step in Step.allCases {
                let peer = try await RawPeer.connect(port: server.primaryPort)
                var frames = peer.frames()
                switch step {
                case .connected:
                    break
                case .startSent:
                    try await peer.send(RawFrames.startSession)
                case .sessionStarted, .registered, .halfAMessage:
                    try await peer.send(RawFrames.startSession)
                    let ack = try #require(try await frames.next())
                    #expect(ack.header.frameInfo == ControlFrameInfo.startServiceACK.rawValue)
                    let session = ack.header.sessionID.rawValue
                    if step == .registered {
                        try await peer.send(RawFrames.register(session: session))
                        let response = try #require(try await frames.next { $0.header.serviceType == .rpc })
                        let message = try AnyRPCMessage(payload: response.payload)
                        #expect((message.message as? SDLRegisterAppInterfaceResponse)?.success == true)
                    } else if step == .halfAMessage {
                        // The first half of a RegisterAppInterface frame, then the socket closes.
                        var frame = RawFrames.register(session: session)
                        try await peer.send(frame.readSlice(length: frame.readableBytes / 2)!)
                    }
                case .garbage:
                    try await peer.send([UInt8](repeating: 0xEE, count: 1000))
                }
                await peer.close()
                try await Self.waitUntilEmpty(server)
            }
            // Every session that started ended exactly once, as transport lost.
            let names = handler.events.map(\.name).filter { $0.hasPrefix("app") }
            // Sessions started at the steps startSent, sessionStarted, registered, halfAMessage (TCP
            // delivers the StartService before the close).
            #expect(names == [
                "appConnected", "appDisconnected(transportLost)",
                "appConnected", "appDisconnected(transportLost)",
                "appConnected", "appRegistered", "appDisconnected(transportLost)",
                "appConnected", "appDisconnected(transportLost)",
            ])
            // The server still serves.
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test(arguments: TransportKind.allCases) func anAbruptHeadUnitShutdownFailsWaitingRequests(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler(listFilesDelay: .seconds(30))
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            let app = try await bed.connect(server)
            try await app.register(registration())
            let waiting = Task { () async -> Result<SDLListFilesResponse, SDLConnectionError> in
                do throws(SDLConnectionError) {
                    return .success(try await app.send(SDLListFilesRequest()))
                } catch {
                    return .failure(error)
                }
            }
            while handler.requests.withLockedValue({ $0.isEmpty }) {
                try await Task.sleep(for: .milliseconds(5))
            }
            await server.shutdown(graceful: false)
            let result = await waiting.value
            guard case .failure(let error) = result else {
                Issue.record("the request did not fail: \(result)")
                return
            }
            #expect(error.code == .disconnected)
            var sessionEnd: SessionEndReason?
            for await event in app.events {
                if case .sessionEnded(let reason) = event {
                    sessionEnd = reason
                    break
                }
            }
            #expect(sessionEnd == .transportLost)
            // A request after the end fails at once.
            await #expect { try await app.send(SDLListFilesRequest()) } throws: {
                ($0 as? SDLConnectionError)?.code == .disconnected
            }
            #expect(handler.events.map(\.name).filter { $0.hasPrefix("app") } == ["appConnected", "appRegistered", "appDisconnected(transportLost)"])
            await app.close()
        }
    }

    @Test(arguments: TransportKind.allCases) func aGracefulHeadUnitShutdownEndsEverySessionAndService(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(secondary: true, videoTransports: [.secondary]), handler: handler)
            let first = try await bed.connect(server)
            try await first.register(registration("First"))
            let writer = try await first.startVideo()
            try await writer.write(patternBytes(offset: 0, count: 100_000))
            let second = try await bed.connect(server)
            try await second.register(registration("Second"))

            await server.shutdown()
            for app in [first, second] {
                var ends: [String] = []
                for await event in app.events {
                    switch event {
                    case .sessionEnded(let reason):
                        ends.append("session \(reason)")
                    case .serviceEnded(let service, let reason):
                        ends.append("\(service) \(reason)")
                    default:
                        continue
                    }
                    if ends.last?.hasPrefix("session") == true { break }
                }
                #expect(ends.last == "session peer")
            }
            let names = handler.events.map(\.name)
            #expect(names.filter { $0.hasPrefix("appDisconnected") } == ["appDisconnected(local)", "appDisconnected(local)"])
            #expect(names.contains("serviceEnded(VIDEO, sessionEnded)"))
            // The writer of the ended service fails.
            await #expect { try await writer.write(patternBytes(offset: 0, count: 10)) } throws: {
                ($0 as? SDLConnectionError)?.code == .serviceFailed
            }
            await first.close()
            await second.close()
        }
    }

    /// The server as a swift-service-lifecycle service: the group's graceful shutdown is the
    /// server's graceful shutdown, and so is cancelling the group's task.
    @Test(arguments: [false, true])
    func aServiceGroupStopsTheServerGracefully(byCancelling: Bool) async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let group = ServiceGroup(services: [server], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            let running = Task { try await group.run() }
            if byCancelling {
                running.cancel()
            } else {
                await group.triggerGracefulShutdown()
            }
            try await running.value
            // Stopped: nothing listens, the app's session was ended by the head unit.
            var ends: [String] = []
            for await event in app.events {
                if case .sessionEnded(let reason) = event {
                    ends.append("\(reason)")
                    break
                }
            }
            #expect(ends == ["peer"])
            #expect(handler.events.map(\.name).filter { $0.hasPrefix("appDisconnected") } == ["appDisconnected(local)"])
            // A shutdown after the group's returns at once.
            await server.shutdown()
            await #expect(throws: SDLConnectionError.self) {
                try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            }
            await app.close()
        }
    }

    @Test func anAppVanishingWhileStreamingOnTheSecondaryEndsItsStream() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(
                configuration: testHeadUnitConfiguration(secondary: true, videoTransports: [.secondary]), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let writer = try await app.startVideo()
            let stream = try #require(await MediaTests.serviceStarted(handler)).1
            let reader = Task { await MediaTests.verify(stream) }
            for index in 0..<8 {
                try await writer.write(patternBytes(offset: index * 65536, count: 65536))
            }
            await app.close()
            let (bytes, mismatches) = await reader.value
            // What arrived before the close is intact; the stream ended.
            #expect(bytes <= 8 * 65536)
            #expect(mismatches == 0)
            try await Self.waitUntilEmpty(server)
            let names = handler.events.map(\.name).filter { !$0.hasPrefix("session") }
            #expect(names.contains("serviceEnded(VIDEO, transportLost)") || names.contains("serviceEnded(VIDEO, sessionEnded)"))
            #expect(names.last == "appDisconnected(transportLost)")
            await #expect { try await writer.write(patternBytes(offset: 0, count: 10)) } throws: {
                ($0 as? SDLConnectionError)?.code == .serviceFailed
            }
            await server.shutdown()
        }
    }

    @Test func theRegistrationTimeoutRunsOnTheEventLoop() async throws {
        try await within {
            let handler = RecordingHandler()
            var configuration = testHeadUnitConfiguration()
            configuration.session.headUnit.registrationTimeout = .milliseconds(200)
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
            let peer = try await RawPeer.connect(port: server.primaryPort)
            var frames = peer.frames()
            try await peer.send(RawFrames.startSession)
            let ack = try #require(try await frames.next())
            // It never registers: the head unit's timer ends the session with EndService(RPC).
            let end = try #require(try await frames.next { $0.header.frameType == .control && $0.header.serviceType == .rpc })
            #expect(end.header.frameInfo == ControlFrameInfo.endService.rawValue)
            #expect(end.header.sessionID == ack.header.sessionID)
            try await Self.waitUntilEmpty(server)
            // The handler's events come through its own task: waited for, not read at once.
            let reason = await handler.next { event -> String? in
                if case .appDisconnected(_, let reason) = event { return "\(reason)" }
                return nil
            }
            #expect(reason == "registrationTimeout")
            #expect(handler.events.map(\.name).filter { $0.hasPrefix("app") } == ["appConnected", "appDisconnected(registrationTimeout)"])
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func theHeadUnitEndsAServiceAndThenTheSession() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let writer = try await app.startVideo()
            try await writer.write(patternBytes(offset: 0, count: 1000))
            let connected = try #require(await server.connectedApps.first)
            try await connected.endService(.video)
            var ends: [String] = []
            for await event in app.events {
                switch event {
                case .serviceEnded(let service, let reason):
                    ends.append("\(service) \(reason)")
                    try await connected.endSession()
                case .sessionEnded(let reason):
                    ends.append("session \(reason)")
                default:
                    continue
                }
            }
            // The event stream finished after the session's end.
            #expect(ends == ["VIDEO peer", "session peer"])
            await #expect { try await writer.write(patternBytes(offset: 0, count: 10)) } throws: {
                ($0 as? SDLConnectionError)?.code == .serviceFailed
            }
            await #expect { try await connected.sendNotification(SDLOnHashChange(hashID: "late")) } throws: {
                ($0 as? SDLConnectionError)?.code == .disconnected
            }
            try await Self.waitUntilEmpty(server)
            #expect(handler.events.map(\.name).filter { $0.hasPrefix("app") }.last == "appDisconnected(local)")
            await server.shutdown()
        }
    }
}
