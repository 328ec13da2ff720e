import NIOCore

// The BSON writer (bsonspec.org 1.1):
//
//   document ::= int32 e_list "\x00"        int32 = total byte count, little-endian
//   element  ::= type(byte) e_name value    e_name = cstring (no NUL inside)
//
// Every writer appends straight into the caller's ByteBuffer through one output primitive,
// `_BSONOutput`: it reserves a document's int32 length, writes the elements in place (nested
// documents and arrays too) and back-fills the length when the document closes. It allocates
// nothing of its own: keys are copied from the String's UTF-8 storage (literals and small
// strings need no heap) and array keys "0", "1", … are formatted on the stack.
//
// The three ways in all write through it: the closure writers (`writeBSONDocument`,
// `BSONDocumentWriter`, `BSONArrayWriter`), the begin/end `BSONStreamWriter` the RPC layer
// drives, and the generic tree (`BSONValue`, which the Codable encoder builds).
//
// Speed: going through ByteBuffer's API for every field costs a uniqueness check, a capacity
// check and (for code inlined into another module) dynamic exclusivity checks per call. So the
// output takes the buffer over for the duration of a document, pins its storage (`_BSONBytes`)
// and only calls back into ByteBuffer to grow it and, at the end, to commit the writer index.
// The output and the writers holding it are non-copyable, so no copy of a pin can outlive or
// race the buffer it points into.
//
// The entry points are @inlinable so that a caller in another module (the RPC layer, the
// control-payload layer) gets the closure bodies inlined and specialised.

extension ByteBuffer {
    /// Appends one BSON document at the writer index, built by `body`, and returns its byte count.
    ///
    /// The int32 length is reserved first and back-filled when `body` returns; nested documents
    /// and arrays are written in place. If `body` throws, the writer index is put back where it
    /// was, so no partial document is left behind. Writing into a buffer that already has the
    /// capacity allocates nothing.
    ///
    /// ```swift
    /// buffer.writeBSONDocument { doc in
    ///     doc.appendString("protocolVersion", "5.4.1")
    ///     doc.appendInt64("mtu", 131_084)
    ///     doc.appendArray("audioServiceTransports") { $0.appendInt32(1); $0.appendInt32(2) }
    /// }
    /// ```
    ///
    /// - Precondition: keys (and regular-expression parts) contain no NUL byte, which BSON cannot
    ///   represent; check untrusted keys with ``BSONDocumentWriter/isValidKey(_:)`` first.
    @inlinable
    @discardableResult
    public mutating func writeBSONDocument<Failure: Error>(
        _ body: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) -> Int {
        let start = self.writerIndex
        // Move the storage out of `self`, so the writer holds the only reference and its writes
        // never copy on write; `ByteBuffer()` is a shared empty buffer and allocates nothing.
        let taken = self
        self = ByteBuffer()
        var writer = BSONDocumentWriter(_out: _BSONOutput(taking: consume taken, minimumWritableBytes: 64))
        writer._out.beginDocument()
        do throws(Failure) {
            try body(&writer)
        } catch {
            self = writer._out.finish()
            self.moveWriterIndex(to: start)
            throw error
        }
        writer._out.endDocument(start: start)
        self = writer._out.finish()
        return self.writerIndex &- start
    }
}

/// The growable output every BSON writer appends through: a write cursor into the pinned
/// storage of a ByteBuffer that the writer owns for the moment.
///
/// `position` is the buffer index where the next byte goes and `limit` the storage's capacity.
/// Indices are the buffer's own (as `writerIndex`), so lengths can be back-filled at an earlier
/// index after the storage moved. Non-copyable: it holds a writable pin (see ``_BSONBytes``).
@usableFromInline
internal struct _BSONOutput: ~Copyable {
    /// The buffer being written; nil only while a nested writer holds the output (``nested(start:_:)``).
    @usableFromInline var bytes: _BSONBytes?
    @usableFromInline var position: Int
    @usableFromInline var limit: Int

    /// Takes `buffer` over, with at least `minimumWritableBytes` of room.
    @inlinable
    init(taking buffer: consuming ByteBuffer, minimumWritableBytes: Int) {
        if buffer.writableBytes < minimumWritableBytes {
            buffer.reserveCapacity(minimumWritableBytes: minimumWritableBytes)
        }
        self.position = buffer.writerIndex
        let bytes = _BSONBytes(writable: consume buffer)
        self.limit = bytes.capacity
        self.bytes = bytes
    }

