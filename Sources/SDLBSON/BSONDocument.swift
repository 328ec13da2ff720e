import NIOCore

/// A validated, read-only view of one BSON document (bsonspec.org 1.1) over a `ByteBuffer` slice.
///
/// Validation is **eager**: the initialisers check the whole document, nested documents
/// included, against every rule of the spec (see ``BSONError/Code``), once. After that nothing
/// can fail: iteration, key lookup and the typed accessors of ``BSONElement`` read the bytes in
/// place and copy nothing until a value that needs storage (a long `String`, a `[UInt8]`) is
/// asked for. Integers, doubles and booleans are read without allocating.
///
/// Two ways to read: `for element in document` (and `document["key"]`) hands out owning
/// ``BSONElement`` values that may be kept; ``forEachElement(_:)`` lends non-copyable
/// ``BSONElementView``s to a closure and skips their reference counting, the fastest way to
/// read every field.
///
/// Nested documents and arrays are views of the same storage (no copy). An array is a
/// `BSONDocument` whose keys are "0", "1", …; readers ignore the keys of array items.
///
/// **Repeated keys.** bsonspec.org does not forbid a key that appears twice in one document
/// (libbson accepts it), so this view keeps every element in wire order: iteration,
/// ``forEachElement(_:)`` and ``count`` see each one, and the keyed lookup ``subscript(_:)``
/// returns the *first* match. Every API that builds a typed value from a document refuses a
/// repeated key instead, with ``BSONError/Code/duplicateKey`` and the offset of the second
/// occurrence, so that no two readers can take different values from the same bytes:
/// ``BSONDecoder`` (in each document it decodes as a keyed container),
/// ``init(extendedJSON:limits:)`` (in every JSON object), SDLProtocol's typed control payloads
/// and SDLRPC's parameters. To refuse repeated keys here too, validate with
/// `rejectingDuplicateKeys: true`.
public struct BSONDocument: Sendable, Hashable, Sequence {
    @usableFromInline let _bytes: _BSONBytes
    /// Where the document starts in `_bytes` (nested documents share their parent's bytes).
    @usableFromInline let _offset: Int
    @usableFromInline let _length: Int

    @inlinable
    init(_bytes: _BSONBytes, offset: Int, length: Int) {
        self._bytes = _bytes
        self._offset = offset
        self._length = length
    }

    /// Wraps bytes that were already validated (the writer's own output).
    @inlinable
    internal init(_unchecked buffer: ByteBuffer) {
        self.init(_bytes: _BSONBytes(readable: buffer) { _ in }, offset: 0, length: buffer.readableBytes)
    }

    /// Exactly the bytes of the document: its int32 length through its terminating NUL (a slice
    /// sharing the storage, no copy).
    public var buffer: ByteBuffer {
        self._bytes.slice(at: self._offset, length: self._length)
    }

    /// Validates `buffer`'s readable bytes as exactly one BSON document and keeps them (no copy).
    ///
    /// - Parameters:
    ///   - rejectingDuplicateKeys: refuse a key repeated within one document (at any depth; not
    ///     within arrays, whose keys readers ignore). Off by default: repeated keys are kept and
    ///     lookups find the first (see the type's documentation).
    /// - Throws: ``BSONError`` with the offset of the first violation, counted from the
    ///   buffer's reader index. Bytes after the document are an error (``BSONError/Code/trailingBytes``).
    @inlinable
    public init(
        validating buffer: ByteBuffer,
        limits: BSONLimits = .default,
        rejectingDuplicateKeys: Bool = false
    ) throws(BSONError) {
        let bytes = try _BSONBytes(readable: buffer) { (bytes) throws(BSONError) in
            try _bsonValidateTopLevel(bytes, limits: limits, rejectingDuplicateKeys: rejectingDuplicateKeys)
        }
        self.init(_bytes: consume bytes, offset: 0, length: buffer.readableBytes)
    }

