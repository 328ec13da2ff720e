import Testing

/// One file of MongoDB's BSON corpus in `../shared/bson-corpus` (the corpus README's schema).
/// Fields a file or case may leave out are optionals; a missing required field fails the decoding,
/// naming the file and the field.
public struct BSONCorpusFile: Decodable, Sendable {
    /// The type the file tests, in words.
    public var description: String
    /// The type byte, as `0x13`.
    public var bsonType: String
    /// The key the test documents hold the value under.
    public var testKey: String?
    /// Whether the type is deprecated.
    public var deprecated: Bool?
    /// Documents every reader accepts.
    public var valid: [Valid]?
    /// Bytes every reader refuses.
    public var decodeErrors: [DecodeError]?
    /// Texts every Extended JSON (or, for decimal128 files, Decimal128 string) parser refuses.
    public var parseErrors: [ParseError]?

    /// A valid case: a document in its canonical and other forms.
    public struct Valid: Decodable, Sendable {
        /// The case, in words.
        public var description: String
        /// The canonical bytes, hex.
        public var canonicalBSON: String
        /// The canonical Extended JSON.
        public var canonicalExtJSON: String
        /// The relaxed Extended JSON, where it differs from the canonical.
        public var relaxedExtJSON: String?
        /// Non-canonical bytes that read as the same document, hex.
        public var degenerateBSON: String?
        /// Non-canonical Extended JSON that parses to the same document.
        public var degenerateExtJSON: String?
        /// The bytes with deprecated types replaced, for drivers that replace them, hex.
        public var convertedBSON: String?
        /// The Extended JSON with deprecated types replaced.
        public var convertedExtJSON: String?
        /// Whether the Extended JSON loses information (it then need not round-trip to the bytes).
        public var lossy: Bool?

        enum CodingKeys: String, CodingKey {
            case description, lossy
            case canonicalBSON = "canonical_bson"
            case canonicalExtJSON = "canonical_extjson"
            case relaxedExtJSON = "relaxed_extjson"
            case degenerateBSON = "degenerate_bson"
            case degenerateExtJSON = "degenerate_extjson"
            case convertedBSON = "converted_bson"
            case convertedExtJSON = "converted_extjson"
        }
    }

    /// Bytes a reader must refuse.
    public struct DecodeError: Decodable, Sendable {
        /// The case, in words.
        public var description: String
        /// The bytes, hex.
        public var bson: String
    }

    /// Text a parser must refuse.
    public struct ParseError: Decodable, Sendable {
        /// The case, in words.
        public var description: String
        /// The text.
        public var string: String
    }

    enum CodingKeys: String, CodingKey {
        case description, deprecated, valid, decodeErrors, parseErrors
        case bsonType = "bson_type"
        case testKey = "test_key"
    }
}

extension SharedData {
    /// Every file of `../shared/bson-corpus`, by file name, in name order; fails the calling test
    /// when the folder is missing, holds no JSON file, or a file does not decode.
    public static func bsonCorpus(
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [(name: String, file: BSONCorpusFile)] {
        try self.fileNames(in: "bson-corpus", endingWith: ".json", sourceLocation: sourceLocation).map { name in
            (name, try self.decode(BSONCorpusFile.self, from: "bson-corpus/\(name)", sourceLocation: sourceLocation))
        }
    }
}
