/// The element type byte of a BSON element (bsonspec.org 1.1, `element ::= type e_name value`).
///
/// An open struct, like every wire value of this package, so that a type byte can be named and
/// reported even when it is not one of bsonspec.org's; the reader still rejects unknown ones.
public struct BSONType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type byte.
    public let rawValue: UInt8

    /// Wraps a type byte.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01, 64-bit IEEE 754 binary floating point.
    @inlinable public static var double: BSONType { BSONType(rawValue: 0x01) }
    /// 0x02, UTF-8 string.
    @inlinable public static var string: BSONType { BSONType(rawValue: 0x02) }
    /// 0x03, embedded document.
    @inlinable public static var document: BSONType { BSONType(rawValue: 0x03) }
    /// 0x04, array (a document with keys "0", "1", …).
    @inlinable public static var array: BSONType { BSONType(rawValue: 0x04) }
    /// 0x05, binary data with a subtype.
    @inlinable public static var binary: BSONType { BSONType(rawValue: 0x05) }
    /// 0x06, undefined (deprecated).
    @inlinable public static var undefined: BSONType { BSONType(rawValue: 0x06) }
    /// 0x07, 12-byte ObjectId.
    @inlinable public static var objectID: BSONType { BSONType(rawValue: 0x07) }
    /// 0x08, boolean.
    @inlinable public static var bool: BSONType { BSONType(rawValue: 0x08) }
    /// 0x09, UTC datetime in milliseconds since the Unix epoch.
    @inlinable public static var datetime: BSONType { BSONType(rawValue: 0x09) }
    /// 0x0A, null.
    @inlinable public static var null: BSONType { BSONType(rawValue: 0x0A) }
    /// 0x0B, regular expression (two cstrings).
    @inlinable public static var regularExpression: BSONType { BSONType(rawValue: 0x0B) }
    /// 0x0C, DBPointer (deprecated).
    @inlinable public static var dbPointer: BSONType { BSONType(rawValue: 0x0C) }
    /// 0x0D, JavaScript code.
    @inlinable public static var javascript: BSONType { BSONType(rawValue: 0x0D) }
    /// 0x0E, symbol (deprecated).
    @inlinable public static var symbol: BSONType { BSONType(rawValue: 0x0E) }
    /// 0x0F, JavaScript code with scope (deprecated).
    @inlinable public static var javascriptWithScope: BSONType { BSONType(rawValue: 0x0F) }
    /// 0x10, 32-bit signed integer.
    @inlinable public static var int32: BSONType { BSONType(rawValue: 0x10) }
    /// 0x11, timestamp (increment, seconds).
    @inlinable public static var timestamp: BSONType { BSONType(rawValue: 0x11) }
    /// 0x12, 64-bit signed integer.
    @inlinable public static var int64: BSONType { BSONType(rawValue: 0x12) }
    /// 0x13, IEEE 754-2008 decimal128.
    @inlinable public static var decimal128: BSONType { BSONType(rawValue: 0x13) }
    /// 0xFF, min key.
    @inlinable public static var minKey: BSONType { BSONType(rawValue: 0xFF) }
    /// 0x7F, max key.
    @inlinable public static var maxKey: BSONType { BSONType(rawValue: 0x7F) }

    /// The type's name as bsonspec.org writes it, or its hex byte when unknown.
    public var description: String {
        switch self.rawValue {
        case 0x01: return "double"
        case 0x02: return "string"
        case 0x03: return "document"
        case 0x04: return "array"
        case 0x05: return "binary"
        case 0x06: return "undefined"
        case 0x07: return "objectID"
        case 0x08: return "bool"
        case 0x09: return "datetime"
        case 0x0A: return "null"
        case 0x0B: return "regularExpression"
        case 0x0C: return "dbPointer"
        case 0x0D: return "javascript"
        case 0x0E: return "symbol"
        case 0x0F: return "javascriptWithScope"
        case 0x10: return "int32"
        case 0x11: return "timestamp"
        case 0x12: return "int64"
        case 0x13: return "decimal128"
        case 0xFF: return "minKey"
        case 0x7F: return "maxKey"
        default: return "0x" + hexByte(self.rawValue)
        }
    }
}

/// Binary data with its subtype (bsonspec.org `binary ::= int32 subtype (byte*)`).
///
/// The library imports no Foundation, so this is the binary type `Codable` users reach for
/// instead of `Data`; `[UInt8]` also encodes as generic binary.
public struct BSONBinary: Hashable, Sendable {
    /// The binary subtype byte. Open: user-defined subtypes 0x80–0xFF are legal.
    public struct Subtype: RawRepresentable, Hashable, Sendable {
        /// The subtype byte.
        public let rawValue: UInt8
        /// Wraps a subtype byte.
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// 0x00, generic binary.
        public static let generic = Subtype(rawValue: 0x00)
        /// 0x01, function.
        public static let function = Subtype(rawValue: 0x01)
        /// 0x02, old binary: the payload carries its own int32 length in front (deprecated).
        /// The writer adds and the reader checks and strips that inner length.
        public static let binaryOld = Subtype(rawValue: 0x02)
        /// 0x03, old UUID (deprecated).
        public static let uuidOld = Subtype(rawValue: 0x03)
        /// 0x04, UUID.
        public static let uuid = Subtype(rawValue: 0x04)
        /// 0x05, MD5.
        public static let md5 = Subtype(rawValue: 0x05)
        /// 0x06, encrypted BSON value.
        public static let encrypted = Subtype(rawValue: 0x06)
        /// 0x07, compressed BSON column.
        public static let column = Subtype(rawValue: 0x07)
        /// 0x08, sensitive.
        public static let sensitive = Subtype(rawValue: 0x08)
        /// 0x09, vector.
        public static let vector = Subtype(rawValue: 0x09)
        /// 0x80, first user-defined subtype.
        public static let userDefined = Subtype(rawValue: 0x80)
    }

