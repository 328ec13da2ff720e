import NIOCore

/// A BSON writer driven by `begin…`/`end…` calls instead of closures, for encoders whose
/// structure unfolds at run time (generated RPC code walking its values, format converters).
///
/// It writes in place like `ByteBuffer.writeBSONDocument`: each document's int32 length is
/// reserved when it opens and back-filled when it closes. Inside an array scope the key arguments
/// are ignored and the items get the keys "0", "1", … . The top-level document is opened by
/// `init` and closed by `finish()`, which hands the buffer back.
///
/// Unlike the closure writer it is an ordinary copyable value (so it can conform to protocols
/// whose requirements take it `inout`). It builds the document in an array of its own, written
/// through pointers (copy-on-write keeps copies of the writer apart, and no per-element call into
/// ByteBuffer pays its uniqueness and exclusivity checks), and appends it to the buffer in one
/// copy when it finishes.
///
/// ```swift
/// var writer = BSONStreamWriter(appendingTo: buffer)
/// writer.appendString("5.4.1", forKey: "protocolVersion")
/// writer.beginArray(forKey: "videoServiceTransports")
/// writer.appendInt32(2, forKey: "")
/// writer.end()
/// buffer = writer.finish()
/// ```
///
/// - Precondition: keys contain no NUL byte (`String` keys are checked; `StaticString` keys,
///   compile-time constants, only in debug builds; check untrusted keys with
///   ``BSONDocumentWriter/isValidKey(_:)``); every `begin…` is matched by an `end()` before
///   `finish()`.
public struct BSONStreamWriter {
    /// Where `finish()` appends the document.
    @usableFromInline var _destination: ByteBuffer
    /// The document so far; `count` is the capacity, `_length` the bytes written.
    @usableFromInline var _storage: [UInt8]
    @usableFromInline var _length: Int
    /// The open scopes, innermost last: where their length placeholder is in `_storage`, and for
    /// arrays the index of the next item (-1 for documents).
    @usableFromInline var _scopes: [(start: Int, nextIndex: Int)]

    /// Starts a document that `finish()` appends at `buffer`'s writer index.
    @inlinable
    public init(appendingTo buffer: ByteBuffer) {
        self._destination = buffer
        self._storage = [UInt8](repeating: 0, count: 512)
        self._length = 4  // the top-level length placeholder
        self._scopes = []
        self._scopes.reserveCapacity(8)
        self._scopes.append((0, -1))
    }

    /// How many scopes are open, the top-level document included.
    @inlinable
    public var depth: Int { self._scopes.count }

    /// Whether the innermost open scope is an array.
    @inlinable
    public var isInArray: Bool { self._scopes[self._scopes.count &- 1].nextIndex >= 0 }

    @usableFromInline
    @inline(never)
    mutating func _grow(_ needed: Int) {
        var capacity = self._storage.count &* 2
        while capacity < needed { capacity &*= 2 }
        self._storage.append(contentsOf: repeatElement(0, count: capacity &- self._storage.count))
    }

    /// Writes one element: type byte, key, NUL, then `valueSize` bytes from `value`.
    @inlinable
    @inline(__always)
    mutating func _element(
        _ type: UInt8, _ key: UnsafeRawBufferPointer, valueSize: Int, _ value: (UnsafeMutableRawPointer) -> Void
    ) {
        let total = key.count &+ 2 &+ valueSize
        let at = self._length
        if _slowPath(at &+ total > self._storage.count) { self._grow(at &+ total) }
        self._storage.withUnsafeMutableBytes { raw in
            let p = raw.baseAddress.unsafelyUnwrapped + at
            p.storeBytes(of: type, as: UInt8.self)
            if key.count > 0 {
                (p + 1).copyMemory(from: key.baseAddress.unsafelyUnwrapped, byteCount: key.count)
            }
            (p + (key.count &+ 1)).storeBytes(of: 0, as: UInt8.self)
            value(p + (key.count &+ 2))
        }
        self._length = at &+ total
    }

