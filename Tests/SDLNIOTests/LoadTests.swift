import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// Many apps on one head unit, and an app that stops reading.
@Suite(.timeLimit(.minutes(2)))
struct LoadTests {
    @Test(arguments: TransportKind.allCases) func fiftyAppsOnOneHeadUnit(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within(90) {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            let count = 50
            let sessionIDs = try await withThrowingTaskGroup(of: UInt8.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let app = try await bed.connect(server)
                        let hashes = app.notifications(of: SDLOnHashChange.self)
                        try await app.register(registration("App \(index)", appID: "app-\(index)"))
                        for _ in 0..<5 {
                            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                            #expect(files.filenames == ["a.png", "b.png"])
                        }
                        // The head unit greets every app by name once all are registered.
                        var iterator = hashes.makeAsyncIterator()
                        let greeting = await iterator.next()
                        #expect(greeting?.hashID == "App \(index)")
                        await app.disconnect()
                        return app.sessionInfo.sessionID.rawValue
                    }
                }
                var registered = 0
                while registered < count {
                    // nil: the server's events ended (it stopped) before every app registered.
                    guard let event = await handler.next({ $0 }) else { break }
                    if case .appRegistered = event { registered += 1 }
                }
                try #require(registered == count)
                for app in await server.connectedApps {
                    let name = try #require(await app.registration?.appName)
                    try await app.sendNotification(SDLOnHashChange(hashID: name))
                }
                var ids: [UInt8] = []
                for try await id in group { ids.append(id) }
                return ids
            }
            // Every app had its own session id.
            #expect(Set(sessionIDs) == Set(1...UInt8(count)))
            while await !server.connectedApps.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            let names = handler.events.map(\.name)
            #expect(names.filter { $0 == "appConnected" }.count == count)
            #expect(names.filter { $0 == "appRegistered" }.count == count)
            #expect(names.filter { $0 == "appDisconnected(peer)" }.count == count)
            #expect(handler.requests.withLockedValue { $0.count } == count * 5)
            await server.shutdown()
        }
    }

    @Test func anAppThatStopsReadingLosesNotificationsNotTheHeadUnitsMemory() async throws {
        try await within(60) {
            let handler = RecordingHandler()
            var configuration = testHeadUnitConfiguration()
            configuration.maxQueuedBytesPerApp = 64 * 1024
            // Small kernel buffers on both ends, so that a few thousand notifications fill them;
            // the stalled-reader timeout, not under test here, off.
            configuration.transport.socketSendBufferSize = 16 * 1024
            configuration.transport.stalledReaderTimeout = nil
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
            let (peer, _, _) = try await RawPeer.registered(port: server.primaryPort, receiveBufferSize: 16 * 1024)
            try await peer.stopReading()
            let app = try #require(await server.connectedApps.first)

            // The head unit sends ~200-byte notifications: far more than the app's bound and the
            // kernel's socket buffers hold (1.6 MB).
            let hash = String(repeating: "h", count: 100)
            for _ in 0..<8_000 {
                try await app.sendNotification(SDLOnHashChange(hashID: hash))
            }
            // What the head unit holds for the app stays under its bound; the rest was dropped and
            // counted, one event per drop.
            let queued = await server.queuedBytes
            #expect(queued > 0)
            #expect(queued <= configuration.maxQueuedBytesPerApp)
            var dropped = 0
            while dropped == 0 {
                dropped = handler.events.compactMap { event -> Int? in
                    if case .notificationsDropped(_, let total) = event { return total }
                    return nil
                }.max() ?? 0
                if dropped == 0 { try await Task.sleep(for: .milliseconds(10)) }
            }
            // The kernel's socket buffers took some before the head unit's queue filled.
            #expect(dropped < 8_000)

            // The app vanishes: the session ends, nothing is left queued.
            await peer.close()
            while await !server.connectedApps.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(await server.queuedBytes == 0)
            await server.shutdown()
        }
    }

    @Test func twoSessionsOnOneConnection() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            // A router: two apps' sessions on one connection, each started and registered in turn.
            let peer = try await RawPeer.connect(port: server.primaryPort)
            var frames = peer.frames()
            var sessions: [UInt8] = []
            for _ in 0..<2 {
                try await peer.send(RawFrames.startSession)
                let ack = try #require(try await frames.next { $0.header.frameType == .control && $0.header.serviceType == .rpc })
                #expect(ack.header.frameInfo == ControlFrameInfo.startServiceACK.rawValue)
                sessions.append(ack.header.sessionID.rawValue)
            }
            #expect(sessions == [1, 2])
            for session in sessions {
                try await peer.send(RawFrames.register(session: session, correlationID: UInt32(session)))
                // Skipping the OnHMIStatus the handler sends after each registration.
                let response = try #require(
                    try await frames.next {
                        $0.header.serviceType == .rpc && $0.header.frameType == .single
                            && (try? RPCPayload(parsing: $0.payload).header.rpcType) == .response
                    })
                #expect(response.header.sessionID.rawValue == session)
                #expect(try AnyRPCMessage(payload: response.payload).correlationID == UInt32(session))
            }
            let apps = await server.connectedApps
            #expect(apps.map(\.sessionInfo.sessionID.rawValue) == [1, 2])
            #expect(apps[0].sessionInfo.transport == apps[1].sessionInfo.transport)
            await peer.close()
            while await !server.connectedApps.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            // The handler hears of the disconnections after the server forgot the apps.
            func disconnections() -> Int { handler.events.map(\.name).filter { $0 == "appDisconnected(transportLost)" }.count }
            while disconnections() < 2 {
                try await Task.sleep(for: .milliseconds(10))
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(disconnections() == 2)
            await server.shutdown()
        }
    }
}
