import SDLRPC

/// The remote-control side of the simulated head unit: the vehicle's modules (climate, radio,
/// seat, audio, light, HMI settings), where they sit, what they can do and their current data,
/// plus the seats an app's user can sit in.
///
/// What an app sees depends on the RPC version it negotiated, as on a real head unit of that
/// version: climate and radio from 4.5; seat, audio, light and HMI settings from 5.0; before 6.0
/// one module per type and no module ids (the first module of each type is the one it controls);
/// from 6.0 every module with its `moduleInfo` (id, location, service area, multiple access).
public struct SimulatedVehicle: Hashable, Sendable {
    /// One remote-control module.
    public struct Module: Hashable, Sendable {
        /// CLIMATE, RADIO, SEAT, AUDIO, LIGHT or HMI_SETTINGS.
        public var moduleType: SDLModuleType
        /// The `moduleId` apps of RPC 6.0 and later address it by; unique within its type.
        public var moduleID: String
        /// The capability's `moduleName`.
        public var name: String
        /// Where the module sits (`moduleInfo.location`); nil: not given.
        public var location: SDLGrid?
        /// The seats whose user may control the module (`moduleInfo.serviceArea`); nil: the
        /// location, or the whole vehicle when that is nil too.
        public var serviceArea: SDLGrid?
        /// `moduleInfo.allowMultipleAccess`: whether the head unit may let another app take the
        /// module over while one app holds it (asking the driver); false: only a free module can be
        /// granted.
        public var allowsMultipleAccess: Bool
        /// The module's current data; the control-data member of its type is set.
        public var data: SDLModuleData

        /// A module from its parts; `data.moduleId` is set to `moduleID`.
        public init(
            moduleType: SDLModuleType, moduleID: String, name: String, location: SDLGrid? = nil,
            serviceArea: SDLGrid? = nil, allowsMultipleAccess: Bool, data: SDLModuleData
        ) {
            self.moduleType = moduleType
            self.moduleID = moduleID
            self.name = name
            self.location = location
            self.serviceArea = serviceArea
            self.allowsMultipleAccess = allowsMultipleAccess
            self.data = data
            self.data.moduleId = moduleID
        }

        var key: ModuleKey { ModuleKey(type: self.moduleType, id: self.moduleID) }
    }

    /// The modules in capability order; the first of each type is its default module.
    public var modules: [Module]
    /// The seats (`SEAT_LOCATION` capability, RPC 6.0+); the first is the driver's, where an
    /// app's user sits until SetGlobalProperties `userLocation` says otherwise.
    public var seats: [SDLGrid]
    /// Rows of the seat grid.
    public var rows: Int32
    /// Columns of the seat grid.
    public var columns: Int32

    /// The seats someone sits in, by index in ``seats`` (a script's `seat occupied`). The simulator
    /// keeps it for the transcript and for tests; it has no vehicle-data RPC that reports it.
    public var occupiedSeats: Set<Int> = []
    /// Whether a ButtonPress changes the module's data as the knob would (a climate button's fan
    /// speed, temperature, …). SDL Core leaves this to its HMI; the reference HMI of the
    /// `core82-sessions` captures does not change anything. Default true.
    public var buttonPressesChangeData: Bool

    /// A vehicle from its parts.
    public init(modules: [Module], seats: [SDLGrid], rows: Int32, columns: Int32, buttonPressesChangeData: Bool = true) {
        self.modules = modules
        self.seats = seats
        self.rows = rows
        self.columns = columns
        self.buttonPressesChangeData = buttonPressesChangeData
    }

    /// The vehicle of the SDL Core 8.2.0 sessions in `vectors/core82-sessions` (`rc-radio`): a
    /// climate module `climate-0` and a radio module `radio-0`, both allowing multiple access,
    /// without location; one seat, the driver's, in a grid of 2 rows and 3 columns; button presses
    /// change nothing, as with Core's reference HMI.
    public static let climateAndRadio = SimulatedVehicle(
        modules: [Self.coreClimate, Self.coreRadio], seats: [SDLGrid(col: 0, row: 0, level: 0, colspan: 1, rowspan: 1, levelspan: 1)],
        rows: 2, columns: 3, buttonPressesChangeData: false)

    /// ``climateAndRadio`` without the radio: the one module `climate-0` (the vehicle of the
    /// `appservice` session). Remote control works on it as on any vehicle; radio requests are
    /// UNSUPPORTED_RESOURCE.
    public static let climateOnly = SimulatedVehicle(
        modules: [Self.coreClimate], seats: [SDLGrid(col: 0, row: 0, level: 0, colspan: 1, rowspan: 1, levelspan: 1)],
        rows: 2, columns: 3, buttonPressesChangeData: false)

