import NIOCore
import SDLRPC
import SDLTestHeadUnit
import SDLTestSupport
import Testing

@Suite("Registration and HMI levels")
struct RegistrationTests {
    let weather = AppHandle(1)
    let radio = AppHandle(2)
    let notification = UInt32(0xFFFF_FFFF)

    @Test("RegisterAppInterface: response, OnHMIStatus NONE, OnSystemCapabilityUpdated(DISPLAYS), OnPermissionsChange from the policy, then activation to FULL, in Core's order")
    func registrationFlow() throws {
        var harness = Harness()
        let connected = harness.headUnit.appConnected(self.weather)
        #expect(connected == [.log(TranscriptLine(app: self.weather, input: "connected", outcome: "waiting for RegisterAppInterface"))])
        let outputs = harness.send(registration(name: "Weather"), from: self.weather)
        #expect(
            outputs.summary == [
                "log",
                "app1 <- RegisterAppInterface response #1",
                "registered app1",
                "app1 <- OnHMIStatus notification #4294967295",
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app1 <- OnPermissionsChange notification #4294967295",
                "app1 <- OnHMIStatus notification #4294967295",
            ])
        #expect(
            outputs.transcript
                == TranscriptLine(
                    app: self.weather, input: "RegisterAppInterface request #1",
                    outcome: "registered \"Weather\" (app id weather), RPC 8.0.0, HMI FULL"))

        let response = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.weather)
        #expect(response.success && response.resultCode == .success)
        #expect(response.syncMsgVersion == SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0))
        #expect(response.language == .enUs && response.hmiDisplayLanguage == .enUs)
        #expect(response.vehicleType == SDLVehicleType(make: "SDL", model: "Simulator", modelYear: "2024", trim: "SE"))
        #expect(
            response.hmiCapabilities
                == SDLHMICapabilities(
                    navigation: false, phoneCall: false, videoStreaming: false, remoteControl: true, appServices: true,
                    displays: true, seatLocation: true, driverDistraction: false))
        #expect(response.iconResumed == false)

        let statuses = outputs.messages(SDLOnHMIStatus.self, to: self.weather)
        #expect(
            statuses == [
                SDLOnHMIStatus(
                    hmiLevel: .none_, audioStreamingState: .notAudible, systemContext: .main,
                    videoStreamingState: .notStreamable, windowID: 0),
                SDLOnHMIStatus(
                    hmiLevel: .full, audioStreamingState: .notAudible, systemContext: .main,
                    videoStreamingState: .notStreamable, windowID: 0),
            ])
        // The standard policy: Core's Base-4, RemoteControl, AppServiceProvider and
        // AppServiceConsumer groups, 65 RPCs in name order, each with its levels.
        let permissions = try outputs.only(SDLOnPermissionsChange.self, to: self.weather)
        #expect(permissions.permissionItem.count == 65)
        #expect(permissions.permissionItem.map(\.rpcName).prefix(5) == ["AddCommand", "AddSubMenu", "Alert", "ButtonPress", "CancelInteraction"])
        func levels(_ name: String) -> [SDLHMILevel]? {
            permissions.permissionItem.first { $0.rpcName == name }?.hmiPermissions.allowed
        }
        #expect(levels("Show") == [.background, .full, .limited])
        #expect(levels("ScrollableMessage") == [.full])
        #expect(levels("ListFiles") == [.background, .full, .limited, .none_])
        #expect(levels("PublishAppService") == [.background, .full, .limited])
        #expect(levels("SetInteriorVehicleData") == [.background, .full, .limited])
        #expect(levels("SystemRequest") == [.background, .full, .limited, .none_])
        #expect(harness.headUnit.hmiLevel(of: self.weather) == .full)
        #expect(harness.headUnit.negotiatedVersion(of: self.weather) == .v8_0)
    }

    @Test("the NONE status and the response's fields match what SDL Core 8.2 sent (vectors/core82)")
    func matchesCore() throws {
        var harness = Harness { $0.activationLevel = nil }
        let outputs = harness.register(self.weather, name: "Weather")
        let core = try SDLOnHMIStatus(jsonParameters: String(decoding: try SharedData.bytes("vectors/core82/OnHMIStatus.notification.json"), as: UTF8.self))
        #expect(try outputs.only(SDLOnHMIStatus.self, to: self.weather) == core)

        let coreResponse = try RPCValue(jsonObject: String(decoding: try SharedData.bytes("vectors/core82/RegisterAppInterface.response.json"), as: UTF8.self))
        let ours = try RPCValue(jsonObject: try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.weather).jsonParametersText())
        guard case .object(let coreObject) = coreResponse, case .object(let ourObject) = ours else {
            Issue.record("not objects")
            return
        }
        let ourKeys = Set(ourObject.map(\.key))
        #expect(Set(coreObject.map(\.key)).subtracting(ourKeys).isEmpty, "Core sends keys we do not: \(Set(coreObject.map(\.key)).subtracting(ourKeys))")
        #expect(ourKeys.subtracting(coreObject.map(\.key)) == ["systemSoftwareVersion"])
        guard case .object(let coreHMI)? = coreObject["hmiCapabilities"], case .object(let ourHMI)? = ourObject["hmiCapabilities"] else {
            Issue.record("no hmiCapabilities")
            return
        }
        #expect(Set(coreHMI.map(\.key)) == Set(ourHMI.map(\.key)))
    }

    @Test(
        "the negotiated version is the lower of the app's and the head unit's; apps before 5.0 get 4.5, as on Core",
        arguments: [
            (RPCVersion(6, 0), RPCVersion.v8_0, RPCVersion(6, 0)), (RPCVersion(8, 0), RPCVersion.v5_1, RPCVersion(5, 1)),
            (RPCVersion(4, 2), RPCVersion.v8_0, RPCVersion(4, 5)), (RPCVersion(7, 1, 2), RPCVersion.v8_0, RPCVersion(7, 1, 2)),
            (RPCVersion(3, 0), RPCVersion.v4_5, RPCVersion(4, 5)),
        ])
    func negotiation(app: RPCVersion, headUnit: RPCVersion, negotiated: RPCVersion) throws {
        var harness = Harness { $0.rpcVersion = headUnit }
        let outputs = harness.register(self.weather, name: "Weather", version: app)
        let response = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.weather)
        #expect(response.syncMsgVersion == negotiated.syncMsgVersion)
        #expect(harness.headUnit.negotiatedVersion(of: self.weather) == negotiated)
    }

    @Test("the activation setting: LIMITED, BACKGROUND, or none (the app stays in NONE)")
    func activationSetting() {
        for level in [SDLHMILevel.limited, .background] {
            var harness = Harness { $0.activationLevel = level }
            let outputs = harness.register(self.radio, name: "Radio", isMedia: true)
            #expect(outputs.messages(SDLOnHMIStatus.self, to: self.radio).map(\.hmiLevel) == [.none_, level])
            let audible: SDLAudioStreamingState = level == .limited ? .audible : .notAudible
            #expect(outputs.messages(SDLOnHMIStatus.self, to: self.radio).last?.audioStreamingState == audible)
        }
        var harness = Harness { $0.activationLevel = nil }
        let outputs = harness.register(self.radio, name: "Radio", isMedia: true)
        #expect(outputs.messages(SDLOnHMIStatus.self, to: self.radio).map(\.hmiLevel) == [.none_])
        #expect(harness.headUnit.hmiLevel(of: self.radio) == SDLHMILevel.none_)

        let activated = harness.headUnit.setHMILevel(.full, of: self.radio)
        #expect(activated.sends == ["app2 <- OnHMIStatus notification #4294967295"])
        #expect(activated.messages(SDLOnHMIStatus.self, to: self.radio).first?.audioStreamingState == .audible)
    }

    @Test("one app in FULL: activating another moves a media app to LIMITED and another app to BACKGROUND")
    func oneAppInFull() {
        var harness = Harness()
        harness.register(self.radio, name: "Radio", isMedia: true)
        let second = harness.register(self.weather, name: "Weather")
        #expect(second.messages(SDLOnHMIStatus.self, to: self.radio).map(\.hmiLevel) == [.limited])
        #expect(harness.headUnit.hmiLevel(of: self.radio) == .limited)
        #expect(harness.headUnit.hmiLevel(of: self.weather) == .full)

        let back = harness.headUnit.setHMILevel(.full, of: self.radio)
        // Core's order: the activated app's status first, then the apps it displaces.
        #expect(back.sends == ["app2 <- OnHMIStatus notification #4294967295", "app1 <- OnHMIStatus notification #4294967295"])
        #expect(harness.headUnit.hmiLevel(of: self.weather) == .background)
        #expect(harness.headUnit.hmiLevel(of: self.radio) == .full)
    }

    @Test("requests before registration get APPLICATION_NOT_REGISTERED; a second registration is refused")
    func registrationErrors() {
        var harness = Harness()
        _ = harness.headUnit.appConnected(self.weather)
        let early = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices), from: self.weather, correlationID: 7)
        expectFailure(early, to: self.weather, function: "GetSystemCapability", correlationID: 7, .applicationNotRegistered)

        harness.register(self.weather, name: "Weather")
        let again = harness.send(registration(name: "Weather"), from: self.weather, correlationID: 9)
        expectFailure(again, to: self.weather, function: "RegisterAppInterface", correlationID: 9, .applicationRegisteredAlready)

        _ = harness.headUnit.appConnected(self.radio)
        let sameID = harness.send(registration(name: "Other", appID: "weather"), from: self.radio, correlationID: 1)
        expectFailure(sameID, to: self.radio, function: "RegisterAppInterface", correlationID: 1, .applicationRegisteredAlready)
        let sameName = harness.send(registration(name: "WEATHER", appID: "other"), from: self.radio, correlationID: 2)
        expectFailure(sameName, to: self.radio, function: "RegisterAppInterface", correlationID: 2, .duplicateName)
        #expect(harness.headUnit.hmiLevel(of: self.radio) == nil)
    }

    @Test("an app desiring another language registers with WRONG_LANGUAGE (success true), as on Core")
    func wrongLanguage() throws {
        var harness = Harness()
        _ = harness.headUnit.appConnected(self.weather)
        let outputs = harness.send(registration(name: "Wetter", language: .deDe), from: self.weather)
        let response = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.weather)
        #expect(response.success && response.resultCode == .wrongLanguage && response.language == .enUs)
    }

    @Test("UnregisterAppInterface: SUCCESS, then the app must register again")
    func unregister() throws {
        var harness = Harness()
        harness.register(self.weather, name: "Weather")
        let outputs = harness.send(SDLUnregisterAppInterfaceRequest(), from: self.weather)
        #expect(outputs.sends == ["app1 <- UnregisterAppInterface response #2"])
        #expect(try outputs.only(SDLUnregisterAppInterfaceResponse.self, to: self.weather).resultCode == .success)
        #expect(harness.headUnit.hmiLevel(of: self.weather) == nil)
        let after = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl), from: self.weather)
        expectFailure(after, to: self.weather, function: "GetSystemCapability", correlationID: 3, .applicationNotRegistered)
        let again = harness.send(registration(name: "Weather"), from: self.weather)
        #expect(try again.only(SDLRegisterAppInterfaceResponse.self, to: self.weather).success)
    }
}