    /// The subtype.
    public var subtype: Subtype
    /// The payload, without the old-binary inner length for subtype 0x02.
    public var bytes: [UInt8]

    /// Creates a binary value.
    public init(subtype: Subtype = .generic, bytes: [UInt8]) {
        self.subtype = subtype
        self.bytes = bytes
    }
}

/// A 12-byte ObjectId (bsonspec.org type 0x07).
public struct BSONObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The 12 bytes, big-endian as on the wire, in two words so the value stays inline.
    @usableFromInline internal var high: UInt64
    @usableFromInline internal var low: UInt32

    /// Creates an ObjectId from exactly 12 bytes; returns nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 12 else { return nil }
        var h: UInt64 = 0
        var l: UInt32 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt32(b) }
        }
        self.high = h
        self.low = l
    }

    @inlinable
    internal init(high: UInt64, low: UInt32) {
        self.high = high
        self.low = low
    }

    /// Parses 24 hex digits (either case), as Extended JSON's `$oid` carries them.
    public init?(hexString: String) {
        let utf8 = Array(hexString.utf8)
        guard utf8.count == 24 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(12)
        var i = 0
        while i < 24 {
            guard let hi = hexValue(utf8[i]), let lo = hexValue(utf8[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        self.init(bytes: bytes)
    }

    /// The 12 bytes in wire order.
    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(12)
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: high >> UInt64(s))) }
        for s in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: low >> UInt32(s))) }
        return out
    }

    /// 24 lowercase hex digits, as Extended JSON writes `$oid`.
    public var description: String {
        var s = ""
        s.reserveCapacity(24)
        for b in self.bytes { s += hexByte(b) }
        return s
    }
}

/// A UTC datetime: signed milliseconds since the Unix epoch (bsonspec.org type 0x09).
public struct BSONDateTime: Hashable, Sendable, Comparable {
    /// Milliseconds since 1970-01-01T00:00:00Z; negative before it.
    public var millisecondsSinceEpoch: Int64

    /// Wraps a millisecond count.
    @inlinable
    public init(millisecondsSinceEpoch: Int64) { self.millisecondsSinceEpoch = millisecondsSinceEpoch }

    /// Orders by time.
    public static func < (lhs: BSONDateTime, rhs: BSONDateTime) -> Bool {
        lhs.millisecondsSinceEpoch < rhs.millisecondsSinceEpoch
    }
}

/// A regular expression: pattern and options, both cstrings (bsonspec.org type 0x0B).
public struct BSONRegularExpression: Hashable, Sendable {
    /// The pattern; must not contain NUL.
    public var pattern: String
    /// The option letters; must not contain NUL. The writer stores them as given: sort them
    /// (``sortedOptions``) for the canonical form the Extended JSON spec asks for.
    public var options: String

    /// Creates a regular expression.
    public init(pattern: String, options: String) {
        self.pattern = pattern
        self.options = options
    }

    /// The options in ascending order, as the Extended JSON spec requires for BSON produced from
    /// `$regularExpression`. Sorted by Unicode scalar, which is byte order for the ASCII option
    /// letters and keeps any other character whole (sorting its UTF-8 bytes would break it).
    public var sortedOptions: String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: self.options.unicodeScalars.sorted())
        return String(scalars)
    }
}

/// A DBPointer: a namespace string and an ObjectId (bsonspec.org type 0x0C, deprecated).
public struct BSONDBPointer: Hashable, Sendable {
    /// The namespace (`$ref` in Extended JSON).
    public var ref: String
    /// The ObjectId (`$id` in Extended JSON).
    public var id: BSONObjectID

    /// Creates a DBPointer.
    public init(ref: String, id: BSONObjectID) {
        self.ref = ref
        self.id = id
    }
}

/// A MongoDB internal timestamp (bsonspec.org type 0x11): stored as one uint64 whose low word
/// is the increment and high word the seconds.
public struct BSONTimestamp: Hashable, Sendable {
    /// Seconds since the Unix epoch (high 32 bits on the wire).
    public var timestamp: UInt32
    /// Ordinal within the second (low 32 bits on the wire).
    public var increment: UInt32

    /// Creates a timestamp.
    @inlinable
    public init(timestamp: UInt32, increment: UInt32) {
        self.timestamp = timestamp
        self.increment = increment
    }
}

/// JavaScript code with a scope document (bsonspec.org type 0x0F, deprecated).
public struct BSONCodeWithScope: Hashable, Sendable {
    /// The code.
    public var code: String
    /// The scope document.
    public var scope: BSONOrderedDocument

    /// Creates code with scope.
    public init(code: String, scope: BSONOrderedDocument) {
        self.code = code
        self.scope = scope
    }
}

@usableFromInline
internal func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
    default: return nil
    }
}

internal func hexByte(_ b: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
    return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
}
