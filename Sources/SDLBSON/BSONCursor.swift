/// A pull reader over a validated document for readers that walk a document in step with code
/// of their own: SDLRPC's BSON parameter reader, which generated code drives key by key. Support
/// for that reader, not API: the underscore says so. It is public rather than `package` only
/// because the compiler does not inline `package` declarations into other modules, and this
/// reader's calls must be inlined to be as fast as the JSON reader's.
///
/// The cursor stands on one element at a time: ``next()`` moves to the next element of the
/// innermost open document or array, ``enter()`` opens the document or array it stands on, and
/// the accessors read the element it stands on in place. Before the first call it stands on the
/// document it was made from (type document, no key), so a reader starts with ``enter()``.
///
/// It owns its bytes (through ``BSONDocument``'s pinned storage, one retain for the whole walk),
/// so a cursor, or a copy of one, that outlives the document is harmless; reading an element
/// costs no reference counting. The bytes were validated, so nothing here can fail: where to
/// find each value is SDLBSON's layout knowledge (the same as ``BSONDocument``'s), and the key
/// fingerprint is ``_BSONKeyHash``.
public struct _BSONCursor: Sendable {
    @usableFromInline let _bytes: _BSONBytes
    /// Where the next element of the innermost open container starts.
    @usableFromInline var _position: Int
    /// The open containers, innermost last: the offset of the terminating NUL, and where reading
    /// resumes in the enclosing container after it.
    @usableFromInline var _containers: [(end: Int, resume: Int)]
    /// The current element's type byte; 0 when the cursor stands on none.
    @usableFromInline var _type: UInt8
    @usableFromInline var _keyStart: Int
    @usableFromInline var _valueStart: Int
    @usableFromInline var _valueEnd: Int

    /// A cursor standing on `document` itself.
    @inlinable
    public init(_ document: BSONDocument) {
        self._bytes = document._bytes
        self._containers = []
        self._containers.reserveCapacity(8)
        self._type = 0x03
        self._keyStart = document._offset
        self._valueStart = document._offset
        self._valueEnd = document._offset &+ document._length
        self._position = self._valueEnd
    }

    /// The type of the element the cursor stands on; type byte 0 when it stands on none.
    @inlinable
    @inline(__always)
    public var type: BSONType { BSONType(rawValue: self._type) }

    /// Whether the cursor stands on an element (it does not at the end of a container, or after
    /// ``clear()``).
    @inlinable
    @inline(__always)
    public var hasElement: Bool { self._type != 0 }

    /// Marks the current element as read: a reader that allows one read per element calls this,
    /// and ``hasElement`` is false until ``next()``.
    @inlinable
    @inline(__always)
    public mutating func clear() {
        self._type = 0
    }

    /// Opens the document or array the cursor stands on; ``next()`` then walks its elements.
    ///
    /// - Precondition: ``type`` is `.document` or `.array`.
    @inlinable
    @inline(__always)
    public mutating func enter() {
        precondition(self._type == 0x03 || self._type == 0x04, "enter() on a value that is not a document or an array")
        // `_position` is already past this value: that is where the parent resumes.
        self._containers.append((self._valueEnd &- 1, self._position))
        self._position = self._valueStart &+ 4
        self._type = 0
    }

    /// Moves to the next element of the innermost open container; at its end, leaves the
    /// container (the cursor then stands on nothing, just after it) and returns false.
    @inlinable
    @inline(__always)
    public mutating func next() -> Bool {
        let container = self._containers[self._containers.count &- 1]
        let start = self._position
        guard start < container.end else {
            self._containers.removeLast()
            self._position = container.resume
            self._type = 0
            return false
        }
        let type = self._bytes.byte(at: start)
        let keyEnd = self._bytes.findNUL(from: start &+ 1, end: container.end)
        self._type = type
        self._keyStart = start &+ 1
        self._valueStart = keyEnd &+ 1
        self._valueEnd = self._bytes.valueEnd(type: type, at: keyEnd &+ 1)
        self._position = self._valueEnd
        return true
    }

    /// The byte offset of the current element (its type byte), counted from the start of the
    /// outermost document, as ``BSONElement/offset``; that document's own offset before the
    /// first ``next()``.
    @inlinable
    @inline(__always)
    public var offset: Int { self._keyStart == self._valueStart ? self._keyStart : self._keyStart &- 1 }

