import NIOConcurrencyHelpers
import NIOCore
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// Requests in the other direction: the head unit asks an app (an app-service provider) and the
/// app answers through `incomingRequests` and `respond`; never silence. Also the system
/// capability and permission helpers of the app runtime.
@Suite(.timeLimit(.minutes(1)))
struct HeadUnitRequestTests {
    /// A head unit with one registered app; `body` gets both ends.
    func withRegisteredApp(
        handler: RecordingHandler = RecordingHandler(), configuration: SDLAppConfiguration = SDLAppConfiguration(),
        _ body: @escaping @Sendable (SDLAppConnection, SDLConnectedApp, RecordingHandler) async throws -> Void
    ) async throws {
        try await within {
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort, configuration: configuration)
            try await app.register(registration("Weather", appID: "wx-1", hmiTypes: [.information]))
            let connected = try #require(await server.connectedApps.first)
            try await body(app, connected, handler)
            await app.disconnect()
            await server.shutdown()
        }
    }

    static func weather(_ name: String) -> SDLAppServiceData {
        SDLAppServiceData(
            serviceType: "WEATHER", serviceID: "wx-service",
            weatherServiceData: SDLWeatherServiceData(location: SDLLocationDetails(locationName: name)))
    }

    @Test func theHeadUnitAsksAndTheAppAnswers() async throws {
        try await self.withRegisteredApp { app, connected, _ in
            let requests = app.incomingRequests(of: [.getAppServiceData])
            let answering = Task {
                var answered: [String] = []
                for await request in requests {
                    guard let ask = request.message.message as? SDLGetAppServiceDataRequest else { continue }
                    answered.append("\(request.functionName) \(ask.serviceType) subscribe=\(ask.subscribe ?? false)")
                    try await app.respond(
                        SDLGetAppServiceDataResponse(success: true, resultCode: .success, serviceData: Self.weather("Berlin")), to: request)
                    // A second answer to the same request is refused before anything is sent.
                    let again = await #expect(throws: SDLConnectionError.self) {
                        try await app.respond(SDLGetAppServiceDataResponse(success: false, resultCode: .genericError), to: request)
                    }
                    #expect(again?.code == .alreadyAnswered)
                    if answered.count == 2 { break }
                }
                return answered
            }
            let first: SDLGetAppServiceDataResponse = try await connected.send(SDLGetAppServiceDataRequest(serviceType: "WEATHER", subscribe: true))
            #expect(first.success)
            #expect(first.serviceData?.weatherServiceData?.location.locationName == "Berlin")
            let second: SDLGetAppServiceDataResponse = try await connected.send(SDLGetAppServiceDataRequest(serviceType: "WEATHER"))
            #expect(second.serviceData?.serviceID == "wx-service")
            #expect(try await answering.value == ["GetAppServiceData WEATHER subscribe=true", "GetAppServiceData WEATHER subscribe=false"])
        }
    }

    @Test func aRequestNobodyListensForIsAnsweredUnsupported() async throws {
        try await self.withRegisteredApp { app, connected, _ in
            // A listener for another function does not take it.
            let other = app.incomingRequests(of: [.getAppServiceData])
            let interaction = SDLPerformAppServiceInteractionRequest(serviceUri: "weather://refresh", serviceID: "wx-service", originApp: "nav-1")
            let response: SDLPerformAppServiceInteractionResponse = try await connected.send(interaction)
            #expect(!response.success)
            #expect(response.resultCode == .unsupportedRequest)
            _ = other
        }
    }

    @Test func aListenerThatWasDroppedTakesNothing() async throws {
        try await self.withRegisteredApp { app, connected, _ in
            do {
                let dropped = app.incomingRequests()
                _ = dropped
            }
            // The stream's end reaches the connection's loop before the request does (both are
            // queued on it in this order).
            _ = await app.statistics
            let response: SDLPerformAppServiceInteractionResponse = try await connected.send(
                SDLPerformAppServiceInteractionRequest(serviceUri: "weather://refresh", serviceID: "wx-service", originApp: "nav-1"))
            #expect(response.resultCode == .unsupportedRequest)
        }
    }

    @Test func aWrongResponseIsRefusedAndTheRequestMayStillBeAnswered() async throws {
        try await self.withRegisteredApp { app, connected, _ in
            let requests = app.incomingRequests()
            let answering = Task {
                var iterator = requests.makeAsyncIterator()
                let request = try #require(await iterator.next())
                let wrong = await #expect(throws: SDLConnectionError.self) {
                    try await app.respond(SDLListFilesResponse(success: true, resultCode: .success), to: request)
                }
                #expect(wrong?.code == .invalidMessage)
                // A response that breaks the spec (info beyond 1,000 characters) is refused by
                // strict sending and leaves the request unanswered.
                let invalid = await #expect(throws: SDLConnectionError.self) {
                    try await app.respond(
                        SDLPerformAppServiceInteractionResponse(success: false, resultCode: .rejected, info: String(repeating: "x", count: 1001)),
                        to: request)
                }
                #expect(invalid?.code == .invalidMessage)
                try await app.respond(
                    SDLPerformAppServiceInteractionResponse(success: true, resultCode: .success, serviceSpecificResult: "refreshed"), to: request)
            }
            let response: SDLPerformAppServiceInteractionResponse = try await connected.send(
                SDLPerformAppServiceInteractionRequest(serviceUri: "weather://refresh", serviceID: "wx-service", originApp: "nav-1"))
            try await answering.value
            #expect(response.success)
            #expect(response.serviceSpecificResult == "refreshed")
        }
    }

    @Test func aFullListenerRefusesTheNewestWithTooManyPendingRequests() async throws {
        try await self.withRegisteredApp { app, connected, _ in
            let requests = app.incomingRequests(bufferSize: 1)
            let ask = SDLGetAppServiceDataRequest(serviceType: "WEATHER")
            // Two at once: whichever reaches the app second finds the stream full and is refused
            // at once; the other waits in the stream until it is read and answered.
            try await withThrowingTaskGroup(of: SDLGetAppServiceDataResponse.self) { group in
                for _ in 0..<2 {
                    group.addTask { try await connected.send(ask) }
                }
                let refused = try #require(try await group.next())
                #expect(refused.resultCode == .tooManyPendingRequests)
                var iterator = requests.makeAsyncIterator()
                let request = try #require(await iterator.next())
                try await app.respond(SDLGetAppServiceDataResponse(success: true, resultCode: .success), to: request)
                #expect(try await group.next()?.resultCode == .success)
            }
        }
    }

    @Test func aStreamOpenedBeforeARequestIsSentGetsIt() async throws {
        // The listener is in place when `incomingRequests` returns: a request the head unit sends
        // right after is delivered, never answered UNSUPPORTED_REQUEST because the listener was
        // still on its way to the event loop.
        try await self.withRegisteredApp { app, connected, _ in
            // Twenty rounds: a few round trips each, inside the test's 30 s on a loaded machine.
            for round in 0..<20 {
                let requests = app.incomingRequests()
                let asked = Task { () async throws(SDLConnectionError) -> SDLGetAppServiceDataResponse in
                    try await connected.send(SDLGetAppServiceDataRequest(serviceType: "round \(round)"))
                }
                var iterator = requests.makeAsyncIterator()
                let request = try #require(await iterator.next())
                #expect((request.message.message as? SDLGetAppServiceDataRequest)?.serviceType == "round \(round)")
                try await app.respond(SDLGetAppServiceDataResponse(success: true, resultCode: .success), to: request)
                #expect(try await asked.value.resultCode == .success)
            }
        }
    }

    /// One transport at a time: 1,024 requests held through each is heavy enough for a loaded
    /// machine.
    @Test(.serialized, arguments: TransportKind.allCases)
    func theAppHoldsAt1024UnansweredRequestsOfTheHeadUnitAndAnsweringOneMakesRoomForOne(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within(58) {
            var configuration = testHeadUnitConfiguration()
            // The app answers the 1,024 at the end faster than Core's flood limit allows.
            configuration.session.headUnit.floodLimit = nil
            let server = try await bed.server(configuration, handler: RecordingHandler())
            let app = try await bed.connect(server)
            try await app.register(registration())
            let connected = try #require(await server.connectedApps.first)
            let requests = app.incomingRequests(bufferSize: 2048)
            var iterator = requests.makeAsyncIterator()
            // The held requests wait for the whole test, longer than the default 10 s on a loaded
            // machine: their bound is the test's.
            @Sendable func ask(_ serviceType: String) async throws(SDLConnectionError) -> SDLGetAppServiceDataResponse {
                try await connected.send(SDLGetAppServiceDataRequest(serviceType: serviceType), timeout: .seconds(55))
            }

            let cap = 1024
            let held = (0..<cap).map { index in Task { () async throws(SDLConnectionError) in try await ask("held \(index)") } }
            var taken: [SDLIncomingRequest] = []
            while taken.count < cap, let request = await iterator.next() {
                taken.append(request)
            }
            let takenTypes = Set(taken.compactMap { ($0.message.message as? SDLGetAppServiceDataRequest)?.serviceType })
            #expect(takenTypes == Set((0..<cap).map { "held \($0)" }))
            // The 1,025th, 1,026th and 1,027th are refused by the app at once.
            for _ in 0..<3 {
                #expect(try await ask("over").resultCode == .tooManyPendingRequests)
            }
            // One answer makes room for exactly one more: the next reaches the stream (the refused
            // ones never did), the one after it is refused again.
            try await app.respond(SDLGetAppServiceDataResponse(success: true, resultCode: .success), to: taken[0])
            let admitted = Task { () async throws(SDLConnectionError) in try await ask("admitted") }
            let next = try #require(await iterator.next())
            #expect((next.message.message as? SDLGetAppServiceDataRequest)?.serviceType == "admitted")
            #expect(try await ask("over again").resultCode == .tooManyPendingRequests)

            for request in taken.dropFirst() + [next] {
                try await app.respond(SDLGetAppServiceDataResponse(success: true, resultCode: .success), to: request)
            }
            for task in held + [admitted] {
                #expect(try await task.value.resultCode == .success)
            }
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test func theHeadUnitsRequestTimesOutAndFailsWhenTheAppLeaves() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let connected = try #require(await server.connectedApps.first)
            let requests = app.incomingRequests()
            let ask = SDLGetAppServiceDataRequest(serviceType: "WEATHER")
            let timedOut = await #expect(throws: SDLConnectionError.self) {
                let _: SDLGetAppServiceDataResponse = try await connected.send(ask, timeout: .milliseconds(200))
            }
            #expect(timedOut?.code == .timeout)
            // The late answer matches no request: reported, not delivered anywhere.
            var iterator = requests.makeAsyncIterator()
            let late = try #require(await iterator.next())
            try await app.respond(SDLGetAppServiceDataResponse(success: true, resultCode: .success), to: late)
            let unmatched = await handler.next { event -> String? in
                if case .unreadableMessage(_, let error) = event { return error.detail }
                return nil
            }
            #expect(unmatched?.contains("no request waits for") == true)

            let waiting = Task { () async throws(SDLConnectionError) -> SDLGetAppServiceDataResponse in try await connected.send(ask) }
            _ = await iterator.next()
            await app.close()
            let left = await #expect(throws: SDLConnectionError.self) { try await waiting.value }
            #expect(left?.code == .disconnected)
            // The listener's stream ended with the session.
            #expect(await iterator.next() == nil)
            await server.shutdown()
        }
    }

    @Test func systemCapabilitiesAndTheirUpdates() async throws {
        let handler = CapabilityHandler()
        try await within {
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            let seats = try await app.systemCapability(.seatLocation)
            #expect(seats.seatLocationCapability?.columns == 3)
            let refused = await #expect(throws: SDLConnectionError.self) { try await app.systemCapability(.navigation) }
            #expect(refused?.code == .requestFailed)
            #expect(refused?.detail == "GetSystemCapability NAVIGATION: DISALLOWED: no navigation here")
            let empty = await #expect(throws: SDLConnectionError.self) { try await app.systemCapability(.phoneCall) }
            #expect(empty?.code == .invalidResponse)

            let updates = app.systemCapabilityUpdates(of: .seatLocation)
            let permissions = app.permissionUpdates()
            let connected = try #require(await server.connectedApps.first)
            _ = await app.statistics  // the subscriptions are in place
            try await connected.sendNotification(SDLOnSystemCapabilityUpdated(systemCapability: SDLSystemCapability(
                systemCapabilityType: .remoteControl, remoteControlCapability: SDLRemoteControlCapabilities())))
            try await connected.sendNotification(SDLOnSystemCapabilityUpdated(systemCapability: SDLSystemCapability(
                systemCapabilityType: .seatLocation, seatLocationCapability: SDLSeatLocationCapability(rows: 2, columns: 2))))
            try await connected.sendNotification(SDLOnPermissionsChange(permissionItem: [
                SDLPermissionItem(
                    rpcName: "ButtonPress", hmiPermissions: SDLHMIPermissions(allowed: [.full], userDisallowed: []),
                    parameterPermissions: SDLParameterPermissions(allowed: [], userDisallowed: []))
            ]))
            var updateIterator = updates.makeAsyncIterator()
            #expect(await updateIterator.next()?.seatLocationCapability?.rows == 2)
            var permissionIterator = permissions.makeAsyncIterator()
            #expect(await permissionIterator.next()?.permissionItem.map(\.rpcName) == ["ButtonPress"])
            #expect(await app.permissions?.permissionItem.first?.hmiPermissions.allowed == [.full])
            await app.disconnect()
            #expect(await updateIterator.next() == nil)
            await server.shutdown()
        }
    }
}

/// Answers GetSystemCapability: SEAT_LOCATION with a capability, NAVIGATION refused, PHONE_CALL a
/// success without one (a head unit's mistake).
final class CapabilityHandler: SDLHeadUnitHandler {
    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
        SDLRequestAnswer(await self.response(to: request, from: app))
    }

    func response(to request: AnyRPCMessage, from app: SDLConnectedApp) async -> (any RPCMessage)? {
        guard let ask = request.message as? SDLGetSystemCapabilityRequest else { return nil }
        switch ask.systemCapabilityType {
        case .seatLocation:
            return SDLGetSystemCapabilityResponse(
                systemCapability: SDLSystemCapability(
                    systemCapabilityType: .seatLocation, seatLocationCapability: SDLSeatLocationCapability(rows: 2, columns: 3)),
                resultCode: .success, success: true)
        case .navigation:
            return SDLGetSystemCapabilityResponse(resultCode: .disallowed, info: "no navigation here", success: false)
        default:
            return SDLGetSystemCapabilityResponse(resultCode: .success, success: true)
        }
    }
}
