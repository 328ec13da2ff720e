import NIOCore

/// Encodes `Encodable` values as BSON documents.
///
/// Mapping: an integer maps to int32 when its Swift type is 32-bit (or narrower) and the value
/// fits, to int64 otherwise, so the wire width follows the declared type, not the value:
/// `Int8`, `Int16`, `Int32`, `UInt8`, `UInt16` → int32; `UInt32` → int32 up to `Int32.max`,
/// int64 above; `Int`, `Int64`, `UInt`, `UInt64` → int64 (a `UInt`/`UInt64` above `Int64.max`
/// is an `EncodingError.invalidValue`); `Double`, `Float` → double; `Bool` → bool; `String` →
/// string; `[UInt8]`, Foundation's `Data` and ``BSONBinary`` → binary (subtype 0 but for a
/// ``BSONBinary``'s own); ``BSONObjectID``, ``BSONDateTime``,
/// ``BSONDecimal128``, ``BSONTimestamp`` → their BSON types; nil optionals are
/// omitted (an explicit `encodeNil` writes null); structs and `[String: T]` → documents;
/// arrays → arrays. The top-level value must encode as a keyed container (a document).
/// Keys keep the order they were first encoded in; a key encoded twice in one container keeps
/// its first position and the last value (as Foundation's `JSONEncoder` does).
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
///
/// Children live in the node's own arrays, not in an enum payload: appending to a stored
/// property of a class mutates the array in place, while taking an array out of an enum and
/// putting it back copies it on every append (quadratic for large arrays and structs).
final class _EncodingNode {
    enum Kind {
        case empty
        case value
        case keyed
        case unkeyed
    }
    private(set) var kind = Kind.empty
    private(set) var value = BSONValue.null
    /// Keyed: the keys, in insertion order, parallel to `children`.
    private(set) var keys: [String] = []
    /// Keyed and unkeyed: the child nodes, in insertion order.
    private(set) var children: [_EncodingNode] = []
    /// Key → position in `children`, built once a keyed node outgrows a linear scan.
    private var index: [String: Int]?

    /// Above this many keys, lookups go through `index`; below it a scan is cheaper than hashing.
    static let linearKeyLimit = 16

    func setValue(_ value: BSONValue) {
        self.reset(to: .value)
        self.value = value
    }

    /// Makes this a keyed node, keeping its fields if it already is one (a second
    /// `container(keyedBy:)` call adds to the same document).
    func makeKeyed() {
        if self.kind != .keyed { self.reset(to: .keyed) }
    }

    /// Makes this an unkeyed node, keeping its items if it already is one.
    func makeUnkeyed() {
        if self.kind != .unkeyed { self.reset(to: .unkeyed) }
    }

    private func reset(to kind: Kind) {
        self.kind = kind
        self.value = .null
        self.keys = []
        self.children = []
        self.index = nil
    }

    /// The child for `key`: the existing one (`replace` false), a fresh node in the existing
    /// one's place (`replace` true: the last value encoded for a key wins, where the key first
    /// appeared, as Foundation's JSONEncoder does), or a new one appended.
    func child(forKey key: String, replace: Bool) -> _EncodingNode {
        precondition(self.kind == .keyed, "keyed container over a non-keyed node")
        if let position = self.position(of: key) {
            if replace { self.children[position] = _EncodingNode() }
            return self.children[position]
        }
        let node = _EncodingNode()
        self.keys.append(key)
        self.children.append(node)
        if self.index != nil {
            self.index![key] = self.children.count - 1
        } else if self.keys.count > Self.linearKeyLimit {
            self.index = Dictionary(uniqueKeysWithValues: self.keys.enumerated().map { ($1, $0) })
        }
        return node
    }

    private func position(of key: String) -> Int? {
        if let index = self.index { return index[key] }
        return self.keys.firstIndex(of: key)
    }

    /// Appends a new item to an unkeyed node.
    func appendItem() -> _EncodingNode {
        precondition(self.kind == .unkeyed, "unkeyed container over a non-unkeyed node")
        let node = _EncodingNode()
        self.children.append(node)
        return node
    }

    func materialize() -> BSONValue? {
        switch self.kind {
        case .empty: return nil
        case .value: return self.value
        case .keyed:
            var document = BSONOrderedDocument()
            document.fields.reserveCapacity(self.children.count)
            for (key, node) in zip(self.keys, self.children) {
                if let v = node.materialize() { document.append(key, v) }
            }
            return .document(document)
        case .unkeyed:
            return .array(self.children.map { $0.materialize() ?? .null })
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
        self.node.makeKeyed()
        return KeyedEncodingContainer(_KeyedEncoder<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        self.node.makeUnkeyed()
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
        default: return Self.foundationDataBytes(value).map { .binary(BSONBinary(subtype: .generic, bytes: $0)) }
        }
    }

    /// The bytes of a Foundation `Data`, which the library cannot name (it imports no
    /// Foundation) and so recognises by its type name: `Data`'s own `encode(to:)` writes an
    /// array of integers, and BSON has binary for bytes. The conformance check comes first so
    /// that other types cost no type-name string; it is to plain `Sequence` because a cast to
    /// `Sequence<UInt8>` needs a runtime that older Apple OS versions lack.
    static func foundationDataBytes<T>(_ value: T) -> [UInt8]? {
        guard let sequence = value as? any Sequence else { return nil }
        // "Foundation.Data" on Darwin; swift-foundation defines it in FoundationEssentials.
        let name = _typeName(T.self)
        guard name == "Foundation.Data" || name == "FoundationEssentials.Data" else { return nil }
        return Self.bytes(of: sequence)
    }

    private static func bytes<S: Sequence>(of sequence: S) -> [UInt8]? {
        Array(sequence) as? [UInt8]
    }

    func encodeValue<T: Encodable>(_ value: T) throws {
        if let leaf = try self.leaf(value) {
            self.node.setValue(leaf)
        } else {
            try value.encode(to: self)
        }
    }
}

struct _KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: _BSONEncoderImpl
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    func slot(for key: Key, replace: Bool = false) -> _EncodingNode {
        self.encoder.node.child(forKey: key.stringValue, replace: replace)
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
        self.slot(for: key, replace: true).setValue(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try self.checkKey(key, value)
        try self.encoder.child(self.slot(for: key, replace: true), key).encodeValue(value)
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
        // By name: the caller's Key type normally has no "super" case (a subclass's CodingKeys).
        self.encoder.child(self.encoder.node.child(forKey: _BSONKey.super.stringValue, replace: false), _BSONKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        self.encoder.child(self.slot(for: key), key)
    }
}

struct _UnkeyedEncoder: UnkeyedEncodingContainer {
    let encoder: _BSONEncoderImpl
    var codingPath: [any CodingKey] { self.encoder.codingPath }
    var count: Int { self.encoder.node.children.count }

    func next() -> (_EncodingNode, _BSONEncoderImpl) {
        let key = _BSONKey(intValue: self.encoder.node.children.count)
        let node = self.encoder.node.appendItem()
        return (node, self.encoder.child(node, key))
    }

    mutating func encodeNil() throws {
        self.next().0.setValue(.null)
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
        self.encoder.node.setValue(.null)
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