    private static let coreClimate = Module(
        moduleType: .climate, moduleID: "climate-0", name: "Climate", allowsMultipleAccess: true,
        data: SDLModuleData(
            moduleType: .climate,
            climateControlData: SDLClimateControlData(
                fanSpeed: 30, currentTemperature: SDLTemperature(unit: .celsius, value: 21.5),
                desiredTemperature: SDLTemperature(unit: .celsius, value: 22), acEnable: true, circulateAirEnable: false,
                autoModeEnable: false, defrostZone: .none_, dualModeEnable: false, acMaxEnable: false,
                ventilationMode: .both, climateEnable: true)))

    private static let coreRadio = Module(
        moduleType: .radio, moduleID: "radio-0", name: "Radio", allowsMultipleAccess: true,
        data: SDLModuleData(
            moduleType: .radio,
            radioControlData: SDLRadioControlData(
                frequencyInteger: 101, frequencyFraction: 1, band: .fm, signalStrength: 80, radioEnable: true,
                state: .acquired)))

    /// Two rows of three seats (driver front left); a front and a rear climate zone, a radio, the
    /// driver's and the front passenger's seats, an audio system, exterior and interior lights,
    /// HMI settings. Module ids are readable (`climate.front`, `seat.driver`, …).
    public static let standard: SimulatedVehicle = {
        let frontRow = SDLGrid(col: 0, row: 0, level: 0, colspan: 3, rowspan: 1, levelspan: 1)
        let rearRow = SDLGrid(col: 0, row: 1, level: 0, colspan: 3, rowspan: 1, levelspan: 1)
        let driver = SDLGrid(col: 0, row: 0, level: 0, colspan: 1, rowspan: 1, levelspan: 1)
        let passenger = SDLGrid(col: 2, row: 0, level: 0, colspan: 1, rowspan: 1, levelspan: 1)
        let seats = [
            driver, passenger,
            SDLGrid(col: 0, row: 1, level: 0, colspan: 1, rowspan: 1, levelspan: 1),
            SDLGrid(col: 1, row: 1, level: 0, colspan: 1, rowspan: 1, levelspan: 1),
            SDLGrid(col: 2, row: 1, level: 0, colspan: 1, rowspan: 1, levelspan: 1),
        ]
        func climate(_ desired: Double) -> SDLClimateControlData {
            SDLClimateControlData(
                fanSpeed: 30, currentTemperature: SDLTemperature(unit: .celsius, value: 21.5),
                desiredTemperature: SDLTemperature(unit: .celsius, value: desired), acEnable: true,
                circulateAirEnable: false, autoModeEnable: true, defrostZone: .none_, dualModeEnable: false,
                acMaxEnable: false, ventilationMode: .both, heatedSteeringWheelEnable: false,
                heatedWindshieldEnable: false, heatedRearWindowEnable: false, heatedMirrorsEnable: false,
                climateEnable: true)
        }
        func seat(_ id: SDLSupportedSeat) -> SDLSeatControlData {
            SDLSeatControlData(
                id: id, heatingEnabled: false, coolingEnabled: false, heatingLevel: 0, coolingLevel: 0,
                horizontalPosition: 50, verticalPosition: 50, frontVerticalPosition: 50, backVerticalPosition: 50,
                backTiltAngle: 50, headSupportHorizontalPosition: 50, headSupportVerticalPosition: 50,
                massageEnabled: false)
        }
        let radio = SDLRadioControlData(
            frequencyInteger: 101, frequencyFraction: 1, band: .fm,
            rdsData: SDLRdsData(PS: "SDL FM", RT: "Simulated radio", PI: "1234", PTY: 10, TP: false, TA: false),
            hdRadioEnable: true, availableHDs: 3, availableHdChannels: [1, 2, 3], hdChannel: 1, signalStrength: 80,
            signalChangeThreshold: 20, radioEnable: true, state: .acquired)
        let audio = SDLAudioControlData(
            source: .fm, volume: 40,
            equalizerSettings: [
                SDLEqualizerSettings(channelId: 1, channelName: "bass", channelSetting: 50),
                SDLEqualizerSettings(channelId: 2, channelName: "treble", channelSetting: 50),
            ])
        let lights: [SDLLightState] = [
            SDLLightState(id: .frontLeftHighBeam, status: .off), SDLLightState(id: .frontRightHighBeam, status: .off),
            SDLLightState(id: .frontLeftLowBeam, status: .on), SDLLightState(id: .frontRightLowBeam, status: .on),
            SDLLightState(id: .frontLeftFogLight, status: .off), SDLLightState(id: .frontRightFogLight, status: .off),
        ]
        return SimulatedVehicle(
            modules: [
                Module(
                    moduleType: .climate, moduleID: "climate.front", name: "front climate", location: frontRow,
                    serviceArea: frontRow, allowsMultipleAccess: false,
                    data: SDLModuleData(moduleType: .climate, climateControlData: climate(22))),
                Module(
                    moduleType: .climate, moduleID: "climate.rear", name: "rear climate", location: rearRow,
                    serviceArea: rearRow, allowsMultipleAccess: false,
                    data: SDLModuleData(moduleType: .climate, climateControlData: climate(21))),
                Module(
                    moduleType: .radio, moduleID: "radio", name: "radio", allowsMultipleAccess: true,
                    data: SDLModuleData(moduleType: .radio, radioControlData: radio)),
                Module(
                    moduleType: .seat, moduleID: "seat.driver", name: "driver seat", location: driver,
                    allowsMultipleAccess: false, data: SDLModuleData(moduleType: .seat, seatControlData: seat(.driver))),
                Module(
                    moduleType: .seat, moduleID: "seat.passenger", name: "front passenger seat", location: passenger,
                    allowsMultipleAccess: false,
                    data: SDLModuleData(moduleType: .seat, seatControlData: seat(.frontPassenger))),
                Module(
                    moduleType: .audio, moduleID: "audio", name: "audio", allowsMultipleAccess: true,
                    data: SDLModuleData(moduleType: .audio, audioControlData: audio)),
                Module(
                    moduleType: .light, moduleID: "light", name: "light", allowsMultipleAccess: false,
                    data: SDLModuleData(moduleType: .light, lightControlData: SDLLightControlData(lightState: lights))),
                Module(
                    moduleType: .hmiSettings, moduleID: "hmiSettings", name: "HMI settings", allowsMultipleAccess: true,
                    data: SDLModuleData(
                        moduleType: .hmiSettings,
                        hmiSettingsControlData: SDLHMISettingsControlData(
                            displayMode: .auto, temperatureUnit: .celsius, distanceUnit: .kilometers))),
            ],
            seats: seats, rows: 2, columns: 3)
    }()

