import NIOCore
import SDLHeadUnitRuntime
import SDLManagers
import SDLNIO
import SDLRPC
import SDLSession
import SDLTestHeadUnit
import Testing

@testable import SDLAppScripts

@Suite("Head unit runtime")
struct HeadUnitRuntimeTests {
    @Test(
        "every --rpc-version: the whole script runs, the app speaks the head unit's version, what it lacks is skipped or UNSUPPORTED_REQUEST",
        arguments: RPCVersion.headUnitVersions)
    func rpcVersions(_ version: RPCVersion) async throws {
        let (headUnit, _) = try await startHeadUnit(secondary: true) { $0.headUnit.rpcVersion = version }
        let (report, lines) = await runScript(.all, against: headUnit, duration: .milliseconds(100))
        #expect(report.failures == [])
        // appservice runs a provider and a consumer app, then rc and video one app each.
        let registrations = lines.filter { $0.step == "RegisterAppInterface" }.map(\.outcome)
        #expect(registrations == Array(repeating: "SUCCESS, RPC \(version) on SDL Simulator", count: 4))
        #expect(lines.filter { $0.step == "UnregisterAppInterface" }.map(\.outcome) == Array(repeating: "unregistered", count: 4))
        let skipped = lines.filter { $0.outcome.hasPrefix("skipped") }.map(\.step)
        switch version {
        case .v4_5, .v5_0:
            #expect(skipped == ["app services", "app services", "GetInteriorVehicleDataConsent", "ReleaseInteriorVehicleDataModule"])
        case .v5_1:
            #expect(skipped == ["UnpublishAppService", "GetInteriorVehicleDataConsent", "ReleaseInteriorVehicleDataModule"])
        default:
            #expect(skipped == [])
        }
        #expect(lines.contains { $0.step == "stream video" && $0.ok })

        // A function of a later version than the head unit's, and one it never implements.
        let app = try await scriptedApp("Probe", to: headUnit).connection
        let publish: SDLPublishAppServiceResponse = try await app.send(SDLPublishAppServiceRequest(
            appServiceManifest: PublishedServiceKind.weather.manifest(name: "Probe")))
        #expect(publish.success == (version >= .v5_1))
        #expect(publish.resultCode == (version >= .v5_1 ? .success : .unsupportedRequest))
        let slider: SDLSliderResponse = try await app.send(SDLSliderRequest(numTicks: 3, position: 1, sliderHeader: "x"))
        #expect(!slider.success && slider.resultCode == .unsupportedRequest)
        await app.disconnect()
        await headUnit.shutdown()
    }