    @inlinable
    init(bytes: _BSONBytes?, position: Int, limit: Int) {
        self.bytes = bytes
        self.position = position
        self.limit = limit
    }

    /// Writes the elements of a nested document or array (its header and length placeholder,
    /// at `start`, already written) through a writer of type `Writer` that takes the output over
    /// while `body` runs, then closes the nested document, whether or not `body` throws.
    @inlinable
    @inline(__always)
    mutating func nested<Writer: _BSONScopeWriter & ~Copyable, Failure: Error>(
        start: Int,
        _ body: (inout Writer) throws(Failure) -> Void
    ) throws(Failure) {
        var writer = Writer(_out: _BSONOutput(bytes: self.bytes.take(), position: self.position, limit: self.limit))
        defer {
            // Fields swapped back rather than the output reassigned: nothing to destroy.
            writer._withOutput { swap(&self.bytes, &$0.bytes); self.position = $0.position; self.limit = $0.limit }
            self.endDocument(start: start)
        }
        try body(&writer)
    }

    /// The buffer back, with the writer index moved past what was written.
    @inlinable
    mutating func finish() -> ByteBuffer {
        var buffer = self.bytes.take().unsafelyUnwrapped.unpin()
        buffer.moveWriterIndex(to: self.position)
        return buffer
    }

    /// A pointer with room for `count` bytes at the cursor, for the stores of one element.
    @inlinable
    @inline(__always)
    mutating func reserve(_ count: Int) -> UnsafeMutableRawPointer {
        if _slowPath(self.limit &- self.position < count) {
            self.grow(count)
        }
        return self.bytes.unsafelyUnwrapped.address(self.position)
    }

    @usableFromInline
    @inline(never)
    mutating func grow(_ count: Int) {
        var buffer = self.finish()
        // At least double, so a long document costs O(log n) reallocations.
        buffer.reserveCapacity(minimumWritableBytes: Swift.max(count, buffer.capacity))
        let bytes = _BSONBytes(writable: consume buffer)
        self.limit = bytes.capacity
        self.bytes = bytes
    }

    /// The int32 length placeholder of a document.
    @inlinable
    @inline(__always)
    mutating func beginDocument() {
        let p = self.reserve(4)
        p.storeBytes(of: 0, as: UInt32.self)
        self.position &+= 4
    }

    /// The terminating NUL of the document that started at `start`, and its back-filled length.
    @inlinable
    @inline(__always)
    mutating func endDocument(start: Int) {
        let p = self.reserve(1)
        p.storeBytes(of: 0, as: UInt8.self)
        self.position &+= 1
        self.backfillLength(start: start)
    }

    @inlinable
    @inline(__always)
    mutating func backfillLength(start: Int) {
        let length = UInt32(truncatingIfNeeded: self.position &- start)
        self.bytes.unsafelyUnwrapped.address(start).storeBytes(of: length.littleEndian, as: UInt32.self)
    }

    /// Writes type + key + NUL at `p`; returns the offset past them.
    @inlinable
    @inline(__always)
    static func header(_ p: UnsafeMutableRawPointer, _ type: UInt8, _ key: UnsafeRawBufferPointer) -> Int {
        p.storeBytes(of: type, as: UInt8.self)
        if key.count > 0 {
            (p + 1).copyMemory(from: key.baseAddress.unsafelyUnwrapped, byteCount: key.count)
        }
        (p + (key.count &+ 1)).storeBytes(of: 0, as: UInt8.self)
        return key.count &+ 2
    }

    @inlinable
    mutating func appendHeader(_ type: UInt8, _ key: UnsafeRawBufferPointer) {
        let p = self.reserve(key.count &+ 2)
        self.position &+= Self.header(p, type, key)
    }

    /// An element with a fixed-size little-endian value, in one reservation.
    @inlinable
    mutating func appendFixed<T: FixedWidthInteger>(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ value: T) {
        let p = self.reserve(key.count &+ 2 &+ MemoryLayout<T>.size)
        let at = Self.header(p, type, key)
        (p + at).storeBytes(of: value.littleEndian, as: T.self)
        self.position &+= at &+ MemoryLayout<T>.size
    }

