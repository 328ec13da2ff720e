import NIOCore
import SDLRPC

/// One line of a head-unit script: what the simulated driver, user or vehicle does, for a test or
/// for `sdl headunit` to read from a file or from standard input. Parsing is sans-IO; the head
/// unit carries a command out with ``SimulatedHeadUnit/perform(_:now:)``, which logs its effect in
/// the transcript.
///
/// One command per line, words separated by spaces; `#` starts a comment; blank lines are nothing.
/// Keywords are case-insensitive.
///
/// | command | effect |
/// |---|---|
/// | `hmi <app> FULL\|LIMITED\|BACKGROUND\|NONE` | the user moves an app (app id, app name or `app<n>`) to a level: activates it, sends it to the background, exits it |
/// | `access auto-allow\|auto-deny\|ask-driver` | the remote-control access mode |
/// | `consent allow\|deny\|ask` | how the driver answers from now on: yes, no, or not at once (the question waits) |
/// | `consent deny <moduleId>…` | no for these modules, yes for the others |
/// | `answer [<subject>] allow\|deny` | answers the oldest waiting question about a module id or service id (without a subject: the oldest question, all of it) |
/// | `set <type>[/<moduleId>] <parameter> <value>` | the vehicle changes a module's value; subscribers get OnInteriorVehicleData |
/// | `seat occupied\|vacant driver\|passenger\|<col>,<row>` | someone sits down or gets up |
/// | `vehicle delay <duration>` | how long the vehicle takes to carry out a SetInteriorVehicleData or a ButtonPress (the module is busy meanwhile) |
/// | `wait <duration>` | the runtime waits before the next command |
///
/// `<type>` is a module type (`climate`, `radio`, `seat`, `audio`, `light`, `hmi-settings`, or the
/// spec's names); `<parameter>` a parameter of its control data (`fanSpeed`, `desiredTemperature`,
/// `frequencyInteger`, …; `temperature` means `currentTemperature`); `<value>` JSON, a bare word
/// being a string (`FM`), a number for a temperature meaning Celsius. `<duration>` is a number with
/// `ms` or `s`.
///
/// ```text
/// # the driver must be asked, and takes their time
/// access ask-driver
/// consent ask
/// hmi Comfort FULL
/// wait 2s
/// answer climate.front allow
/// set climate temperature 21.5
/// set radio/radio frequencyInteger 99
/// seat occupied passenger
/// hmi weather-1 BACKGROUND
/// ```
public struct HeadUnitCommand: Hashable, Sendable, CustomStringConvertible {
    /// What a command does.
    public enum Action: Hashable, Sendable {
        /// Move the app named (app id, app name or `app<n>`) to an HMI level.
        case setHMILevel(app: String, level: SDLHMILevel)
        /// Change the remote-control access mode.
        case setAccessMode(SimulatedHeadUnit.RCAccessMode)
        /// Change how the driver answers.
        case setDriverConsent(SimulatedHeadUnit.DriverConsent)
        /// Answer the oldest waiting question about a subject (nil: the oldest question).
        case answer(subject: String?, allow: Bool)
        /// The vehicle changes a module's data (`moduleId` nil: the type's first module).
        case changeModule(SDLModuleData)
        /// A seat (its index in the vehicle's seats) becomes occupied or vacant.
        case setSeat(index: Int, occupied: Bool)
        /// The vehicle's time to carry out a change.
        case setVehicleResponseTime(TimeAmount)
        /// The runtime waits this long before the next command.
        case wait(TimeAmount)
    }

    /// What the command does.
    public var action: Action
    /// The line it was parsed from (or a rendering of the action).
    public var text: String

    /// A command from its action.
    public init(_ action: Action, text: String? = nil) {
        self.action = action
        self.text = text ?? "\(action)"
    }

    /// The line.
    public var description: String { self.text }