    /// The length of the current element's key in bytes.
    @inlinable
    @inline(__always)
    public var keyByteCount: Int { self._valueStart &- 1 &- self._keyStart }

    /// ``_BSONKeyHash`` of the current element's key.
    @inlinable
    @inline(__always)
    public var keyHash: UInt32 {
        self._bytes.withBytes(at: self._keyStart, count: self.keyByteCount) { _BSONKeyHash.hash($0) }
    }

    /// Whether the current element's key is `name`, compared byte for byte.
    @inlinable
    @inline(__always)
    public func keyEquals(_ name: StaticString) -> Bool {
        let count = self.keyByteCount
        guard count == name.utf8CodeUnitCount else { return false }
        return self._bytes.withBase { _bsonBytesEqual($0 + self._keyStart, name.utf8Start, count) }
    }

    /// The current element's key.
    @inlinable
    @inline(__always)
    public var key: String { self._bytes.string(from: self._keyStart, to: self._valueStart &- 1) }

    // Values of the current element; each assumes the caller checked ``type``.

    /// The value of an int32 element.
    @inlinable
    @inline(__always)
    public var int32: Int32 { self._bytes.load(Int32.self, at: self._valueStart) }

    /// The value of an int64 element.
    @inlinable
    @inline(__always)
    public var int64: Int64 { self._bytes.load(Int64.self, at: self._valueStart) }

    /// The value of a double element.
    @inlinable
    @inline(__always)
    public var double: Double { Double(bitPattern: self._bytes.load(UInt64.self, at: self._valueStart)) }

    /// The value of a boolean element.
    @inlinable
    @inline(__always)
    public var bool: Bool { self._bytes.byte(at: self._valueStart) != 0 }

    /// The value of a string element.
    @inlinable
    @inline(__always)
    public var string: String { self._bytes.string(from: self._valueStart &+ 4, to: self._valueEnd &- 1) }

    /// `_BSONKeyHash` of the current string value's bytes (without the terminator), to match it
    /// against names, as `keyHash` does for keys.
    @inlinable
    @inline(__always)
    public var stringHash: UInt32 {
        self._bytes.withBase { base in
            _BSONKeyHash.hash(UnsafeRawBufferPointer(start: base + (self._valueStart &+ 4), count: self._valueEnd &- 5 &- self._valueStart))
        }
    }

    /// Whether the current string value is `name`, compared byte for byte.
    @inlinable
    @inline(__always)
    public func stringEquals(_ name: StaticString) -> Bool {
        let count = self._valueEnd &- 5 &- self._valueStart
        guard count == name.utf8CodeUnitCount else { return false }
        return self._bytes.withBase { _bsonBytesEqual($0 + (self._valueStart &+ 4), name.utf8Start, count) }
    }

    /// A saved position of a cursor: the element it stands on and how many containers are open.
    public struct _Mark: Sendable {
        @usableFromInline let _position: Int
        @usableFromInline let _depth: Int
        @usableFromInline let _type: UInt8
        @usableFromInline let _keyStart: Int
        @usableFromInline let _valueStart: Int
        @usableFromInline let _valueEnd: Int

        @inlinable
        init(_ cursor: _BSONCursor) {
            self._position = cursor._position
            self._depth = cursor._containers.count
            self._type = cursor._type
            self._keyStart = cursor._keyStart
            self._valueStart = cursor._valueStart
            self._valueEnd = cursor._valueEnd
        }
    }

    /// The current position, to come back to with ``_rewind(to:)``: SDLRPC's lenient decoding
    /// reads a value typed, and when it does not conform reads the same value again as raw
    /// parameters. No copy of the open containers, so marking costs a few loads.
    @inlinable
    @inline(__always)
    public var _mark: _Mark { _Mark(self) }

    /// Goes back to `mark`, taken on this cursor since and not left since: the containers opened
    /// after it are closed (the ones open at the mark are unchanged, as a walk inside the marked
    /// element only opens and closes containers above them), and the cursor stands on the marked
    /// element again, unread.
    ///
    /// - Precondition: at least as many containers are open as were at the mark.
    @inlinable
    public mutating func _rewind(to mark: _Mark) {
        precondition(mark._depth <= self._containers.count, "_rewind(to:) past the container the mark was taken in")
        self._containers.removeLast(self._containers.count &- mark._depth)
        self._position = mark._position
        self._type = mark._type
        self._keyStart = mark._keyStart
        self._valueStart = mark._valueStart
        self._valueEnd = mark._valueEnd
    }
}