    /// An element whose value is int32 length + bytes + NUL (string, code, symbol).
    @inlinable
    mutating func appendString(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ utf8: UnsafeRawBufferPointer) {
        let p = self.reserve(key.count &+ 2 &+ 4 &+ utf8.count &+ 1)
        var at = Self.header(p, type, key)
        (p + at).storeBytes(of: UInt32(truncatingIfNeeded: utf8.count &+ 1).littleEndian, as: UInt32.self)
        at &+= 4
        if utf8.count > 0 {
            (p + at).copyMemory(from: utf8.baseAddress.unsafelyUnwrapped, byteCount: utf8.count)
        }
        (p + (at &+ utf8.count)).storeBytes(of: 0, as: UInt8.self)
        self.position &+= at &+ utf8.count &+ 1
    }

    @inlinable
    mutating func appendString(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ value: String) {
        if value.utf8.withContiguousStorageIfAvailable({ self.appendString(type, key, UnsafeRawBufferPointer($0)) }) != nil {
            return
        }
        var value = value
        value.withUTF8 { self.appendString(type, key, UnsafeRawBufferPointer($0)) }
    }

    /// Header + int32 placeholder of an embedded document, array or code-with-scope; returns
    /// the index of the placeholder.
    @inlinable
    mutating func beginElement(_ type: UInt8, _ key: UnsafeRawBufferPointer) -> Int {
        let p = self.reserve(key.count &+ 6)
        let at = Self.header(p, type, key)
        (p + at).storeBytes(of: 0, as: UInt32.self)
        let start = self.position &+ at
        self.position = start &+ 4
        return start
    }

    @inlinable
    mutating func appendRaw(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        let p = self.reserve(bytes.count)
        p.copyMemory(from: bytes.baseAddress.unsafelyUnwrapped, byteCount: bytes.count)
        self.position &+= bytes.count
    }

    @inlinable
    mutating func appendBinary(_ key: UnsafeRawBufferPointer, _ subtype: UInt8, _ bytes: UnsafeRawBufferPointer) {
        let old = subtype == 0x02
        let p = self.reserve(key.count &+ 2 &+ 5 &+ (old ? 4 : 0) &+ bytes.count)
        var at = Self.header(p, 0x05, key)
        // Old binary repeats the payload length inside the payload (bsonspec.org, subtype 0x02).
        let outer = bytes.count &+ (old ? 4 : 0)
        (p + at).storeBytes(of: UInt32(truncatingIfNeeded: outer).littleEndian, as: UInt32.self)
        (p + (at &+ 4)).storeBytes(of: subtype, as: UInt8.self)
        at &+= 5
        if old {
            (p + at).storeBytes(of: UInt32(truncatingIfNeeded: bytes.count).littleEndian, as: UInt32.self)
            at &+= 4
        }
        if bytes.count > 0 {
            (p + at).copyMemory(from: bytes.baseAddress.unsafelyUnwrapped, byteCount: bytes.count)
        }
        self.position &+= at &+ bytes.count
    }

    @inlinable
    mutating func appendObjectID(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ id: BSONObjectID) {
        let p = self.reserve(key.count &+ 2 &+ 12)
        let at = Self.header(p, type, key)
        (p + at).storeBytes(of: id.high.bigEndian, as: UInt64.self)
        (p + (at &+ 8)).storeBytes(of: id.low.bigEndian, as: UInt32.self)
        self.position &+= at &+ 12
    }

    @inlinable
    mutating func appendRawObjectID(_ id: BSONObjectID) {
        let p = self.reserve(12)
        p.storeBytes(of: id.high.bigEndian, as: UInt64.self)
        (p + 8).storeBytes(of: id.low.bigEndian, as: UInt32.self)
        self.position &+= 12
    }

    @inlinable
    mutating func appendDecimal128(_ key: UnsafeRawBufferPointer, _ value: BSONDecimal128) {
        let p = self.reserve(key.count &+ 2 &+ 16)
        let at = Self.header(p, 0x13, key)
        (p + at).storeBytes(of: value.low.littleEndian, as: UInt64.self)
        (p + (at &+ 8)).storeBytes(of: value.high.littleEndian, as: UInt64.self)
        self.position &+= at &+ 16
    }

