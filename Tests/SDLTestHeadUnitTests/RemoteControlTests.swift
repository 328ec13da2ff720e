import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

@Suite("Remote control")
struct RemoteControlTests {
    let driver = AppHandle(1)
    let passenger = AppHandle(2)
    let weather = AppHandle(3)

    /// Two remote-control apps (both users in the driver's seat, both in BACKGROUND) and a plain
    /// app in FULL.
    static func vehicle(_ configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in }) -> Harness {
        var harness = Harness(configure)
        harness.register(AppHandle(1), name: "Climate", types: [.remoteControl])
        harness.register(AppHandle(2), name: "Comfort", types: [.remoteControl])
        harness.register(AppHandle(3), name: "Weather")
        return harness
    }

    static func radio(_ frequency: Int32) -> SDLSetInteriorVehicleDataRequest {
        SDLSetInteriorVehicleDataRequest(
            moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: frequency)))
    }

    static func climate(_ data: SDLClimateControlData, id: String? = "climate.front") -> SDLSetInteriorVehicleDataRequest {
        SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, moduleId: id, climateControlData: data))
    }

    static func module(_ harness: Harness, _ id: String) -> SDLModuleData? {
        harness.headUnit.currentVehicle.modules.first { $0.moduleID == id }?.data
    }

    @Test("REMOTE_CONTROL and SEAT_LOCATION capabilities at 8.0: every module with its moduleInfo")
    func capabilities() throws {
        var harness = Self.vehicle()
        let outputs = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl), from: self.driver)
        let rc = try #require(try outputs.only(SDLGetSystemCapabilityResponse.self, to: self.driver).systemCapability?.remoteControlCapability)
        #expect(rc.climateControlCapabilities?.map(\.moduleInfo?.moduleId) == ["climate.front", "climate.rear"])
        #expect(rc.climateControlCapabilities?.first?.moduleInfo?.allowMultipleAccess == false)
        #expect(rc.climateControlCapabilities?.first?.climateEnableAvailable == true)
        #expect(rc.radioControlCapabilities?.map(\.moduleInfo?.moduleId) == ["radio"])
        #expect(rc.radioControlCapabilities?.first?.availableHdChannelsAvailable == true)
        #expect(rc.radioControlCapabilities?.first?.availableHDsAvailable == nil)
        #expect(rc.seatControlCapabilities?.map(\.moduleInfo?.moduleId) == ["seat.driver", "seat.passenger"])
        #expect(rc.audioControlCapabilities?.map(\.moduleInfo?.moduleId) == ["audio"])
        #expect(rc.lightControlCapabilities?.supportedLights.count == 6)
        #expect(rc.hmiSettingsControlCapabilities?.moduleInfo?.moduleId == "hmiSettings")
        #expect(rc.buttonCapabilities?.count == 18)
        #expect(rc.buttonCapabilities?.first == SDLButtonCapabilities(
            name: .acMax, moduleInfo: SDLModuleInfo(
                moduleId: "climate.front", location: SDLGrid(col: 0, row: 0, level: 0, colspan: 3, rowspan: 1, levelspan: 1),
                serviceArea: SDLGrid(col: 0, row: 0, level: 0, colspan: 3, rowspan: 1, levelspan: 1), allowMultipleAccess: false),
            shortPressAvailable: true, longPressAvailable: true, upDownAvailable: false))

        let seats = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .seatLocation), from: self.driver)
        let seatCapability = try #require(try seats.only(SDLGetSystemCapabilityResponse.self, to: self.driver).systemCapability?.seatLocationCapability)
        #expect(seatCapability.rows == 2 && seatCapability.columns == 3 && seatCapability.seats?.count == 5)
    }

    @Test("a remote-control app gets OnRCStatus after registering: every module free")
    func initialStatus() throws {
        var harness = Harness()
        let outputs = harness.register(self.driver, name: "Climate", types: [.remoteControl])
        // Core's order: OnHMIStatus NONE, DISPLAYS, OnRCStatus, OnPermissionsChange.
        #expect(outputs.sends[4] == "app1 <- OnRCStatus notification #4294967295")
        #expect(outputs.sends[5] == "app1 <- OnPermissionsChange notification #4294967295")
        let status = try outputs.only(SDLOnRCStatus.self, to: self.driver)
        #expect(status.allowed == true && status.allocatedModules.isEmpty)
        #expect(status.freeModules.map(\.moduleId) == [
            "climate.front", "climate.rear", "radio", "seat.driver", "seat.passenger", "audio", "light", "hmiSettings",
        ])
    }

    @Test("read, subscribe, set: the setter gets the response, every RC app OnRCStatus, subscribers only OnInteriorVehicleData")
    func readSubscribeSet() throws {
        var harness = Self.vehicle()
        let get = harness.send(
            SDLGetInteriorVehicleDataRequest(moduleType: .climate, moduleId: "climate.front", subscribe: true), from: self.driver,
            correlationID: 10)
        let initial = try #require(Self.module(harness, "climate.front"))
        #expect(
            try get.only(SDLGetInteriorVehicleDataResponse.self, to: self.driver)
                == SDLGetInteriorVehicleDataResponse(moduleData: initial, resultCode: .success, success: true, isSubscribed: true))
        #expect(initial.climateControlData?.fanSpeed == 30)

        let set = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 60, acEnable: false)), from: self.passenger, correlationID: 11)
        #expect(
            set.sends == [
                "app2 <- SetInteriorVehicleData response #11",
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
                "app1 <- OnInteriorVehicleData notification #4294967295",
            ])
        var expected = initial
        expected.climateControlData?.fanSpeed = 60
        expected.climateControlData?.acEnable = false
        #expect(try set.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).moduleData == expected)
        #expect(try set.only(SDLOnInteriorVehicleData.self, to: self.driver).moduleData == expected)
        #expect(Self.module(harness, "climate.front") == expected)

        let driverStatus = try set.only(SDLOnRCStatus.self, to: self.driver)
        let passengerStatus = try set.only(SDLOnRCStatus.self, to: self.passenger)
        #expect(driverStatus.allocatedModules.isEmpty && driverStatus.freeModules.count == 7)
        #expect(passengerStatus.allocatedModules == [SDLModuleData(moduleType: .climate, moduleId: "climate.front")])
        #expect(!passengerStatus.freeModules.contains { $0.moduleId == "climate.front" })
        #expect(harness.headUnit.holder(of: .climate, id: "climate.front") == self.passenger)

        _ = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, moduleId: "climate.front", subscribe: false), from: self.driver)
        let quiet = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 70)), from: self.passenger, correlationID: 12)
        #expect(quiet.sends == ["app2 <- SetInteriorVehicleData response #12"])

        let same = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 70)), from: self.passenger, correlationID: 13)
        #expect(same.transcript?.outcome == "set climate.front; 0 subscriber(s) notified")
    }

    @Test("read-only parameters: refused READ_ONLY when alone, cut off without info next to writable ones, as on Core")
    func readOnly() throws {
        var harness = Self.vehicle()
        let alone = harness.send(
            Self.climate(SDLClimateControlData(currentTemperature: SDLTemperature(unit: .celsius, value: 30))), from: self.driver,
            correlationID: 20)
        expectFailure(alone, to: self.driver, function: "SetInteriorVehicleData", correlationID: 20, .readOnly)
        #expect(harness.headUnit.holder(of: .climate, id: "climate.front") == nil)

        let radio = harness.send(
            SDLSetInteriorVehicleDataRequest(
                moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(signalStrength: 10, state: .notFound))),
            from: self.driver, correlationID: 21)
        expectFailure(radio, to: self.driver, function: "SetInteriorVehicleData", correlationID: 21, .readOnly)

        let mixed = harness.send(
            Self.climate(SDLClimateControlData(fanSpeed: 55, currentTemperature: SDLTemperature(unit: .celsius, value: 30))),
            from: self.driver, correlationID: 22)
        let response = try mixed.only(SDLSetInteriorVehicleDataResponse.self, to: self.driver)
        #expect(response.success && response.resultCode == .success)
        #expect(response.info == nil)
        #expect(response.moduleData?.climateControlData?.fanSpeed == 55)
        #expect(response.moduleData?.climateControlData?.currentTemperature == SDLTemperature(unit: .celsius, value: 21.5))
    }

    @Test("allocation contention, auto-deny: IN_USE for a held module that allows multiple access, REJECTED for one that does not; another module works")
    func contention() throws {
        var harness = Self.vehicle { $0.accessMode = .autoDeny }
        _ = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 40)), from: self.driver)
        _ = harness.send(Self.radio(99), from: self.driver)
        _ = harness.headUnit.setHMILevel(.full, of: self.passenger)
        let refused = harness.send(Self.radio(101), from: self.passenger, correlationID: 30)
        expectFailure(refused, to: self.passenger, function: "SetInteriorVehicleData", correlationID: 30, .inUse)
        let press = harness.send(
            SDLButtonPressRequest(moduleType: .radio, moduleId: "radio", buttonName: .volumeUp, buttonPressMode: .short),
            from: self.passenger, correlationID: 31)
        expectFailure(press, to: self.passenger, function: "ButtonPress", correlationID: 31, .inUse)
        let climate = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 80)), from: self.passenger, correlationID: 32)
        expectFailure(climate, to: self.passenger, function: "SetInteriorVehicleData", correlationID: 32, .rejected)
        #expect(Self.module(harness, "climate.front")?.climateControlData?.fanSpeed == 40)

        let other = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .audio, audioControlData: SDLAudioControlData(volume: 10))),
            from: self.passenger, correlationID: 33)
        #expect(try other.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).success)
        #expect(harness.headUnit.holder(of: .audio, id: "audio") == self.passenger)
        #expect(harness.headUnit.holder(of: .radio, id: "radio") == self.driver)
    }

    @Test("access modes for an app in FULL: auto-allow passes the module, ask-driver asks the simulated driver")
    func accessModes() throws {
        var allow = Self.vehicle()
        _ = allow.send(Self.radio(99), from: self.driver)
        _ = allow.headUnit.setHMILevel(.full, of: self.passenger)
        let taken = allow.send(Self.radio(101), from: self.passenger)
        #expect(try taken.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).success)
        #expect(try taken.only(SDLOnRCStatus.self, to: self.driver).allocatedModules.isEmpty)
        #expect(allow.headUnit.holder(of: .radio, id: "radio") == self.passenger)

        var ask = Self.vehicle {
            $0.accessMode = .askDriver
            $0.driverConsent = .refuse
        }
        _ = ask.send(Self.radio(99), from: self.driver)
        _ = ask.headUnit.setHMILevel(.full, of: self.passenger)
        let refused = ask.send(Self.radio(101), from: self.passenger, correlationID: 40)
        expectFailure(refused, to: self.passenger, function: "SetInteriorVehicleData", correlationID: 40, .rejected)
        #expect(ask.headUnit.holder(of: .radio, id: "radio") == self.driver)

        var grant = Self.vehicle { $0.accessMode = .askDriver }
        _ = grant.send(Self.radio(99), from: self.driver)
        _ = grant.headUnit.setHMILevel(.full, of: self.passenger)
        _ = grant.send(Self.radio(101), from: self.passenger)
        #expect(grant.headUnit.holder(of: .radio, id: "radio") == self.passenger)
    }

    @Test("consent in ask-driver mode: yes at once for a free module, the driver asked for a held one and the answer kept; no for a held module without multiple access")
    func consent() throws {
        var harness = Self.vehicle {
            $0.accessMode = .askDriver
            $0.driverConsent = .refuseModules(["radio"])
        }
        let radio = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .radio, moduleIds: ["radio"]), from: self.driver, correlationID: 50)
        #expect(
            try radio.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.driver)
                == SDLGetInteriorVehicleDataConsentResponse(success: true, resultCode: .success, allowed: [true]))
        _ = harness.send(Self.radio(99), from: self.driver)
        _ = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 40)), from: self.driver)

        _ = harness.headUnit.setHMILevel(.full, of: self.passenger)
        let asked = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .radio, moduleIds: ["radio"]), from: self.passenger)
        #expect(try asked.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.passenger).allowed == [false])
        #expect(asked.transcript?.outcome == "asked the driver \"may Comfort control RADIO radio?\": consent radio: false")
        let set = harness.send(Self.radio(101), from: self.passenger, correlationID: 51)
        expectFailure(set, to: self.passenger, function: "SetInteriorVehicleData", correlationID: 51, .rejected)
        #expect(
            try set.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).info
                == "The resource [RADIO:radio] is in use and the driver disallows this remote control RPC")

        let climate = harness.send(
            SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ["climate.front", "climate.rear"]),
            from: self.passenger, correlationID: 52)
        #expect(try climate.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.passenger).allowed == [false, true])
        let audio = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .audio, moduleIds: ["audio"]), from: self.passenger)
        #expect(try audio.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.passenger).allowed == [true])

        let unknown = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .seat, moduleIds: ["seat.rear"]), from: self.driver, correlationID: 53)
        expectFailure(unknown, to: self.driver, function: "GetInteriorVehicleDataConsent", correlationID: 53, .unsupportedResource)
    }

    @Test("ReleaseInteriorVehicleDataModule: SUCCESS and OnRCStatus for the holder, IGNORED when free, REJECTED for another's")
    func release() throws {
        var harness = Self.vehicle()
        _ = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 40)), from: self.driver)
        let foreign = harness.send(
            SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate.front"), from: self.passenger, correlationID: 60)
        expectFailure(foreign, to: self.passenger, function: "ReleaseInteriorVehicleDataModule", correlationID: 60, .rejected)

        let released = harness.send(
            SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate.front"), from: self.driver, correlationID: 61)
        // Core sends OnRCStatus before the response.
        #expect(
            released.sends == [
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
                "app1 <- ReleaseInteriorVehicleDataModule response #61",
            ])
        #expect(try released.only(SDLOnRCStatus.self, to: self.passenger).freeModules.count == 8)
        #expect(harness.headUnit.holder(of: .climate, id: "climate.front") == nil)

        let again = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate), from: self.driver, correlationID: 62)
        expectFailure(again, to: self.driver, function: "ReleaseInteriorVehicleDataModule", correlationID: 62, .ignored)
        let unknown = harness.send(
            SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate.roof"), from: self.driver, correlationID: 63)
        expectFailure(unknown, to: self.driver, function: "ReleaseInteriorVehicleDataModule", correlationID: 63, .unsupportedResource)

        let taken = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 80)), from: self.passenger)
        #expect(try taken.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).success)
    }

    @Test("ButtonPress: climate buttons change the climate data; a button of another type is INVALID_DATA, a non-RC button UNSUPPORTED_RESOURCE")
    func buttonPress() throws {
        var harness = Self.vehicle()
        _ = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: self.passenger)
        let press = harness.send(SDLButtonPressRequest(moduleType: .climate, buttonName: .fanUp, buttonPressMode: .long), from: self.driver, correlationID: 70)
        #expect(
            press.sends == [
                "app1 <- ButtonPress response #70",
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
                "app2 <- OnInteriorVehicleData notification #4294967295",
            ])
        #expect(try press.only(SDLOnInteriorVehicleData.self, to: self.passenger).moduleData.climateControlData?.fanSpeed == 40)
        _ = harness.send(SDLButtonPressRequest(moduleType: .climate, buttonName: .tempDown, buttonPressMode: .short), from: self.driver)
        #expect(Self.module(harness, "climate.front")?.climateControlData?.desiredTemperature == SDLTemperature(unit: .celsius, value: 21))

        let mismatch = harness.send(SDLButtonPressRequest(moduleType: .radio, buttonName: .ac, buttonPressMode: .short), from: self.driver, correlationID: 71)
        expectFailure(mismatch, to: self.driver, function: "ButtonPress", correlationID: 71, .invalidData)
        let media = harness.send(SDLButtonPressRequest(moduleType: .audio, buttonName: .ok, buttonPressMode: .short), from: self.driver, correlationID: 72)
        expectFailure(media, to: self.driver, function: "ButtonPress", correlationID: 72, .unsupportedResource)
    }

    @Test("an app that did not register as REMOTE_CONTROL is DISALLOWED and gets no OnRCStatus")
    func notRemoteControl() {
        var harness = Self.vehicle()
        let outputs = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: self.weather, correlationID: 80)
        expectFailure(outputs, to: self.weather, function: "GetInteriorVehicleData", correlationID: 80, .disallowed)
        let set = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 40)), from: self.driver)
        #expect(set.messages(SDLOnRCStatus.self, to: self.weather).isEmpty)
    }

    @Test("the user's seat (SetGlobalProperties userLocation) decides which climate zone the app may set; a module without location only the driver may set")
    func seatLocation() throws {
        var harness = Self.vehicle()
        let rearLeft = SDLGrid(col: 0, row: 1, level: 0, colspan: 1, rowspan: 1, levelspan: 1)
        let moved = harness.send(SDLSetGlobalPropertiesRequest(userLocation: SDLSeatLocation(grid: rearLeft)), from: self.passenger)
        #expect(try moved.only(SDLSetGlobalPropertiesResponse.self, to: self.passenger).success)
        let front = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 10)), from: self.passenger, correlationID: 90)
        expectFailure(front, to: self.passenger, function: "SetInteriorVehicleData", correlationID: 90, .rejected)
        let rear = harness.send(Self.climate(SDLClimateControlData(fanSpeed: 10), id: "climate.rear"), from: self.passenger)
        #expect(try rear.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).success)
        let radio = harness.send(Self.radio(99), from: self.passenger, correlationID: 91)
        expectFailure(radio, to: self.passenger, function: "SetInteriorVehicleData", correlationID: 91, .rejected)
        #expect(try radio.only(SDLSetInteriorVehicleDataResponse.self, to: self.passenger).info == nil)
        #expect(try harness.send(Self.radio(99), from: self.driver).only(SDLSetInteriorVehicleDataResponse.self, to: self.driver).success)
    }

    @Test("lights: set per light, other lights kept; an unknown light is UNSUPPORTED_RESOURCE, a ramp status READ_ONLY")
    func lights() throws {
        var harness = Self.vehicle()
        func set(_ states: [SDLLightState], _ correlationID: UInt32) -> [HeadUnitOutput] {
            harness.send(
                SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .light, lightControlData: SDLLightControlData(lightState: states))),
                from: self.driver, correlationID: correlationID)
        }
        let on = set([SDLLightState(id: .frontLeftHighBeam, status: .on)], 100)
        let lights = try #require(try on.only(SDLSetInteriorVehicleDataResponse.self, to: self.driver).moduleData?.lightControlData?.lightState)
        #expect(lights.count == 6)
        #expect(lights.first == SDLLightState(id: .frontLeftHighBeam, status: .on))
        #expect(lights[2] == SDLLightState(id: .frontLeftLowBeam, status: .on))
        expectFailure(set([SDLLightState(id: .rearLeftTailLight, status: .on)], 101), to: self.driver, function: "SetInteriorVehicleData", correlationID: 101, .unsupportedResource)
        expectFailure(set([SDLLightState(id: .frontLeftFogLight, status: .rampUp)], 102), to: self.driver, function: "SetInteriorVehicleData", correlationID: 102, .readOnly)
    }

    @Test("module data must match the module type; an unknown module id is UNSUPPORTED_RESOURCE")
    func mismatches() {
        var harness = Self.vehicle()
        let mismatch = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, radioControlData: SDLRadioControlData(frequencyInteger: 99))),
            from: self.driver, correlationID: 110)
        expectFailure(mismatch, to: self.driver, function: "SetInteriorVehicleData", correlationID: 110, .invalidData)
        let unknown = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .seat, moduleId: "seat.rear"), from: self.driver, correlationID: 111)
        expectFailure(unknown, to: self.driver, function: "GetInteriorVehicleData", correlationID: 111, .unsupportedResource)
    }

    @Test("a change on the vehicle's side reaches the subscribers, read-only data included")
    func vehicleChange() throws {
        var harness = Self.vehicle()
        _ = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: self.driver)
        let outputs = harness.headUnit.changeVehicleData(
            SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(currentTemperature: SDLTemperature(unit: .celsius, value: 25))))
        checkSent(outputs)
        #expect(outputs.sends == ["app1 <- OnInteriorVehicleData notification #4294967295"])
        #expect(try outputs.only(SDLOnInteriorVehicleData.self, to: self.driver).moduleData.climateControlData?.currentTemperature?.value == 25)
        #expect(outputs.transcript?.outcome == "climate.front changed; 1 subscriber(s) notified")
    }
}
