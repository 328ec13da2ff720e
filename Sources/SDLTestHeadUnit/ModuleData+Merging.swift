import SDLRPC

/// Module data handled by parameter name: which control data a message carries, which of its
/// parameters are read-only, and how a SetInteriorVehicleData updates a module's data. Working on
/// the parameters object, not field by field, keeps this one piece of code for the six control
/// data structs (about sixty parameters) and for parameters added to the spec later.
extension SDLModuleData {
    /// The control-data member a module type's data lives in.
    static func controlDataKey(for type: SDLModuleType) -> String? {
        switch type {
        case .climate: "climateControlData"
        case .radio: "radioControlData"
        case .seat: "seatControlData"
        case .audio: "audioControlData"
        case .light: "lightControlData"
        case .hmiSettings: "hmiSettingsControlData"
        default: nil
        }
    }

    /// Parameters apps may read but not set (SDL Core's RC capabilities manager): they are cut off
    /// a SetInteriorVehicleData, which is refused READ_ONLY when nothing else is left.
    static let readOnlyParameters: [String: Set<String>] = [
        "climateControlData": ["currentTemperature"],
        "radioControlData": [
            "rdsData", "availableHDs", "availableHdChannels", "signalStrength", "signalChangeThreshold", "state", "sisData",
        ],
    ]

    /// Parameters that act once and are not part of the module's state.
    static let setOnlyParameters: [String: Set<String>] = ["audioControlData": ["keepContext"]]

    /// Array parameters whose elements name what they set: an update replaces the elements with
    /// the same name and keeps the others (one light, one equalizer channel, one massage zone).
    static let elementKeys: [String: String] = [
        "lightState": "id", "equalizerSettings": "channelId", "massageMode": "massageZone",
        "massageCushionFirmness": "cushion",
    ]

    /// The control-data members present, e.g. `["climateControlData"]`.
    var controlDataKeys: [String] {
        let all = [
            ("radioControlData", self.radioControlData != nil), ("climateControlData", self.climateControlData != nil),
            ("seatControlData", self.seatControlData != nil), ("audioControlData", self.audioControlData != nil),
            ("lightControlData", self.lightControlData != nil),
            ("hmiSettingsControlData", self.hmiSettingsControlData != nil),
        ]
        return all.filter(\.1).map(\.0)
    }

    /// The parameter names set in the control data of `key`.
    func parameterNames(in key: String) -> [String] {
        guard case .object(let control)? = Self.object(of: self)[key] else { return [] }
        return control.map(\.key)
    }

    /// This data with the named parameters of the control data `key` left out.
    func removing(_ names: Set<String>, in key: String) throws(RPCError) -> SDLModuleData {
        var object = Self.object(of: self)
        guard case .object(var control)? = object[key] else { return self }
        control.entries.removeAll { names.contains($0.key) }
        object[key] = .object(control)
        return try Self.decode(object)
    }

    /// This data updated by `update`: each parameter `update` sets replaces this one's, elements of
    /// the arrays in ``elementKeys`` by their name; `moduleType` and `moduleId` stay.
    func merging(_ update: SDLModuleData) throws(RPCError) -> SDLModuleData {
        var object = Self.object(of: self)
        for entry in Self.object(of: update) where entry.key != "moduleType" && entry.key != "moduleId" {
            guard case .object(let changes) = entry.value, case .object(var control)? = object[entry.key] else {
                object[entry.key] = entry.value
                continue
            }
            for change in changes {
                control[change.key] = Self.merged(control[change.key], change.value, elementKey: Self.elementKeys[change.key])
            }
            object[entry.key] = .object(control)
        }
        return try Self.decode(object)
    }

    private static func merged(_ old: RPCValue?, _ new: RPCValue, elementKey: String?) -> RPCValue {
        guard let elementKey, case .array(var elements)? = old, case .array(let updates) = new else { return new }
        for update in updates {
            guard case .object(let updateObject) = update, let name = updateObject[elementKey] else { continue }
            if let index = elements.firstIndex(where: {
                if case .object(let element) = $0 { return element[elementKey] == name }
                return false
            }) {
                elements[index] = update
            } else {
                elements.append(update)
            }
        }
        return .array(elements)
    }

    /// The parameters object of a value (not validated: state is valid, and a merge result is
    /// validated when decoded back).
    private static func object(of data: SDLModuleData) -> RPCObject {
        let options = RPCCodingOptions(validate: false)
        guard let text = try? data.jsonParametersText(options: options),
            case .object(let object)? = try? RPCValue(jsonObject: text, options: options)
        else { return RPCObject() }
        return object
    }

    private static func decode(_ object: RPCObject) throws(RPCError) -> SDLModuleData {
        try SDLModuleData(jsonParameters: try RPCValue.object(object).jsonText())
    }
}
