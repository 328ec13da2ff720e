import NIOCore

// The BSON writer (bsonspec.org 1.1):
//
//   document ::= int32 e_list "\x00"        int32 = total byte count, little-endian
//   element  ::= type(byte) e_name value    e_name = cstring (no NUL inside)
//
// The writer appends straight into the caller's ByteBuffer: it reserves the int32 length,
// writes the elements in place (nested documents and arrays too) and back-fills the length
// when the document closes. It allocates nothing of its own: keys are copied from the String's
// UTF-8 storage (literals and small strings need no heap), array keys "0", "1", … are formatted
// on the stack, and each element is one bounds/uniqueness check on the buffer (one
// `writeWithUnsafeMutableBytes`) rather than one per field.
//
// The entry points are @inlinable so that a caller in another module (the RPC layer, the
// control-payload layer) gets the closure bodies inlined and specialised, not a call through
// a thick closure per element.

extension ByteBuffer {
    /// Appends one BSON document at the writer index, built by `body`, and returns its byte count.
    ///
    /// The int32 length is reserved first and back-filled when `body` returns; nested documents
    /// and arrays are written in place. If `body` throws, the writer index is put back where it
    /// was, so no partial document is left behind.
    ///
    /// ```swift
    /// buffer.writeBSONDocument { doc in
    ///     doc.appendString("protocolVersion", "5.4.1")
    ///     doc.appendInt64("mtu", 131_084)
    ///     doc.appendArray("audioServiceTransports") { $0.appendInt32(1); $0.appendInt32(2) }
    /// }
    /// ```
    ///
    /// - Precondition: keys passed to the writer contain no NUL byte (BSON cannot represent one);
    ///   check untrusted keys with ``BSONDocumentWriter/isValidKey(_:)`` first.
    @inlinable
    @discardableResult
    public mutating func writeBSONDocument<Failure: Error>(
        _ body: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) -> Int {
        let start = self.writerIndex
        // Move the storage into the writer so that the writes below see a uniquely referenced
        // buffer (no copy-on-write); `ByteBuffer()` is a shared empty buffer and allocates nothing.
        var writer = BSONDocumentWriter(_buffer: self)
        self = ByteBuffer()
        writer._buffer._bsonWriteInt32Placeholder()
        do throws(Failure) {
            try body(&writer)
        } catch {
            writer._buffer.moveWriterIndex(to: start)
            self = writer._buffer
            throw error
        }
        writer._buffer._bsonCloseDocument(start: start)
        self = writer._buffer
        return self.writerIndex - start
    }
}

/// Writes the elements of one BSON document (and, in place, of its nested documents).
///
/// Obtained from ``NIOCore/ByteBuffer/writeBSONDocument(_:)``; each `append…` method writes one
/// element of the named BSON type, so the wire type is visible at the call site (SDL control
/// payloads care: `mtu` is int64, `hashId` int32).
public struct BSONDocumentWriter {
    @usableFromInline
    internal var _buffer: ByteBuffer

    @inlinable
    internal init(_buffer: ByteBuffer) {
        self._buffer = _buffer
    }

    /// Whether `key` can be written as a BSON key (it contains no NUL byte).
    @inlinable
    public static func isValidKey(_ key: String) -> Bool {
        !key.utf8.contains(0)
    }

    @inlinable
    internal mutating func _withKey<R>(_ key: String, _ body: (inout ByteBuffer, UnsafeRawBufferPointer) -> R) -> R {
        var key = key
        return key.withUTF8 { utf8 in
            let raw = UnsafeRawBufferPointer(utf8)
            precondition(!_bsonContainsNUL(raw), "BSON keys cannot contain NUL bytes")
            return body(&self._buffer, raw)
        }
    }

