import NIOCore

/// A validated, read-only view of one BSON document (bsonspec.org 1.1) over a `ByteBuffer` slice.
///
/// Validation is **eager**: the initialisers check the whole document, nested documents
/// included, against every rule of the spec (see ``BSONError/Code``), once. After that nothing
/// can fail: iteration, key lookup and the typed accessors of ``BSONElement`` read the bytes in
/// place and copy nothing until a value that needs storage (a long `String`, a `[UInt8]`) is
/// asked for. Integers, doubles and booleans are read without allocating.
///
/// Nested documents and arrays are views of the same storage (a slice, no copy). An array is a
/// `BSONDocument` whose keys are "0", "1", …; readers ignore the keys of array items.
public struct BSONDocument: Sendable, Hashable, Sequence {
    /// Exactly the bytes of the document: its int32 length through its terminating NUL.
    public let buffer: ByteBuffer

    /// Wraps bytes that were already validated (a nested value of a validated document, or the
    /// writer's own output).
    @inlinable
    internal init(_unchecked buffer: ByteBuffer) {
        self.buffer = buffer
    }

    /// Validates `buffer`'s readable bytes as exactly one BSON document and keeps them (a slice,
    /// no copy).
    ///
    /// - Throws: ``BSONError`` with the offset of the first violation, counted from the
    ///   buffer's reader index. Bytes after the document are an error (``BSONError/Code/trailingBytes``).
    @inlinable
    public init(validating buffer: ByteBuffer, limits: BSONLimits = .default) throws(BSONError) {
        try buffer.withUnsafeReadableBytes { (bytes: UnsafeRawBufferPointer) throws(BSONError) in
            try _bsonValidateTopLevel(bytes, limits: limits)
        }
        self.buffer = buffer
    }

    /// Validates `bytes` as exactly one BSON document and copies them into a buffer.
    public init(validating bytes: some Sequence<UInt8>, limits: BSONLimits = .default) throws(BSONError) {
        try self.init(validating: ByteBuffer(bytes: bytes), limits: limits)
    }

    /// An empty document (`05 00 00 00 00`).
    public init() {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { _ in }
        self.buffer = buffer
    }

    /// The document's bytes.
    public var bytes: [UInt8] { Array(self.buffer.readableBytesView) }

    /// Whether the document has no elements.
    @inlinable
    public var isEmpty: Bool { self.buffer.readableBytes == 5 }

    /// The number of elements (walks the document).
    public var count: Int {
        var n = 0
        var iterator = self.makeIterator()
        while iterator.next() != nil { n += 1 }
        return n
    }

    /// Iterates the elements in wire order.
    @inlinable
    public func makeIterator() -> Iterator {
        Iterator(_buffer: self.buffer)
    }

    /// The first element whose key is `key`, or nil. A linear scan comparing bytes, no allocation.
    @inlinable
    public subscript(key: String) -> BSONElement? {
        var key = key
        return key.withUTF8 { utf8 in
            var iterator = self.makeIterator()
            while let element = iterator.next() {
                if element._keyEquals(UnsafeRawBufferPointer(utf8)) { return element }
            }
            return nil
        }
    }

    /// Walks the elements of a validated document.
    public struct Iterator: IteratorProtocol, Sendable {
        @usableFromInline let _buffer: ByteBuffer
        @usableFromInline var _position: Int = 4

        @inlinable
        init(_buffer: ByteBuffer) {
            self._buffer = _buffer
        }

        /// The next element, or nil at the terminator.
        @inlinable
        public mutating func next() -> BSONElement? {
            let position = self._position
            let found: (type: UInt8, keyEnd: Int, valueEnd: Int)? = self._buffer.withUnsafeReadableBytes { bytes in
                let type = bytes[position]
                if type == 0 { return nil }
                var keyEnd = position &+ 1
                while bytes[keyEnd] != 0 { keyEnd &+= 1 }
                return (type, keyEnd, _bsonValueEnd(bytes, type: type, at: keyEnd &+ 1))
            }
            guard let found else { return nil }
            self._position = found.valueEnd
            return BSONElement(
                _buffer: self._buffer,
                type: BSONType(rawValue: found.type),
                keyStart: position &+ 1,
                valueStart: found.keyEnd &+ 1,
                valueEnd: found.valueEnd
            )
        }
    }
}

