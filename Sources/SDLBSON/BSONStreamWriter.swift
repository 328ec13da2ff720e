import NIOCore

/// A BSON writer driven by `begin…`/`end…` calls instead of closures, for encoders whose
/// structure unfolds at run time (SDLRPC's parameter writer, which generated code drives).
///
/// It writes in place through the same output as `ByteBuffer.writeBSONDocument`: each
/// document's int32 length is reserved when it opens and back-filled when it closes. Inside an
/// array scope the key arguments are ignored and the items get the keys "0", "1", … . The
/// top-level document is opened by `init` and closed by `finish()`, which hands the buffer back.
/// Non-copyable, like the closure writers: it holds the buffer's pinned storage.
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
package struct BSONStreamWriter: ~Copyable {
    @usableFromInline var _out: _BSONOutput
    /// The open scopes, innermost last: where their length placeholder is, and for arrays the
    /// index of the next item (-1 for documents).
    @usableFromInline var _scopes: [(start: Int, nextIndex: Int)]

    /// Starts a document that `finish()` leaves at `buffer`'s writer index (pass the buffer
    /// `consume`d, or a copy of it is made, to keep the original intact).
    @inlinable
    package init(appendingTo buffer: consuming ByteBuffer) {
        // Room for a typical RPC's parameters up front, so that most never regrow (512 bytes made
        // a GetInteriorVehicleData response of 577 regrow once: an allocation and a copy).
        self._out = _BSONOutput(taking: consume buffer, minimumWritableBytes: 1024)
        self._scopes = []
        self._scopes.reserveCapacity(8)
        self._scopes.append((self._out.position, -1))
        self._out.beginDocument()
    }

    /// How many scopes are open, the top-level document included.
    @inlinable
    package var depth: Int { self._scopes.count }

    /// Whether the innermost open scope is an array.
    @inlinable
    package var isInArray: Bool { self._scopes[self._scopes.count &- 1].nextIndex >= 0 }

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
    mutating func _withKey(_ key: StaticString, _ body: (inout _BSONOutput, UnsafeRawBufferPointer) -> Void) {
        if let index = self._nextIndex() {
            _bsonWithIndexKey(index) { body(&self._out, $0) }
        } else if key.hasPointerRepresentation {
            let raw = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
            assert(!_bsonContainsNUL(raw), "BSON keys cannot contain NUL bytes")
            body(&self._out, raw)
        } else {
            key.withUTF8Buffer { body(&self._out, _bsonCheckedKey($0)) }
        }
    }

    @inlinable
    @inline(__always)
    mutating func _withKey(_ key: String, _ body: (inout _BSONOutput, UnsafeRawBufferPointer) -> Void) {
        if let index = self._nextIndex() {
            _bsonWithIndexKey(index) { body(&self._out, $0) }
            return
        }
        var key = key
        key.withUTF8 { body(&self._out, _bsonCheckedKey($0)) }
    }

    /// Appends a double (type 0x01).
    @inlinable
    package mutating func appendDouble(_ value: Double, forKey key: StaticString) {
        self._withKey(key) { $0.appendFixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a double (type 0x01).
    @inlinable
    package mutating func appendDouble(_ value: Double, forKey key: String) {
        self._withKey(key) { $0.appendFixed(0x01, $1, value.bitPattern) }
    }

    /// Appends a UTF-8 string (type 0x02).
    @inlinable
    package mutating func appendString(_ value: String, forKey key: StaticString) {
        self._withKey(key) { $0.appendString(0x02, $1, value) }
    }

    /// Appends a UTF-8 string (type 0x02).
    @inlinable
    package mutating func appendString(_ value: String, forKey key: String) {
        self._withKey(key) { $0.appendString(0x02, $1, value) }
    }

    /// Appends a boolean (type 0x08).
    @inlinable
    package mutating func appendBool(_ value: Bool, forKey key: StaticString) {
        self._withKey(key) { $0.appendFixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a boolean (type 0x08).
    @inlinable
    package mutating func appendBool(_ value: Bool, forKey key: String) {
        self._withKey(key) { $0.appendFixed(0x08, $1, value ? UInt8(1) : UInt8(0)) }
    }

    /// Appends a null (type 0x0A).
    @inlinable
    package mutating func appendNull(forKey key: String) {
        self._withKey(key) { $0.appendHeader(0x0A, $1) }
    }

    /// Appends a 32-bit integer (type 0x10).
    @inlinable
    package mutating func appendInt32(_ value: Int32, forKey key: StaticString) {
        self._withKey(key) { $0.appendFixed(0x10, $1, value) }
    }

    /// Appends a 32-bit integer (type 0x10).
    @inlinable
    package mutating func appendInt32(_ value: Int32, forKey key: String) {
        self._withKey(key) { $0.appendFixed(0x10, $1, value) }
    }

    /// Appends a 64-bit integer (type 0x12).
    @inlinable
    package mutating func appendInt64(_ value: Int64, forKey key: StaticString) {
        self._withKey(key) { $0.appendFixed(0x12, $1, value) }
    }

    /// Appends a 64-bit integer (type 0x12).
    @inlinable
    package mutating func appendInt64(_ value: Int64, forKey key: String) {
        self._withKey(key) { $0.appendFixed(0x12, $1, value) }
    }

    /// Appends any value of the generic tree.
    ///
    /// - Precondition: no key or regular-expression part inside `value` contains NUL.
    package mutating func append(_ value: BSONValue, forKey key: String) {
        self._withKey(key) { $0.appendValue($1, value) }
    }

    /// Opens an embedded document (type 0x03); close it with `end()`.
    @inlinable
    package mutating func beginDocument(forKey key: StaticString) {
        var start = 0
        self._withKey(key) { start = $0.beginElement(0x03, $1) }
        self._scopes.append((start, -1))
    }

    /// Opens an embedded document (type 0x03); close it with `end()`.
    @inlinable
    package mutating func beginDocument(forKey key: String) {
        var start = 0
        self._withKey(key) { start = $0.beginElement(0x03, $1) }
        self._scopes.append((start, -1))
    }

    /// Opens an array (type 0x04); close it with `end()`.
    @inlinable
    package mutating func beginArray(forKey key: StaticString) {
        var start = 0
        self._withKey(key) { start = $0.beginElement(0x04, $1) }
        self._scopes.append((start, 0))
    }

    /// Opens an array (type 0x04); close it with `end()`.
    @inlinable
    package mutating func beginArray(forKey key: String) {
        var start = 0
        self._withKey(key) { start = $0.beginElement(0x04, $1) }
        self._scopes.append((start, 0))
    }

    /// Closes the innermost embedded document or array.
    ///
    /// - Precondition: one is open (the top-level document is closed by `finish()`).
    @inlinable
    package mutating func end() {
        precondition(self._scopes.count > 1, "end() without an open embedded document or array")
        self._out.endDocument(start: self._scopes.removeLast().start)
    }

    /// Closes the top-level document and returns the buffer with the document appended at its
    /// writer index.
    ///
    /// - Precondition: every embedded document and array was closed.
    @inlinable
    package consuming func finish() -> ByteBuffer {
        precondition(self._scopes.count == 1, "finish() with \(self._scopes.count - 1) scopes still open")
        self._out.endDocument(start: self._scopes[0].start)
        return self._out.finish()
    }
}