    /// Validates `bytes` as exactly one BSON document and copies them into a buffer.
    public init(
        validating bytes: some Sequence<UInt8>,
        limits: BSONLimits = .default,
        rejectingDuplicateKeys: Bool = false
    ) throws(BSONError) {
        try self.init(validating: ByteBuffer(bytes: bytes), limits: limits, rejectingDuplicateKeys: rejectingDuplicateKeys)
    }

    /// An empty document (`05 00 00 00 00`).
    public init() {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { _ in }
        self.init(_unchecked: buffer)
    }

    /// Compares the documents' bytes.
    public static func == (lhs: BSONDocument, rhs: BSONDocument) -> Bool {
        lhs._length == rhs._length
            && lhs._bytes.withBytes(at: lhs._offset, count: lhs._length) { left in
                rhs._bytes.withBytes(at: rhs._offset, count: rhs._length) { left.elementsEqual($0) }
            }
    }

    /// Hashes the document's bytes.
    public func hash(into hasher: inout Hasher) {
        self._bytes.withBytes(at: self._offset, count: self._length) { hasher.combine(bytes: $0) }
    }

    /// The document's bytes.
    public var bytes: [UInt8] { self._bytes.withBytes(at: self._offset, count: self._length) { Array($0) } }

    /// Whether the document has no elements.
    @inlinable
    public var isEmpty: Bool { self._length == 5 }

    /// The number of elements (walks the document), repeated keys included.
    public var count: Int {
        var n = 0
        var iterator = self.makeIterator()
        while iterator.next() != nil { n += 1 }
        return n
    }

    /// Iterates the elements in wire order, every repeated key included.
    @inlinable
    public func makeIterator() -> Iterator {
        Iterator(_bytes: self._bytes, position: self._offset &+ 4, end: self._offset &+ self._length)
    }

    /// The first element whose key is `key` (compared as UTF-8 bytes), or nil. A linear scan
    /// comparing bytes in place; only the match is materialised, so a lookup costs no allocation
    /// and one retain. A repeated key finds its first element (see the type's documentation).
    @inlinable
    public subscript(key: String) -> BSONElement? {
        if let found = key.utf8.withContiguousStorageIfAvailable({ self._find(UnsafeRawBufferPointer($0)) }) {
            return found
        }
        var key = key
        return key.withUTF8 { self._find(UnsafeRawBufferPointer($0)) }
    }

    @inlinable
    func _find(_ key: UnsafeRawBufferPointer) -> BSONElement? {
        let end = self._offset &+ self._length
        var position = self._offset &+ 4
        while true {
            let type = self._bytes.byte(at: position)
            if type == 0 { return nil }
            let keyEnd = self._bytes.findNUL(from: position &+ 1, end: end)
            let valueEnd = self._bytes.valueEnd(type: type, at: keyEnd &+ 1)
            if keyEnd &- position &- 1 == key.count && self._bytes.bytesEqual(at: position &+ 1, key) {
                return BSONElement(_bytes: self._bytes, type: type, keyStart: position &+ 1, keyEnd: keyEnd, valueEnd: valueEnd)
            }
            position = valueEnd
        }
    }

    /// The element whose type byte is at `position` (an offset from the start of `_bytes`).
    @inlinable
    func _element(at position: Int) -> BSONElement {
        let type = self._bytes.byte(at: position)
        let keyEnd = self._bytes.findNUL(from: position &+ 1, end: self._offset &+ self._length)
        return BSONElement(
            _bytes: self._bytes,
            type: type,
            keyStart: position &+ 1,
            keyEnd: keyEnd,
            valueEnd: self._bytes.valueEnd(type: type, at: keyEnd &+ 1)
        )
    }

    /// The check `rejectingDuplicateKeys` makes, for a document validated without it: throws
    /// ``BSONError/Code/duplicateKey`` if a key repeats in this document or in one nested in it
    /// (arrays' keys aside). For layers that check the keys they read themselves and need the
    /// general check only sometimes (SDLProtocol's control payloads, for unknown fields).
    package func checkKeysAreUnique() throws(BSONError) {
        try self._bytes.withBase { (base) throws(BSONError) in try _bsonCheckKeysAreUnique(base, document: self._offset) }
    }