    /// Parses one script line; nil for a blank line or a comment. Seats are named against
    /// `vehicle` (`driver` is its first seat, `passenger` its second).
    public init?(parsing line: String, vehicle: SimulatedVehicle = .standard) throws(HeadUnitError) {
        let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first else { return nil }
        let keyword = first.lowercased()
        let arguments = Array(words.dropFirst())
        func fail(_ detail: String) -> HeadUnitError { HeadUnitError(.invalidCommand, path: keyword, detail: detail) }
        let text = words.joined(separator: " ")
        switch keyword {
        case "hmi":
            guard arguments.count == 2 else { throw fail("expected: hmi <app> FULL|LIMITED|BACKGROUND|NONE") }
            let level = SDLHMILevel(wireName: arguments[1].uppercased())
            guard level.isKnown else { throw fail("\"\(arguments[1])\" is not an HMI level") }
            self.init(.setHMILevel(app: arguments[0], level: level), text: text)
        case "access":
            guard arguments.count == 1 else { throw fail("expected: access auto-allow|auto-deny|ask-driver") }
            switch arguments[0].lowercased() {
            case "auto-allow", "auto_allow": self.init(.setAccessMode(.autoAllow), text: text)
            case "auto-deny", "auto_deny": self.init(.setAccessMode(.autoDeny), text: text)
            case "ask-driver", "ask_driver": self.init(.setAccessMode(.askDriver), text: text)
            default: throw fail("\"\(arguments[0])\" is not an access mode (auto-allow, auto-deny, ask-driver)")
            }
        case "consent":
            guard let mode = arguments.first?.lowercased() else { throw fail("expected: consent allow|deny|ask") }
            switch (mode, arguments.count) {
            case ("allow", 1): self.init(.setDriverConsent(.grant), text: text)
            case ("deny", 1): self.init(.setDriverConsent(.refuse), text: text)
            case ("deny", _): self.init(.setDriverConsent(.refuseModules(Set(arguments.dropFirst()))), text: text)
            case ("ask", 1): self.init(.setDriverConsent(.ask), text: text)
            default: throw fail("expected: consent allow|deny|ask, or consent deny <moduleId>...")
            }
        case "answer":
            guard let last = arguments.last?.lowercased(), arguments.count <= 2, last == "allow" || last == "deny" else {
                throw fail("expected: answer [<moduleId>|<serviceId>] allow|deny")
            }
            self.init(.answer(subject: arguments.count == 2 ? arguments[0] : nil, allow: last == "allow"), text: text)
        case "set":
            guard arguments.count >= 3 else { throw fail("expected: set <type>[/<moduleId>] <parameter> <value>") }
            let data = try Self.moduleData(
                target: arguments[0], parameter: arguments[1], value: arguments.dropFirst(2).joined(separator: " "))
            self.init(.changeModule(data), text: text)
        case "seat":
            guard arguments.count == 2, ["occupied", "vacant"].contains(arguments[0].lowercased()) else {
                throw fail("expected: seat occupied|vacant driver|passenger|<col>,<row>")
            }
            guard let index = Self.seatIndex(arguments[1], in: vehicle) else {
                throw fail("the vehicle has no seat \"\(arguments[1])\"")
            }
            self.init(.setSeat(index: index, occupied: arguments[0].lowercased() == "occupied"), text: text)
        case "vehicle":
            guard arguments.count == 2, arguments[0].lowercased() == "delay", let delay = Self.duration(arguments[1]) else {
                throw fail("expected: vehicle delay <n>ms|<n>s")
            }
            self.init(.setVehicleResponseTime(delay), text: text)
        case "wait":
            guard arguments.count == 1, let delay = Self.duration(arguments[0]) else { throw fail("expected: wait <n>ms|<n>s") }
            self.init(.wait(delay), text: text)
        default:
            throw fail("unknown command (hmi, access, consent, answer, set, seat, vehicle, wait)")
        }
    }

