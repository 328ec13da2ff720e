/// A full SDL protocol version, major.minor.patch, as StartService and StartServiceACK carry it in
/// `protocolVersion` (protocol spec 5.4.1 §3.1.3.1) and as the engine negotiates it.
///
/// The frame header carries only the major version (`ProtocolVersion`); features introduced in
/// minor versions are gated on this type (`secondaryTransports`, `authToken`, …). Versions compare
/// lexicographically by (major, minor, patch), and are always written as "X.Y.Z".
public struct SDLVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The major version; the frame header's version nibble for versions 1–15.
    public var major: UInt16
    /// The minor version.
    public var minor: UInt16
    /// The patch version.
    public var patch: UInt16

    /// Creates a version.
    @inlinable
    public init(major: UInt16, minor: UInt16 = 0, patch: UInt16 = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Parses a version leniently, as the session engine reads a peer's `protocolVersion`: one to
    /// three dot-separated decimal components ("5", "5.4", "5.4.1"; missing ones are 0), and
    /// whatever follows the numeric part is dropped ("5.4.1-rc1" and "5.4.1.7" read as 5.4.1).
    /// Returns nil for text that does not start with a digit and for a component above 65,535.
    public init?(parsing text: some StringProtocol) {
        var components: (UInt16, UInt16, UInt16) = (0, 0, 0)
        var bytes = text.utf8.makeIterator()
        var count = 0
        var next = bytes.next()
        while count < 3 {
            guard let first = next, Self.isDigit(first) else {
                // Only the first component is required: "5." or "5.x" keep what came before.
                if count == 0 { return nil }
                break
            }
            var value = UInt16(first &- UInt8(ascii: "0"))
            next = bytes.next()
            while let digit = next, Self.isDigit(digit) {
                let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt16(digit &- UInt8(ascii: "0")))
                if overflow1 || overflow2 { return nil }
                value = sum
                next = bytes.next()
            }
            switch count {
            case 0: components.0 = value
            case 1: components.1 = value
            default: components.2 = value
            }
            count += 1
            guard next == UInt8(ascii: ".") else { break }
            next = bytes.next()
        }
        self.init(major: components.0, minor: components.1, patch: components.2)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Compares (major, minor, patch) in that order.
    @inlinable
    public static func < (lhs: SDLVersion, rhs: SDLVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }

    /// "X.Y.Z", always three components.
    public var description: String { "\(self.major).\(self.minor).\(self.patch)" }

    // Feature gates: the version that introduced each feature (protocol spec 5.4.1, the
    // "Introduced" column of the control payload tables).

    /// 5.0.0: BSON control payloads (`protocolVersion`, `hashId`, `mtu`, `rejectedParams`, the
    /// video parameters).
    public static let bsonControlPayloads = SDLVersion(major: 5, minor: 0, patch: 0)
    /// 5.1.0: secondary transports (RegisterSecondaryTransport, TransportEventUpdate, the
    /// service-transport lists, the RegisterSecondaryTransportNAK `reason`).
    public static let secondaryTransports = SDLVersion(major: 5, minor: 1, patch: 0)
    /// 5.2.0: `authToken` in StartServiceACK (cloud apps).
    public static let authToken = SDLVersion(major: 5, minor: 2, patch: 0)
    /// 5.3.0: `reason` in StartServiceNAK and EndServiceNAK.
    public static let nakReason = SDLVersion(major: 5, minor: 3, patch: 0)
    /// 5.4.0: the vehicle type in StartServiceACK (make, model, modelYear, trim, system software
    /// and hardware versions).
    public static let vehicleType = SDLVersion(major: 5, minor: 4, patch: 0)
    /// 5.4.1: the newest version the spec defines; it changed the security text only, so it
    /// gates no wire feature.
    public static let latestSpecified = SDLVersion(major: 5, minor: 4, patch: 1)
}
