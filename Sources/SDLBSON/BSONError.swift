/// The one error type of SDLBSON.
///
/// Every malformed or hostile input is reported as a `BSONError` with a ``Code`` saying what kind
/// of violation it was, the byte offset where it was found (for binary BSON: from the first byte of
/// the outermost document; for JSON text: the UTF-8 byte offset into the text) and a human detail.
///
/// `BSONError` is `Equatable` and `Hashable`, but only ``code`` takes part: two errors of the same
/// kind are equal whatever their offset and detail, so `#expect(throws: error)` and `catch`
/// patterns match the kind of violation; compare ``offset`` separately where it matters. (The
/// shape of swift-asn1's `ASN1Error`.)
public struct BSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of violation an error reports.
    ///
    /// An open set: codes are the static members below and only SDLBSON can make new ones, so
    /// adding a code is not a breaking change and no other module can mint one.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case truncated
            case invalidDocumentLength
            case invalidDocumentTerminator
            case trailingBytes
            case unterminatedCString
            case invalidStringLength
            case invalidUTF8
            case invalidBoolean
            case unknownElementType
            case nestingTooDeep
            case invalidBinaryLength
            case invalidCodeWithScopeLength
            case invalidKey
            case duplicateKey
            case invalidJSON
            case invalidExtendedJSON
            case invalidDecimal128
        }

        private let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// A stable, machine-readable name of the code (e.g. `"invalidUTF8"`), as the `sdl` tool
        /// prints it.
        public var name: String { self.backing.rawValue }

        /// The stable name of the code.
        public var description: String { self.name }

        /// Fewer bytes than a value or a declared length needs.
        public static let truncated = Code(.truncated)
        /// A document's declared int32 length is below 5, or disagrees with the buffer or with
        /// its enclosing document (bsonspec.org: `document ::= int32 e_list "\x00"`).
        public static let invalidDocumentLength = Code(.invalidDocumentLength)
        /// A document does not end with the NUL byte its length promises, or ends early.
        public static let invalidDocumentTerminator = Code(.invalidDocumentTerminator)
        /// Bytes follow the outermost document inside the buffer handed to the reader.
        public static let trailingBytes = Code(.trailingBytes)
        /// A key or another cstring has no NUL terminator inside its bounds.
        public static let unterminatedCString = Code(.unterminatedCString)
        /// A string's declared length is below 1, exceeds its bounds, or its last byte is not NUL.
        public static let invalidStringLength = Code(.invalidStringLength)
        /// Text that must be UTF-8 (keys, strings, code, symbols, regex parts) is not.
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// A boolean byte other than 0x00 or 0x01.
        public static let invalidBoolean = Code(.invalidBoolean)
        /// An element type byte that bsonspec.org does not define.
        public static let unknownElementType = Code(.unknownElementType)
        /// Documents or JSON containers nest deeper than ``BSONLimits/effectiveNestingDepth``.
        public static let nestingTooDeep = Code(.nestingTooDeep)
        /// A binary length is negative or exceeds its bounds, or an old binary (subtype 0x02)
        /// inner length disagrees with the outer one.
        public static let invalidBinaryLength = Code(.invalidBinaryLength)
        /// A code-with-scope total length disagrees with its string and scope document.
        public static let invalidCodeWithScopeLength = Code(.invalidCodeWithScopeLength)
        /// A key or regular-expression part contains a NUL byte, which BSON cannot represent.
        public static let invalidKey = Code(.invalidKey)
        /// A key appears twice in one document (or JSON object) where a typed value is built
        /// from it; the offset is that of the second occurrence. bsonspec.org is silent on
        /// repeated keys and RFC 8259 leaves their meaning undefined, so readers that must pick
        /// one value refuse them instead (see ``BSONDocument`` for which APIs do).
        public static let duplicateKey = Code(.duplicateKey)
        /// Text that is not JSON per RFC 8259.
        public static let invalidJSON = Code(.invalidJSON)
        /// JSON that is well-formed but not valid Extended JSON v2 (e.g. a bad `$oid`).
        public static let invalidExtendedJSON = Code(.invalidExtendedJSON)
        /// A string that is not a Decimal128 value representable without rounding.
        public static let invalidDecimal128 = Code(.invalidDecimal128)
    }

    /// What kind of violation this is; the only property equality and hashing consider.
    public private(set) var code: Code
    /// Byte offset of the violation in the input, when the input has one.
    public internal(set) var offset: Int?
    /// A human-readable explanation for logs and error messages.
    public internal(set) var detail: String

    /// Creates an error; public so that layers above can report BSON-level violations they find
    /// (with one of the codes above: only SDLBSON makes codes).
    public init(_ code: Code, offset: Int?, _ detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    /// Whether the errors have the same code; offset and detail are not compared.
    public static func == (lhs: BSONError, rhs: BSONError) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the code alone, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
    }

    /// `code at offset N: detail`, one line.
    public var description: String {
        if let offset { return "BSONError.\(code) at offset \(offset): \(detail)" }
        return "BSONError.\(code): \(detail)"
    }
}

/// Resource limits applied to untrusted input (ARCHITECTURE.md §7: every limit is a named value).
public struct BSONLimits: Hashable, Sendable {
    /// The deepest nesting accepted, counting the outermost document (or JSON value) as depth 1;
    /// every embedded document, array or code-with-scope scope adds one. Default 100.
    ///
    /// Bounding depth keeps recursive readers off the end of the stack on a nesting bomb.
    /// Readers enforce ``effectiveNestingDepth``: this value, but never more than
    /// ``nestingDepthCeiling``, so a careless `Int.max` cannot switch the protection off.
    public var maximumNestingDepth: Int

    /// The largest document accepted, in bytes. Default 16 MiB (MongoDB's own cap, well above
    /// SDL's largest RPCs of about 16 KB). ``NIOCore/ByteBuffer/readBSONDocument(limits:)``
    /// rejects a larger declared length at once instead of waiting for that many bytes.
    public var maximumDocumentSize: Int

    /// Creates limits; the defaults are what the SDL control and RPC payloads comfortably fit.
    public init(maximumNestingDepth: Int = 100, maximumDocumentSize: Int = 16 * 1024 * 1024) {
        self.maximumNestingDepth = maximumNestingDepth
        self.maximumDocumentSize = maximumDocumentSize
    }

    /// The default limits (depth 100, 16 MiB).
    public static let `default` = BSONLimits()

    /// The deepest nesting any reader accepts, whatever ``maximumNestingDepth`` asks for: 128.
    ///
    /// Every recursive reader (the binary validator, the JSON and Extended JSON parsers, the
    /// Codable decoder) spends stack per level, and a secondary thread may have as little as
    /// 512 KiB (Darwin's default). Measured on x86_64 Linux, a level costs up to about 1.3 KiB in
    /// a release build (the Codable decoder; the validator about 1 KiB) and 3 KiB in a debug
    /// build (Extended JSON input), so 1,000 levels would not fit; 128 uses at most about
    /// 400 KiB even in debug (a test runs every reader at this depth on a 512 KiB thread), and no
    /// SDL payload nests beyond about 10.
    public static let nestingDepthCeiling = 128

    /// The depth readers enforce: ``maximumNestingDepth`` clamped to ``nestingDepthCeiling``.
    public var effectiveNestingDepth: Int { min(self.maximumNestingDepth, Self.nestingDepthCeiling) }
}
