import NIOCore

/// Decodes `Decodable` values from BSON documents.
///
/// The input is validated first (eagerly, see ``BSONDocument``); then values are read in place.
/// Integer types accept an int32 or an int64 element whenever the value fits the Swift type (SDL
/// peers disagree on widths) and report `DecodingError.dataCorrupted` when it does not; a double
/// never decodes as an integer. `Double` accepts double, and int32/int64 values it represents
/// exactly; `Float` accepts the same, rounded, but a finite value beyond `Float`'s range is
/// `dataCorrupted`. `[UInt8]` decodes from binary (or from an array of small integers); a binary
/// element also reads as an unkeyed container of `UInt8` bytes, which is how Foundation's `Data`
/// decodes from it. The BSON leaf types (``BSONBinary``, ``BSONObjectID``, ``BSONDateTime``,
/// ``BSONDecimal128``, ``BSONTimestamp``) decode from their own element types. A missing key or
/// a null decodes an optional as nil; keys compare as UTF-8 bytes. A key that appears more than
/// once in a document decoded as a keyed container (a struct, a `[String: T]`) is refused:
/// bsonspec.org does not forbid repeated keys, but a typed value cannot hold both, and picking
/// one would let two readers disagree on the same bytes (see ``BSONDocument``). The refusal is a
/// `DecodingError.dataCorrupted` whose underlying error is ``BSONError/Code/duplicateKey`` with
/// the offset of the second occurrence; documents read as arrays are read by position, their
/// keys ignored. The top level is a document, so asking for a leaf type there (a `String`, an
/// `Int`, a `String`-backed enum, ``BSONObjectID``, …) is a `DecodingError.typeMismatch`.
/// Malformed bytes surface as `DecodingError.dataCorrupted` whose underlying error is the
/// ``BSONError`` with its offset.
public struct BSONDecoder: Sendable {
    /// Contextual information for custom `init(from:)` implementations.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]
    /// Limits applied when validating raw bytes; the nesting depth also bounds the decoder's own
    /// recursion over documents that were not validated with these limits (built in code).
    ///
    /// Decoding holds a key index of up to four slots per element for each keyed container of
    /// more than 16 elements it opens, and every value it decodes, so memory grows with the
    /// element count, which `maximumDocumentSize` bounds (an element takes at least 3 bytes);
    /// lower that for untrusted peers rather than relying on the default.
    public var limits: BSONLimits = .default

    /// Creates a decoder.
    public init() {}

    /// Decodes a `T` from a validated document.
    public func decode<T: Decodable>(_ type: T.Type, from document: BSONDocument) throws -> T {
        let decoder = _BSONDecoderImpl(
            source: .document(document),
            codingPath: [],
            userInfo: self.userInfo,
            maximumDepth: self.limits.effectiveNestingDepth
        )
        return try decoder.decodeValue(type)
    }

    /// Validates `buffer`'s readable bytes as one document and decodes a `T` from it.
    public func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        let document: BSONDocument
        do {
            document = try BSONDocument(validating: buffer, limits: self.limits)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: [], debugDescription: error.description, underlyingError: error)
            )
        }
        return try self.decode(type, from: document)
    }

    /// Validates `bytes` as one document and decodes a `T` from it.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try self.decode(type, from: ByteBuffer(bytes: bytes))
    }
}

enum _DecodingSource {
    case document(BSONDocument)
    case element(BSONElement)
}

struct _BSONDecoderImpl: Decoder {
    let source: _DecodingSource
    let codingPath: [any CodingKey]
    let userInfoStorage: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { self.userInfoStorage }
    /// The deepest document or array this decoder opens (the top level is depth 1).
    let maximumDepth: Int