extension ByteBuffer {
    /// Reads one BSON document at the reader index, the streaming way: nil (consuming nothing)
    /// while fewer bytes than its declared length are readable, the validated document (reader
    /// index moved past it) once they are all there.
    ///
    /// - Throws: ``BSONError`` when the declared length is below 5 or the document is malformed;
    ///   the reader index is then unchanged.
    public mutating func readBSONDocument(limits: BSONLimits = .default) throws(BSONError) -> BSONDocument? {
        guard let length = self.getInteger(at: self.readerIndex, endianness: .little, as: Int32.self) else {
            return nil
        }
        if length < 5 {
            throw BSONError(.invalidDocumentLength, offset: 0, "document length \(length) is below the minimum of 5")
        }
        guard let slice = self.getSlice(at: self.readerIndex, length: Int(length)) else { return nil }
        let document = try BSONDocument(validating: slice, limits: limits)
        self.moveReaderIndex(forwardBy: Int(length))
        return document
    }
}

@usableFromInline
internal func _bsonValidateTopLevel(_ bytes: UnsafeRawBufferPointer, limits: BSONLimits) throws(BSONError) {
    let count = bytes.count
    if count < 4 {
        throw BSONError(.truncated, offset: 0, "a document needs at least 5 bytes, got \(count)")
    }
    let declared = Int(Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: Int32.self)))
    if declared >= 5 && declared < count {
        throw BSONError(
            .trailingBytes,
            offset: declared,
            "document length \(declared) leaves \(count - declared) bytes after the document"
        )
    }
    let validator = _BSONValidator(bytes: bytes, maximumDepth: limits.maximumNestingDepth)
    _ = try validator.validateDocument(at: 0, limit: count, depth: 1)
}

/// Offset one past the value of a validated element of `type` starting at `at`.
@inlinable
internal func _bsonValueEnd(_ bytes: UnsafeRawBufferPointer, type: UInt8, at: Int) -> Int {
    @inline(__always) func int32(_ offset: Int) -> Int {
        Int(Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
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
        while bytes[i] != 0 { i &+= 1 }
        i &+= 1
        while bytes[i] != 0 { i &+= 1 }
        return i &+ 1
    default: return at  // undefined, null, min key, max key
    }
}

/// One element of a validated ``BSONDocument``: its type, key and typed value accessors.
///
/// Typed accessors return nil when the element has another type, so a reader states the wire
/// type it expects (`element.int64Value`) or accepts several (`element.integerValue`).
public struct BSONElement: Sendable {
    @usableFromInline let _buffer: ByteBuffer
    /// The element's type.
    public let type: BSONType
    @usableFromInline let _keyStart: Int
    @usableFromInline let _valueStart: Int
    @usableFromInline let _valueEnd: Int

    @inlinable
    init(_buffer: ByteBuffer, type: BSONType, keyStart: Int, valueStart: Int, valueEnd: Int) {
        self._buffer = _buffer
        self.type = type
        self._keyStart = keyStart
        self._valueStart = valueStart
        self._valueEnd = valueEnd
    }

    @inlinable
    func _load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        self._buffer.withUnsafeReadableBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    @inlinable
    func _string(from: Int, to: Int) -> String {
        self._buffer.withUnsafeReadableBytes {
            String(decoding: UnsafeRawBufferPointer(rebasing: $0[from..<to]), as: UTF8.self)
        }
    }

    @inlinable
    func _keyEquals(_ key: UnsafeRawBufferPointer) -> Bool {
        let length = self._valueStart &- 1 &- self._keyStart
        guard length == key.count else { return false }
        return self._buffer.withUnsafeReadableBytes { bytes in
            var i = 0
            while i < length {
                if bytes[self._keyStart &+ i] != key[i] { return false }
                i &+= 1
            }
            return true
        }
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
        return key.withUTF8 { self._keyEquals(UnsafeRawBufferPointer($0)) }
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
    /// so readers of integer fields accept either (DESIGN.md §3).
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
            return try self._buffer.withUnsafeReadableBytes {
                try body(UnsafeRawBufferPointer(rebasing: $0[(self._valueStart &+ 4)..<(self._valueEnd &- 1)]))
            }
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
        BSONDocument(
            _unchecked: self._buffer.getSlice(
                at: self._buffer.readerIndex &+ self._valueStart,
                length: self._valueEnd &- self._valueStart
            )!
        )
    }

    /// The value of a binary element (the old-binary inner length stripped for subtype 0x02).
    public var binaryValue: BSONBinary? {
        guard self.type == .binary else { return nil }
        let subtype = self._load(UInt8.self, at: self._valueStart &+ 4)
        let start = self._valueStart &+ 5 &+ (subtype == 0x02 ? 4 : 0)
        let bytes = self._buffer.withUnsafeReadableBytes { Array($0[start..<self._valueEnd]) }
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
        self._buffer.withUnsafeReadableBytes { while $0[patternEnd] != 0 { patternEnd += 1 } }
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
        let scope = BSONDocument(
            _unchecked: self._buffer.getSlice(at: self._buffer.readerIndex + scopeStart, length: self._valueEnd - scopeStart)!
        )
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