    /// The next item index when the innermost scope is an array, else nil.
    @inlinable
    @inline(__always)
    mutating func _nextIndex() -> Int? {
        let last = self._scopes.count &- 1
        let index = self._scopes[last].nextIndex
        guard index >= 0 else { return nil }
        self._scopes[last].nextIndex = index &+ 1
        return index
    }

    @inlinable
    @inline(__always)
    mutating func _withKey(_ key: StaticString, _ body: (inout BSONStreamWriter, UnsafeRawBufferPointer) -> Void) {
        if let index = self._nextIndex() {
            _bsonWithIndexKey(index) { body(&self, $0) }
        } else if key.hasPointerRepresentation {
            let raw = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
            assert(!_bsonContainsNUL(raw), "BSON keys cannot contain NUL bytes")
            body(&self, raw)
        } else {
            key.withUTF8Buffer { body(&self, _bsonCheckedKey($0)) }
        }
    }

    @inlinable
    @inline(__always)
    mutating func _withKey(_ key: String, _ body: (inout BSONStreamWriter, UnsafeRawBufferPointer) -> Void) {
        if let index = self._nextIndex() {
            _bsonWithIndexKey(index) { body(&self, $0) }
            return
        }
        var key = key
        key.withUTF8 { body(&self, _bsonCheckedKey($0)) }
    }

    @inlinable
    mutating func _fixed<T: FixedWidthInteger>(_ type: UInt8, _ key: UnsafeRawBufferPointer, _ value: T) {
        self._element(type, key, valueSize: MemoryLayout<T>.size) { $0.storeBytes(of: value.littleEndian, as: T.self) }
    }