    @Test("50 scripted apps at once on one head unit: every step of every app succeeds, and everything is freed afterwards")
    func fiftyApps() async throws {
        let (headUnit, huTranscript) = try await startHeadUnit()
        let (report, lines) = await runScript(.ping, against: headUnit, apps: 50, duration: .milliseconds(500))
        #expect(report.failures == [])
        #expect(report.steps == 50 * 6)
        for number in 1...50 {
            #expect(
                steps(lines, of: "Ping-\(number)") == [
                    "connect tcp 127.0.0.1:\(headUnit.primaryPort): ok", "RegisterAppInterface: ok", "wait for activation: ok",
                    "ListFiles round trips: ok", "UnregisterAppInterface: ok", "disconnect: ok",
                ])
        }
        #expect(report.roundTrips >= 50)
        #expect(huTranscript.lines.count { $0.outcome.hasPrefix("registered \"Ping-") } == 50)
        let statistics = try await waitFor(headUnit) { $0.connectedApps == 0 }
        #expect(statistics.connectedApps == 0 && statistics.waitingRequests == 0 && statistics.registeredApps == 0)
        await headUnit.shutdown()
    }

    @Test("video with three navigation apps: one screen; a start refused for the HMI level is contention, an app made NOT_STREAMABLE stops writing, one streams to the end")
    func videoContention() async throws {
        let (headUnit, _) = try await startHeadUnit()
        let (report, lines) = await runScript(.video, against: headUnit, apps: 3, duration: .milliseconds(600))
        #expect(report.failures == [])
        let starts = lines.filter { $0.step == "start video" }
        #expect(starts.count == 3)
        let refused = starts.filter { $0.outcome.hasPrefix("contention: refused") }
        let streams = lines.filter { $0.step == "stream video" }
        #expect(refused.count + streams.count == 3)
        // Every app that got the screen and lost it stopped; one streamed to the end (more when a
        // loaded machine let an app finish its 600 ms before the next one took the screen).
        let stoppedEarly = streams.filter { $0.outcome.contains("stopped early: the head unit made the app") }
        #expect(streams.count - stoppedEarly.count >= 1)
        let failedEnds = lines.filter { $0.step == "end video" && !$0.ok }
        #expect(failedEnds.isEmpty)
        #expect(lines.filter { $0.step == "end video" }.count == streams.count)
        await headUnit.shutdown()
    }

    /// The steps an app goes through, app services and remote control together, for the cut test.
    /// A new fan speed each round: setting the value a module holds notifies nobody. The
    /// subscriptions' observers are kept in `kept` until the app vanishes, so that the head unit
    /// still holds the subscriptions then (and no unsubscription races the disconnection).
    static func cutSteps(round: Int) -> [(String, @Sendable (ScriptedApp, Collected<Observation<SDLModuleData>>) async throws -> Void)] {
        let speed = Int32(20 + round)
        return [
        ("subscribe", { app, _ in try await app.subscribeToAppServices() }),
        ("publish", { app, _ in _ = try await app.publish(.weather) }),
        ("capability", { app, _ in _ = try await app.remoteControlModules() }),
        ("consent", { app, _ in try await app.askConsent(for: SDLRCModule(.climate, "climate.front")) }),
        ("read climate", { app, kept in kept.append(try await app.readAndSubscribe(SDLRCModule(.climate, "climate.front")).1) }),
        ("set climate", { app, _ in
            try await app.set(
                SDLRCModule(.climate, "climate.front"),
                SDLModuleData(moduleType: .climate, moduleId: "climate.front", climateControlData: SDLClimateControlData(fanSpeed: speed)),
                what: "fan speed \(speed)", shows: { $0.climateControlData?.fanSpeed == speed })
        }),
        ("read radio", { app, kept in kept.append(try await app.readAndSubscribe(SDLRCModule(.radio, "radio")).1) }),
        ("video", { app, _ in
            let writer = try await app.connection.startVideo()
            try await writer.write(ByteBuffer(repeating: 1, count: 4096))
        }),
        ]
    }

    @Test("an app that vanishes after every step: the head unit keeps serving and frees its services, modules, subscriptions and streams")
    func disconnectAtEveryStep() async throws {
        let (headUnit, _) = try await startHeadUnit()
        for cut in 0...Self.cutSteps(round: 0).count {
            let app = try await scriptedApp("Victim", to: headUnit, types: [.remoteControl, .navigation])
            let kept = Collected<Observation<SDLModuleData>>()
            for (_, step) in Self.cutSteps(round: cut).prefix(cut) {
                try await step(app, kept)
            }
            await app.connection.close()
            #expect(kept.lines.count == (cut >= 7 ? 2 : cut >= 5 ? 1 : 0))
            let statistics = try await waitFor(headUnit) { $0.connectedApps == 0 && $0.mediaStreams == 0 }
            #expect(statistics.connectedApps == 0, "cut after \(cut) steps")
            #expect(statistics.waitingRequests == 0 && statistics.mediaStreams == 0, "cut after \(cut) steps")
            #expect(await headUnit.inspect { $0.serviceRecords }.isEmpty, "cut after \(cut) steps")
            #expect(await headUnit.inspect { $0.holder(of: .climate, id: "climate.front") } == nil, "cut after \(cut) steps")
        }
        // Nothing of the victims is left: a new app sees no service and a free module, and its
        // subscription is the only one notified.
        let (report, _) = await runScript(.all, against: headUnit, duration: .milliseconds(100))
        #expect(report.failures == [])
        await headUnit.shutdown()
    }

    @Test("requests still on their way when their app vanishes: the head unit keeps no link, waiter or task of the app")
    func requestsOfAnAppThatVanished() async throws {
        let (headUnit, _) = try await startHeadUnit()
        for round in 0..<20 {
            let app = try await scriptedApp("Gone\(round)", to: headUnit, types: [.remoteControl])
            // Requests fired without waiting, then the connection cut under them: some reach the
            // handler after the head unit heard of the disconnection.
            let connection = app.connection
            let requests = (0..<16).map { _ in
                Task { _ = try? await connection.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: false)) }
            }
            await Task.yield()
            await connection.close()
            for request in requests { await request.value }
            let statistics = try await waitFor(headUnit) { $0.connectedApps == 0 && $0.waitingRequests == 0 }
            #expect(statistics.connectedApps == 0, "round \(round)")
            #expect(statistics.waitingRequests == 0, "round \(round)")
        }
        // And it stays so once the late calls have run.
        try await Task.sleep(for: .milliseconds(200))
        #expect(await headUnit.statistics.connectedApps == 0)
        await headUnit.shutdown()
    }

    @Test("a provider that vanishes while a request waits for it: the consumer is answered at once, not left to time out")
    func providerVanishes() async throws {
        let (headUnit, _) = try await startHeadUnit()
        let provider = try await scriptedApp("Music", to: headUnit)
        let consumer = try await scriptedApp("Dash", to: headUnit).connection
        // Published by hand: the manager would answer the request this test keeps waiting.
        let published: SDLPublishAppServiceResponse = try await provider.connection.send(
            SDLPublishAppServiceRequest(appServiceManifest: PublishedServiceKind.media.manifest(name: "Music")))
        #expect(published.success)
        let asked = provider.connection.incomingRequests(of: [.getAppServiceData])
        let started = NIODeadline.now()
        async let answer: SDLGetAppServiceDataResponse = consumer.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"))
        let request = await firstElement(of: asked, within: .seconds(10)) { _ in true }
        #expect(request?.functionName == "GetAppServiceData")
        await provider.connection.close()
        let response = try await answer
        #expect(!response.success)
        #expect(NIODeadline.now() - started < .seconds(5))
        try await waitFor(headUnit) { $0.connectedApps == 1 }
        #expect(await headUnit.statistics.waitingRequests == 0)
        await consumer.disconnect()
        await headUnit.shutdown()
    }

    @Test("registration: OnHMIStatus NONE, then the configured activation level (LIMITED); permissions arrive; no response is unmatched")
    func registrationOrder() async throws {
        let (headUnit, _) = try await startHeadUnit { $0.headUnit.activationLevel = .limited }
        let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: headUnit.primaryPort)
        let statuses = app.hmiStatusUpdates()
        try await app.register(SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Order", isMediaApplication: true,
            languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs, appID: "order"))
        var levels: [SDLHMILevel] = []
        for await status in statuses {
            levels.append(status.hmiLevel)
            if status.hmiLevel != .none_ { break }
        }
        #expect(levels == [.none_, .limited])
        #expect(await app.permissions != nil)
        #expect(await app.statistics.unmatchedResponses == 0)
        await app.disconnect()
        await headUnit.shutdown()
    }
}
