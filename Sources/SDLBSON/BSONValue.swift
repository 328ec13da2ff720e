import NIOCore

/// Any BSON value, one case per element type of bsonspec.org 1.1: the generic, owned tree.
///
/// The tree is for generic work (Extended JSON, tools, tests, dynamic payloads). Hot paths read
/// with ``BSONDocument``/``BSONElement`` and write with ``BSONDocumentWriter`` instead, which
/// neither build nor copy a tree.
public indirect enum BSONValue: Hashable, Sendable {
    /// 0x01
    case double(Double)
    /// 0x02
    case string(String)
    /// 0x03
    case document(BSONOrderedDocument)
    /// 0x04
    case array([BSONValue])
    /// 0x05
    case binary(BSONBinary)
    /// 0x06 (deprecated)
    case undefined
    /// 0x07
    case objectID(BSONObjectID)
    /// 0x08
    case bool(Bool)
    /// 0x09
    case datetime(BSONDateTime)
    /// 0x0A
    case null
    /// 0x0B
    case regularExpression(BSONRegularExpression)
    /// 0x0C (deprecated)
    case dbPointer(BSONDBPointer)
    /// 0x0D
    case javascript(String)
    /// 0x0E (deprecated)
    case symbol(String)
    /// 0x0F (deprecated)
    case javascriptWithScope(BSONCodeWithScope)
    /// 0x10
    case int32(Int32)
    /// 0x11
    case timestamp(BSONTimestamp)
    /// 0x12
    case int64(Int64)
    /// 0x13
    case decimal128(BSONDecimal128)
    /// 0xFF
    case minKey
    /// 0x7F
    case maxKey

    /// The element type this value is written as.
    public var type: BSONType {
        switch self {
        case .double: return .double
        case .string: return .string
        case .document: return .document
        case .array: return .array
        case .binary: return .binary
        case .undefined: return .undefined
        case .objectID: return .objectID
        case .bool: return .bool
        case .datetime: return .datetime
        case .null: return .null
        case .regularExpression: return .regularExpression
        case .dbPointer: return .dbPointer
        case .javascript: return .javascript
        case .symbol: return .symbol
        case .javascriptWithScope: return .javascriptWithScope
        case .int32: return .int32
        case .timestamp: return .timestamp
        case .int64: return .int64
        case .decimal128: return .decimal128
        case .minKey: return .minKey
        case .maxKey: return .maxKey
        }
    }

    /// Checks what the writer cannot represent (NUL in keys and regex parts), recursively.
    func _checkWritable(path: String) throws(BSONError) {
        switch self {
        case .document(let d): try d._checkWritable(path: path)
        case .array(let items):
            for item in items { try item._checkWritable(path: path) }
        case .regularExpression(let r):
            if r.pattern.utf8.contains(0) || r.options.utf8.contains(0) {
                throw BSONError(.invalidKey, offset: nil, "regular expression at \(path) contains a NUL byte")
            }
        case .javascriptWithScope(let cws): try cws.scope._checkWritable(path: path)
        default: break
        }
    }
}

/// An owned BSON document: ordered key/value pairs, duplicates allowed (as on the wire, and as
/// ``BSONDocument`` keeps them). A tree with a repeated key encodes, but every reader that builds
/// a typed value refuses the result (see ``BSONDocument``).
public struct BSONOrderedDocument: Hashable, Sendable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// One key/value pair.
    public struct Field: Hashable, Sendable {
        /// The key.
        public var key: String
        /// The value.
        public var value: BSONValue

        /// Creates a field.
        public init(key: String, value: BSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The fields in order.
    public var fields: [Field]

    /// Creates a document from fields in order.
    public init(fields: [Field] = []) {
        self.fields = fields
    }

    /// Creates a document from a literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, BSONValue)...) {
        self.fields = elements.map { Field(key: $0.0, value: $0.1) }
    }

    /// Materialises a validated document view (cannot fail: the view is validated).
    public init(_ document: BSONDocument) {
        self.fields = document.map { Field(key: $0.key, value: $0.value) }
    }

    /// Start of the fields.
    public var startIndex: Int { self.fields.startIndex }
    /// End of the fields.
    public var endIndex: Int { self.fields.endIndex }
    /// The field at `position`.
    public subscript(position: Int) -> Field { self.fields[position] }

    /// The value of the first field with `key`; setting replaces it in place, or appends when
    /// absent; setting nil removes every field with that key.
    public subscript(key: String) -> BSONValue? {
        get { self.fields.first(where: { $0.key == key })?.value }
        set {
            if let newValue {
                if let i = self.fields.firstIndex(where: { $0.key == key }) {
                    self.fields[i].value = newValue
                } else {
                    self.fields.append(Field(key: key, value: newValue))
                }
            } else {
                self.fields.removeAll { $0.key == key }
            }
        }
    }

    /// Appends a field (a key may repeat, as BSON allows).
    public mutating func append(_ key: String, _ value: BSONValue) {
        self.fields.append(Field(key: key, value: value))
    }

    func _checkWritable(path: String) throws(BSONError) {
        for field in self.fields {
            if field.key.utf8.contains(0) {
                throw BSONError(.invalidKey, offset: nil, "key under \(path.isEmpty ? "the top level" : path) contains a NUL byte")
            }
            try field.value._checkWritable(path: path.isEmpty ? field.key : path + "." + field.key)
        }
    }

    /// Appends the document's BSON bytes to `buffer`.
    ///
    /// - Throws: ``BSONError/Code/invalidKey`` if a key or regular expression contains NUL
    ///   (checked before anything is written).
    public func write(to buffer: inout ByteBuffer) throws(BSONError) {
        try self._checkWritable(path: "")
        self._write(into: &buffer)
    }

    /// The document encoded as a validated view.
    public func encoded() throws(BSONError) -> BSONDocument {
        var buffer = ByteBuffer()
        try self.write(to: &buffer)
        return BSONDocument(_unchecked: buffer)
    }

    func _write(into buffer: inout ByteBuffer) {
        buffer.writeBSONDocument { writer in
            for field in self.fields { writer.append(field.key, field.value) }
        }
    }
}
