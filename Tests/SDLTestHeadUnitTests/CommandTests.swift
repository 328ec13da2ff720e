import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

/// The script language of the simulated driver, user and vehicle.
@Suite("Head-unit commands")
struct CommandTests {
    @Test(
        "each command parses to its action",
        arguments: [
            ("hmi weather-1 FULL", HeadUnitCommand.Action.setHMILevel(app: "weather-1", level: .full)),
            ("HMI app2 background", .setHMILevel(app: "app2", level: .background)),
            ("access ask-driver", .setAccessMode(.askDriver)),
            ("access AUTO_DENY", .setAccessMode(.autoDeny)),
            ("consent allow", .setDriverConsent(.grant)),
            ("consent deny", .setDriverConsent(.refuse)),
            ("consent deny radio climate.rear", .setDriverConsent(.refuseModules(["radio", "climate.rear"]))),
            ("consent ask", .setDriverConsent(.ask)),
            ("answer allow", .answer(subject: nil, allow: true)),
            ("answer climate-0 deny   # no", .answer(subject: "climate-0", allow: false)),
            ("seat occupied passenger", .setSeat(index: 1, occupied: true)),
            ("seat vacant 2,1", .setSeat(index: 4, occupied: false)),
            ("vehicle delay 250ms", .setVehicleResponseTime(.milliseconds(250))),
            ("wait 1.5s", .wait(.milliseconds(1500))),
        ])
    func parses(line: String, action: HeadUnitCommand.Action) throws {
        let command = try #require(try HeadUnitCommand(parsing: line))
        #expect(command.action == action)
    }

    @Test("set builds the module data: the temperature alias in Celsius, JSON values, bare words, module ids")
    func set() throws {
        let temperature = try #require(try HeadUnitCommand(parsing: "set climate temperature 21.5"))
        #expect(temperature.action == .changeModule(
            SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(currentTemperature: SDLTemperature(unit: .celsius, value: 21.5)))))
        let band = try #require(try HeadUnitCommand(parsing: "set RADIO/radio band FM"))
        #expect(band.action == .changeModule(SDLModuleData(moduleType: .radio, moduleId: "radio", radioControlData: SDLRadioControlData(band: .fm))))
        let flag = try #require(try HeadUnitCommand(parsing: "set hmi-settings displayMode NIGHT"))
        #expect(flag.action == .changeModule(
            SDLModuleData(moduleType: .hmiSettings, hmiSettingsControlData: SDLHMISettingsControlData(displayMode: .night))))
    }

    @Test(
        "malformed lines are invalidCommand, naming the command",
        arguments: [
            ("fly away", "fly", "unknown command (hmi, access, consent, answer, set, seat, vehicle, wait)"),
            ("hmi weather", "hmi", "expected: hmi <app> FULL|LIMITED|BACKGROUND|NONE"),
            ("hmi weather HIGH", "hmi", "\"HIGH\" is not an HMI level"),
            ("access sometimes", "access", "\"sometimes\" is not an access mode (auto-allow, auto-deny, ask-driver)"),
            ("answer maybe", "answer", "expected: answer [<moduleId>|<serviceId>] allow|deny"),
            ("set roof open true", "set", "\"roof\" is not a module type (climate, radio, seat, audio, light, hmi-settings)"),
            ("set climate wings 3", "set", "climateControlData has no parameter \"wings\""),
            ("seat occupied boot", "seat", "the vehicle has no seat \"boot\""),
            ("wait soon", "wait", "expected: wait <n>ms|<n>s"),
        ])
    func malformed(line: String, path: String, detail: String) {
        let error = #expect(throws: HeadUnitError.self) { try HeadUnitCommand(parsing: line) }
        #expect(error?.code == .invalidCommand)
        #expect(error?.path == path)
        #expect(error?.detail == detail)
    }

    @Test("a value of the wrong type is invalidCommand with the decoder's reason")
    func wrongValue() {
        let error = #expect(throws: HeadUnitError.self) { try HeadUnitCommand(parsing: "set climate fanSpeed fast") }
        #expect(error?.path == "set")
        #expect(error?.detail.hasPrefix("fanSpeed fast: ") == true)
    }

    @Test("blank lines and comments are nothing; a script names the line of an error")
    func script() throws {
        #expect(try HeadUnitCommand(parsing: "   ") == nil)
        #expect(try HeadUnitCommand(parsing: "# the driver") == nil)
        let commands = try HeadUnitCommand.parseScript("# setup\naccess ask-driver\n\nconsent ask\n")
        #expect(commands.map(\.text) == ["access ask-driver", "consent ask"])
        let error = #expect(throws: HeadUnitError.self) { try HeadUnitCommand.parseScript("consent ask\n\nhmi x\n") }
        #expect(error?.path == "line 3: hmi")
    }

    @Test("perform: HMI levels by name, id or handle; the transcript says what changed")
    func performLevels() throws {
        var harness = Harness()
        harness.register(AppHandle(1), name: "Weather", types: [.information])
        harness.register(AppHandle(2), name: "Radio", isMedia: true)
        let byName = harness.perform("hmi weather FULL")
        #expect(byName.transcript == TranscriptLine(app: nil, input: "script: hmi weather FULL", outcome: "app1 is FULL"))
        #expect(byName.sends == ["app1 <- OnHMIStatus notification #4294967295", "app2 <- OnHMIStatus notification #4294967295"])
        #expect(harness.headUnit.hmiLevel(of: AppHandle(2)) == .limited)
        _ = harness.perform("hmi radio BACKGROUND")
        #expect(harness.headUnit.hmiLevel(of: AppHandle(2)) == .background)
        _ = harness.perform("hmi app2 NONE")
        #expect(harness.headUnit.hmiLevel(of: AppHandle(2)) == SDLHMILevel.none_)
        let nobody = harness.perform("hmi nobody FULL")
        #expect(nobody.sends == [] && nobody.transcript?.outcome == "ignored: no registered app \"nobody\"")
    }

    @Test("perform: the vehicle changes a value, subscribers get it; seats; answers without a question")
    func performVehicle() throws {
        var harness = Harness()
        harness.register(AppHandle(1), name: "Climate", types: [.remoteControl])
        _ = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: AppHandle(1))
        let changed = harness.perform("set climate temperature 25")
        #expect(changed.sends == ["app1 <- OnInteriorVehicleData notification #4294967295"])
        #expect(try changed.only(SDLOnInteriorVehicleData.self, to: AppHandle(1)).moduleData.climateControlData?.currentTemperature
            == SDLTemperature(unit: .celsius, value: 25))
        #expect(changed.transcript?.outcome == "climate.front changed; 1 subscriber(s) notified")
        let seat = harness.perform("seat occupied passenger")
        #expect(seat.transcript?.outcome == "seat 1 (col 2, row 0) occupied")
        #expect(harness.headUnit.currentVehicle.occupiedSeats == [1])
        let answer = harness.perform("answer radio allow")
        #expect(answer.transcript?.outcome == "no question about radio is waiting")
        let mode = harness.perform("consent deny radio")
        #expect(harness.headUnit.driverConsent == .refuseModules(["radio"]))
        #expect(mode.sends == [])
        let wait = harness.perform("wait 20ms")
        #expect(wait.transcript?.outcome == "wait 20 ms")
    }
}