    /// The RPC version from which a module type exists.
    static func since(_ type: SDLModuleType) -> RPCVersion {
        switch type {
        case .climate, .radio: .v4_5
        default: .v5_0
        }
    }

    /// The indices of the modules an app of this version can see and address: the types of its
    /// version, and before 6.0 only the first module of each type.
    func visibleModules(at version: RPCVersion) -> [Int] {
        var seen: [SDLModuleType] = []
        var result: [Int] = []
        for (index, module) in self.modules.enumerated() where Self.since(module.moduleType) <= version {
            if version < .v6_0 {
                if seen.contains(module.moduleType) { continue }
                seen.append(module.moduleType)
            }
            result.append(index)
        }
        return result
    }

    /// The module an app of this version addresses with a type and an optional id: before 6.0 the
    /// id is ignored (the app cannot know one), from 6.0 nil means the type's default module.
    func moduleIndex(type: SDLModuleType, id: String?, at version: RPCVersion) -> Int? {
        let visible = self.visibleModules(at: version).filter { self.modules[$0].moduleType == type }
        guard let id, version >= .v6_0 else { return visible.first }
        return visible.first { self.modules[$0].moduleID == id }
    }

    /// The index of the module with this key.
    func index(of key: ModuleKey) -> Int? {
        self.modules.firstIndex { $0.moduleType == key.type && $0.moduleID == key.id }
    }

    /// The area whose seats may control the module (SDL Core's rule: service area, else location;
    /// nil: only the driver may control it).
    func serviceArea(of module: Module) -> SDLGrid? { module.serviceArea ?? module.location }
}

/// A module's identity: type and id.
struct ModuleKey: Hashable, Sendable {
    var type: SDLModuleType
    var id: String
}

extension SDLGrid {
    /// The grid with the spec's defaults filled in (level 0, spans 1), so that grids that say the
    /// same compare equal.
    var normalized: SDLGrid {
        SDLGrid(
            col: self.col, row: self.row, level: self.level ?? 0, colspan: self.colspan ?? 1, rowspan: self.rowspan ?? 1,
            levelspan: self.levelspan ?? 1)
    }

    /// Whether two areas share a cell (SDL Core's `Grid::IntersectionExists`: levels, then columns
    /// and rows, each with its span).
    func intersects(_ other: SDLGrid) -> Bool {
        func overlap(_ start: Int32, _ span: Int32?, _ otherStart: Int32, _ otherSpan: Int32?) -> Bool {
            max(start, otherStart) <= min(start + (span ?? 1) - 1, otherStart + (otherSpan ?? 1) - 1)
        }
        return overlap(self.level ?? 0, self.levelspan, other.level ?? 0, other.levelspan)
            && overlap(self.col, self.colspan, other.col, other.colspan)
            && overlap(self.row, self.rowspan, other.row, other.rowspan)
    }
}
