import SDLRPC

extension SimulatedVehicle {
    /// The `REMOTE_CONTROL` capability as an app of this version sees it: the modules of its
    /// version, each with `moduleInfo` from 6.0, and only the availability flags its version
    /// defines.
    func remoteControlCapabilities(at version: RPCVersion) -> SDLRemoteControlCapabilities {
        var capabilities = SDLRemoteControlCapabilities()
        for index in self.visibleModules(at: version) {
            let module = self.modules[index]
            let info = version >= .v6_0 ? self.moduleInfo(module) : nil
            let since5 = version >= .v5_0 ? true : nil
            let since6 = version >= .v6_0 ? true : nil
            switch module.moduleType {
            case .climate:
                capabilities.climateControlCapabilities = (capabilities.climateControlCapabilities ?? []) + [
                    SDLClimateControlCapabilities(
                        moduleName: module.name, moduleInfo: info, currentTemperatureAvailable: since5,
                        fanSpeedAvailable: true, desiredTemperatureAvailable: true, acEnableAvailable: true,
                        acMaxEnableAvailable: true, circulateAirEnableAvailable: true, autoModeEnableAvailable: true,
                        dualModeEnableAvailable: true, defrostZoneAvailable: true, defrostZone: [.front, .rear, .all, .none_],
                        ventilationModeAvailable: true, ventilationMode: [.upper, .lower, .both, .none_],
                        heatedSteeringWheelAvailable: since5, heatedWindshieldAvailable: since5,
                        heatedRearWindowAvailable: since5, heatedMirrorsAvailable: since5, climateEnableAvailable: since6)
                ]
            case .radio:
                capabilities.radioControlCapabilities = (capabilities.radioControlCapabilities ?? []) + [
                    SDLRadioControlCapabilities(
                        moduleName: module.name, moduleInfo: info, radioEnableAvailable: true, radioBandAvailable: true,
                        radioFrequencyAvailable: true, hdChannelAvailable: true, rdsDataAvailable: true,
                        availableHDsAvailable: version < .v6_0 ? true : nil, availableHdChannelsAvailable: since6,
                        stateAvailable: true, signalStrengthAvailable: true, signalChangeThresholdAvailable: true,
                        sisDataAvailable: since5, hdRadioEnableAvailable: since5, siriusxmRadioAvailable: since5)
                ]
            case .seat:
                capabilities.seatControlCapabilities = (capabilities.seatControlCapabilities ?? []) + [
                    SDLSeatControlCapabilities(
                        moduleName: module.name, moduleInfo: info, heatingEnabledAvailable: true,
                        coolingEnabledAvailable: true, heatingLevelAvailable: true, coolingLevelAvailable: true,
                        horizontalPositionAvailable: true, verticalPositionAvailable: true,
                        frontVerticalPositionAvailable: true, backVerticalPositionAvailable: true,
                        backTiltAngleAvailable: true, headSupportHorizontalPositionAvailable: true,
                        headSupportVerticalPositionAvailable: true, massageEnabledAvailable: true,
                        massageModeAvailable: true, massageCushionFirmnessAvailable: true, memoryAvailable: true)
                ]
            case .audio:
                capabilities.audioControlCapabilities = (capabilities.audioControlCapabilities ?? []) + [
                    SDLAudioControlCapabilities(
                        moduleName: module.name, moduleInfo: info, sourceAvailable: true, keepContextAvailable: true,
                        volumeAvailable: true, equalizerAvailable: true, equalizerMaxChannelId: 10)
                ]
            case .light:
                capabilities.lightControlCapabilities = SDLLightControlCapabilities(
                    moduleName: module.name, moduleInfo: info,
                    supportedLights: (module.data.lightControlData?.lightState ?? []).map {
                        SDLLightCapabilities(
                            name: $0.id, statusAvailable: true, densityAvailable: true, rgbColorSpaceAvailable: true)
                    })
            case .hmiSettings:
                capabilities.hmiSettingsControlCapabilities = SDLHMISettingsControlCapabilities(
                    moduleName: module.name, moduleInfo: info, distanceUnitAvailable: true,
                    temperatureUnitAvailable: true, displayModeUnitAvailable: true)
            default:
                break
            }
        }
        // Buttons press the default module of their type, so they carry its moduleInfo.
        let buttons = [(SDLModuleType.climate, Self.climateButtons), (.radio, Self.radioButtons)].flatMap {
            (type, names) -> [SDLButtonCapabilities] in
            guard let index = self.moduleIndex(type: type, id: nil, at: version) else { return [] }
            let info = version >= .v6_0 ? self.moduleInfo(self.modules[index]) : nil
            return names.map {
                SDLButtonCapabilities(
                    name: $0, moduleInfo: info, shortPressAvailable: true, longPressAvailable: true, upDownAvailable: false)
            }
        }
        capabilities.buttonCapabilities = buttons.isEmpty ? nil : buttons
        return capabilities
    }

    /// The `SEAT_LOCATION` capability (RPC 6.0+).
    var seatLocationCapability: SDLSeatLocationCapability {
        SDLSeatLocationCapability(
            rows: self.rows, columns: self.columns, levels: 1, seats: self.seats.map { SDLSeatLocation(grid: $0) })
    }

    func moduleInfo(_ module: Module) -> SDLModuleInfo {
        SDLModuleInfo(
            moduleId: module.moduleID, location: module.location, serviceArea: module.serviceArea,
            allowMultipleAccess: module.allowsMultipleAccess)
    }

    /// The buttons ButtonPress accepts for climate modules.
    static let climateButtons: [SDLButtonName] = [
        .acMax, .ac, .recirculate, .fanUp, .fanDown, .tempUp, .tempDown, .defrostMax, .defrost, .defrostRear,
        .upperVent, .lowerVent,
    ]
    /// The buttons ButtonPress accepts for radio modules.
    static let radioButtons: [SDLButtonName] = [.volumeUp, .volumeDown, .eject, .source, .shuffle, .repeat_]

    /// A module's data as an app of this version may see it: parameters newer than its version
    /// left out, the HD channel only when in the range of its version (1…3 before 5.0, 1…7
    /// before 6.0, 0…7 since).
    static func data(_ data: SDLModuleData, at version: RPCVersion) -> SDLModuleData {
        var data = data
        if version < .v6_0 {
            data.moduleId = nil
        }
        if var climate = data.climateControlData {
            if version < .v5_0 {
                climate.heatedSteeringWheelEnable = nil
                climate.heatedWindshieldEnable = nil
                climate.heatedRearWindowEnable = nil
                climate.heatedMirrorsEnable = nil
            }
            if version < .v6_0 {
                climate.climateEnable = nil
            }
            data.climateControlData = climate
        }
        if var radio = data.radioControlData {
            if version < .v5_0 {
                radio.hdRadioEnable = nil
                radio.sisData = nil
            }
            if version < .v6_0 {
                radio.availableHdChannels = nil
                let range = Self.hdChannelRange(at: version)
                if let channel = radio.hdChannel, !range.contains(channel) {
                    radio.hdChannel = nil
                }
                if let count = radio.availableHDs, count > range.upperBound {
                    radio.availableHDs = range.upperBound
                }
            }
            data.radioControlData = radio
        }
        return data
    }

    /// The HD channels a version allows (MOBILE_API.xml `hdChannel` history).
    static func hdChannelRange(at version: RPCVersion) -> ClosedRange<Int32> {
        if version < .v5_0 { return 1...3 }
        if version < .v6_0 { return 1...7 }
        return 0...7
    }
}