    /// A cstring value (regex parts).
    @inlinable
    mutating func appendCString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let raw = UnsafeRawBufferPointer(utf8)
            precondition(!_bsonContainsNUL(raw), "BSON cstrings cannot contain NUL bytes")
            let p = self.reserve(raw.count &+ 1)
            if raw.count > 0 { p.copyMemory(from: raw.baseAddress.unsafelyUnwrapped, byteCount: raw.count) }
            (p + raw.count).storeBytes(of: 0, as: UInt8.self)
            self.position &+= raw.count &+ 1
        }
    }

    /// A length-prefixed string value without an element header (code-with-scope's code).
    @inlinable
    mutating func appendStringValue(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            let p = self.reserve(4 &+ utf8.count &+ 1)
            p.storeBytes(of: UInt32(truncatingIfNeeded: utf8.count &+ 1).littleEndian, as: UInt32.self)
            if utf8.count > 0 { (p + 4).copyMemory(from: utf8.baseAddress.unsafelyUnwrapped, byteCount: utf8.count) }
            (p + (4 &+ utf8.count)).storeBytes(of: 0, as: UInt8.self)
            self.position &+= 4 &+ utf8.count &+ 1
        }
    }

    /// One element of the generic tree; recursion for documents, arrays and scopes.
    @usableFromInline
    mutating func appendValue(_ key: UnsafeRawBufferPointer, _ value: BSONValue) {
        switch value {
        case .double(let v): self.appendFixed(0x01, key, v.bitPattern)
        case .string(let v): self.appendString(0x02, key, v)
        case .document(let d):
            let start = self.beginElement(0x03, key)
            for field in d.fields {
                var k = field.key
                k.withUTF8 { self.appendValue(_bsonCheckedKey($0), field.value) }
            }
            self.endDocument(start: start)
        case .array(let items):
            let start = self.beginElement(0x04, key)
            for (i, item) in items.enumerated() {
                _bsonWithIndexKey(i) { self.appendValue($0, item) }
            }
            self.endDocument(start: start)
        case .binary(let b):
            b.bytes.withUnsafeBytes { self.appendBinary(key, b.subtype.rawValue, $0) }
        case .undefined: self.appendHeader(0x06, key)
        case .objectID(let id): self.appendObjectID(0x07, key, id)
        case .bool(let b): self.appendFixed(0x08, key, b ? UInt8(1) : UInt8(0))
        case .datetime(let d): self.appendFixed(0x09, key, d.millisecondsSinceEpoch)
        case .null: self.appendHeader(0x0A, key)
        case .regularExpression(let r):
            self.appendHeader(0x0B, key)
            self.appendCString(r.pattern)
            self.appendCString(r.options)
        case .dbPointer(let p):
            self.appendString(0x0C, key, p.ref)
            self.appendRawObjectID(p.id)
        case .javascript(let code): self.appendString(0x0D, key, code)
        case .symbol(let symbol): self.appendString(0x0E, key, symbol)
        case .javascriptWithScope(let cws):
            let start = self.beginElement(0x0F, key)
            self.appendStringValue(cws.code)
            let scopeStart = self.position
            self.beginDocument()
            for field in cws.scope.fields {
                var k = field.key
                k.withUTF8 { self.appendValue(_bsonCheckedKey($0), field.value) }
            }
            self.endDocument(start: scopeStart)
            self.backfillLength(start: start)
        case .int32(let v): self.appendFixed(0x10, key, v)
        case .timestamp(let t):
            self.appendFixed(0x11, key, UInt64(t.timestamp) << 32 | UInt64(t.increment))
        case .int64(let v): self.appendFixed(0x12, key, v)
        case .decimal128(let d): self.appendDecimal128(key, d)
        case .minKey: self.appendHeader(0xFF, key)
        case .maxKey: self.appendHeader(0x7F, key)
        }
    }
}

/// Whether `bytes` contains a zero byte, eight bytes at a time (the classic "has zero byte"
/// word trick), since keys are checked on every append.
@inlinable
@inline(__always)
internal func _bsonContainsNUL(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    let count = bytes.count
    while i &+ 8 <= count {
        let v = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        if (v &- 0x0101_0101_0101_0101) & ~v & 0x8080_8080_8080_8080 != 0 { return true }
        i &+= 8
    }
    while i < count {
        if bytes[i] == 0 { return true }
        i &+= 1
    }
    return false
}

@inlinable
@inline(__always)
internal func _bsonCheckedKey(_ utf8: UnsafeBufferPointer<UInt8>) -> UnsafeRawBufferPointer {
    let raw = UnsafeRawBufferPointer(utf8)
    precondition(!_bsonContainsNUL(raw), "BSON keys cannot contain NUL bytes")
    return raw
}