    /// Appends a double (type 0x01).
    @inlinable
    public mutating func appendDouble(_ key: String, _ value: Double) {
        self._withKey(key) { $0._bsonAppendFixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a UTF-8 string (type 0x02). The string may contain NUL bytes (it is length-prefixed).
    @inlinable
    public mutating func appendString(_ key: String, _ value: String) {
        self._withKey(key) { $0._bsonAppendString(0x02, $1, value) }
    }

    /// Appends an embedded document (type 0x03) whose elements `body` writes in place.
    @inlinable
    public mutating func appendDocument<Failure: Error>(
        _ key: String,
        _ body: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) {
        self._withKey(key) { $0._bsonAppendHeader(0x03, $1) }
        let start = self._buffer.writerIndex
        self._buffer._bsonWriteInt32Placeholder()
        try body(&self)
        self._buffer._bsonCloseDocument(start: start)
    }

    /// Appends an embedded document (type 0x03) by copying an already validated document.
    @inlinable
    public mutating func appendDocument(_ key: String, _ document: BSONDocument) {
        self._withKey(key) { $0._bsonAppendHeader(0x03, $1) }
        self._buffer.writeImmutableBuffer(document.buffer)
    }

    /// Appends an array (type 0x04) whose items `body` writes in place, keyed "0", "1", ….
    @inlinable
    public mutating func appendArray<Failure: Error>(
        _ key: String,
        _ body: (inout BSONArrayWriter) throws(Failure) -> Void
    ) throws(Failure) {
        self._withKey(key) { $0._bsonAppendHeader(0x04, $1) }
        let start = self._buffer.writerIndex
        var array = BSONArrayWriter(_buffer: self._buffer)
        self._buffer = ByteBuffer()
        array._buffer._bsonWriteInt32Placeholder()
        defer {
            array._buffer._bsonCloseDocument(start: start)
            self._buffer = array._buffer
        }
        try body(&array)
    }

    /// Appends binary data (type 0x05). For subtype 0x02 (old binary) the inner length is added.
    @inlinable
    public mutating func appendBinary(_ key: String, _ value: BSONBinary) {
        self._withKey(key) { $0._bsonAppendBinary($1, value.subtype.rawValue, value.bytes) }
    }

    /// Appends binary data (type 0x05) from bytes, without building a ``BSONBinary``.
    @inlinable
    public mutating func appendBinary(_ key: String, subtype: BSONBinary.Subtype = .generic, bytes: [UInt8]) {
        self._withKey(key) { $0._bsonAppendBinary($1, subtype.rawValue, bytes) }
    }

    /// Appends undefined (type 0x06, deprecated).
    @inlinable
    public mutating func appendUndefined(_ key: String) {
        self._withKey(key) { $0._bsonAppendHeader(0x06, $1) }
    }

    /// Appends an ObjectId (type 0x07).
    @inlinable
    public mutating func appendObjectID(_ key: String, _ value: BSONObjectID) {
        self._withKey(key) { $0._bsonAppendObjectID(0x07, $1, value) }
    }

    /// Appends a boolean (type 0x08).
    @inlinable
    public mutating func appendBool(_ key: String, _ value: Bool) {
        self._withKey(key) { $0._bsonAppendFixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a UTC datetime (type 0x09).
    @inlinable
    public mutating func appendDateTime(_ key: String, _ value: BSONDateTime) {
        self._withKey(key) { $0._bsonAppendFixed(0x09, $1, value.millisecondsSinceEpoch) }
    }

    /// Appends null (type 0x0A).
    @inlinable
    public mutating func appendNull(_ key: String) {
        self._withKey(key) { $0._bsonAppendHeader(0x0A, $1) }
    }

    /// Appends a regular expression (type 0x0B), pattern and options as given.
    ///
    /// - Precondition: neither part contains a NUL byte.
    @inlinable
    public mutating func appendRegularExpression(_ key: String, _ value: BSONRegularExpression) {
        self._withKey(key) { $0._bsonAppendRegex($1, value) }
    }

    /// Appends a DBPointer (type 0x0C, deprecated).
    @inlinable
    public mutating func appendDBPointer(_ key: String, _ value: BSONDBPointer) {
        self._withKey(key) { buffer, key in
            buffer._bsonAppendString(0x0C, key, value.ref)
            buffer._bsonWriteObjectID(value.id)
        }
    }

    /// Appends JavaScript code (type 0x0D).
    @inlinable
    public mutating func appendJavaScript(_ key: String, _ code: String) {
        self._withKey(key) { $0._bsonAppendString(0x0D, $1, code) }
    }

    /// Appends a symbol (type 0x0E, deprecated).
    @inlinable
    public mutating func appendSymbol(_ key: String, _ symbol: String) {
        self._withKey(key) { $0._bsonAppendString(0x0E, $1, symbol) }
    }

    /// Appends JavaScript code with a scope document (type 0x0F, deprecated) that `scope` writes.
    @inlinable
    public mutating func appendJavaScriptWithScope<Failure: Error>(
        _ key: String,
        code: String,
        scope: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) {
        self._withKey(key) { $0._bsonAppendHeader(0x0F, $1) }
        let start = self._buffer.writerIndex
        self._buffer._bsonWriteInt32Placeholder()
        self._buffer._bsonWriteStringValue(code)
        let scopeStart = self._buffer.writerIndex
        self._buffer._bsonWriteInt32Placeholder()
        try scope(&self)
        self._buffer._bsonCloseDocument(start: scopeStart)
        self._buffer._bsonBackfillLength(start: start)
    }

    /// Appends a 32-bit integer (type 0x10).
    @inlinable
    public mutating func appendInt32(_ key: String, _ value: Int32) {
        self._withKey(key) { $0._bsonAppendFixed(0x10, $1, value) }
    }

    /// Appends a timestamp (type 0x11).
    @inlinable
    public mutating func appendTimestamp(_ key: String, _ value: BSONTimestamp) {
        self._withKey(key) { $0._bsonAppendFixed(0x11, $1, UInt64(value.timestamp) << 32 | UInt64(value.increment)) }
    }

    /// Appends a 64-bit integer (type 0x12).
    @inlinable
    public mutating func appendInt64(_ key: String, _ value: Int64) {
        self._withKey(key) { $0._bsonAppendFixed(0x12, $1, value) }
    }

    /// Appends a decimal128 (type 0x13).
    @inlinable
    public mutating func appendDecimal128(_ key: String, _ value: BSONDecimal128) {
        self._withKey(key) { $0._bsonAppendDecimal128($1, value) }
    }

    /// Appends min key (type 0xFF).
    @inlinable
    public mutating func appendMinKey(_ key: String) {
        self._withKey(key) { $0._bsonAppendHeader(0xFF, $1) }
    }

    /// Appends max key (type 0x7F).
    @inlinable
    public mutating func appendMaxKey(_ key: String) {
        self._withKey(key) { $0._bsonAppendHeader(0x7F, $1) }
    }

    /// Appends any value of the generic tree, recursively.
    public mutating func append(_ key: String, _ value: BSONValue) {
        self._withKey(key) { buffer, key in buffer._bsonAppendValue(key, value) }
    }
}

/// Writes the items of one BSON array, generating the keys "0", "1", … without allocating.
public struct BSONArrayWriter {
    @usableFromInline
    internal var _buffer: ByteBuffer
    @usableFromInline
    internal var _index: Int = 0

    @inlinable
    internal init(_buffer: ByteBuffer) {
        self._buffer = _buffer
    }

    /// The number of items written so far (and so the next key).
    @inlinable
    public var count: Int { self._index }

    @inlinable
    internal mutating func _withKey<R>(_ body: (inout ByteBuffer, UnsafeRawBufferPointer) -> R) -> R {
        let index = self._index
        self._index = index &+ 1
        if index < 10 {
            var digit = UInt8(truncatingIfNeeded: index) &+ 0x30
            return withUnsafeBytes(of: &digit) { body(&self._buffer, $0) }
        }
        // 20 digits hold any Int; the tuple keeps the key on the stack.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        return withUnsafeMutableBytes(of: &digits) { raw in
            var n = index
            var at = raw.count
            repeat {
                at -= 1
                raw[at] = UInt8(truncatingIfNeeded: n % 10) &+ 0x30
                n /= 10
            } while n > 0
            return body(&self._buffer, UnsafeRawBufferPointer(rebasing: raw[at...]))
        }
    }

    /// Appends a double item.
    @inlinable
    public mutating func appendDouble(_ value: Double) {
        self._withKey { $0._bsonAppendFixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a string item.
    @inlinable
    public mutating func appendString(_ value: String) {
        self._withKey { $0._bsonAppendString(0x02, $1, value) }
    }

    /// Appends a document item whose elements `body` writes in place.
    @inlinable
    public mutating func appendDocument<Failure: Error>(
        _ body: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) {
        self._withKey { $0._bsonAppendHeader(0x03, $1) }
        let start = self._buffer.writerIndex
        var document = BSONDocumentWriter(_buffer: self._buffer)
        self._buffer = ByteBuffer()
        document._buffer._bsonWriteInt32Placeholder()
        defer {
            document._buffer._bsonCloseDocument(start: start)
            self._buffer = document._buffer
        }
        try body(&document)
    }

    /// Appends a document item by copying an already validated document.
    @inlinable
    public mutating func appendDocument(_ document: BSONDocument) {
        self._withKey { $0._bsonAppendHeader(0x03, $1) }
        self._buffer.writeImmutableBuffer(document.buffer)
    }

    /// Appends a nested array item whose items `body` writes in place.
    @inlinable
    public mutating func appendArray<Failure: Error>(
        _ body: (inout BSONArrayWriter) throws(Failure) -> Void
    ) throws(Failure) {
        self._withKey { $0._bsonAppendHeader(0x04, $1) }
        let start = self._buffer.writerIndex
        var array = BSONArrayWriter(_buffer: self._buffer)
        self._buffer = ByteBuffer()
        array._buffer._bsonWriteInt32Placeholder()
        defer {
            array._buffer._bsonCloseDocument(start: start)
            self._buffer = array._buffer
        }
        try body(&array)
    }

    /// Appends a binary item.
    @inlinable
    public mutating func appendBinary(_ value: BSONBinary) {
        self._withKey { $0._bsonAppendBinary($1, value.subtype.rawValue, value.bytes) }
    }

    /// Appends a boolean item.
    @inlinable
    public mutating func appendBool(_ value: Bool) {
        self._withKey { $0._bsonAppendFixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a null item.
    @inlinable
    public mutating func appendNull() {
        self._withKey { $0._bsonAppendHeader(0x0A, $1) }
    }

    /// Appends a 32-bit integer item.
    @inlinable
    public mutating func appendInt32(_ value: Int32) {
        self._withKey { $0._bsonAppendFixed(0x10, $1, value) }
    }

    /// Appends a 64-bit integer item.
    @inlinable
    public mutating func appendInt64(_ value: Int64) {
        self._withKey { $0._bsonAppendFixed(0x12, $1, value) }
    }

    /// Appends a UTC datetime item.
    @inlinable
    public mutating func appendDateTime(_ value: BSONDateTime) {
        self._withKey { $0._bsonAppendFixed(0x09, $1, value.millisecondsSinceEpoch) }
    }

    /// Appends an ObjectId item.
    @inlinable
    public mutating func appendObjectID(_ value: BSONObjectID) {
        self._withKey { $0._bsonAppendObjectID(0x07, $1, value) }
    }

    /// Appends any value of the generic tree, recursively (every other BSON type goes here).
    public mutating func append(_ value: BSONValue) {
        self._withKey { buffer, key in buffer._bsonAppendValue(key, value) }
    }
}

// MARK: - Leaf primitives (the only place the writer touches raw memory)

@inlinable
internal func _bsonContainsNUL(_ bytes: UnsafeRawBufferPointer) -> Bool {
    for byte in bytes where byte == 0 { return true }
    return false
}

extension ByteBuffer {
    @inlinable
    internal mutating func _bsonWriteInt32Placeholder() {
        self.writeInteger(Int32(0), endianness: .little)
    }

    /// Writes the terminating NUL of the document that started at `start` and back-fills its length.
    @inlinable
    internal mutating func _bsonCloseDocument(start: Int) {
        self.writeInteger(UInt8(0))
        self._bsonBackfillLength(start: start)
    }

    @inlinable
    internal mutating func _bsonBackfillLength(start: Int) {
        self.setInteger(Int32(truncatingIfNeeded: self.writerIndex &- start), at: start, endianness: .little)
    }

    /// type byte + key + NUL, with `extra` more writable bytes reserved for the caller's value.
    @inlinable
    internal mutating func _bsonAppendHeader(_ type: UInt8, _ key: UnsafeRawBufferPointer) {
        let size = key.count &+ 2
        self.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
            out.storeBytes(of: type, toByteOffset: 0, as: UInt8.self)
            UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: key)
            out.storeBytes(of: 0, toByteOffset: key.count &+ 1, as: UInt8.self)
            return size
        }
    }

    /// One element with a fixed-size little-endian value, in a single reservation.
    @inlinable
    internal mutating func _bsonAppendFixed<T: FixedWidthInteger>(
        _ type: UInt8,
        _ key: UnsafeRawBufferPointer,
        _ value: T
    ) {
        let size = key.count &+ 2 &+ MemoryLayout<T>.size
        self.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
            out.storeBytes(of: type, toByteOffset: 0, as: UInt8.self)
            UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: key)
            out.storeBytes(of: 0, toByteOffset: key.count &+ 1, as: UInt8.self)
            out.storeBytes(of: value.littleEndian, toByteOffset: key.count &+ 2, as: T.self)
            return size
        }
    }

    /// One element whose value is a length-prefixed string (string, code, symbol, DBPointer's ref).
    @inlinable
    internal mutating func _bsonAppendString(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let size = key.count &+ 2 &+ 4 &+ utf8.count &+ 1
            self.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
                out.storeBytes(of: type, toByteOffset: 0, as: UInt8.self)
                UnsafeMutableRawBufferPointer(rebasing: out[1...]).copyMemory(from: key)
                var at = key.count &+ 1
                out.storeBytes(of: 0, toByteOffset: at, as: UInt8.self)
                at &+= 1
                out.storeBytes(of: Int32(truncatingIfNeeded: utf8.count &+ 1).littleEndian, toByteOffset: at, as: Int32.self)
                at &+= 4
                UnsafeMutableRawBufferPointer(rebasing: out[at...]).copyMemory(from: UnsafeRawBufferPointer(utf8))
                out.storeBytes(of: 0, toByteOffset: at &+ utf8.count, as: UInt8.self)
                return size
            }
        }
    }

    /// A length-prefixed string value without an element header (code-with-scope's code).
    @inlinable
    internal mutating func _bsonWriteStringValue(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            self.writeInteger(Int32(truncatingIfNeeded: utf8.count &+ 1), endianness: .little)
            self.writeBytes(UnsafeRawBufferPointer(utf8))
            self.writeInteger(UInt8(0))
        }
    }

