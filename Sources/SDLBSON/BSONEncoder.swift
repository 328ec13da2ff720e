import NIOCore

/// Encodes `Encodable` values as BSON documents.
///
/// Mapping: an integer maps to int32 when its Swift type is 32-bit (or narrower) and the value
/// fits, to int64 otherwise, so the wire width follows the declared type, not the value:
/// `Int8`, `Int16`, `Int32`, `UInt8`, `UInt16` → int32; `UInt32` → int32 up to `Int32.max`,
/// int64 above; `Int`, `Int64`, `UInt`, `UInt64` → int64 (a `UInt`/`UInt64` above `Int64.max`
/// is an `EncodingError.invalidValue`); `Double`, `Float` → double; `Bool` → bool; `String` →
/// string; `[UInt8]` and ``BSONBinary`` → binary; ``BSONObjectID``, ``BSONDateTime``,
/// ``BSONDecimal128``, ``BSONTimestamp`` → their BSON types; nil optionals are
/// omitted (an explicit `encodeNil` writes null); structs and `[String: T]` → documents;
/// arrays → arrays. The top-level value must encode as a keyed container (a document).
public struct BSONEncoder: Sendable {
    /// Contextual information for custom `encode(to:)` implementations.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Creates an encoder.
    public init() {}

    /// Encodes `value` as a validated document.
    ///
    /// - Throws: `EncodingError.invalidValue` (with the coding path) for values BSON cannot
    ///   hold: a top level that is not a document, a `UInt64` above `Int64.max`, a key with NUL.
    public func encode<T: Encodable>(_ value: T) throws -> BSONDocument {
        var buffer = ByteBuffer()
        try self.encode(value, into: &buffer)
        return BSONDocument(_unchecked: buffer)
    }

    /// Appends `value` as one BSON document to `buffer` (nothing is written if encoding fails).
    public func encode<T: Encodable>(_ value: T, into buffer: inout ByteBuffer) throws {
        let root = _EncodingNode()
        let encoder = _BSONEncoderImpl(node: root, codingPath: [], userInfo: self.userInfo)
        try encoder.encodeValue(value)
        guard case .document(let document)? = root.materialize() else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(codingPath: [], debugDescription: "the top-level value must encode as a BSON document")
            )
        }
        do {
            try document.write(to: &buffer)
        } catch {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(codingPath: [], debugDescription: error.detail, underlyingError: error)
            )
        }
    }

    /// Encodes `value` and returns the document's bytes.
    public func encodeBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        try self.encode(value).bytes
    }
}

/// A node of the tree the encoder builds; reference-typed so that containers handed out
/// earlier can still be filled by the caller.
final class _EncodingNode {
    enum Content {
        case empty
        case value(BSONValue)
        case keyed([(String, _EncodingNode)])
        case unkeyed([_EncodingNode])
    }
    var content: Content = .empty

    func materialize() -> BSONValue? {
        switch self.content {
        case .empty: return nil
        case .value(let v): return v
        case .keyed(let fields):
            var document = BSONOrderedDocument()
            for (key, node) in fields {
                if let v = node.materialize() { document.append(key, v) }
            }
            return .document(document)
        case .unkeyed(let items):
            return .array(items.map { $0.materialize() ?? .null })
        }
    }
}

struct _BSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }
    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
    static let `super` = _BSONKey(stringValue: "super")
}

struct _BSONEncoderImpl: Encoder {
    let node: _EncodingNode
    let codingPath: [any CodingKey]
    let userInfoStorage: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { self.userInfoStorage }

    init(node: _EncodingNode, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.node = node
        self.codingPath = codingPath
        self.userInfoStorage = userInfo
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .keyed = self.node.content {} else { self.node.content = .keyed([]) }
        return KeyedEncodingContainer(_KeyedEncoder<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .unkeyed = self.node.content {} else { self.node.content = .unkeyed([]) }
        return _UnkeyedEncoder(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        _SingleValueEncoder(encoder: self)
    }

    func child(_ node: _EncodingNode, _ key: any CodingKey) -> _BSONEncoderImpl {
        _BSONEncoderImpl(node: node, codingPath: self.codingPath + [key], userInfo: self.userInfoStorage)
    }

    /// int64, or a typed error for an unsigned value above `Int64.max` (BSON has no uint64).
    func int64<T: BinaryInteger>(_ value: T) throws -> BSONValue {
        guard let v = Int64(exactly: value) else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(codingPath: self.codingPath, debugDescription: "\(value) does not fit in a BSON int64")
            )
        }
        return .int64(v)
    }

    /// The leaf mapping; nil when `value` needs its own `encode(to:)`.
    func leaf<T: Encodable>(_ value: T) throws -> BSONValue? {
        // By type, not by cast: an empty [String] would cast to [UInt8] and become binary.
        if T.self == [UInt8].self {
            return .binary(BSONBinary(subtype: .generic, bytes: value as! [UInt8]))
        }
        switch value {
        case let v as String: return .string(v)
        case let v as Bool: return .bool(v)
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as Int: return .int64(Int64(v))
        case let v as Int8: return .int32(Int32(v))
        case let v as Int16: return .int32(Int32(v))
        case let v as Int32: return .int32(v)
        case let v as Int64: return .int64(v)
        case let v as UInt: return try self.int64(v)
        case let v as UInt8: return .int32(Int32(v))
        case let v as UInt16: return .int32(Int32(v))
        // A 32-bit type, but int32 cannot hold its upper half.
        case let v as UInt32: return Int32(exactly: v).map(BSONValue.int32) ?? .int64(Int64(v))
        case let v as UInt64: return try self.int64(v)
        case let v as BSONBinary: return .binary(v)
        case let v as BSONObjectID: return .objectID(v)
        case let v as BSONDateTime: return .datetime(v)
        case let v as BSONDecimal128: return .decimal128(v)
        case let v as BSONTimestamp: return .timestamp(v)
        default: return nil
        }
    }

