import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

/// Whether an app may start audio or video, as SDL Core decides, and what its streaming changes.
@Suite("Media start decisions")
struct MediaTests {
    let navigation = AppHandle(1)
    let music = AppHandle(2)
    let projection = AppHandle(3)

    @Test("an app that is not registered is refused without a reason")
    func unregistered() {
        var harness = Harness()
        _ = harness.headUnit.appConnected(self.navigation)
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .video) == .refuse(reason: nil))
        #expect(harness.headUnit.mediaStartDecision(for: AppHandle(9), service: .audio) == .refuse(reason: nil))
    }

    @Test("only NAVIGATION and PROJECTION apps stream, audio included: others are refused with Core's HMI-type reason", arguments: [RPCVersion.v5_0, .v6_0, .v8_0])
    func byType(version: RPCVersion) {
        var harness = Harness()
        harness.register(self.music, name: "Music", version: version, types: [.media], isMedia: true)
        #expect(harness.headUnit.hmiLevel(of: self.music) == .full)
        #expect(harness.headUnit.mediaStartDecision(for: self.music, service: .audio)
            == .refuse(reason: "Service type: 10 disallowed with current HMI type"))
        #expect(harness.headUnit.mediaStartDecision(for: self.music, service: .video)
            == .refuse(reason: "Service type: 11 disallowed with current HMI type"))
        harness.register(self.navigation, name: "Maps", version: version, types: [.navigation])
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .audio) == .accept)
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .video) == .accept)
    }

    @Test("a navigation app streams in FULL and LIMITED with its streaming states; not in BACKGROUND or NONE")
    func byLevel() {
        var harness = Harness { $0.activationLevel = nil }
        harness.register(self.navigation, name: "Maps", types: [.navigation])
        let level = "Service type: 11 disallowed with current HMI level"
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .video) == .refuse(reason: level))
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .audio)
            == .refuse(reason: "Service type: 10 disallowed with current HMI level"))
        _ = harness.headUnit.setHMILevel(.limited, of: self.navigation)
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .video) == .accept)
        _ = harness.headUnit.setHMILevel(.background, of: self.navigation)
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .video) == .refuse(reason: level))

        // A projection app entering FULL leaves the navigation app LIMITED, audible but not
        // streamable (Core's conflict resolver): audio yes, video no.
        _ = harness.headUnit.setHMILevel(.full, of: self.navigation)
        harness.register(self.projection, name: "Mirror", types: [.projection])
        let displaced = harness.headUnit.setHMILevel(.full, of: self.projection)
        #expect(
            displaced.messages(SDLOnHMIStatus.self, to: self.navigation) == [
                SDLOnHMIStatus(
                    hmiLevel: .limited, audioStreamingState: .audible, systemContext: .main, videoStreamingState: .notStreamable,
                    windowID: 0)
            ])
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .audio) == .accept)
        #expect(harness.headUnit.mediaStartDecision(for: self.navigation, service: .video) == .refuse(reason: level))
        // The projection app: video yes; audio no (it is not an audio app: NOT_AUDIBLE).
        #expect(harness.headUnit.mediaStartDecision(for: self.projection, service: .video) == .accept)
        #expect(harness.headUnit.mediaStartDecision(for: self.projection, service: .audio)
            == .refuse(reason: "Service type: 10 disallowed with current HMI level"))
    }

    @Test("a navigation app's streaming silences the other apps (OnHMIStatus NOT_AUDIBLE) until it ends")
    func streamingSilencesOthers() throws {
        var harness = Harness()
        harness.register(self.music, name: "Music", types: [.media], isMedia: true)
        harness.register(self.navigation, name: "Maps", types: [.navigation])
        #expect(harness.headUnit.hmiLevel(of: self.music) == .limited)
        let started = harness.headUnit.mediaServiceStarted(.video, by: self.navigation, now: harness.now)
        checkSent(started)
        #expect(started.sends == ["app2 <- OnHMIStatus notification #4294967295"])
        #expect(try started.only(SDLOnHMIStatus.self, to: self.music).audioStreamingState == .notAudible)
        #expect(started.transcript?.outcome == "streaming: [video]; OnHMIStatus to app2")
        #expect(harness.headUnit.streamingServices(of: self.navigation) == [.video])
        let audio = harness.headUnit.mediaServiceStarted(.audio, by: self.navigation, now: harness.now)
        #expect(audio.sends == [])
        _ = harness.headUnit.mediaServiceEnded(.video, by: self.navigation, now: harness.now)
        let ended = harness.headUnit.mediaServiceEnded(.audio, by: self.navigation, now: harness.now)
        #expect(try ended.only(SDLOnHMIStatus.self, to: self.music).audioStreamingState == .audible)
        #expect(harness.headUnit.streamingServices(of: self.navigation) == [])
    }

    @Test("a projection app's streaming changes no other app")
    func projectionStreaming() {
        var harness = Harness()
        harness.register(self.music, name: "Music", types: [.media], isMedia: true)
        harness.register(self.projection, name: "Mirror", types: [.projection])
        let started = harness.headUnit.mediaServiceStarted(.video, by: self.projection, now: harness.now)
        #expect(started.sends == [])
    }
}

/// A flooding app, as SDL Core unregisters it.
@Suite("Flood")
struct FloodTests {
    @Test("appFlooded: OnAppInterfaceUnregistered(TOO_MANY_REQUESTS), services REMOVED, modules freed; the app id may not register again")
    func flooded() throws {
        var harness = Harness()
        let flooder = AppHandle(1)
        let other = AppHandle(2)
        harness.register(flooder, name: "Ping", types: [.remoteControl])
        _ = harness.send(
            SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(serviceName: "Pings", serviceType: "MEDIA", allowAppConsumers: true)),
            from: flooder)
        _ = harness.send(SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: 99))), from: flooder)
        harness.register(other, name: "Other", types: [.remoteControl])
        _ = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true), from: other)

        let outputs = harness.headUnit.appFlooded(flooder, now: harness.now)
        checkSent(outputs)
        #expect(
            outputs.sends == [
                "app1 <- OnAppInterfaceUnregistered notification #4294967295",
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
            ])
        #expect(try outputs.only(SDLOnAppInterfaceUnregistered.self, to: flooder).reason == .tooManyRequests)
        #expect(outputs.transcript == TranscriptLine(
            app: flooder, input: "flooded",
            outcome: "OnAppInterfaceUnregistered(TOO_MANY_REQUESTS); unregistered; 1 service(s) unpublished, 1 module(s) freed"))
        #expect(harness.headUnit.hmiLevel(of: flooder) == nil)
        #expect(harness.headUnit.holder(of: .radio, id: "radio") == nil)
        #expect(harness.headUnit.serviceRecords.isEmpty)

        let again = harness.send(registration(name: "Ping"), from: flooder, correlationID: 30)
        expectFailure(again, to: flooder, function: "RegisterAppInterface", correlationID: 30, .tooManyPendingRequests)
        let unregistered = harness.headUnit.appFlooded(flooder, now: harness.now)
        #expect(unregistered.sends == [])
        #expect(unregistered.transcript?.outcome == "ignored: not registered")
    }
}