    @inlinable
    internal mutating func _bsonWriteCString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            precondition(!_bsonContainsNUL(UnsafeRawBufferPointer(utf8)), "BSON cstrings cannot contain NUL bytes")
            self.writeBytes(UnsafeRawBufferPointer(utf8))
            self.writeInteger(UInt8(0))
        }
    }

    @inlinable
    internal mutating func _bsonAppendBinary(_ key: UnsafeRawBufferPointer, _ subtype: UInt8, _ bytes: [UInt8]) {
        self._bsonAppendHeader(0x05, key)
        if subtype == 0x02 {
            // Old binary repeats the payload length inside the payload (bsonspec.org note on 0x02).
            self.writeInteger(Int32(truncatingIfNeeded: bytes.count &+ 4), endianness: .little)
            self.writeInteger(subtype)
            self.writeInteger(Int32(truncatingIfNeeded: bytes.count), endianness: .little)
        } else {
            self.writeInteger(Int32(truncatingIfNeeded: bytes.count), endianness: .little)
            self.writeInteger(subtype)
        }
        self.writeBytes(bytes)
    }

    @inlinable
    internal mutating func _bsonWriteObjectID(_ id: BSONObjectID) {
        self.writeInteger(id.high, endianness: .big)
        self.writeInteger(id.low, endianness: .big)
    }

    @inlinable
    internal mutating func _bsonAppendObjectID(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ id: BSONObjectID) {
        self._bsonAppendHeader(type, key)
        self._bsonWriteObjectID(id)
    }

    @inlinable
    internal mutating func _bsonAppendRegex(_ key: UnsafeRawBufferPointer, _ value: BSONRegularExpression) {
        self._bsonAppendHeader(0x0B, key)
        self._bsonWriteCString(value.pattern)
        self._bsonWriteCString(value.options)
    }

    @inlinable
    internal mutating func _bsonAppendDecimal128(_ key: UnsafeRawBufferPointer, _ value: BSONDecimal128) {
        self._bsonAppendHeader(0x13, key)
        self.writeInteger(value.low, endianness: .little)
        self.writeInteger(value.high, endianness: .little)
    }

    /// Writes one element of the generic tree; recursion for documents, arrays and scopes.
    internal mutating func _bsonAppendValue(_ key: UnsafeRawBufferPointer, _ value: BSONValue) {
        switch value {
        case .double(let v): self._bsonAppendFixed(0x01, key, v.bitPattern)
        case .string(let v): self._bsonAppendString(0x02, key, v)
        case .document(let d):
            self._bsonAppendHeader(0x03, key)
            d._write(into: &self)
        case .array(let items):
            self._bsonAppendHeader(0x04, key)
            BSONOrderedDocument._writeArray(items, into: &self)
        case .binary(let b): self._bsonAppendBinary(key, b.subtype.rawValue, b.bytes)
        case .undefined: self._bsonAppendHeader(0x06, key)
        case .objectID(let id): self._bsonAppendObjectID(0x07, key, id)
        case .bool(let b): self._bsonAppendFixed(0x08, key, b ? UInt8(1) : UInt8(0))
        case .datetime(let d): self._bsonAppendFixed(0x09, key, d.millisecondsSinceEpoch)
        case .null: self._bsonAppendHeader(0x0A, key)
        case .regularExpression(let r): self._bsonAppendRegex(key, r)
        case .dbPointer(let p):
            self._bsonAppendString(0x0C, key, p.ref)
            self._bsonWriteObjectID(p.id)
        case .javascript(let code): self._bsonAppendString(0x0D, key, code)
        case .symbol(let symbol): self._bsonAppendString(0x0E, key, symbol)
        case .javascriptWithScope(let cws):
            self._bsonAppendHeader(0x0F, key)
            let start = self.writerIndex
            self._bsonWriteInt32Placeholder()
            self._bsonWriteStringValue(cws.code)
            cws.scope._write(into: &self)
            self._bsonBackfillLength(start: start)
        case .int32(let v): self._bsonAppendFixed(0x10, key, v)
        case .timestamp(let t):
            self._bsonAppendFixed(0x11, key, UInt64(t.timestamp) << 32 | UInt64(t.increment))
        case .int64(let v): self._bsonAppendFixed(0x12, key, v)
        case .decimal128(let d): self._bsonAppendDecimal128(key, d)
        case .minKey: self._bsonAppendHeader(0xFF, key)
        case .maxKey: self._bsonAppendHeader(0x7F, key)
        }
    }
}
