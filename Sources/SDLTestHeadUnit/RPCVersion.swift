import SDLRPC

/// An RPC spec version, `major.minor.patch`, as `syncMsgVersion` carries it: the version a head
/// unit implements, an app declares, or the two negotiate.
///
/// The head unit's version decides which functions it knows (PublishAppService since 5.1,
/// GetInteriorVehicleDataConsent since 6.0, …); the negotiated version decides what it puts in the
/// messages it sends an app (module ids since 6.0, `climateEnable` since 6.0, …).
public struct RPCVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The major version (1…10 in `syncMsgVersion`).
    public var major: Int
    /// The minor version.
    public var minor: Int
    /// The patch version; 0 when the peer leaves it out (before 4.3).
    public var patch: Int

    /// A version from its parts.
    public init(_ major: Int, _ minor: Int, _ patch: Int = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// The version a `syncMsgVersion` names (patch 0 when absent).
    public init(_ version: SDLSyncMsgVersion) {
        self.init(Int(version.majorVersion), Int(version.minorVersion), Int(version.patchVersion ?? 0))
    }

    /// RPC 4.5: remote control (climate and radio), GetSystemCapability.
    public static let v4_5 = RPCVersion(4, 5)
    /// RPC 5.0: seat, audio, light and HMI-settings modules, OnRCStatus.
    public static let v5_0 = RPCVersion(5, 0)
    /// RPC 5.1: app services, capability subscriptions.
    public static let v5_1 = RPCVersion(5, 1)
    /// RPC 6.0: several modules per type with module ids, seat locations, consent and release,
    /// UnpublishAppService and manifest updates.
    public static let v6_0 = RPCVersion(6, 0)
    /// RPC 7.0: driver distraction capability.
    public static let v7_0 = RPCVersion(7, 0)
    /// RPC 8.0: the spec this package is generated from.
    public static let v8_0 = RPCVersion(8, 0)

    /// The versions the simulated head unit is tested as: the ones where remote control or app
    /// services changed, and the newest.
    public static let headUnitVersions: [RPCVersion] = [.v4_5, .v5_0, .v5_1, .v6_0, .v8_0]

    /// `syncMsgVersion` for this version.
    public var syncMsgVersion: SDLSyncMsgVersion {
        SDLSyncMsgVersion(majorVersion: Int32(self.major), minorVersion: Int32(self.minor), patchVersion: Int32(self.patch))
    }

    /// `major.minor.patch`.
    public var description: String { "\(self.major).\(self.minor).\(self.patch)" }

    /// Orders versions by major, then minor, then patch.
    public static func < (lhs: RPCVersion, rhs: RPCVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }
}
