import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

/// What a remote-control app sees of a head unit of one RPC version.
struct VersionCase: Sendable, CustomStringConvertible {
    var version: RPCVersion
    /// `moduleInfo.moduleId` of each climate capability.
    var climateModules: [String?]
    /// Whether seat, audio, light and HMI settings exist.
    var fiveZeroModules: Bool
    var rcStatus: Bool
    var appServices: Bool
    /// UnpublishAppService, GetInteriorVehicleDataConsent, ReleaseInteriorVehicleDataModule.
    var sixZeroFunctions: Bool
    var hdChannels: ClosedRange<Int32>
    var driverDistractionKey: Bool

    var description: String { "\(self.version)" }

    static let all: [VersionCase] = [
        VersionCase(
            version: .v4_5, climateModules: [nil], fiveZeroModules: false, rcStatus: false, appServices: false,
            sixZeroFunctions: false, hdChannels: 1...3, driverDistractionKey: false),
        VersionCase(
            version: .v5_0, climateModules: [nil], fiveZeroModules: true, rcStatus: true, appServices: false,
            sixZeroFunctions: false, hdChannels: 1...7, driverDistractionKey: false),
        VersionCase(
            version: .v5_1, climateModules: [nil], fiveZeroModules: true, rcStatus: true, appServices: true,
            sixZeroFunctions: false, hdChannels: 1...7, driverDistractionKey: false),
        VersionCase(
            version: .v6_0, climateModules: ["climate.front", "climate.rear"], fiveZeroModules: true, rcStatus: true,
            appServices: true, sixZeroFunctions: true, hdChannels: 0...7, driverDistractionKey: false),
        VersionCase(
            version: .v8_0, climateModules: ["climate.front", "climate.rear"], fiveZeroModules: true, rcStatus: true,
            appServices: true, sixZeroFunctions: true, hdChannels: 0...7, driverDistractionKey: true),
    ]
}

@Suite("Head unit RPC versions")
struct VersionTests {
    let app = AppHandle(1)

    @Test("the tested versions are the ones where remote control and app services changed")
    func versions() {
        #expect(RPCVersion.headUnitVersions == VersionCase.all.map(\.version))
        #expect(RPCVersion.headUnitVersions.map(\.description) == ["4.5.0", "5.0.0", "5.1.0", "6.0.0", "8.0.0"])
    }