    init(source: _DecodingSource, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable], maximumDepth: Int) {
        self.source = source
        self.codingPath = codingPath
        self.userInfoStorage = userInfo
        self.maximumDepth = maximumDepth
    }

    func typeMismatch(_ expected: Any.Type, _ what: String) -> DecodingError {
        DecodingError.typeMismatch(
            expected,
            DecodingError.Context(codingPath: self.codingPath, debugDescription: "expected \(what), found \(self.foundDescription)")
        )
    }

    var foundDescription: String {
        switch self.source {
        case .document: return "a document"
        case .element(let e): return "BSON \(e.type)"
        }
    }

    func document(_ expected: Any.Type, array: Bool) throws -> BSONDocument {
        // Each level of documents costs several stack frames here; a document made in code
        // was never validated against the depth limit, so it is held to it before recursing.
        if self.codingPath.count >= self.maximumDepth {
            let error = BSONError(
                .nestingTooDeep,
                offset: self.element?.offset,
                "documents nest deeper than the limit of \(self.maximumDepth)"
            )
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: self.codingPath, debugDescription: error.detail, underlyingError: error)
            )
        }
        switch self.source {
        case .document(let d) where !array:
            return d
        case .element(let e):
            if array, let d = e.arrayValue { return d }
            if !array, let d = e.documentValue { return d }
            fallthrough
        default:
            throw self.typeMismatch(expected, array ? "an array" : "a document")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try _KeyedDecoder<Key>(decoder: self, document: try self.document([String: Any].self, array: false)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if let binary = self.element?.binaryValue {
            // How Foundation's Data (whose init(from:) reads UInt8 items) decodes from binary.
            return _BinaryUnkeyedDecoder(codingPath: self.codingPath, bytes: binary.bytes)
        }
        return _UnkeyedDecoder(decoder: self, document: try self.document([Any].self, array: true))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        _SingleValueDecoder(decoder: self)
    }

    func child(_ element: BSONElement, _ key: any CodingKey) -> _BSONDecoderImpl {
        _BSONDecoderImpl(
            source: .element(element),
            codingPath: self.codingPath + [key],
            userInfo: self.userInfoStorage,
            maximumDepth: self.maximumDepth
        )
    }

    var element: BSONElement? {
        if case .element(let e) = self.source { return e }
        return nil
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let wide = self.element?.integerValue else { throw self.typeMismatch(type, "an int32 or int64") }
        guard let value = T(exactly: wide) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: self.codingPath, debugDescription: "\(wide) does not fit in \(T.self)")
            )
        }
        return value
    }

    func double() throws -> Double {
        guard let e = self.element else { throw self.typeMismatch(Double.self, "a double") }
        if let d = e.doubleValue { return d }
        if let i = e.integerValue, let d = Double(exactly: i) { return d }
        throw self.typeMismatch(Double.self, "a double")
    }

    /// A double that fits `Float`'s range, rounded; NaN and ±infinity pass as they are, but a
    /// finite double beyond `Float.greatestFiniteMagnitude` is dataCorrupted, not infinity.
    func float() throws -> Float {
        let d = try self.double()
        let f = Float(d)
        if d.isFinite && !f.isFinite {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: self.codingPath, debugDescription: "\(d) is out of Float's range")
            )
        }
        return f
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if let leaf = try self.leaf(type) { return leaf }
        return try T(from: self)
    }

    /// The value of a leaf type, read from the element itself; nil for other types.
    ///
    /// Leaf types never go through their own `init(from:)`: it asks a single-value container
    /// for the same type, which comes straight back here. So a leaf wanted from a source that is
    /// not an element of its type (the top-level document, say) must be a typeMismatch; falling
    /// through to `init(from:)` would recurse until the stack runs out.
    func leaf<T>(_ type: T.Type) throws -> T? {
        switch type {
        case is String.Type: return try self.read(type, "a string", \.stringValue) as? T
        case is Bool.Type: return try self.read(type, "a bool", \.boolValue) as? T
        case is Double.Type: return try self.double() as? T
        case is Float.Type: return try self.float() as? T
        case is Int.Type: return try self.integer(Int.self) as? T
        case is Int8.Type: return try self.integer(Int8.self) as? T
        case is Int16.Type: return try self.integer(Int16.self) as? T
        case is Int32.Type: return try self.integer(Int32.self) as? T
        case is Int64.Type: return try self.integer(Int64.self) as? T
        case is UInt.Type: return try self.integer(UInt.self) as? T
        case is UInt8.Type: return try self.integer(UInt8.self) as? T
        case is UInt16.Type: return try self.integer(UInt16.self) as? T
        case is UInt32.Type: return try self.integer(UInt32.self) as? T
        case is UInt64.Type: return try self.integer(UInt64.self) as? T
        case is [UInt8].Type:
            // Binary is the fast path; an array of small integers goes through Array's init(from:).
            return self.element?.binaryValue?.bytes as? T
        case is BSONBinary.Type: return try self.read(type, "binary", \.binaryValue) as? T
        case is BSONObjectID.Type: return try self.read(type, "an ObjectId", \.objectIDValue) as? T
        case is BSONDateTime.Type: return try self.read(type, "a datetime", \.dateTimeValue) as? T
        case is BSONDecimal128.Type: return try self.read(type, "a decimal128", \.decimal128Value) as? T
        case is BSONTimestamp.Type: return try self.read(type, "a timestamp", \.timestampValue) as? T
        default: return nil
        }
    }

    /// `accessor` of the element, or a typeMismatch naming `what` was expected.
    func read<V>(_ type: Any.Type, _ what: String, _ accessor: (BSONElement) -> V?) throws -> V {
        guard let e = self.element, let value = accessor(e) else { throw self.typeMismatch(type, what) }
        return value
    }
}