    /// Walks the elements of a validated document.
    public struct Iterator: IteratorProtocol, Sendable {
        @usableFromInline let _bytes: _BSONBytes
        @usableFromInline var _position: Int
        @usableFromInline let _end: Int

        @inlinable
        init(_bytes: _BSONBytes, position: Int, end: Int) {
            self._bytes = _bytes
            self._position = position
            self._end = end
        }

        /// The next element, or nil at the terminator.
        @inlinable
        public mutating func next() -> BSONElement? {
            let position = self._position
            let type = self._bytes.byte(at: position)
            if type == 0 { return nil }
            let keyEnd = self._bytes.findNUL(from: position &+ 1, end: self._end)
            let valueEnd = self._bytes.valueEnd(type: type, at: keyEnd &+ 1)
            self._position = valueEnd
            return BSONElement(_bytes: self._bytes, type: type, keyStart: position &+ 1, keyEnd: keyEnd, valueEnd: valueEnd)
        }
    }
}

// MARK: - Layout of validated bytes (bsonspec.org 1.1)

/// The offset of the first NUL at or after `from` in validated bytes (one is known to exist
/// before `end`), eight bytes at a time while a whole word fits.
@inlinable
internal func _bsonFindNUL(_ base: UnsafeRawPointer, from: Int, end: Int) -> Int {
    var i = from
    while i &+ 8 <= end {
        let v = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
        // The lowest flagged byte is the first zero byte (flags above it may be false positives).
        let zeros = (v &- 0x0101_0101_0101_0101) & ~v & 0x8080_8080_8080_8080
        if zeros != 0 { return i &+ zeros.trailingZeroBitCount &>> 3 }
        i &+= 8
    }
    while base.load(fromByteOffset: i, as: UInt8.self) != 0 { i &+= 1 }
    return i
}

/// Offset one past the value of a validated element of `type` starting at `at`.
@inlinable
internal func _bsonValueEnd(_ base: UnsafeRawPointer, type: UInt8, at: Int) -> Int {
    @inline(__always) func int32(_ offset: Int) -> Int {
        Int(Int32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
    }
    switch type {
    case 0x10: return at &+ 4
    case 0x01, 0x09, 0x11, 0x12: return at &+ 8
    case 0x02, 0x0D, 0x0E: return at &+ 4 &+ int32(at)
    case 0x03, 0x04, 0x0F: return at &+ int32(at)
    case 0x08: return at &+ 1
    case 0x05: return at &+ 5 &+ int32(at)
    case 0x07: return at &+ 12
    case 0x13: return at &+ 16
    case 0x0C: return at &+ 4 &+ int32(at) &+ 12
    case 0x0B:
        var i = at
        while base.load(fromByteOffset: i, as: UInt8.self) != 0 { i &+= 1 }
        i &+= 1
        while base.load(fromByteOffset: i, as: UInt8.self) != 0 { i &+= 1 }
        return i &+ 1
    default: return at  // undefined, null, min key, max key
    }
}

extension _BSONBytes {
    /// ``_bsonFindNUL(_:from:end:)`` over the pinned bytes.
    @inlinable
    @inline(__always)
    func findNUL(from: Int, end: Int) -> Int {
        _bsonFindNUL(self._base, from: from, end: end)
    }

    /// ``_bsonValueEnd(_:type:at:)`` over the pinned bytes.
    @inlinable
    @inline(__always)
    func valueEnd(type: UInt8, at: Int) -> Int {
        _bsonValueEnd(self._base, type: type, at: at)
    }
}

extension ByteBuffer {
    /// Reads one BSON document at the reader index, the streaming way: nil (consuming nothing)
    /// while fewer bytes than its declared length are readable, the validated document (reader
    /// index moved past it) once they are all there.
    ///
    /// - Parameter rejectingDuplicateKeys: as for ``BSONDocument/init(validating:limits:rejectingDuplicateKeys:)``.
    /// - Throws: ``BSONError`` when the declared length is below 5 or the document is malformed;
    ///   the reader index is then unchanged.
    public mutating func readBSONDocument(
        limits: BSONLimits = .default,
        rejectingDuplicateKeys: Bool = false
    ) throws(BSONError) -> BSONDocument? {
        guard let length = self.getInteger(at: self.readerIndex, endianness: .little, as: Int32.self) else {
            return nil
        }
        if length < 5 {
            throw BSONError(.invalidDocumentLength, offset: 0, "document length \(length) is below the minimum of 5")
        }
        if length > limits.maximumDocumentSize {
            throw BSONError(
                .invalidDocumentLength,
                offset: 0,
                "document length \(length) exceeds the limit of \(limits.maximumDocumentSize) bytes"
            )
        }
        guard let slice = self.getSlice(at: self.readerIndex, length: Int(length)) else { return nil }
        let document = try BSONDocument(validating: slice, limits: limits, rejectingDuplicateKeys: rejectingDuplicateKeys)
        self.moveReaderIndex(forwardBy: Int(length))
        return document
    }
}

@usableFromInline
internal func _bsonValidateTopLevel(
    _ bytes: UnsafeRawBufferPointer,
    limits: BSONLimits,
    rejectingDuplicateKeys: Bool
) throws(BSONError) {
    let count = bytes.count
    if count < 4 {
        throw BSONError(.truncated, offset: 0, "a document needs at least 5 bytes, got \(count)")
    }
    let declared = Int(Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: Int32.self)))
    if declared > limits.maximumDocumentSize {
        throw BSONError(
            .invalidDocumentLength,
            offset: 0,
            "document length \(declared) exceeds the limit of \(limits.maximumDocumentSize) bytes"
        )
    }
    if declared >= 5 && declared < count {
        throw BSONError(
            .trailingBytes,
            offset: declared,
            "document length \(declared) leaves \(count - declared) bytes after the document"
        )
    }
    let validator = _BSONValidator(bytes: bytes, maximumDepth: limits.effectiveNestingDepth)
    _ = try validator.validateDocument(at: 0, limit: count, depth: 1)
    if rejectingDuplicateKeys {
        try _bsonCheckKeysAreUnique(bytes.baseAddress!, document: 0)
    }
}

