import SDLRPC

/// A remote-control module id (RPC 6.0+ `moduleId`), or ``default``: the default module of a type,
/// which the wire names by leaving `moduleId` out, and the only module of a type before RPC 6.0
/// (SDL-0327, "Default Module IDs").
public struct SDLModuleID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The id as the wire carries it; nil for ``default``.
    public let wireValue: String?

    /// A module id the head unit gave (`moduleInfo.moduleId`).
    public init(_ id: String) { self.wireValue = id }

    /// A module id the head unit gave.
    public init(stringLiteral id: String) { self.wireValue = id }

    private init(wire: String?) { self.wireValue = wire }

    /// The wire's `moduleId` as an id: absent means the default module.
    init(wireValue: String?) { self.init(wire: wireValue) }

    /// The default module of a type.
    public static let `default` = SDLModuleID(wire: nil)

    /// The id, or `SDL_DEFAULT_MODULE` for the default module (the name SDL-0327 gives it).
    public var description: String { self.wireValue ?? "SDL_DEFAULT_MODULE" }
}

/// One remote-control module: its type and id. The managers key their caches, consent and
/// allocation lists by it; the id is the one the head unit's capability gives the module (RPC
/// 6.0+), or ``SDLModuleID/default`` when the head unit names none (before 6.0).
public struct SDLRCModule: Hashable, Sendable, CustomStringConvertible {
    /// CLIMATE, RADIO, SEAT, AUDIO, LIGHT or HMI_SETTINGS.
    public var type: SDLModuleType
    /// The module's id.
    public var id: SDLModuleID

    /// A module from its type and id.
    public init(_ type: SDLModuleType, _ id: SDLModuleID = .default) {
        self.type = type
        self.id = id
    }

    /// `CLIMATE/climate.front`.
    public var description: String { "\(self.type.wireName)/\(self.id)" }
}
