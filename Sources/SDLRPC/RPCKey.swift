import SDLBSON

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
/// `switch` on an integer instead of comparing strings: the UTF-8 length in the high 8 bits, then
/// the first, middle and last bytes, packed into 32 bits. It costs the same for any length and
/// needs no pass over the key. It is SDLBSON's `_BSONKeyHash`, the one runtime implementation, which
/// the JSON and BSON readers both use; sdl-rpc-gen computes the same function at generation time
/// (its `KeyHash`) for the constants it emits. A match is always confirmed by comparing the bytes,
/// so two names with one hash cost a comparison, never correctness.
public enum RPCKeyHash {
    /// The hash of a key's UTF-8 bytes.
    @inlinable
    public static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        _BSONKeyHash.hash(UnsafeRawBufferPointer(bytes))
    }

    /// The hash of a key given as bytes of any collection.
    public static func hash<Bytes: Collection>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        let array = Array(bytes)
        return array.withUnsafeBufferPointer { self.hash($0) }
    }
}
