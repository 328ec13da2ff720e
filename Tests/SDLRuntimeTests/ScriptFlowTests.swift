import NIOCore
import SDLHeadUnitRuntime
import SDLManagers
import SDLNIO
import SDLRPC
import SDLSession
import SDLTestHeadUnit
import Testing

@testable import SDLAppScripts

/// The scripts of `sdl app` against the head unit of `sdl headunit`, in process over loopback.
@Suite("Script flows")
struct ScriptFlowTests {
    @Test("appservice: a provider publishes, updates and answers; a consumer app subscribes through the head unit, sees the next update, interacts; every step and the head unit's view")
    func appServiceFlow() async throws {
        let (headUnit, huTranscript) = try await startHeadUnit()
        let (report, lines) = await runScript(.appservice, against: headUnit)
        let port = headUnit.primaryPort
        #expect(report.failures == [])
        #expect(
            steps(lines.filter { !$0.step.hasPrefix("answer ") }, of: "Weather-1") == [
                "connect tcp 127.0.0.1:\(port): ok", "RegisterAppInterface: ok", "wait for activation: ok",
                "GetSystemCapability APP_SERVICES, subscribe: ok", "PublishAppService WEATHER: ok", "OnAppServiceData #1: ok",
                "OnAppServiceData #2: ok", "UnpublishAppService weather-1: ok", "UnregisterAppInterface: ok", "disconnect: ok",
            ])
        #expect(
            steps(lines, of: "Consumer-1") == [
                "connect tcp 127.0.0.1:\(port): ok", "RegisterAppInterface: ok", "wait for activation: ok", "wait for service #1: ok",
                "GetAppServiceData WEATHER, subscribe: ok", "OnAppServiceData #2 of weather-1: ok",
                "PerformAppServiceInteraction weather://refresh: ok", "GetAppServiceData WEATHER, unsubscribe: ok",
                "UnregisterAppInterface: ok", "disconnect: ok",
            ])
        // The provider's manager answered the head unit's forwards of the consumer's requests, the
        // unsubscription's included.
        #expect(Set(lines.filter { $0.step.hasPrefix("answer ") }.map { "\($0.step): \($0.outcome)" }) == [
            "answer GetAppServiceData #1: answered SUCCESS", "answer PerformAppServiceInteraction #2: answered SUCCESS",
            "answer GetAppServiceData #3: answered SUCCESS",
        ])
        let outcomes = Dictionary(lines.map { ("\($0.app) \($0.step)", $0.outcome) }, uniquingKeysWith: { first, _ in first })
        #expect(outcomes["Weather-1 PublishAppService WEATHER"] == "service weather-1 published and active")
        #expect(outcomes["Consumer-1 GetAppServiceData WEATHER, subscribe"] == "data of weather-1")
        #expect(outcomes["Consumer-1 PerformAppServiceInteraction weather://refresh"] == "result \"done: weather://refresh\"")
        #expect(outcomes["Consumer-1 GetAppServiceData WEATHER, unsubscribe"] == "subscribed false")

        await headUnit.shutdown()
        // Which app got which handle depends on which connected first, and the correlation ids on
        // how the two apps' requests interleaved: both are left out.
        let seen = described(huTranscript.lines).map { $0.replacing(/app[0-9]+/, with: "app").replacing(/#[0-9]+/, with: "#") }
        for line in [
            "app PublishAppService request #: published weather-1 (WEATHER), active",
            "app GetAppServiceData request #: forwarded to app as #",
            "app GetAppServiceData response #: routed to app as #",
            "app PerformAppServiceInteraction request #: forwarded to app as #",
            "app PerformAppServiceInteraction response #: routed to app as #",
            "app UnpublishAppService request #: unpublished weather-1",
        ] {
            #expect(seen.contains(line), "\(line)")
        }
        // Never the provider asking for its own data: that is IGNORED on SDL Core.
        #expect(!seen.contains { $0.contains("IGNORED") })
        #expect(await headUnit.inspect { $0.serviceRecords }.isEmpty)
    }

    @Test("appservice with three apps: each provides and consumes the next one's service; the one whose own service is active gets IGNORED for its data, as on SDL Core")
    func appServiceRing() async throws {
        let (headUnit, _) = try await startHeadUnit()
        let (report, lines) = await runScript(.appservice, against: headUnit, apps: 3)
        #expect(report.failures == [])
        for number in 1...3 {
            let target = number % 3 + 1
            let app = steps(lines, of: "Weather-\(number)")
            #expect(app.contains("PublishAppService WEATHER: ok"))
            #expect(app.contains("wait for service #\(target): ok"))
            #expect(app.contains("PerformAppServiceInteraction weather://refresh: ok"))
            #expect(app.last == "disconnect: ok")
        }
        let ignored = lines.filter { $0.outcome.hasPrefix("IGNORED, as SDL Core answers") }
        // Which service is active moves as the apps come to the foreground: at most all but one saw their own.
        #expect(ignored.count < 3)
        await headUnit.shutdown()
    }

    @Test("rc: capability, consent, climate and radio read, subscribed and set (with their notifications), button, unsubscribe, release")
    func remoteControlFlow() async throws {
        let (headUnit, huTranscript) = try await startHeadUnit()
        let (report, lines) = await runScript(.rc, against: headUnit)
        #expect(report.failures == [])
        #expect(
            steps(lines) == [
                "connect tcp 127.0.0.1:\(headUnit.primaryPort): ok", "RegisterAppInterface: ok", "wait for activation: ok",
                "GetSystemCapability REMOTE_CONTROL: ok", "GetInteriorVehicleDataConsent climate.front: ok",
                "GetInteriorVehicleDataConsent radio: ok", "GetInteriorVehicleData climate.front, subscribe: ok", "SetInteriorVehicleData climate.front fan speed 40: ok",
                "GetInteriorVehicleData radio, subscribe: ok", "SetInteriorVehicleData radio frequency 99.5: ok",
                "ButtonPress FAN_UP on climate.front: ok", "GetInteriorVehicleData climate.front, unsubscribe: ok",
                "GetInteriorVehicleData radio, unsubscribe: ok", "ReleaseInteriorVehicleDataModule climate.front: ok",
                "ReleaseInteriorVehicleDataModule radio: ok", "UnregisterAppInterface: ok", "disconnect: ok",
            ])
        let outcomes = Dictionary(lines.map { ($0.step, $0.outcome) }, uniquingKeysWith: { first, _ in first })
        #expect(outcomes["GetSystemCapability REMOTE_CONTROL"] == "climate climate.front, radio radio, 18 button(s), 5 seat(s)")
        #expect(outcomes["GetInteriorVehicleData climate.front, subscribe"] == "subscribed true, fan speed 30")
        #expect(outcomes["SetInteriorVehicleData climate.front fan speed 40"] == "success, OnInteriorVehicleData received")
        #expect(outcomes["GetInteriorVehicleData radio, subscribe"] == "subscribed true, frequency 101.1")
        #expect(outcomes["GetInteriorVehicleData radio, unsubscribe"] == "subscribed false")
        // The manager's startup subscribes to SEAT_LOCATION too, and consent is asked per module.
        #expect(report.roundTrips == 13)

        await headUnit.shutdown()
        let vehicle = await headUnit.inspect { $0.currentVehicle }
        #expect(vehicle.modules.first { $0.moduleID == "climate.front" }?.data.climateControlData?.fanSpeed == 50)
        #expect(vehicle.modules.first { $0.moduleID == "radio" }?.data.radioControlData?.frequencyInteger == 99)
        #expect(await headUnit.inspect { $0.holder(of: .climate, id: "climate.front") } == nil)
        let seen = described(huTranscript.lines)
        #expect(seen.contains("app1 GetSystemCapability request #3: SEAT_LOCATION, subscribed"))
        #expect(seen.contains("app1 SetInteriorVehicleData request #7: set climate.front; 1 subscriber(s) notified"))
        #expect(seen.contains("app1 GetInteriorVehicleData request #11: climate.front, unsubscribed"))
        #expect(seen.contains("app1 ReleaseInteriorVehicleDataModule request #13: released climate.front"))
    }

    @Test("video: the secondary transport is opened when the head unit's list asks for it; every byte is counted on both sides")
    func videoOnSecondary() async throws {
        let (headUnit, huTranscript) = try await startHeadUnit(secondary: true) {
            $0.server.videoServiceTransports = [.secondary]
        }
        let (report, lines) = await runScript(.video, against: headUnit, duration: .milliseconds(200))
        #expect(report.failures == [])
        #expect(lines.first { $0.step == "start video" }?.outcome == "on the secondary transport, MTU 131072")
        #expect(report.mediaBytes > 0 && report.mediaBytes % 32_768 == 0)
        let statistics = try await waitFor(headUnit) { $0.videoBytes == report.mediaBytes && $0.connectedApps == 0 }
        #expect(statistics.videoBytes == report.mediaBytes)
        #expect(statistics.mediaStreams == 0)
        await headUnit.shutdown()
        #expect(described(huTranscript.lines).contains("app1 VIDEO service started: on the secondary transport, MTU 131072 800x480 H264/RAW"))
        #expect(described(huTranscript.lines).contains("app1 VIDEO service ended: peer, \(report.mediaBytes) bytes received"))
    }

    @Test("two apps: one publishes a media service, the other consumes it (data forwarded both ways, updates, interaction)")
    func publisherAndConsumer() async throws {
        let (headUnit, _) = try await startHeadUnit()
        let transcript = Collected<AppTranscriptLine>()
        let provider = try await scriptedApp("Music", to: headUnit, transcript: transcript)
        let consumer = try await scriptedApp("Dash", to: headUnit)
        try await consumer.subscribeToAppServices()
        let answers = try await provider.recordAnswers()
        let published = try #require(await consumer.appServices?.serviceUpdates())
        let record = try await provider.publish(.media)
        #expect(record.serviceID == "media-1" && record.serviceActive)
        let update = await firstElement(of: published, within: .seconds(10)) { $0.updatedAppServiceRecord.serviceID == "media-1" }
        #expect(update?.updateReason == .published)

        // No data yet: the provider's manager answers DATA_NOT_AVAILABLE, and the step fails.
        let early = await #expect(throws: AppScriptFailure.self) { try await consumer.consumeData(.media) }
        #expect(early?.line.step == "GetAppServiceData MEDIA, subscribe")
        #expect(early?.line.outcome.contains("DATA_NOT_AVAILABLE") == true)
        try await provider.updateData(.media, of: record, number: 1)
        let (data, subscription) = try await consumer.consumeData(.media)
        #expect(data == PublishedServiceKind.media.data(serviceID: "media-1", number: 1))
        try await provider.updateData(.media, of: record, number: 7)
        let received = try await subscription.first(within: .seconds(10))
        #expect(received?.mediaServiceData?.mediaTitle == "Track 7")
        #expect(try await consumer.interact(with: record, uri: "media://play") == "done: media://play")
        try await consumer.unsubscribe(from: .media, ending: subscription)

        answers.cancel()
        await provider.stop()
        #expect(Set(transcript.lines.filter { $0.step.hasPrefix("answer ") }.map { "\($0.step): \($0.outcome)" }) == [
            "answer GetAppServiceData #1: answered DATA_NOT_AVAILABLE", "answer GetAppServiceData #2: answered SUCCESS",
            "answer PerformAppServiceInteraction #3: answered SUCCESS", "answer GetAppServiceData #4: answered SUCCESS",
        ])
        try await waitFor(headUnit) { $0.connectedApps == 1 }
        #expect(await headUnit.inspect { $0.serviceRecords }.isEmpty)
        await consumer.stop()
        await headUnit.shutdown()
    }

    @Test("remote control between two apps: a held module without multiple access is REJECTED for the other, as on SDL Core; a shared one is not; a released one passes")
    func allocationBetweenApps() async throws {
        let (headUnit, _) = try await startHeadUnit()
        let first = try await scriptedApp("Driver", to: headUnit, types: [.remoteControl]).connection
        let second = try await scriptedApp("Passenger", to: headUnit, types: [.remoteControl]).connection
        func climate(_ speed: Int32) -> SDLSetInteriorVehicleDataRequest {
            SDLSetInteriorVehicleDataRequest(
                moduleData: SDLModuleData(moduleType: .climate, moduleId: "climate.front", climateControlData: SDLClimateControlData(fanSpeed: speed)))
        }
        let taken: SDLSetInteriorVehicleDataResponse = try await first.send(climate(50))
        #expect(taken.success && taken.resultCode == .success)
        #expect(await headUnit.inspect { $0.holder(of: .climate, id: "climate.front") } == AppHandle(1))

        let refused: SDLSetInteriorVehicleDataResponse = try await second.send(climate(60))
        #expect(!refused.success && refused.resultCode == .rejected)
        let radio: SDLSetInteriorVehicleDataResponse = try await second.send(SDLSetInteriorVehicleDataRequest(
            moduleData: SDLModuleData(moduleType: .radio, moduleId: "radio", radioControlData: SDLRadioControlData(frequencyInteger: 95))))
        #expect(radio.success)

        let released: SDLReleaseInteriorVehicleDataModuleResponse = try await first.send(
            SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate.front"))
        #expect(released.success)
        let passed: SDLSetInteriorVehicleDataResponse = try await second.send(climate(60))
        #expect(passed.success && passed.moduleData?.climateControlData?.fanSpeed == 60)
        #expect(await headUnit.inspect { $0.holder(of: .climate, id: "climate.front") } == AppHandle(2))

        await second.disconnect()
        try await waitFor(headUnit) { $0.connectedApps == 1 }
        #expect(await headUnit.inspect { $0.holder(of: .climate, id: "climate.front") } == nil)
        await first.disconnect()
        await headUnit.shutdown()
    }
}