    /// Parses a whole script: one command per non-blank, non-comment line. An error's path names
    /// the line (`line 3: set`).
    public static func parseScript(_ text: String, vehicle: SimulatedVehicle = .standard) throws(HeadUnitError) -> [HeadUnitCommand] {
        var commands: [HeadUnitCommand] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            do {
                if let command = try HeadUnitCommand(parsing: String(line), vehicle: vehicle) {
                    commands.append(command)
                }
            } catch {
                throw HeadUnitError(error.code, path: "line \(number + 1): \(error.path)", detail: error.detail)
            }
        }
        return commands
    }

    // MARK: - Arguments

    /// `12ms`, `2s`, `1.5s`.
    static func duration(_ word: String) -> TimeAmount? {
        let lower = word.lowercased()
        if lower.hasSuffix("ms"), let value = Int64(lower.dropLast(2)), value >= 0 {
            return .milliseconds(value)
        }
        if lower.hasSuffix("s"), let value = Double(lower.dropLast(1)), value >= 0, value < 1e6 {
            return .nanoseconds(Int64(value * 1e9))
        }
        return nil
    }

    static func seatIndex(_ word: String, in vehicle: SimulatedVehicle) -> Int? {
        switch word.lowercased() {
        case "driver": return vehicle.seats.isEmpty ? nil : 0
        case "passenger": return vehicle.seats.count > 1 ? 1 : nil
        default:
            let parts = word.split(separator: ",")
            guard parts.count == 2, let col = Int32(parts[0]), let row = Int32(parts[1]) else { return nil }
            return vehicle.seats.firstIndex { $0.col == col && $0.row == row }
        }
    }

    static let moduleTypes: [String: SDLModuleType] = [
        "climate": .climate, "radio": .radio, "seat": .seat, "audio": .audio, "light": .light,
        "hmi-settings": .hmiSettings, "hmi_settings": .hmiSettings, "hmisettings": .hmiSettings,
    ]

    /// The module data of `set`: `{moduleType, moduleId?, <type>ControlData: {parameter: value}}`.
    static func moduleData(target: String, parameter: String, value: String) throws(HeadUnitError) -> SDLModuleData {
        func fail(_ detail: String) -> HeadUnitError { HeadUnitError(.invalidCommand, path: "set", detail: detail) }
        let parts = target.split(separator: "/", maxSplits: 1).map(String.init)
        guard let typeName = parts.first, let type = Self.moduleTypes[typeName.lowercased()] ?? Self.known(typeName),
            let key = SDLModuleData.controlDataKey(for: type)
        else {
            throw fail("\"\(target)\" is not a module type (climate, radio, seat, audio, light, hmi-settings)")
        }
        let name = type == .climate && parameter.lowercased() == "temperature" ? "currentTemperature" : parameter
        var parsed = (try? RPCValue(jsonText: value)) ?? .string(value)
        if name.hasSuffix("Temperature") {
            switch parsed {
            case .int32(let number): parsed = .object(["unit": .string("CELSIUS"), "value": .double(Double(number))])
            case .int64(let number): parsed = .object(["unit": .string("CELSIUS"), "value": .double(Double(number))])
            case .double(let number): parsed = .object(["unit": .string("CELSIUS"), "value": .double(number)])
            default: break
            }
        }
        var object: RPCObject = ["moduleType": .string(type.wireName)]
        if parts.count == 2 {
            object["moduleId"] = .string(parts[1])
        }
        object[key] = .object(RPCObject([RPCObject.Entry(key: name, value: parsed)]))
        let data: SDLModuleData
        do {
            data = try SDLModuleData(jsonParameters: try RPCValue.object(object).jsonText())
        } catch {
            throw fail("\(name) \(value): \(error)")
        }
        guard data.controlDataUnknownParameters.isEmpty else {
            throw fail("\(key) has no parameter \"\(name)\"")
        }
        return data
    }

    private static func known(_ name: String) -> SDLModuleType? {
        let type = SDLModuleType(wireName: name.uppercased())
        return type.isKnown ? type : nil
    }
}

extension SDLModuleData {
    /// The parameters of its control data that the spec does not define.
    var controlDataUnknownParameters: RPCObject {
        var unknown = RPCObject()
        for parameters in [
            self.climateControlData?.unknownParameters, self.radioControlData?.unknownParameters,
            self.seatControlData?.unknownParameters, self.audioControlData?.unknownParameters,
            self.lightControlData?.unknownParameters, self.hmiSettingsControlData?.unknownParameters,
        ] {
            unknown.entries += parameters?.entries ?? []
        }
        return unknown
    }
}
