import SDLRPC

extension SDLModuleData {
    /// The module types whose control data this value carries.
    var controlDataTypes: [SDLModuleType] {
        var types: [SDLModuleType] = []
        if self.climateControlData != nil { types.append(.climate) }
        if self.radioControlData != nil { types.append(.radio) }
        if self.seatControlData != nil { types.append(.seat) }
        if self.audioControlData != nil { types.append(.audio) }
        if self.lightControlData != nil { types.append(.light) }
        if self.hmiSettingsControlData != nil { types.append(.hmiSettings) }
        return types
    }

    /// This data with the control-data parameters `update` carries put over this one's: a head
    /// unit may send only what changed (OnInteriorVehicleData), and the cache keeps the rest.
    /// Each parameter replaces the cached one whole (an array of lights included).
    func merging(_ update: SDLModuleData) -> SDLModuleData {
        let options = RPCCodingOptions(validate: false)
        guard update.moduleType == self.moduleType,
            case .object(var base)? = try? RPCValue(jsonObject: self.jsonParametersText(options: options), options: options),
            case .object(let changes)? = try? RPCValue(jsonObject: update.jsonParametersText(options: options), options: options)
        else { return update }
        for change in changes where change.key != "moduleType" && change.key != "moduleId" {
            guard case .object(let parameters) = change.value, case .object(var control)? = base[change.key] else {
                base[change.key] = change.value
                continue
            }
            for parameter in parameters {
                control[parameter.key] = parameter.value
            }
            base[change.key] = .object(control)
        }
        guard let text = try? RPCValue.object(base).jsonText(),
            let merged = try? SDLModuleData(jsonParameters: text, options: .lenient)
        else { return update }
        return merged
    }
}
