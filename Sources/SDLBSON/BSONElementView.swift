// Borrowed, reference-count-free reading.
//
// Owning iteration (`for element in document`) hands out `BSONElement` values that keep the
// storage alive on their own, so each one costs a retain and a release – about half the time
// of a full read of a small document. `forEachElement` instead lends each element to a closure
// as a non-copyable `BSONElementView`: it cannot be copied, stored or escape the closure, so it
// needs no reference of its own and reads straight from the validated bytes. Its pointer comes
// from `_BSONBytes.withBase` and is lent with the view for the duration of that call only.

/// One element of a validated document, lent to a ``BSONDocument/forEachElement(_:)`` closure.
///
/// Non-copyable and only ever passed `borrowing`, so it cannot outlive the call it was lent to;
/// take what you need (`int64Value`, `stringValue`, …) inside the closure. Typed accessors
/// return nil when the element has another type, as ``BSONElement``'s do.
public struct BSONElementView: ~Copyable {
    @usableFromInline let _base: UnsafeRawPointer
    /// The element's type.
    public let type: BSONType
    @usableFromInline let _keyStart: Int
    @usableFromInline let _valueStart: Int
    @usableFromInline let _valueEnd: Int

    @inlinable
    init(_base: UnsafeRawPointer, type: BSONType, keyStart: Int, valueStart: Int, valueEnd: Int) {
        self._base = _base
        self.type = type
        self._keyStart = keyStart
        self._valueStart = valueStart
        self._valueEnd = valueEnd
    }

    @inlinable
    func _load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(littleEndian: self._base.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// The key's length in UTF-8 bytes.
    @inlinable
    public var keyByteCount: Int { self._valueStart &- 1 &- self._keyStart }

    /// The byte offset of the element (its type byte), counted from the start of the outermost
    /// document, as ``BSONElement/offset``.
    @inlinable
    public var offset: Int { self._keyStart &- 1 }

    /// The element's key (allocates for keys longer than 15 bytes; see ``hasKey(_:)``).
    @inlinable
    public var key: String {
        String(decoding: UnsafeRawBufferPointer(start: self._base + self._keyStart, count: self.keyByteCount), as: UTF8.self)
    }

    /// Whether the key equals `key`, compared as bytes without allocating. (A string literal
    /// goes to the `StaticString` overload, which is cheaper still.)
    @inlinable
    @_disfavoredOverload
    public func hasKey(_ key: String) -> Bool {
        var key = key
        let count = self.keyByteCount
        return key.withUTF8 { utf8 in
            utf8.count == count && (count == 0 || _bsonBytesEqual(self._base + self._keyStart, utf8.baseAddress!, count))
        }
    }

    /// Whether the key equals `key`: a length check, then the bytes; no String machinery, so
    /// the cheapest way to match an element against the known keys of a schema.
    @inlinable
    @inline(__always)
    public func hasKey(_ key: StaticString) -> Bool {
        let count = self.keyByteCount
        return key.utf8CodeUnitCount == count && (count == 0 || _bsonBytesEqual(self._base + self._keyStart, key.utf8Start, count))
    }

    /// The value of a double element.
    @inlinable
    public var doubleValue: Double? {
        self.type == .double ? Double(bitPattern: self._load(UInt64.self, at: self._valueStart)) : nil
    }

    /// The value of an int32 element.
    @inlinable
    public var int32Value: Int32? { self.type == .int32 ? self._load(Int32.self, at: self._valueStart) : nil }

    /// The value of an int64 element.
    @inlinable
    public var int64Value: Int64? { self.type == .int64 ? self._load(Int64.self, at: self._valueStart) : nil }

    /// The value of an int32 or int64 element, widened (SDL peers disagree on integer widths).
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
    public var boolValue: Bool? { self.type == .bool ? self._load(UInt8.self, at: self._valueStart) != 0 : nil }

    /// The value of a UTC datetime element.
    @inlinable
    public var dateTimeValue: BSONDateTime? {
        self.type == .datetime ? BSONDateTime(millisecondsSinceEpoch: self._load(Int64.self, at: self._valueStart)) : nil
    }

    /// The value of a string element (a copy).
    @inlinable
    public var stringValue: String? {
        guard self.type == .string else { return nil }
        return String(
            decoding: UnsafeRawBufferPointer(start: self._base + (self._valueStart &+ 4), count: self._valueEnd &- self._valueStart &- 5),
            as: UTF8.self
        )
    }

    /// Calls `body` with the UTF-8 bytes of a string, code or symbol element in place, or
    /// returns nil for other types. The bytes must not escape `body`.
    @inlinable
    public func withUTF8<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        switch self.type {
        case .string, .javascript, .symbol:
            return try body(UnsafeRawBufferPointer(start: self._base + (self._valueStart &+ 4), count: self._valueEnd &- self._valueStart &- 5))
        default:
            return nil
        }
    }

    /// Lends each element of an embedded document or array element to `body`, in wire order;
    /// does nothing for elements of other types.
    @inlinable
    public func forEachElement<Failure: Error>(
        _ body: (borrowing BSONElementView) throws(Failure) -> Void
    ) throws(Failure) {
        guard self.type == .document || self.type == .array else { return }
        try _bsonForEach(self._base, from: self._valueStart &+ 4, end: self._valueEnd, body)
    }
}

extension BSONDocument {
    /// Lends each element to `body` as a ``BSONElementView``, in wire order, without reference
    /// counting: the fastest way to read every field.
    @inlinable
    public func forEachElement<Failure: Error>(
        _ body: (borrowing BSONElementView) throws(Failure) -> Void
    ) throws(Failure) {
        try self._bytes.withBase { (base) throws(Failure) in
            try _bsonForEach(base, from: self._offset &+ 4, end: self._offset &+ self._length, body)
        }
    }
}

@inlinable
internal func _bsonForEach<Failure: Error>(
    _ base: UnsafeRawPointer,
    from: Int,
    end: Int,
    _ body: (borrowing BSONElementView) throws(Failure) -> Void
) throws(Failure) {
    var position = from
    while true {
        let type = base.load(fromByteOffset: position, as: UInt8.self)
        if type == 0 { return }
        let keyEnd = _bsonFindNUL(base, from: position &+ 1, end: end)
        let valueEnd = _bsonValueEnd(base, type: type, at: keyEnd &+ 1)
        let view = BSONElementView(
            _base: base,
            type: BSONType(rawValue: type),
            keyStart: position &+ 1,
            valueStart: keyEnd &+ 1,
            valueEnd: valueEnd
        )
        try body(view)
        position = valueEnd
    }
}
