// TEMPORARY: replaced by SDLProtocol's SDLVersion when the frames branch lands.
public struct SDLVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public var patch: Int
    public init(_ major: Int, _ minor: Int, _ patch: Int) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }
    public init?(parsing text: String) {
        var parts: [Int] = []
        var current = 0
        var digits = 0
        for byte in text.utf8 {
            if byte >= 48 && byte <= 57 {
                current = current * 10 + Int(byte - 48)
                digits += 1
                if current > 65535 { return nil }
            } else if byte == 46 && digits > 0 && parts.count < 2 {
                parts.append(current)
                current = 0
                digits = 0
            } else {
                break
            }
        }
        guard digits > 0 || !parts.isEmpty else { return nil }
        if digits > 0 { parts.append(current) }
        while parts.count < 3 { parts.append(0) }
        self.init(parts[0], parts[1], parts[2])
    }
    public static func < (lhs: SDLVersion, rhs: SDLVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }
    public var description: String { "\(major).\(minor).\(patch)" }
}
extension SDLVersion {
    static let multipleTransports = SDLVersion(5, 1, 0)
    static let reasonParameter = SDLVersion(5, 3, 0)
    static let vehicleInfo = SDLVersion(5, 4, 0)
}