/// Calls `body` with the decimal digits of `index` (an array key), formatted on the stack.
@inlinable
@inline(__always)
internal func _bsonWithIndexKey<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if index < 10 {
        var digit = UInt8(truncatingIfNeeded: index) &+ 0x30
        return withUnsafeBytes(of: &digit) { body($0) }
    }
    // 24 bytes hold the 19 digits of any non-negative Int.
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    return withUnsafeMutableBytes(of: &digits) { raw in
        var n = index
        var at = raw.count
        repeat {
            at &-= 1
            raw[at] = UInt8(truncatingIfNeeded: n % 10) &+ 0x30
            n /= 10
        } while n > 0
        return body(UnsafeRawBufferPointer(rebasing: raw[at...]))
    }
}

/// A writer that a nested document or array is written through (``BSONDocumentWriter``,
/// ``BSONArrayWriter``): made on an output it holds until ``_BSONOutput/nested(start:_:)`` takes
/// it back.
@usableFromInline
internal protocol _BSONScopeWriter: ~Copyable {
    init(_out: consuming _BSONOutput)
    mutating func _withOutput(_ body: (inout _BSONOutput) -> Void)
}

extension BSONDocumentWriter: _BSONScopeWriter {
    @inlinable
    @inline(__always)
    mutating func _withOutput(_ body: (inout _BSONOutput) -> Void) { body(&self._out) }
}

extension BSONArrayWriter: _BSONScopeWriter {
    @inlinable
    @inline(__always)
    mutating func _withOutput(_ body: (inout _BSONOutput) -> Void) { body(&self._out) }
}

/// Writes the elements of one BSON document (and, in place, of its nested documents).
///
/// Obtained from ``NIOCore/ByteBuffer/writeBSONDocument(_:)``; each `append…` method writes one
/// element of the named BSON type, so the wire type is visible at the call site (SDL control
/// payloads care: `mtu` is int64, `hashId` int32). Non-copyable: it holds a cursor into the
/// buffer being written.
public struct BSONDocumentWriter: ~Copyable {
    @usableFromInline
    internal var _out: _BSONOutput

    @inlinable
    internal init(_out: consuming _BSONOutput) {
        self._out = _out
    }

    /// Whether `key` can be written as a BSON key (it contains no NUL byte).
    @inlinable
    public static func isValidKey(_ key: String) -> Bool {
        !key.utf8.contains(0)
    }

    @inlinable
    @inline(__always)
    internal mutating func _withKey<R>(_ key: String, _ body: (inout _BSONOutput, UnsafeRawBufferPointer) -> R) -> R {
        // Borrow the key's UTF-8 in place (native and small strings); copy only foreign ones.
        if let result = key.utf8.withContiguousStorageIfAvailable({ body(&self._out, _bsonCheckedKey($0)) }) {
            return result
        }
        var key = key
        return key.withUTF8 { utf8 in body(&self._out, _bsonCheckedKey(utf8)) }
    }

