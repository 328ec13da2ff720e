import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// The app runtime against the head-unit runtime over loopback TCP: negotiation, registration,
/// requests, responses, notifications, disconnection.
@Suite(.timeLimit(.minutes(1)))
struct EndToEndTests {
    @Test(arguments: TransportKind.allCases) func negotiatesVersion5AndRegisters(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            let app = try await bed.connect(server)
            #expect(app.sessionInfo.frameVersion == .v5)
            #expect(app.sessionInfo.version == SDLVersion(major: 5, minor: 4, patch: 1))
            #expect(app.sessionInfo.sessionID == SessionID(1))
            #expect(app.sessionInfo.hashID != nil)
            #expect(app.sessionInfo.mtu == 131_072)

            let statuses = app.hmiStatusUpdates()
            let response = try await app.register(registration("Navigator", appID: "nav-1", hmiTypes: [.navigation, .projection]))
            #expect(response.success)
            #expect(response.info == "welcome Navigator")
            #expect(await app.registration?.info == "welcome Navigator")
            let version = try #require(await app.rpcVersion)
            #expect([version.majorVersion, version.minorVersion, version.patchVersion ?? -1] == [7, 1, 0])

            var iterator = statuses.makeAsyncIterator()
            let status = try #require(await iterator.next())
            #expect(status.hmiLevel == .full)
            #expect(await app.hmiStatus?.hmiLevel == .full)

            let registered = await handler.next { event -> SDLRegisterAppInterfaceRequest? in
                if case .appRegistered(_, let request) = event { return request }
                return nil
            }
            #expect(registered?.appName == "Navigator")
            #expect(registered?.appID == "nav-1")
            #expect(registered?.appHMIType == [.navigation, .projection])
            let apps = await server.connectedApps
            #expect(apps.count == 1)
            #expect(await apps.first?.registration?.appID == "nav-1")

            await app.disconnect()
            let ended = await handler.next { event -> SessionEndReason? in
                if case .appDisconnected(_, let reason) = event { return reason }
                return nil
            }
            #expect(ended == .peer)
            #expect(await server.connectedApps.isEmpty)
            await server.shutdown()
            #expect(handler.events.map(\.name).prefix(3) == ["appConnected", "appRegistered", "appDisconnected(peer)"])
        }
    }

    @Test(arguments: TransportKind.allCases) func version4AppNegotiatesVersion4(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            var configuration = SDLAppConfiguration()
            configuration.session.maxProtocolVersion = SDLVersion(major: 4)
            let app = try await bed.connect(server, configuration: configuration)
            #expect(app.sessionInfo.frameVersion == .v4)
            #expect(app.sessionInfo.version == SDLVersion(major: 4))
            // A version 4 ACK carries the hash as 4 raw bytes.
            #expect(app.sessionInfo.hashID != nil)
            let response = try await app.register(registration())
            #expect(response.success)
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(files.filenames == ["a.png", "b.png"])
            await app.disconnect()
            await server.shutdown()
            #expect(handler.events.map(\.name).contains("appDisconnected(peer)"))
        }
    }

    @Test(arguments: TransportKind.allCases) func requestsGetTheirResponses(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            let app = try await bed.connect(server)

            // Before registration the head unit answers APPLICATION_NOT_REGISTERED, as Core does.
            let early: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(!early.success)
            #expect(early.resultCode == .applicationNotRegistered)

            try await app.register(registration())
            // Many requests at once: each response reaches its own caller by correlation id.
            try await withThrowingTaskGroup(of: [String]?.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let response: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                        return response.filenames
                    }
                }
                var count = 0
                for try await names in group {
                    #expect(names == ["a.png", "b.png"])
                    count += 1
                }
                #expect(count == 20)
            }
            #expect(handler.requests.withLockedValue { $0.count } == 20)

            // A function the handler does not implement: a well-formed UNSUPPORTED_REQUEST.
            let unsupported = try await app.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .navigation))
            let capability = try #require(unsupported.message as? SDLGetSystemCapabilityResponse)
            #expect(!capability.success)
            #expect(capability.resultCode == .unsupportedRequest)

            // A second registration is refused.
            let again: SDLRegisterAppInterfaceResponse = try await app.send(registration())
            #expect(again.resultCode == .applicationRegisteredAlready)

            // Unregistered, the app may register again; requests in between are refused.
            try await app.unregister()
            #expect(await app.registration == nil)
            let refused: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(refused.resultCode == .applicationNotRegistered)
            try await app.register(registration())
            #expect(await app.registration?.success == true)

            await app.disconnect()
            await server.shutdown()
            #expect(handler.events.map(\.name).filter { $0.hasPrefix("app") } == [
                "appConnected", "appRegistered", "appUnregistered", "appRegistered", "appDisconnected(peer)",
            ])
        }
    }

    @Test(arguments: TransportKind.allCases) func notificationsReachTheirSubscribers(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            let app = try await bed.connect(server)
            let hashes = app.notifications(of: SDLOnHashChange.self)
            let statuses = app.notifications(of: SDLOnHMIStatus.self)
            try await app.register(registration())
            let connected = try #require(await server.connectedApps.first)
            for index in 0..<5 {
                try await connected.sendNotification(SDLOnHashChange(hashID: "hash-\(index)"))
            }
            var received: [String] = []
            for await change in hashes {
                received.append(change.hashID)
                if received.count == 5 { break }
            }
            #expect(received == ["hash-0", "hash-1", "hash-2", "hash-3", "hash-4"])
            var statusIterator = statuses.makeAsyncIterator()
            #expect(await statusIterator.next()?.hmiLevel == .full)

            // A head unit may not send a request as a notification: refused before it is written.
            await #expect {
                try await connected.sendNotification(SDLListFilesRequest())
            } throws: {
                ($0 as? SDLConnectionError)?.code == .invalidMessage
            }
            // From the app to the head unit.
            try await app.sendNotification(SDLOnAppCapabilityUpdated(appCapability: SDLAppCapability(appCapabilityType: .videoStreaming)))
            let fromApp = await handler.next { event -> AnyRPCMessage? in
                if case .notification(_, let message) = event { return message }
                return nil
            }
            let updated = try #require(fromApp?.message as? SDLOnAppCapabilityUpdated)
            #expect(updated.appCapability.appCapabilityType == .videoStreaming)
            await app.disconnect()
            // The streams end with the session.
            var rest = 0
            for await _ in hashes { rest += 1 }
            #expect(rest == 0)
            var events: [String] = []
            for await event in app.events {
                if case .sessionEnded(let reason) = event { events.append("sessionEnded(\(reason))") }
            }
            #expect(events == ["sessionEnded(local)"])
            await server.shutdown()
        }
    }
}