/// One element of a validated ``BSONDocument``: its type, key and typed value accessors.
///
/// Typed accessors return nil when the element has another type, so a reader states the wire
/// type it expects (`element.int64Value`) or accepts several (`element.integerValue`).
public struct BSONElement: Sendable {
    /// The validated bytes the element lies in; all offsets below are relative to them.
    @usableFromInline let _bytes: _BSONBytes
    /// The element's type.
    public let type: BSONType
    @usableFromInline let _keyStart: Int
    @usableFromInline let _valueStart: Int
    @usableFromInline let _valueEnd: Int

    @inlinable
    init(_bytes: _BSONBytes, type: UInt8, keyStart: Int, keyEnd: Int, valueEnd: Int) {
        self._bytes = _bytes
        self.type = BSONType(rawValue: type)
        self._keyStart = keyStart
        self._valueStart = keyEnd &+ 1
        self._valueEnd = valueEnd
    }

    /// Calls `body` with the key's UTF-8 bytes in place (no String is made); the pointer must not
    /// escape `body`.
    @inlinable
    public func withUnsafeKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try self._bytes.withBytes(at: self._keyStart, count: self.keyByteCount, body)
    }

    /// The byte offset of the element (its type byte), counted from the start of the outermost
    /// document it was read from, for error messages that point into the payload.
    @inlinable
    public var offset: Int { self._keyStart &- 1 }

    @inlinable
    func _load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        self._bytes.load(T.self, at: offset)
    }

    @inlinable
    func _string(from: Int, to: Int) -> String {
        self._bytes.string(from: from, to: to)
    }

    /// The element's key (allocates for keys longer than 15 bytes; see ``hasKey(_:)``).
    @inlinable
    public var key: String { self._string(from: self._keyStart, to: self._valueStart &- 1) }

    /// The key's length in UTF-8 bytes.
    @inlinable
    public var keyByteCount: Int { self._valueStart &- 1 &- self._keyStart }

    /// Whether the key equals `key`, compared as bytes without allocating.
    @inlinable
    public func hasKey(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { $0.count == self.keyByteCount && self._bytes.bytesEqual(at: self._keyStart, UnsafeRawBufferPointer($0)) }
    }

    /// The value of a double element.
    @inlinable
    public var doubleValue: Double? {
        self.type == .double ? Double(bitPattern: self._load(UInt64.self, at: self._valueStart)) : nil
    }

    /// The value of an int32 element.
    @inlinable
    public var int32Value: Int32? {
        self.type == .int32 ? self._load(Int32.self, at: self._valueStart) : nil
    }

    /// The value of an int64 element.
    @inlinable
    public var int64Value: Int64? {
        self.type == .int64 ? self._load(Int64.self, at: self._valueStart) : nil
    }

    /// The value of an int32 or int64 element, widened: SDL peers disagree on integer widths,
    /// so readers of integer fields accept either (ARCHITECTURE.md §3).
    @inlinable
    public var integerValue: Int64? {
        switch self.type {
        case .int32: return Int64(self._load(Int32.self, at: self._valueStart))
        case .int64: return self._load(Int64.self, at: self._valueStart)
        default: return nil
        }
    }

    /// The value of a boolean element.
    @inlinable
    public var boolValue: Bool? {
        self.type == .bool ? self._load(UInt8.self, at: self._valueStart) != 0 : nil
    }

    /// The value of a string element.
    @inlinable
    public var stringValue: String? {
        self.type == .string ? self._string(from: self._valueStart &+ 4, to: self._valueEnd &- 1) : nil
    }

    /// Calls `body` with the UTF-8 bytes of a string, code or symbol element in place (no copy),
    /// or returns nil for other types.
    @inlinable
    public func withUTF8<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        switch self.type {
        case .string, .javascript, .symbol:
            return try self._bytes.withBytes(at: self._valueStart &+ 4, count: self._valueEnd &- self._valueStart &- 5, body)
        default:
            return nil
        }
    }

    /// The embedded document of a document element (a view of the same storage).
    @inlinable
    public var documentValue: BSONDocument? {
        self.type == .document ? self._nestedDocument : nil
    }

    /// The items of an array element, as a document view whose keys are "0", "1", ….
    @inlinable
    public var arrayValue: BSONDocument? {
        self.type == .array ? self._nestedDocument : nil
    }

    @inlinable
    var _nestedDocument: BSONDocument {
        BSONDocument(_bytes: self._bytes, offset: self._valueStart, length: self._valueEnd &- self._valueStart)
    }

    /// The value of a binary element (the old-binary inner length stripped for subtype 0x02).
    public var binaryValue: BSONBinary? {
        guard self.type == .binary else { return nil }
        let subtype = self._load(UInt8.self, at: self._valueStart &+ 4)
        let start = self._valueStart &+ 5 &+ (subtype == 0x02 ? 4 : 0)
        let bytes = self._bytes.withBytes(at: start, count: self._valueEnd &- start) { Array($0) }
        return BSONBinary(subtype: BSONBinary.Subtype(rawValue: subtype), bytes: bytes)
    }

    /// The value of an ObjectId element.
    @inlinable
    public var objectIDValue: BSONObjectID? {
        guard self.type == .objectID else { return nil }
        return self._objectID(at: self._valueStart)
    }

    @inlinable
    func _objectID(at offset: Int) -> BSONObjectID {
        BSONObjectID(
            high: self._load(UInt64.self, at: offset).byteSwapped,
            low: self._load(UInt32.self, at: offset &+ 8).byteSwapped
        )
    }

    /// The value of a UTC datetime element.
    @inlinable
    public var dateTimeValue: BSONDateTime? {
        self.type == .datetime ? BSONDateTime(millisecondsSinceEpoch: self._load(Int64.self, at: self._valueStart)) : nil
    }

    /// The value of a timestamp element.
    @inlinable
    public var timestampValue: BSONTimestamp? {
        guard self.type == .timestamp else { return nil }
        let raw = self._load(UInt64.self, at: self._valueStart)
        return BSONTimestamp(timestamp: UInt32(truncatingIfNeeded: raw >> 32), increment: UInt32(truncatingIfNeeded: raw))
    }

    /// The value of a decimal128 element.
    @inlinable
    public var decimal128Value: BSONDecimal128? {
        guard self.type == .decimal128 else { return nil }
        return BSONDecimal128(
            high: self._load(UInt64.self, at: self._valueStart &+ 8),
            low: self._load(UInt64.self, at: self._valueStart)
        )
    }

    /// The value of a regular-expression element.
    public var regularExpressionValue: BSONRegularExpression? {
        guard self.type == .regularExpression else { return nil }
        var patternEnd = self._valueStart
        while self._bytes.byte(at: patternEnd) != 0 { patternEnd += 1 }
        return BSONRegularExpression(
            pattern: self._string(from: self._valueStart, to: patternEnd),
            options: self._string(from: patternEnd + 1, to: self._valueEnd - 1)
        )
    }

    /// The value of a DBPointer element.
    public var dbPointerValue: BSONDBPointer? {
        guard self.type == .dbPointer else { return nil }
        return BSONDBPointer(
            ref: self._string(from: self._valueStart + 4, to: self._valueEnd - 13),
            id: self._objectID(at: self._valueEnd - 12)
        )
    }

    /// The code of a JavaScript element.
    public var javascriptValue: String? {
        self.type == .javascript ? self._string(from: self._valueStart + 4, to: self._valueEnd - 1) : nil
    }

    /// The value of a symbol element.
    public var symbolValue: String? {
        self.type == .symbol ? self._string(from: self._valueStart + 4, to: self._valueEnd - 1) : nil
    }

    /// The code and scope of a code-with-scope element; the scope as a view.
    public var javascriptWithScopeValue: (code: String, scope: BSONDocument)? {
        guard self.type == .javascriptWithScope else { return nil }
        let codeLength = Int(self._load(Int32.self, at: self._valueStart + 4))
        let code = self._string(from: self._valueStart + 8, to: self._valueStart + 8 + codeLength - 1)
        let scopeStart = self._valueStart + 8 + codeLength
        let scope = BSONDocument(_bytes: self._bytes, offset: scopeStart, length: self._valueEnd - scopeStart)
        return (code, scope)
    }

    /// The value as a node of the generic tree (copies strings, binaries and nested documents).
    /// Regular-expression options come out sorted (the canonical form).
    public var value: BSONValue {
        switch self.type {
        case .double: return .double(self.doubleValue!)
        case .string: return .string(self.stringValue!)
        case .document: return .document(BSONOrderedDocument(self._nestedDocument))
        case .array: return .array(self._nestedDocument.map(\.value))
        case .binary: return .binary(self.binaryValue!)
        case .undefined: return .undefined
        case .objectID: return .objectID(self.objectIDValue!)
        case .bool: return .bool(self.boolValue!)
        case .datetime: return .datetime(self.dateTimeValue!)
        case .null: return .null
        case .regularExpression:
            // The tree holds the canonical form (options sorted), as the corpus's degenerate
            // regexes require; `regularExpressionValue` keeps the wire order.
            let regex = self.regularExpressionValue!
            return .regularExpression(BSONRegularExpression(pattern: regex.pattern, options: regex.sortedOptions))
        case .dbPointer: return .dbPointer(self.dbPointerValue!)
        case .javascript: return .javascript(self.javascriptValue!)
        case .symbol: return .symbol(self.symbolValue!)
        case .javascriptWithScope:
            let cws = self.javascriptWithScopeValue!
            return .javascriptWithScope(BSONCodeWithScope(code: cws.code, scope: BSONOrderedDocument(cws.scope)))
        case .int32: return .int32(self.int32Value!)
        case .timestamp: return .timestamp(self.timestampValue!)
        case .int64: return .int64(self.int64Value!)
        case .decimal128: return .decimal128(self.decimal128Value!)
        case .minKey: return .minKey
        default: return .maxKey  // validation admits no other type
        }
    }
}