    /// Appends a double (type 0x01).
    @inlinable
    public mutating func appendDouble(_ key: String, _ value: Double) {
        self._withKey(key) { $0.appendFixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a UTF-8 string (type 0x02). The string may contain NUL bytes (it is length-prefixed).
    @inlinable
    public mutating func appendString(_ key: String, _ value: String) {
        self._withKey(key) { $0.appendString(0x02, $1, value) }
    }

    /// Appends an embedded document (type 0x03) whose elements `body` writes in place.
    @inlinable
    public mutating func appendDocument<Failure: Error>(
        _ key: String,
        _ body: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) {
        let start = self._withKey(key) { $0.beginElement(0x03, $1) }
        try body(&self)
        self._out.endDocument(start: start)
    }

    /// Appends an embedded document (type 0x03) by copying an already validated document.
    @inlinable
    public mutating func appendDocument(_ key: String, _ document: BSONDocument) {
        self._withKey(key) { out, key in
            out.appendHeader(0x03, key)
            document._bytes.withBytes(at: document._offset, count: document._length) { out.appendRaw($0) }
        }
    }

    /// Appends an array (type 0x04) whose items `body` writes in place, keyed "0", "1", ….
    @inlinable
    public mutating func appendArray<Failure: Error>(
        _ key: String,
        _ body: (inout BSONArrayWriter) throws(Failure) -> Void
    ) throws(Failure) {
        let start = self._withKey(key) { $0.beginElement(0x04, $1) }
        try self._out.nested(start: start, body)
    }

    /// Appends binary data (type 0x05). For subtype 0x02 (old binary) the inner length is added.
    @inlinable
    public mutating func appendBinary(_ key: String, _ value: BSONBinary) {
        self._withKey(key) { out, key in
            value.bytes.withUnsafeBytes { out.appendBinary(key, value.subtype.rawValue, $0) }
        }
    }

    /// Appends binary data (type 0x05) from bytes, without building a ``BSONBinary``.
    @inlinable
    public mutating func appendBinary(_ key: String, subtype: BSONBinary.Subtype = .generic, bytes: [UInt8]) {
        self._withKey(key) { out, key in
            bytes.withUnsafeBytes { out.appendBinary(key, subtype.rawValue, $0) }
        }
    }

    /// Appends undefined (type 0x06, deprecated).
    @inlinable
    public mutating func appendUndefined(_ key: String) {
        self._withKey(key) { $0.appendHeader(0x06, $1) }
    }

    /// Appends an ObjectId (type 0x07).
    @inlinable
    public mutating func appendObjectID(_ key: String, _ value: BSONObjectID) {
        self._withKey(key) { $0.appendObjectID(0x07, $1, value) }
    }

    /// Appends a boolean (type 0x08).
    @inlinable
    public mutating func appendBool(_ key: String, _ value: Bool) {
        self._withKey(key) { $0.appendFixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a UTC datetime (type 0x09).
    @inlinable
    public mutating func appendDateTime(_ key: String, _ value: BSONDateTime) {
        self._withKey(key) { $0.appendFixed(0x09, $1, value.millisecondsSinceEpoch) }
    }

    /// Appends null (type 0x0A).
    @inlinable
    public mutating func appendNull(_ key: String) {
        self._withKey(key) { $0.appendHeader(0x0A, $1) }
    }

    /// Appends a regular expression (type 0x0B), pattern and options as given.
    ///
    /// - Precondition: neither part contains a NUL byte.
    @inlinable
    public mutating func appendRegularExpression(_ key: String, _ value: BSONRegularExpression) {
        self._withKey(key) { out, key in
            out.appendHeader(0x0B, key)
            out.appendCString(value.pattern)
            out.appendCString(value.options)
        }
    }

    /// Appends a DBPointer (type 0x0C, deprecated).
    @inlinable
    public mutating func appendDBPointer(_ key: String, _ value: BSONDBPointer) {
        self._withKey(key) { out, key in
            out.appendString(0x0C, key, value.ref)
            out.appendRawObjectID(value.id)
        }
    }

    /// Appends JavaScript code (type 0x0D).
    @inlinable
    public mutating func appendJavaScript(_ key: String, _ code: String) {
        self._withKey(key) { $0.appendString(0x0D, $1, code) }
    }

    /// Appends a symbol (type 0x0E, deprecated).
    @inlinable
    public mutating func appendSymbol(_ key: String, _ symbol: String) {
        self._withKey(key) { $0.appendString(0x0E, $1, symbol) }
    }

    /// Appends JavaScript code with a scope document (type 0x0F, deprecated) that `scope` writes.
    @inlinable
    public mutating func appendJavaScriptWithScope<Failure: Error>(
        _ key: String,
        code: String,
        scope: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) {
        let start = self._withKey(key) { $0.beginElement(0x0F, $1) }
        self._out.appendStringValue(code)
        let scopeStart = self._out.position
        self._out.beginDocument()
        try scope(&self)
        self._out.endDocument(start: scopeStart)
        self._out.backfillLength(start: start)
    }

    /// Appends a 32-bit integer (type 0x10).
    @inlinable
    public mutating func appendInt32(_ key: String, _ value: Int32) {
        self._withKey(key) { $0.appendFixed(0x10, $1, value) }
    }

    /// Appends a timestamp (type 0x11).
    @inlinable
    public mutating func appendTimestamp(_ key: String, _ value: BSONTimestamp) {
        self._withKey(key) { $0.appendFixed(0x11, $1, UInt64(value.timestamp) << 32 | UInt64(value.increment)) }
    }

    /// Appends a 64-bit integer (type 0x12).
    @inlinable
    public mutating func appendInt64(_ key: String, _ value: Int64) {
        self._withKey(key) { $0.appendFixed(0x12, $1, value) }
    }

    /// Appends a decimal128 (type 0x13).
    @inlinable
    public mutating func appendDecimal128(_ key: String, _ value: BSONDecimal128) {
        self._withKey(key) { $0.appendDecimal128($1, value) }
    }

    /// Appends min key (type 0xFF).
    @inlinable
    public mutating func appendMinKey(_ key: String) {
        self._withKey(key) { $0.appendHeader(0xFF, $1) }
    }

    /// Appends max key (type 0x7F).
    @inlinable
    public mutating func appendMaxKey(_ key: String) {
        self._withKey(key) { $0.appendHeader(0x7F, $1) }
    }

    /// Appends any value of the generic tree, recursively.
    ///
    /// - Precondition: no key or regular-expression part inside `value` contains NUL
    ///   (``BSONOrderedDocument/write(to:)`` checks and throws instead).
    public mutating func append(_ key: String, _ value: BSONValue) {
        self._withKey(key) { $0.appendValue($1, value) }
    }
}

/// Writes the items of one BSON array, generating the keys "0", "1", … without allocating.
/// Non-copyable, like ``BSONDocumentWriter``.
public struct BSONArrayWriter: ~Copyable {
    @usableFromInline
    internal var _out: _BSONOutput
    @usableFromInline
    internal var _index: Int = 0

    @inlinable
    internal init(_out: consuming _BSONOutput) {
        self._out = _out
    }

    /// The number of items written so far (and so the next key).
    @inlinable
    public var count: Int { self._index }

    @inlinable
    @inline(__always)
    internal mutating func _withKey<R>(_ body: (inout _BSONOutput, UnsafeRawBufferPointer) -> R) -> R {
        let index = self._index
        self._index = index &+ 1
        return _bsonWithIndexKey(index) { body(&self._out, $0) }
    }

    /// Appends a double item.
    @inlinable
    public mutating func appendDouble(_ value: Double) {
        self._withKey { $0.appendFixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a string item.
    @inlinable
    public mutating func appendString(_ value: String) {
        self._withKey { $0.appendString(0x02, $1, value) }
    }

    /// Appends a document item whose elements `body` writes in place.
    @inlinable
    public mutating func appendDocument<Failure: Error>(
        _ body: (inout BSONDocumentWriter) throws(Failure) -> Void
    ) throws(Failure) {
        let start = self._withKey { $0.beginElement(0x03, $1) }
        try self._out.nested(start: start, body)
    }

    /// Appends a document item by copying an already validated document.
    @inlinable
    public mutating func appendDocument(_ document: BSONDocument) {
        self._withKey { out, key in
            out.appendHeader(0x03, key)
            document._bytes.withBytes(at: document._offset, count: document._length) { out.appendRaw($0) }
        }
    }

    /// Appends a nested array item whose items `body` writes in place.
    @inlinable
    public mutating func appendArray<Failure: Error>(
        _ body: (inout BSONArrayWriter) throws(Failure) -> Void
    ) throws(Failure) {
        let start = self._withKey { $0.beginElement(0x04, $1) }
        try self._out.nested(start: start, body)
    }

    /// Appends a binary item.
    @inlinable
    public mutating func appendBinary(_ value: BSONBinary) {
        self._withKey { out, key in
            value.bytes.withUnsafeBytes { out.appendBinary(key, value.subtype.rawValue, $0) }
        }
    }

    /// Appends a boolean item.
    @inlinable
    public mutating func appendBool(_ value: Bool) {
        self._withKey { $0.appendFixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a null item.
    @inlinable
    public mutating func appendNull() {
        self._withKey { $0.appendHeader(0x0A, $1) }
    }

    /// Appends a 32-bit integer item.
    @inlinable
    public mutating func appendInt32(_ value: Int32) {
        self._withKey { $0.appendFixed(0x10, $1, value) }
    }

    /// Appends a 64-bit integer item.
    @inlinable
    public mutating func appendInt64(_ value: Int64) {
        self._withKey { $0.appendFixed(0x12, $1, value) }
    }

    /// Appends a UTC datetime item.
    @inlinable
    public mutating func appendDateTime(_ value: BSONDateTime) {
        self._withKey { $0.appendFixed(0x09, $1, value.millisecondsSinceEpoch) }
    }

    /// Appends an ObjectId item.
    @inlinable
    public mutating func appendObjectID(_ value: BSONObjectID) {
        self._withKey { $0.appendObjectID(0x07, $1, value) }
    }

    /// Appends any value of the generic tree, recursively (every other BSON type goes here).
    public mutating func append(_ value: BSONValue) {
        self._withKey { $0.appendValue($1, value) }
    }
}