/// Finds a keyed container's elements by key, and refuses a document in which a key repeats:
/// a typed value cannot take two values for one field. Keys compare as UTF-8 bytes (String
/// equality is Unicode canonical equivalence, but BSON keys, like ``BSONDocument``'s lookup,
/// compare byte for byte). Up to ``_BSONKeyIndex/linearLimit`` elements a scan is cheapest; past
/// it every key is hashed once, so decoding all keys of a large document (a `[String: T]`) is
/// linear instead of a scan per key.
struct _KeyLookup {
    let document: BSONDocument
    private let index: _BSONKeyIndex

    /// - Throws: ``BSONError/Code/duplicateKey`` at the second occurrence of a repeated key.
    init(_ document: BSONDocument) throws(BSONError) {
        self.document = document
        let (index, repeated) = document._bytes.withBase { base in
            _BSONKeyIndex.build(base, from: document._offset &+ 4, end: document._offset &+ document._length, keepingTable: true)
        }
        if let repeated {
            let key = document._element(at: repeated).key
            throw BSONError(.duplicateKey, offset: repeated, "key \"\(key)\" appears more than once in one document")
        }
        self.index = index
    }

    /// The element whose key is `key`.
    func element(_ key: String) -> BSONElement? {
        var key = key
        let document = self.document
        let position = key.withUTF8 { utf8 in
            document._bytes.withBase { base in
                self.index.find(
                    UnsafeRawBufferPointer(utf8),
                    base: base,
                    from: document._offset &+ 4,
                    end: document._offset &+ document._length
                )
            }
        }
        return position.map { document._element(at: $0) }
    }
}

