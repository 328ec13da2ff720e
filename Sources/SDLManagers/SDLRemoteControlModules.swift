import SDLRPC

/// The REMOTE_CONTROL capability of a head unit, typed per module: which modules exist, their
/// ids, and each one's capabilities (SDL-0327, "Remote Control Capabilities"). These say what
/// data a module has, for the app's own features; the manager does not use them to refuse a
/// read or a set, only to know the modules and their ids.
///
/// Before RPC 6.0 a head unit names no module ids: each type has one module,
/// ``SDLModuleID/default``. From 6.0 every module has its `moduleInfo.moduleId`; the first module
/// of a type in the capability is its default module.
public struct SDLRemoteControlModules: Sendable {
    /// The capability as the head unit sent it.
    public let capabilities: SDLRemoteControlCapabilities
    /// Every module, in capability order (climate, radio, seat, audio, light, HMI settings), the
    /// default module of each type first among those of its type.
    public let modules: [SDLRCModule]

    /// Typed modules from a REMOTE_CONTROL capability. With `moduleIDs` false (a head unit before
    /// RPC 6.0) `moduleInfo` is ignored and each type has one module, the default one.
    public init(_ capabilities: SDLRemoteControlCapabilities, moduleIDs: Bool = true) {
        self.capabilities = capabilities
        var modules: [SDLRCModule] = []
        func add(_ type: SDLModuleType, _ infos: [SDLModuleInfo?]) {
            for info in infos {
                let id = moduleIDs ? info.map { SDLModuleID($0.moduleId) } ?? .default : .default
                let module = SDLRCModule(type, id)
                if !modules.contains(module) {
                    modules.append(module)
                }
            }
        }
        add(.climate, (capabilities.climateControlCapabilities ?? []).map(\.moduleInfo))
        add(.radio, (capabilities.radioControlCapabilities ?? []).map(\.moduleInfo))
        add(.seat, (capabilities.seatControlCapabilities ?? []).map(\.moduleInfo))
        add(.audio, (capabilities.audioControlCapabilities ?? []).map(\.moduleInfo))
        add(.light, capabilities.lightControlCapabilities.map { [$0.moduleInfo] } ?? [])
        add(.hmiSettings, capabilities.hmiSettingsControlCapabilities.map { [$0.moduleInfo] } ?? [])
        self.modules = modules
        self.moduleIDs = moduleIDs
    }

    /// Whether modules are named by their `moduleInfo.moduleId` (RPC 6.0+).
    let moduleIDs: Bool

    /// The modules of a type, the default one first.
    public func modules(of type: SDLModuleType) -> [SDLRCModule] {
        self.modules.filter { $0.type == type }
    }

    /// The module an id names: ``SDLModuleID/default`` names the type's default module (its first);
    /// nil when the type has no such module.
    public func module(_ type: SDLModuleType, _ id: SDLModuleID = .default) -> SDLRCModule? {
        let candidates = self.modules(of: type)
        guard id != .default else { return candidates.first }
        return candidates.first { $0.id == id }
    }

    /// The capabilities of a climate module.
    public func climate(_ id: SDLModuleID = .default) -> SDLClimateControlCapabilities? {
        self.pick(.climate, id, self.capabilities.climateControlCapabilities, \.moduleInfo)
    }

    /// The capabilities of a radio module.
    public func radio(_ id: SDLModuleID = .default) -> SDLRadioControlCapabilities? {
        self.pick(.radio, id, self.capabilities.radioControlCapabilities, \.moduleInfo)
    }

    /// The capabilities of a seat module.
    public func seat(_ id: SDLModuleID = .default) -> SDLSeatControlCapabilities? {
        self.pick(.seat, id, self.capabilities.seatControlCapabilities, \.moduleInfo)
    }

    /// The capabilities of an audio module.
    public func audio(_ id: SDLModuleID = .default) -> SDLAudioControlCapabilities? {
        self.pick(.audio, id, self.capabilities.audioControlCapabilities, \.moduleInfo)
    }

    /// The capabilities of the light module (the spec has one per vehicle).
    public func light(_ id: SDLModuleID = .default) -> SDLLightControlCapabilities? {
        self.pick(.light, id, self.capabilities.lightControlCapabilities.map { [$0] }, \.moduleInfo)
    }

    /// The capabilities of the HMI-settings module (the spec has one per vehicle).
    public func hmiSettings(_ id: SDLModuleID = .default) -> SDLHMISettingsControlCapabilities? {
        self.pick(.hmiSettings, id, self.capabilities.hmiSettingsControlCapabilities.map { [$0] }, \.moduleInfo)
    }

    /// The remote-control buttons (ButtonPress), each with the module it presses (RPC 6.0+).
    public var buttons: [SDLButtonCapabilities] { self.capabilities.buttonCapabilities ?? [] }

    /// The module that a button press reaches when the app names none: the module of the button's
    /// capability (RPC 6.0+), else the default module of the button's type.
    public func module(pressing button: SDLButtonName) -> SDLRCModule? {
        guard let type = Self.moduleType(of: button) else { return nil }
        if self.moduleIDs, let id = self.buttons.first(where: { $0.name == button })?.moduleInfo?.moduleId,
            let module = self.module(type, SDLModuleID(id))
        {
            return module
        }
        return self.module(type)
    }

    /// The module type a remote-control button belongs to (MOBILE_API.xml ButtonName: climate
    /// buttons since 4.5, radio buttons since 4.5); nil for other buttons.
    public static func moduleType(of button: SDLButtonName) -> SDLModuleType? {
        switch button {
        case .acMax, .ac, .recirculate, .fanUp, .fanDown, .tempUp, .tempDown, .defrostMax, .defrost, .defrostRear,
            .upperVent, .lowerVent:
            return .climate
        case .volumeUp, .volumeDown, .eject, .source, .shuffle, .repeat_:
            return .radio
        default:
            return nil
        }
    }

    private func pick<Capability>(
        _ type: SDLModuleType, _ id: SDLModuleID, _ list: [Capability]?, _ info: KeyPath<Capability, SDLModuleInfo?>
    ) -> Capability? {
        guard let list, let module = self.module(type, id) else { return nil }
        guard self.moduleIDs else { return list.first }
        return list.first { ($0[keyPath: info].map { SDLModuleID($0.moduleId) } ?? .default) == module.id }
    }
}
