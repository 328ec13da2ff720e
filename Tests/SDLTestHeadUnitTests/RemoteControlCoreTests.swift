import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

/// Remote control as SDL Core 8.2.0's resource allocation manager and RC commands do it: access
/// modes, the FULL rule, multiple access, the driver's answers, busy modules, the order of
/// responses and notifications, Core's result codes and info texts.
@Suite("Remote control, SDL Core's rules")
struct RemoteControlCoreTests {
    let first = AppHandle(1)
    let second = AppHandle(2)
    static let versions: [RPCVersion] = [.v5_0, .v6_0, .v8_0]

    /// Two remote-control apps on the vehicle of the Core captures (climate-0 and radio-0, both
    /// allowing multiple access): the first registers and takes the climate module in FULL, then
    /// the second registers and is activated (FULL), the first going to BACKGROUND.
    static func twoApps(
        version: RPCVersion = .v8_0, _ configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in }
    ) -> Harness {
        var harness = Harness {
            $0.vehicle = .climateAndRadio
            configure(&$0)
        }
        harness.register(AppHandle(1), name: "Climate", version: version, types: [.remoteControl])
        let taken = harness.send(Self.setClimate(fan: 40), from: AppHandle(1))
        #expect(taken.messages(SDLSetInteriorVehicleDataResponse.self, to: AppHandle(1)).first?.success == true)
        harness.register(AppHandle(2), name: "Comfort", version: version, types: [.remoteControl])
        #expect(harness.headUnit.hmiLevel(of: AppHandle(1)) == .background)
        #expect(harness.headUnit.hmiLevel(of: AppHandle(2)) == .full)
        return harness
    }

    static func setClimate(fan: Int32, id: String? = "climate-0") -> SDLSetInteriorVehicleDataRequest {
        SDLSetInteriorVehicleDataRequest(
            moduleData: SDLModuleData(moduleType: .climate, moduleId: id, climateControlData: SDLClimateControlData(fanSpeed: fan)))
    }

    /// The one response to `app`, its `info`.
    static func info<Response: RPCMessage>(_ outputs: [HeadUnitOutput], _ type: Response.Type, to app: AppHandle) throws -> String? {
        let parameters = try RPCValue(jsonObject: try outputs.only(type, to: app).jsonParametersText())
        guard case .object(let object) = parameters, case .string(let info)? = object["info"] else { return nil }
        return info
    }

    @Test("auto-allow (the default): an app in FULL takes a module another app holds; OnRCStatus to both after the response", arguments: versions)
    func autoAllow(version: RPCVersion) throws {
        var harness = Self.twoApps(version: version)
        #expect(harness.headUnit.accessMode == .autoAllow)
        let taken = harness.send(Self.setClimate(fan: 60), from: self.second, correlationID: 20)
        #expect(
            taken.sends == [
                "app2 <- SetInteriorVehicleData response #20",
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
            ])
        #expect(harness.headUnit.holder(of: .climate, id: "climate-0") == self.second)
        let id = version >= .v6_0 ? "climate-0" : nil
        #expect(try taken.only(SDLOnRCStatus.self, to: self.second).allocatedModules == [SDLModuleData(moduleType: .climate, moduleId: id)])
        #expect(try taken.only(SDLOnRCStatus.self, to: self.first).allocatedModules == [])
        #expect(try taken.only(SDLOnRCStatus.self, to: self.first).freeModules.map(\.moduleType) == [.radio])
    }

    @Test("a module another app holds is REJECTED, without info, to an app that is not in FULL", arguments: versions)
    func onlyFullTakesOver(version: RPCVersion) throws {
        var harness = Self.twoApps(version: version)
        _ = harness.send(Self.setClimate(fan: 60), from: self.second)
        // The first app, in BACKGROUND, wants it back.
        let refused = harness.send(Self.setClimate(fan: 10), from: self.first, correlationID: 30)
        expectFailure(refused, to: self.first, function: "SetInteriorVehicleData", correlationID: 30, .rejected)
        #expect(try Self.info(refused, SDLSetInteriorVehicleDataResponse.self, to: self.first) == nil)
        #expect(refused.transcript?.outcome == "REJECTED (climate-0 is held by another app and this app is not in HMI FULL)")
        let press = harness.send(
            SDLButtonPressRequest(moduleType: .climate, moduleId: "climate-0", buttonName: .fanUp, buttonPressMode: .short),
            from: self.first, correlationID: 31)
        expectFailure(press, to: self.first, function: "ButtonPress", correlationID: 31, .rejected)
        // A free module is the first app's whatever its level.
        let radio = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: 99))),
            from: self.first)
        #expect(try radio.only(SDLSetInteriorVehicleDataResponse.self, to: self.first).success)
        #expect(harness.headUnit.holder(of: .radio, id: "radio-0") == self.first)
    }

    @Test("a module without multiple access cannot be taken over, even in FULL and auto-allow")
    func multipleAccess() throws {
        var harness = Harness()
        harness.register(self.first, name: "Climate", types: [.remoteControl])
        _ = harness.send(RemoteControlTests.climate(SDLClimateControlData(fanSpeed: 40)), from: self.first)
        harness.register(self.second, name: "Comfort", types: [.remoteControl])
        let refused = harness.send(RemoteControlTests.climate(SDLClimateControlData(fanSpeed: 80)), from: self.second, correlationID: 9)
        expectFailure(refused, to: self.second, function: "SetInteriorVehicleData", correlationID: 9, .rejected)
        #expect(refused.transcript?.outcome == "REJECTED (climate.front is held by another app and does not allow multiple access)")
    }

    @Test("auto-deny: IN_USE without info for a held module", arguments: versions)
    func autoDeny(version: RPCVersion) throws {
        var harness = Self.twoApps(version: version) { $0.accessMode = .autoDeny }
        let refused = harness.send(Self.setClimate(fan: 60), from: self.second, correlationID: 21)
        expectFailure(refused, to: self.second, function: "SetInteriorVehicleData", correlationID: 21, .inUse)
        #expect(try Self.info(refused, SDLSetInteriorVehicleDataResponse.self, to: self.second) == nil)
        #expect(harness.headUnit.holder(of: .climate, id: "climate-0") == self.first)
    }

    @Test("ask-driver: the request waits for the driver's answer; a no is REJECTED with Core's info and sticks until the mode changes", arguments: versions)
    func askDriver(version: RPCVersion) throws {
        var harness = Self.twoApps(version: version) {
            $0.accessMode = .askDriver
            $0.driverConsent = .ask
        }
        let asked = harness.send(Self.setClimate(fan: 60), from: self.second, correlationID: 22)
        #expect(asked.sends == ["timer \((harness.now + .seconds(10)).uptimeNanoseconds)"])
        #expect(asked.transcript?.outcome == "asked the driver \"may Comfort take CLIMATE climate-0?\" (question 1); waiting")
        #expect(harness.headUnit.pendingQuestions.map(\.subjects) == [["climate-0"]])
        #expect(harness.headUnit.pendingQuestions.first?.app == self.second)

        let denied = harness.perform("answer climate-0 deny")
        expectFailure(denied, to: self.second, function: "SetInteriorVehicleData", correlationID: 22, .rejected)
        #expect(
            try Self.info(denied, SDLSetInteriorVehicleDataResponse.self, to: self.second)
                == "The resource [CLIMATE:climate-0] is in use and the driver disallows this remote control RPC")
        #expect(harness.headUnit.pendingQuestions.isEmpty)

        // Refused: no second question, REJECTED without info.
        let again = harness.send(Self.setClimate(fan: 61), from: self.second, correlationID: 23)
        expectFailure(again, to: self.second, function: "SetInteriorVehicleData", correlationID: 23, .rejected)
        #expect(try Self.info(again, SDLSetInteriorVehicleDataResponse.self, to: self.second) == nil)

        // Leaving ask-driver forgets the refusal; auto-allow passes the module.
        _ = harness.perform("access auto-allow")
        let taken = harness.send(Self.setClimate(fan: 62), from: self.second)
        #expect(try taken.only(SDLSetInteriorVehicleDataResponse.self, to: self.second).success)
    }

    @Test("ask-driver: a yes lets the request go on (response, OnRCStatus) and is kept: the next take-over asks nothing")
    func askDriverYesIsKept() throws {
        var harness = Self.twoApps {
            $0.accessMode = .askDriver
            $0.driverConsent = .ask
        }
        _ = harness.send(Self.setClimate(fan: 60), from: self.second, correlationID: 40)
        let allowed = harness.perform("answer allow")
        #expect(
            allowed.sends == [
                "app2 <- SetInteriorVehicleData response #40",
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
            ])
        #expect(allowed.transcript?.outcome == "question 1 answered: set climate-0; 0 subscriber(s) notified")
        // The first app takes it back: no answer is kept for it, so the driver is asked.
        _ = harness.headUnit.setHMILevel(.full, of: self.first)
        _ = harness.send(Self.setClimate(fan: 10), from: self.first)
        _ = harness.perform("answer allow")
        #expect(harness.headUnit.holder(of: .climate, id: "climate-0") == self.first)
        // The second app again: its yes is kept, no question.
        _ = harness.headUnit.setHMILevel(.full, of: self.second)
        let kept = harness.send(Self.setClimate(fan: 70), from: self.second)
        #expect(try kept.only(SDLSetInteriorVehicleDataResponse.self, to: self.second).success)
        #expect(harness.headUnit.pendingQuestions.isEmpty)
    }

    @Test("ask-driver: an unanswered question times out after 10 s: GENERIC_ERROR without info")
    func askDriverTimeout() throws {
        var harness = Self.twoApps {
            $0.accessMode = .askDriver
            $0.driverConsent = .ask
        }
        _ = harness.send(Self.setClimate(fan: 60), from: self.second, correlationID: 50)
        let deadline = try #require(harness.headUnit.nextDeadline)
        #expect(deadline == harness.now + .seconds(10))
        let early = harness.fireTimer(at: harness.now + .seconds(9))
        #expect(early.sends == [])
        let late = harness.fireTimer(at: deadline)
        expectFailure(late, to: self.second, function: "SetInteriorVehicleData", correlationID: 50, .genericError)
        #expect(try Self.info(late, SDLSetInteriorVehicleDataResponse.self, to: self.second) == nil)
        #expect(harness.headUnit.pendingQuestions.isEmpty)
        #expect(harness.headUnit.holder(of: .climate, id: "climate-0") == self.first)
    }

    @Test("ask-driver with an answer at once: the configured driver grants or refuses per module")
    func askDriverAtOnce() throws {
        var refuse = Self.twoApps {
            $0.accessMode = .askDriver
            $0.driverConsent = .refuseModules(["climate-0"])
        }
        let refused = refuse.send(Self.setClimate(fan: 60), from: self.second, correlationID: 60)
        expectFailure(refused, to: self.second, function: "SetInteriorVehicleData", correlationID: 60, .rejected)
        #expect(refused.transcript?.outcome.hasPrefix("asked the driver \"may Comfort take CLIMATE climate-0?\": REJECTED") == true)

        var grant = Self.twoApps { $0.accessMode = .askDriver }
        let taken = grant.send(Self.setClimate(fan: 60), from: self.second)
        #expect(try taken.only(SDLSetInteriorVehicleDataResponse.self, to: self.second).success)
    }

    @Test("a module the vehicle is working on is busy: IN_USE without info for any other change to it until the vehicle answers")
    func busyModule() throws {
        var harness = Harness {
            $0.vehicle = .climateAndRadio
            $0.vehicleResponseTime = .milliseconds(500)
        }
        harness.register(self.first, name: "Climate", types: [.remoteControl])
        harness.register(self.second, name: "Comfort", types: [.remoteControl])
        let working = harness.send(Self.setClimate(fan: 60), from: self.second, correlationID: 70)
        #expect(working.sends == ["timer \((harness.now + .milliseconds(500)).uptimeNanoseconds)"])
        #expect(working.transcript?.outcome == "the vehicle is working on climate-0")
        for app in [self.first, self.second] {
            let busy = harness.send(
                SDLButtonPressRequest(moduleType: .climate, moduleId: "climate-0", buttonName: .ac, buttonPressMode: .short), from: app,
                correlationID: 71)
            expectFailure(busy, to: app, function: "ButtonPress", correlationID: 71, .inUse)
            #expect(busy.transcript?.outcome == "IN_USE (the vehicle is working on another request on climate-0)")
        }
        // Reading is not acquiring: it is answered.
        #expect(try harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: self.first).only(
            SDLGetInteriorVehicleDataResponse.self, to: self.first).success)
        let done = harness.fireTimer(at: harness.now + .milliseconds(500))
        #expect(
            done.sends == [
                "app2 <- SetInteriorVehicleData response #70",
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
            ])
        #expect(RemoteControlTests.module(harness, "climate-0")?.climateControlData?.fanSpeed == 60)
        let free = harness.perform("vehicle delay 0ms")
        #expect(free.transcript?.outcome == "the vehicle takes 0 ms")
        #expect(try harness.send(Self.setClimate(fan: 20), from: self.second).only(SDLSetInteriorVehicleDataResponse.self, to: self.second).success)
    }

    @Test("ReleaseInteriorVehicleDataModule: OnRCStatus before the response; Core's info texts", arguments: [RPCVersion.v6_0, .v8_0])
    func release(version: RPCVersion) throws {
        var harness = Self.twoApps(version: version)
        let foreign = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate-0"), from: self.second, correlationID: 80)
        expectFailure(foreign, to: self.second, function: "ReleaseInteriorVehicleDataModule", correlationID: 80, .rejected)
        #expect(try Self.info(foreign, SDLReleaseInteriorVehicleDataModuleResponse.self, to: self.second)
            == "Module [CLIMATE:climate-0] is allocated to a different application.")
        let released = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate-0"), from: self.first, correlationID: 81)
        #expect(
            released.sends == [
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
                "app1 <- ReleaseInteriorVehicleDataModule response #81",
            ])
        #expect(try Self.info(released, SDLReleaseInteriorVehicleDataModuleResponse.self, to: self.first)
            == "Module [CLIMATE:climate-0] is released successfully.")
        let again = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate), from: self.first, correlationID: 82)
        expectFailure(again, to: self.first, function: "ReleaseInteriorVehicleDataModule", correlationID: 82, .ignored)
        #expect(try Self.info(again, SDLReleaseInteriorVehicleDataModuleResponse.self, to: self.first)
            == "Module [CLIMATE:climate-0] is not allocated to any application.")
        let unknown = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate, moduleId: "climate-9"), from: self.first, correlationID: 83)
        expectFailure(unknown, to: self.first, function: "ReleaseInteriorVehicleDataModule", correlationID: 83, .unsupportedResource)
        #expect(try Self.info(unknown, SDLReleaseInteriorVehicleDataModuleResponse.self, to: self.first) == "Accessing not supported module")
    }

    @Test("GetInteriorVehicleDataConsent per access mode, multiple access and the requester's level")
    func consent() throws {
        func consent(_ harness: inout Harness, _ app: AppHandle, _ ids: [String]) throws -> [Bool] {
            let outputs = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ids), from: app)
            return try outputs.only(SDLGetInteriorVehicleDataConsentResponse.self, to: app).allowed ?? []
        }
        // Auto-allow: yes for a held module that allows multiple access, whatever the level.
        var allow = Self.twoApps()
        #expect(try consent(&allow, self.second, ["climate-0"]) == [true])
        // Empty moduleIds: the type's default module.
        #expect(try consent(&allow, self.second, []) == [true])
        // Auto-deny: whether the app could take it.
        var deny = Self.twoApps { $0.accessMode = .autoDeny }
        #expect(try consent(&deny, self.second, ["climate-0"]) == [false])
        #expect(try consent(&deny, self.first, ["climate-0"]) == [true])
        // Ask-driver: a free module or the app's own is yes at once; another's held module is a
        // question for an app in FULL and a no for an app in BACKGROUND.
        var ask = Self.twoApps {
            $0.accessMode = .askDriver
            $0.driverConsent = .ask
        }
        _ = ask.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: 99))),
            from: self.second)
        let background = ask.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .radio, moduleIds: ["radio-0"]), from: self.first)
        #expect(try background.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.first).allowed == [false])
        let asked = ask.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ["climate-0"]), from: self.second, correlationID: 90)
        #expect(asked.sends.count == 1 && asked.sends[0].hasPrefix("timer"))
        let answered = ask.perform("answer climate-0 deny")
        #expect(try answered.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.second)
            == SDLGetInteriorVehicleDataConsentResponse(success: true, resultCode: .success, allowed: [false]))
        // The answer is kept: no question the second time.
        #expect(try consent(&ask, self.second, ["climate-0"]) == [false])
        // Unknown module.
        let unknown = ask.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ["climate-9"]), from: self.second, correlationID: 91)
        expectFailure(unknown, to: self.second, function: "GetInteriorVehicleDataConsent", correlationID: 91, .unsupportedResource)
        #expect(try Self.info(unknown, SDLGetInteriorVehicleDataConsentResponse.self, to: self.second) == "Accessing not supported module data")
    }

    @Test("the user's seat: the driver controls every module; another seat only modules whose area covers it")
    func seats() throws {
        var harness = Harness()
        harness.register(self.first, name: "Climate", types: [.remoteControl])
        let rear = harness.send(RemoteControlTests.climate(SDLClimateControlData(fanSpeed: 10), id: "climate.rear"), from: self.first)
        #expect(try rear.only(SDLSetInteriorVehicleDataResponse.self, to: self.first).success)
        let rearLeft = SDLGrid(col: 0, row: 1, level: 0, colspan: 1, rowspan: 1, levelspan: 1)
        _ = harness.send(SDLSetGlobalPropertiesRequest(userLocation: SDLSeatLocation(grid: rearLeft)), from: self.first)
        let front = harness.send(RemoteControlTests.climate(SDLClimateControlData(fanSpeed: 10)), from: self.first, correlationID: 5)
        expectFailure(front, to: self.first, function: "SetInteriorVehicleData", correlationID: 5, .rejected)
        let radio = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: 99))),
            from: self.first, correlationID: 6)
        expectFailure(radio, to: self.first, function: "SetInteriorVehicleData", correlationID: 6, .rejected)
        #expect(radio.transcript?.outcome == "REJECTED (the user's seat is outside the service area of radio)")
        let consent = harness.send(SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ["climate.front", "climate.rear"]), from: self.first)
        #expect(try consent.only(SDLGetInteriorVehicleDataConsentResponse.self, to: self.first).allowed == [false, true])
    }

    @Test("SetInteriorVehicleData and ButtonPress checks answer with Core's result codes and info texts")
    func checks() throws {
        var harness = Harness()
        harness.register(self.first, name: "Climate", types: [.remoteControl])
        func set(_ data: SDLModuleData, _ correlationID: UInt32) -> [HeadUnitOutput] {
            harness.send(SDLSetInteriorVehicleDataRequest(moduleData: data), from: self.first, correlationID: correlationID)
        }
        let cases: [(SDLModuleData, SDLResult, String)] = [
            (SDLModuleData(moduleType: .climate, radioControlData: SDLRadioControlData(frequencyInteger: 99)), .invalidData, "Request module type & data mismatch!"),
            (SDLModuleData(moduleType: .climate, moduleId: "climate.roof", climateControlData: SDLClimateControlData(fanSpeed: 1)), .unsupportedResource, "Accessing not supported module data"),
            (SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(currentTemperature: SDLTemperature(unit: .celsius, value: 30))), .readOnly, "All request params in module type are READ ONLY!"),
            (SDLModuleData(moduleType: .light, lightControlData: SDLLightControlData(lightState: [SDLLightState(id: .rearLeftTailLight, status: .on)])), .unsupportedResource, "The requested LightName is not supported by the vehicle."),
            (SDLModuleData(moduleType: .light, lightControlData: SDLLightControlData(lightState: [SDLLightState(id: .frontLeftFogLight, status: .rampUp)])), .readOnly, "The LightStatus enum passed is READ ONLY and cannot be written."),
        ]
        for (index, (data, code, info)) in cases.enumerated() {
            let outputs = set(data, UInt32(100 + index))
            expectFailure(outputs, to: self.first, function: "SetInteriorVehicleData", correlationID: UInt32(100 + index), code)
            #expect(try Self.info(outputs, SDLSetInteriorVehicleDataResponse.self, to: self.first) == info)
        }
        // Control data of another type next to the module type's is cut, as Core cuts it.
        let extra = set(
            SDLModuleData(moduleType: .climate, radioControlData: SDLRadioControlData(frequencyInteger: 99), climateControlData: SDLClimateControlData(fanSpeed: 44)),
            110)
        let response = try extra.only(SDLSetInteriorVehicleDataResponse.self, to: self.first)
        #expect(response.success && response.moduleData?.radioControlData == nil && response.moduleData?.climateControlData?.fanSpeed == 44)
        // Read-only parameters next to writable ones are cut without info.
        let mixed = set(SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 45, currentTemperature: SDLTemperature(unit: .celsius, value: 30))), 111)
        let mixedResponse = try mixed.only(SDLSetInteriorVehicleDataResponse.self, to: self.first)
        #expect(mixedResponse.info == nil && mixedResponse.moduleData?.climateControlData?.currentTemperature?.value == 21.5)

        let mismatch = harness.send(SDLButtonPressRequest(moduleType: .radio, buttonName: .ac, buttonPressMode: .short), from: self.first, correlationID: 120)
        expectFailure(mismatch, to: self.first, function: "ButtonPress", correlationID: 120, .invalidData)
        #expect(try Self.info(mismatch, SDLButtonPressResponse.self, to: self.first) == "Request module type and button name mismatch!")
        let missing = harness.send(SDLButtonPressRequest(moduleType: .audio, buttonName: .ok, buttonPressMode: .short), from: self.first, correlationID: 121)
        expectFailure(missing, to: self.first, function: "ButtonPress", correlationID: 121, .unsupportedResource)
        #expect(try Self.info(missing, SDLButtonPressResponse.self, to: self.first) == "Requested button or module does not exist in capabilities!")
    }

    @Test("a vehicle with only a climate module: capabilities, status, control; radio is UNSUPPORTED_RESOURCE", arguments: versions)
    func climateOnly(version: RPCVersion) throws {
        var harness = Harness { $0.vehicle = .climateOnly }
        let registered = harness.register(self.first, name: "Climate", version: version, types: [.remoteControl])
        let id = version >= .v6_0 ? "climate-0" : nil
        #expect(try registered.only(SDLOnRCStatus.self, to: self.first).freeModules == [SDLModuleData(moduleType: .climate, moduleId: id)])
        let capability = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl), from: self.first)
        let rc = try #require(try capability.only(SDLGetSystemCapabilityResponse.self, to: self.first).systemCapability?.remoteControlCapability)
        #expect(rc.climateControlCapabilities?.count == 1 && rc.radioControlCapabilities == nil)
        #expect(rc.buttonCapabilities?.count == 12)
        let set = harness.send(Self.setClimate(fan: 50), from: self.first)
        #expect(try set.only(SDLSetInteriorVehicleDataResponse.self, to: self.first).success)
        #expect(try set.only(SDLOnRCStatus.self, to: self.first).allocatedModules == [SDLModuleData(moduleType: .climate, moduleId: id)])
        let press = harness.send(SDLButtonPressRequest(moduleType: .climate, buttonName: .fanUp, buttonPressMode: .short), from: self.first)
        #expect(try press.only(SDLButtonPressResponse.self, to: self.first).success)
        // Core's reference HMI: a press changes nothing.
        #expect(RemoteControlTests.module(harness, "climate-0")?.climateControlData?.fanSpeed == 50)
        let radio = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .radio), from: self.first, correlationID: 40)
        expectFailure(radio, to: self.first, function: "GetInteriorVehicleData", correlationID: 40, .unsupportedResource)
        let volume = harness.send(SDLButtonPressRequest(moduleType: .radio, buttonName: .volumeUp, buttonPressMode: .short), from: self.first, correlationID: 41)
        expectFailure(volume, to: self.first, function: "ButtonPress", correlationID: 41, .unsupportedResource)
    }

    @Test("HMI NONE: GetInteriorVehicleData is DISALLOWED by the policy; exiting an app frees its modules before its OnHMIStatus")
    func hmiNone() throws {
        var harness = Self.twoApps()
        let exited = harness.perform("hmi Climate NONE")
        #expect(
            exited.sends == [
                "app1 <- OnRCStatus notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
                "app1 <- OnHMIStatus notification #4294967295",
            ])
        #expect(harness.headUnit.holder(of: .climate, id: "climate-0") == nil)
        let get = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: self.first, correlationID: 50)
        expectFailure(get, to: self.first, function: "GetInteriorVehicleData", correlationID: 50, .disallowed)
        // Allowed in NONE by the RemoteControl group: ReleaseInteriorVehicleDataModule.
        let release = harness.send(SDLReleaseInteriorVehicleDataModuleRequest(moduleType: .climate), from: self.first, correlationID: 51)
        expectFailure(release, to: self.first, function: "ReleaseInteriorVehicleDataModule", correlationID: 51, .ignored)
    }

    @Test("GetInteriorVehicleData: subscribing twice is WARNINGS with Core's info; reads reaching the vehicle are limited to 5 per second per module")
    func reads() throws {
        var harness = Harness { $0.vehicle = .climateAndRadio }
        harness.register(self.first, name: "Climate", types: [.remoteControl])
        for _ in 0..<5 {
            #expect(try harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .radio), from: self.first).only(
                SDLGetInteriorVehicleDataResponse.self, to: self.first).resultCode == .success)
        }
        let limited = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .radio), from: self.first, correlationID: 60)
        expectFailure(limited, to: self.first, function: "GetInteriorVehicleData", correlationID: 60, .rejected)
        // Another module has its own budget; a second later the radio is readable again.
        #expect(try harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: self.first).only(
            SDLGetInteriorVehicleDataResponse.self, to: self.first).isSubscribed == true)
        harness.now = harness.now + .seconds(1)
        #expect(try harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .radio), from: self.first).only(
            SDLGetInteriorVehicleDataResponse.self, to: self.first).success)
        // A subscribed module is read from the cache without limit.
        for _ in 0..<6 {
            #expect(try harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: self.first).only(
                SDLGetInteriorVehicleDataResponse.self, to: self.first).resultCode == .success)
        }
        let twice = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: self.first)
        let response = try twice.only(SDLGetInteriorVehicleDataResponse.self, to: self.first)
        #expect(response.success && response.resultCode == .warnings && response.info == "App is already subscribed to the provided module")
        #expect(response.isSubscribed == true)
    }

    @Test("an app whose HMI types have no REMOTE_CONTROL is DISALLOWED without info")
    func notRemoteControl() throws {
        var harness = Harness()
        harness.register(self.first, name: "Weather")
        let outputs = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: self.first, correlationID: 3)
        expectFailure(outputs, to: self.first, function: "GetInteriorVehicleData", correlationID: 3, .disallowed)
        #expect(try Self.info(outputs, SDLGetInteriorVehicleDataResponse.self, to: self.first) == nil)
    }
}

extension Harness {
    /// Carries out a script line now.
    mutating func perform(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> [HeadUnitOutput] {
        guard let command = try? HeadUnitCommand(parsing: line, vehicle: self.headUnit.currentVehicle) else {
            Issue.record("\"\(line)\" does not parse", sourceLocation: sourceLocation)
            return []
        }
        let outputs = self.headUnit.perform(command, now: self.now)
        checkSent(outputs, sourceLocation: sourceLocation)
        return outputs
    }
}