struct _KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: _BSONDecoderImpl
    let lookup: _KeyLookup
    var codingPath: [any CodingKey] { self.decoder.codingPath }

    /// - Throws: `DecodingError.dataCorrupted` wrapping ``BSONError/Code/duplicateKey`` if a key
    ///   of `document` repeats.
    init(decoder: _BSONDecoderImpl, document: BSONDocument) throws {
        self.decoder = decoder
        do {
            self.lookup = try _KeyLookup(document)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error)
            )
        }
    }

    /// Every key, in wire order (they are distinct).
    var allKeys: [Key] { self.lookup.document.compactMap { Key(stringValue: $0.key) } }

    func contains(_ key: Key) -> Bool { self.lookup.element(key.stringValue) != nil }

    func element(_ key: some CodingKey) throws -> BSONElement {
        guard let e = self.lookup.element(key.stringValue) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(codingPath: self.codingPath, debugDescription: "no element with key \"\(key.stringValue)\"")
            )
        }
        return e
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let e = self.lookup.element(key.stringValue) else { return true }
        return e.type == .null || e.type == .undefined
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let e = try self.element(key)
        if e.type == .null {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(codingPath: self.codingPath + [key], debugDescription: "found null")
            )
        }
        return try self.decoder.child(e, key).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try self.decoder.child(try self.element(key), key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try self.decoder.child(try self.element(key), key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        // By name: the caller's Key type normally has no "super" case (a subclass's CodingKeys).
        self.decoder.child(try self.element(_BSONKey.super), _BSONKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        self.decoder.child(try self.element(key), key)
    }
}

struct _UnkeyedDecoder: UnkeyedDecodingContainer {
    let decoder: _BSONDecoderImpl
    var iterator: BSONDocument.Iterator
    var peeked: BSONElement?
    let count: Int?
    var currentIndex = 0
    var codingPath: [any CodingKey] { self.decoder.codingPath }

    init(decoder: _BSONDecoderImpl, document: BSONDocument) {
        self.decoder = decoder
        self.iterator = document.makeIterator()
        self.count = document.count
        self.peeked = self.iterator.next()
    }

    var isAtEnd: Bool { self.peeked == nil }

    mutating func next(_ type: Any.Type) throws -> (BSONElement, _BSONKey) {
        guard let e = self.peeked else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: self.codingPath + [_BSONKey(intValue: self.currentIndex)],
                    debugDescription: "the array has no more items"
                )
            )
        }
        let key = _BSONKey(intValue: self.currentIndex)
        self.peeked = self.iterator.next()
        self.currentIndex += 1
        return (e, key)
    }

    mutating func decodeNil() throws -> Bool {
        guard let e = self.peeked, e.type == .null || e.type == .undefined else { return false }
        _ = try self.next(Never.self)
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let e = self.peeked, e.type == .null {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(codingPath: self.codingPath + [_BSONKey(intValue: self.currentIndex)], debugDescription: "found null")
            )
        }
        let (e, key) = try self.next(type)
        return try self.decoder.child(e, key).decodeValue(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (e, key) = try self.next(type)
        return try self.decoder.child(e, key).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (e, key) = try self.next([Any].self)
        return try self.decoder.child(e, key).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (e, key) = try self.next(Any.self)
        return self.decoder.child(e, key)
    }
}

/// The bytes of a binary element as an unkeyed container of `UInt8` items; any other item type
/// is a typeMismatch.
struct _BinaryUnkeyedDecoder: UnkeyedDecodingContainer {
    let codingPath: [any CodingKey]
    let bytes: [UInt8]
    var currentIndex = 0
    var count: Int? { self.bytes.count }
    var isAtEnd: Bool { self.currentIndex >= self.bytes.count }

    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: self.codingPath + [_BSONKey(intValue: self.currentIndex)],
                debugDescription: "the items of binary data are UInt8 bytes"
            )
        )
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard !self.isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: self.codingPath + [_BSONKey(intValue: self.currentIndex)],
                    debugDescription: "the binary data has no more bytes"
                )
            )
        }
        guard let value = self.bytes[self.currentIndex] as? T else { throw self.mismatch(type) }
        self.currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        throw self.mismatch([String: Any].self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw self.mismatch([Any].self)
    }

    mutating func superDecoder() throws -> any Decoder {
        throw self.mismatch(Any.self)
    }
}

struct _SingleValueDecoder: SingleValueDecodingContainer {
    let decoder: _BSONDecoderImpl
    var codingPath: [any CodingKey] { self.decoder.codingPath }

    func decodeNil() -> Bool {
        guard let e = self.decoder.element else { return false }
        return e.type == .null || e.type == .undefined
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try self.decoder.decodeValue(type)
    }
}