    @Test("registration and HMI status per version", arguments: VersionCase.all)
    func registration(_ expected: VersionCase) throws {
        var harness = Harness { $0.rpcVersion = expected.version }
        let outputs = harness.register(self.app, name: "Remote", types: [.remoteControl])
        let response = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.app)
        #expect(response.syncMsgVersion == expected.version.syncMsgVersion)
        #expect((response.hmiCapabilities?.driverDistraction != nil) == expected.driverDistractionKey)
        #expect((response.hmiCapabilities?.appServices != nil) == (expected.version >= .v6_0))
        #expect(outputs.messages(SDLOnRCStatus.self, to: self.app).count == (expected.rcStatus ? 1 : 0))
        let status = try #require(outputs.messages(SDLOnHMIStatus.self, to: self.app).first)
        #expect((status.videoStreamingState != nil) == (expected.version >= .v5_0))
        #expect((status.windowID != nil) == (expected.version >= .v6_0))
        // OnPermissionsChange lists the policy's RPCs whatever the version, as Core does; functions
        // newer than the head unit are still UNSUPPORTED_REQUEST when sent (remoteControl(_:)).
        let names = try outputs.only(SDLOnPermissionsChange.self, to: self.app).permissionItem.map(\.rpcName)
        #expect(names.count == 65)
        #expect(names.contains("PublishAppService") && names.contains("ReleaseInteriorVehicleDataModule") && names.contains("OnRCStatus"))
    }

    @Test("remote-control capabilities and data per version", arguments: VersionCase.all)
    func remoteControl(_ expected: VersionCase) throws {
        var harness = Harness { $0.rpcVersion = expected.version }
        harness.register(self.app, name: "Remote", types: [.remoteControl])
        let capability = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl), from: self.app)
        let rc = try #require(try capability.only(SDLGetSystemCapabilityResponse.self, to: self.app).systemCapability?.remoteControlCapability)
        #expect(rc.climateControlCapabilities?.map(\.moduleInfo?.moduleId) == expected.climateModules)
        #expect((rc.seatControlCapabilities != nil) == expected.fiveZeroModules)
        #expect((rc.lightControlCapabilities != nil) == expected.fiveZeroModules)
        #expect((rc.climateControlCapabilities?.first?.heatedMirrorsAvailable != nil) == (expected.version >= .v5_0))
        #expect((rc.climateControlCapabilities?.first?.climateEnableAvailable != nil) == (expected.version >= .v6_0))

        let climate = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: self.app)
        let data = try #require(try climate.only(SDLGetInteriorVehicleDataResponse.self, to: self.app).moduleData)
        #expect(data.moduleId == expected.climateModules.first!)
        #expect((data.climateControlData?.climateEnable != nil) == (expected.version >= .v6_0))
        #expect((data.climateControlData?.heatedMirrorsEnable != nil) == (expected.version >= .v5_0))

        let seat = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .seat), from: self.app, correlationID: 20)
        if expected.fiveZeroModules {
            #expect(try seat.only(SDLGetInteriorVehicleDataResponse.self, to: self.app).moduleData?.seatControlData?.id == .driver)
        } else {
            expectFailure(seat, to: self.app, function: "GetInteriorVehicleData", correlationID: 20, .unsupportedResource)
        }

        for channel: Int32 in [0, 1, 3, 5, 7] {
            let set = harness.send(
                SDLSetInteriorVehicleDataRequest(
                    moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(hdChannel: channel))),
                from: self.app, correlationID: 30 + UInt32(channel))
            if expected.hdChannels.contains(channel) {
                #expect(try set.only(SDLSetInteriorVehicleDataResponse.self, to: self.app).moduleData?.radioControlData?.hdChannel == channel)
            } else {
                expectFailure(set, to: self.app, function: "SetInteriorVehicleData", correlationID: 30 + UInt32(channel), .invalidData)
            }
        }

        let consent = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .radio, moduleIds: ["radio"]), from: self.app, correlationID: 40)
        let release = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .radio), from: self.app, correlationID: 41)
        if expected.sixZeroFunctions {
            #expect(try consent.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.app).allowed == [true])
            #expect(try release.only(SDLReleaseInteriorVehicleDataModuleResponse.self, to: self.app).success)
        } else {
            expectFailure(consent, to: self.app, function: "GetInteriorVehicleDataConsent", correlationID: 40, .unsupportedRequest)
            expectFailure(release, to: self.app, function: "ReleaseInteriorVehicleDataModule", correlationID: 41, .unsupportedRequest)
        }
    }

    @Test("app services per version", arguments: VersionCase.all)
    func appServices(_ expected: VersionCase) throws {
        var harness = Harness { $0.rpcVersion = expected.version }
        harness.register(self.app, name: "Music", isMedia: true)
        let subscribe = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true), from: self.app, correlationID: 2)
        let manifest = SDLAppServiceManifest(serviceType: "MEDIA", allowAppConsumers: true)
        let publish = harness.send(SDLPublishAppServiceRequest(appServiceManifest: manifest), from: self.app, correlationID: 3)
        let unpublish = harness.send(SDLUnpublishAppServiceRequest(serviceID: "media-1"), from: self.app, correlationID: 4)
        guard expected.appServices else {
            expectFailure(subscribe, to: self.app, function: "GetSystemCapability", correlationID: 2, .dataNotAvailable)
            expectFailure(publish, to: self.app, function: "PublishAppService", correlationID: 3, .unsupportedRequest)
            expectFailure(unpublish, to: self.app, function: "UnpublishAppService", correlationID: 4, .unsupportedRequest)
            return
        }
        #expect(subscribe.transcript?.outcome == "APP_SERVICES, subscribed")
        #expect(try publish.only(SDLPublishAppServiceResponse.self, to: self.app).appServiceRecord?.serviceID == "media-1")
        #expect(publish.messages(SDLOnSystemCapabilityUpdated.self, to: self.app).count == 2)
        if expected.sixZeroFunctions {
            #expect(try unpublish.only(SDLUnpublishAppServiceResponse.self, to: self.app).success)
        } else {
            expectFailure(unpublish, to: self.app, function: "UnpublishAppService", correlationID: 4, .unsupportedRequest)
        }
    }

    @Test("on an 8.0 head unit, a 5.0 app sees the 5.0 view and a 6.0 app the module ids, side by side")
    func mixedApps() throws {
        var harness = Harness()
        harness.register(AppHandle(1), name: "Old", version: .v5_0, types: [.remoteControl])
        harness.register(AppHandle(2), name: "New", version: .v6_0, types: [.remoteControl])
        #expect(harness.headUnit.negotiatedVersion(of: AppHandle(1)) == .v5_0)
        _ = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: AppHandle(2))
        let set = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, moduleId: "climate.rear", climateControlData: SDLClimateControlData(fanSpeed: 90))),
            from: AppHandle(1))
        // A 5.0 app cannot name a module: it sets the default one, and sees no id.
        #expect(try set.only(SDLSetInteriorVehicleDataResponse.self, to: AppHandle(1)).moduleData?.moduleId == nil)
        #expect(harness.headUnit.holder(of: .climate, id: "climate.front") == AppHandle(1))
        let old = try set.only(SDLOnRCStatus.self, to: AppHandle(1))
        let new = try set.only(SDLOnRCStatus.self, to: AppHandle(2))
        #expect(old.allocatedModules == [SDLModuleData(moduleType: .climate)])
        #expect(old.freeModules.count == 5 && old.freeModules.allSatisfy { $0.moduleId == nil })
        #expect(new.freeModules.count == 7 && new.freeModules.allSatisfy { $0.moduleId != nil })
        #expect(try set.only(SDLOnInteriorVehicleData.self, to: AppHandle(2)).moduleData.moduleId == "climate.front")
    }
}