    @inlinable
    mutating func _string(_ key: UnsafeRawBufferPointer, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            self._element(0x02, key, valueSize: 4 &+ utf8.count &+ 1) { p in
                p.storeBytes(of: UInt32(truncatingIfNeeded: utf8.count &+ 1).littleEndian, as: UInt32.self)
                if utf8.count > 0 {
                    (p + 4).copyMemory(from: utf8.baseAddress.unsafelyUnwrapped, byteCount: utf8.count)
                }
                (p + (4 &+ utf8.count)).storeBytes(of: 0, as: UInt8.self)
            }
        }
    }

    @inlinable
    mutating func _begin(_ type: UInt8, _ key: UnsafeRawBufferPointer, array: Bool) {
        self._element(type, key, valueSize: 4) { $0.storeBytes(of: 0, as: UInt32.self) }
        self._scopes.append((self._length &- 4, array ? 0 : -1))
    }

    /// Appends a double (type 0x01).
    @inlinable
    public mutating func appendDouble(_ value: Double, forKey key: StaticString) {
        self._withKey(key) { $0._fixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a double (type 0x01).
    @inlinable
    public mutating func appendDouble(_ value: Double, forKey key: String) {
        self._withKey(key) { $0._fixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a UTF-8 string (type 0x02).
    @inlinable
    public mutating func appendString(_ value: String, forKey key: StaticString) {
        self._withKey(key) { $0._string($1, value) }
    }

    /// Appends a UTF-8 string (type 0x02).
    @inlinable
    public mutating func appendString(_ value: String, forKey key: String) {
        self._withKey(key) { $0._string($1, value) }
    }

    /// Appends a boolean (type 0x08).
    @inlinable
    public mutating func appendBool(_ value: Bool, forKey key: StaticString) {
        self._withKey(key) { $0._fixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a boolean (type 0x08).
    @inlinable
    public mutating func appendBool(_ value: Bool, forKey key: String) {
        self._withKey(key) { $0._fixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a null (type 0x0A).
    @inlinable
    public mutating func appendNull(forKey key: String) {
        self._withKey(key) { writer, key in writer._element(0x0A, key, valueSize: 0) { _ in } }
    }

    /// Appends a 32-bit integer (type 0x10).
    @inlinable
    public mutating func appendInt32(_ value: Int32, forKey key: StaticString) {
        self._withKey(key) { $0._fixed(0x10, $1, value) }
    }

    /// Appends a 32-bit integer (type 0x10).
    @inlinable
    public mutating func appendInt32(_ value: Int32, forKey key: String) {
        self._withKey(key) { $0._fixed(0x10, $1, value) }
    }

    /// Appends a 64-bit integer (type 0x12).
    @inlinable
    public mutating func appendInt64(_ value: Int64, forKey key: StaticString) {
        self._withKey(key) { $0._fixed(0x12, $1, value) }
    }

    /// Appends a 64-bit integer (type 0x12).
    @inlinable
    public mutating func appendInt64(_ value: Int64, forKey key: String) {
        self._withKey(key) { $0._fixed(0x12, $1, value) }
    }

    /// Appends any value of the generic tree (written through the closure writer, then copied).
    public mutating func append(_ value: BSONValue, forKey key: String) {
        self._withKey(key) { writer, key in
            var element = ByteBuffer()
            let name = String(decoding: key, as: UTF8.self)
            element.writeBSONDocument { $0.append(name, value) }
            // The element is the document minus its int32 length and terminating NUL.
            element.withUnsafeReadableBytes { bytes in
                let elementBytes = UnsafeRawBufferPointer(rebasing: bytes[4..<(bytes.count - 1)])
                let at = writer._length
                if at &+ elementBytes.count > writer._storage.count { writer._grow(at &+ elementBytes.count) }
                writer._storage.withUnsafeMutableBytes { raw in
                    (raw.baseAddress.unsafelyUnwrapped + at).copyMemory(from: elementBytes.baseAddress!, byteCount: elementBytes.count)
                }
                writer._length = at &+ elementBytes.count
            }
        }
    }

    /// Opens an embedded document (type 0x03); close it with `end()`.
    @inlinable
    public mutating func beginDocument(forKey key: StaticString) {
        self._withKey(key) { $0._begin(0x03, $1, array: false) }
    }

    /// Opens an embedded document (type 0x03); close it with `end()`.
    @inlinable
    public mutating func beginDocument(forKey key: String) {
        self._withKey(key) { $0._begin(0x03, $1, array: false) }
    }

    /// Opens an array (type 0x04); close it with `end()`.
    @inlinable
    public mutating func beginArray(forKey key: StaticString) {
        self._withKey(key) { $0._begin(0x04, $1, array: true) }
    }

    /// Opens an array (type 0x04); close it with `end()`.
    @inlinable
    public mutating func beginArray(forKey key: String) {
        self._withKey(key) { $0._begin(0x04, $1, array: true) }
    }

    @inlinable
    mutating func _close(_ start: Int) {
        if _slowPath(self._length &+ 1 > self._storage.count) { self._grow(self._length &+ 1) }
        let end = self._length
        self._storage.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress.unsafelyUnwrapped
            (base + end).storeBytes(of: 0, as: UInt8.self)
            (base + start).storeBytes(of: UInt32(truncatingIfNeeded: end &+ 1 &- start).littleEndian, as: UInt32.self)
        }
        self._length = end &+ 1
    }

    /// Closes the innermost embedded document or array.
    ///
    /// - Precondition: one is open (the top-level document is closed by `finish()`).
    @inlinable
    public mutating func end() {
        precondition(self._scopes.count > 1, "end() without an open embedded document or array")
        self._close(self._scopes.removeLast().start)
    }

    /// Closes the top-level document and returns the buffer with the document appended at its
    /// writer index.
    ///
    /// - Precondition: every embedded document and array was closed.
    @inlinable
    public mutating func finish() -> ByteBuffer {
        precondition(self._scopes.count == 1, "finish() with \(self._scopes.count - 1) scopes still open")
        self._close(self._scopes.removeLast().start)
        var buffer = self._destination
        self._destination = ByteBuffer()
        let length = self._length
        self._storage.withUnsafeBytes { raw in
            _ = buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[0..<length]))
        }
        return buffer
    }
}