    func encodeValue<T: Encodable>(_ value: T) throws {
        if let leaf = try self.leaf(value) {
            self.node.content = .value(leaf)
        } else {
            try value.encode(to: self)
        }
    }
}

struct _KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: _BSONEncoderImpl
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    func slot(for key: Key) -> _EncodingNode {
        guard case .keyed(var fields) = self.encoder.node.content else { fatalError("keyed container over a non-keyed node") }
        if let existing = fields.first(where: { $0.0 == key.stringValue }) { return existing.1 }
        let node = _EncodingNode()
        fields.append((key.stringValue, node))
        self.encoder.node.content = .keyed(fields)
        return node
    }

    func checkKey(_ key: Key, _ value: Any) throws {
        if key.stringValue.utf8.contains(0) {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(codingPath: self.codingPath + [key], debugDescription: "BSON keys cannot contain NUL bytes")
            )
        }
    }

    mutating func encodeNil(forKey key: Key) throws {
        try self.checkKey(key, Optional<Int>.none as Any)
        self.slot(for: key).content = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try self.checkKey(key, value)
        try self.encoder.child(self.slot(for: key), key).encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        self.encoder.child(self.slot(for: key), key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        self.encoder.child(self.slot(for: key), key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        self.encoder.child(self.slot(for: Key(stringValue: "super")!), _BSONKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        self.encoder.child(self.slot(for: key), key)
    }
}

struct _UnkeyedEncoder: UnkeyedEncodingContainer {
    let encoder: _BSONEncoderImpl
    var codingPath: [any CodingKey] { self.encoder.codingPath }
    var count: Int {
        guard case .unkeyed(let items) = self.encoder.node.content else { return 0 }
        return items.count
    }

    func next() -> (_EncodingNode, _BSONEncoderImpl) {
        guard case .unkeyed(var items) = self.encoder.node.content else { fatalError("unkeyed container over a non-unkeyed node") }
        let node = _EncodingNode()
        let key = _BSONKey(intValue: items.count)
        items.append(node)
        self.encoder.node.content = .unkeyed(items)
        return (node, self.encoder.child(node, key))
    }

    mutating func encodeNil() throws {
        self.next().0.content = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try self.next().1.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        self.next().1.container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        self.next().1.unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        self.next().1
    }
}

struct _SingleValueEncoder: SingleValueEncodingContainer {
    let encoder: _BSONEncoderImpl
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    mutating func encodeNil() throws {
        self.encoder.node.content = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try self.encoder.encodeValue(value)
    }
}

// Codable conformances of the BSON leaf types, for encoders other than BSONEncoder (which
// recognises them and writes their native BSON types instead).

extension BSONBinary: Codable {
    private enum CodingKeys: String, CodingKey {
        case subtype
        case bytes
    }

    /// Decodes from a BSON binary element, or from `{subtype, bytes}` with other decoders.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            subtype: Subtype(rawValue: try container.decode(UInt8.self, forKey: .subtype)),
            bytes: try container.decode([UInt8].self, forKey: .bytes)
        )
    }

    /// Encodes as a BSON binary element, or as `{subtype, bytes}` with other encoders.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.subtype.rawValue, forKey: .subtype)
        try container.encode(self.bytes, forKey: .bytes)
    }
}

extension BSONObjectID: Codable {
    /// Decodes from a BSON ObjectId, or from 24 hex digits with other decoders.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = BSONObjectID(hexString: text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not 24 hex digits")
            )
        }
        self = id
    }

    /// Encodes as a BSON ObjectId, or as 24 hex digits with other encoders.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.description)
    }
}

extension BSONDateTime: Codable {
    /// Decodes from a BSON datetime, or from milliseconds with other decoders.
    public init(from decoder: any Decoder) throws {
        self.init(millisecondsSinceEpoch: try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Encodes as a BSON datetime, or as milliseconds with other encoders.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.millisecondsSinceEpoch)
    }
}

extension BSONDecimal128: Codable {
    /// Decodes from a BSON decimal128, or from its string form with other decoders.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.detail, underlyingError: error)
            )
        }
    }

    /// Encodes as a BSON decimal128, or as its string form with other encoders.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.description)
    }
}

extension BSONTimestamp: Codable {
    private enum CodingKeys: String, CodingKey {
        case t
        case i
    }

    /// Decodes from a BSON timestamp, or from `{t, i}` with other decoders.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(timestamp: try container.decode(UInt32.self, forKey: .t), increment: try container.decode(UInt32.self, forKey: .i))
    }

    /// Encodes as a BSON timestamp, or as `{t, i}` with other encoders.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.timestamp, forKey: .t)
        try container.encode(self.increment, forKey: .i)
    }
}
