/// The key a parameter is written under: a parameter name known at compile time, or
/// `RPCKey.element` for the next element of an array.
///
/// Names are `StaticString`s so writing one copies bytes and allocates nothing. A BSON writer
/// numbers array elements itself ("0", "1", …); JSON writes no key for them.
public struct RPCKey: Sendable, ExpressibleByStringLiteral {
    /// The parameter name; empty for array elements.
    public let name: StaticString
    /// True for `RPCKey.element`.
    public let isElement: Bool

    @inlinable
    public init(stringLiteral value: StaticString) {
        self.name = value
        self.isElement = false
    }

    @inlinable
    public init(unicodeScalarLiteral value: StaticString) {
        self.init(stringLiteral: value)
    }

    @inlinable
    public init(extendedGraphemeClusterLiteral value: StaticString) {
        self.init(stringLiteral: value)
    }

    @inlinable
    init(element: Void) {
        self.name = ""
        self.isElement = true
    }

    /// The next element of the array being written.
    public static let element = RPCKey(element: ())
}

/// The hash decoders compute over each parameter name so that generated code finds a name with a
/// `switch` on an integer instead of comparing strings: 32-bit FNV-1a over the UTF-8 bytes.
/// sdl-rpc-gen computes the same function (its `KeyHash`); a match is always confirmed by comparing
/// the bytes, so collisions cost time, never correctness.
public enum RPCKeyHash {
    /// The hash of no bytes.
    public static let offsetBasis: UInt32 = 2_166_136_261
    /// The multiplier applied after each byte.
    public static let prime: UInt32 = 16_777_619

    /// Adds one byte to a running hash.
    @inlinable
    public static func combine(_ hash: UInt32, _ byte: UInt8) -> UInt32 {
        (hash ^ UInt32(byte)) &* Self.prime
    }

    /// The hash of a byte sequence.
    @inlinable
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var hash = Self.offsetBasis
        for byte in bytes {
            hash = Self.combine(hash, byte)
        }
        return hash
    }
}
