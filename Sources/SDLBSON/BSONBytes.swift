import NIOCore

// The one place in SDLBSON that keeps a raw pointer into a ByteBuffer's storage after the
// closure that vended it returned.
//
// NIO forbids escaping the pointer of `withUnsafeReadableBytes` and friends, except through the
// storage-management variants, whose contract is: the pointer stays valid for as long as the
// storage object they name is retained. `_BSONBytes` keeps the pointer together with the
// ByteBuffer it came from, and that ByteBuffer is the retain: it holds the very storage object
// the API names, strongly, for as long as this value (or a copy) lives, and releases it when the
// last copy goes, so no retain/release pair is balanced by hand.
//
// Everything that reads or writes BSON in place goes through this type: `BSONDocument`,
// `BSONElement` and their iterator, the cursor the RPC layer reads with, the Codable decoder's
// key index, and `_BSONOutput`, the writers' growable output. The borrowed, non-copyable views
// (`BSONElementView`, the validator) get the pointer only inside `withBase`'s closure and are
// lent `borrowing`, so theirs never outlives it.

/// Bytes of a `ByteBuffer`, pinned: the buffer (which keeps its storage alive) and a pointer into
/// that storage.
///
/// Two kinds of pin, never mixed on one value:
/// - *readable* (``init(readable:_:)``): `base` is the buffer's first readable byte and the bytes
///   are never written. The buffer is shared (slices, copies of documents), and any ByteBuffer
///   that mutates this storage copies it first, so the pinned bytes are immutable for as long as
///   they are pinned. That is why the type may be `@unchecked Sendable`: nothing is written
///   through a readable pin, and the buffer itself is Sendable.
/// - *writable* (``init(writable:)``): `base` is the storage's index 0, the storage was made
///   unique when it was pinned, and the value is held only by `_BSONOutput` inside a
///   non-copyable writer (or by SDLRPC's JSON output, inside the parameter writer that generated
///   code only ever takes `inout`), which writes through it and hands the buffer back
///   (``unpin()``) before anything else can see the buffer.
@usableFromInline
package struct _BSONBytes: @unchecked Sendable {
    /// The owner of the storage `_base` points into.
    @usableFromInline let _buffer: ByteBuffer
    @usableFromInline let _base: UnsafeMutableRawPointer

    @inlinable
    init(_buffer: ByteBuffer, base: UnsafeMutableRawPointer) {
        self._buffer = _buffer
        self._base = base
    }

    /// Pins `buffer`'s readable bytes after `check` accepted them (it sees them first, through
    /// the same pointer); a buffer `check` passes must not be empty.
    @inlinable
    init<Failure: Error>(
        readable buffer: ByteBuffer,
        _ check: (UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) {
        let base = try buffer.withUnsafeReadableBytesWithStorageManagement {
            (bytes: UnsafeRawBufferPointer, _: Unmanaged<AnyObject>) throws(Failure) in
            try check(bytes)
            return UnsafeMutableRawPointer(mutating: bytes.baseAddress.unsafelyUnwrapped)
        }
        self.init(_buffer: buffer, base: base)
    }

    /// Pins the whole storage of `buffer` for writing, made unique first (copy on write).
    @inlinable
    package init(writable buffer: consuming ByteBuffer) {
        // The mutable accessor is what makes the storage unique; the pin comes from the
        // storage-management accessor, which is the one allowed to outlive its closure.
        _ = buffer.withVeryUnsafeMutableBytes { $0.count }
        let base = buffer.withVeryUnsafeBytesWithStorageManagement { bytes, _ in
            UnsafeMutableRawPointer(mutating: bytes.baseAddress.unsafelyUnwrapped)
        }
        self.init(_buffer: consume buffer, base: base)
    }

    /// The buffer of a writable pin back, ending the pin.
    @inlinable
    package consuming func unpin() -> ByteBuffer {
        self._buffer
    }

    /// Writable pins: the storage's capacity, bytes from `base`.
    @inlinable
    package var capacity: Int { self._buffer.capacity }

    /// Readable pins: the number of pinned bytes.
    @inlinable
    var count: Int { self._buffer.readableBytes }

    // MARK: Reading (readable pins; offsets from the first pinned byte)

    /// Calls `body` with the base pointer; it must not escape `body`.
    @inlinable
    @inline(__always)
    func withBase<R, Failure: Error>(_ body: (UnsafeRawPointer) throws(Failure) -> R) throws(Failure) -> R {
        // `self`, and with it the buffer, is alive for the whole call.
        try body(UnsafeRawPointer(self._base))
    }

    /// Calls `body` with `count` bytes from `offset`; they must not escape `body`.
    @inlinable
    @inline(__always)
    func withBytes<R>(at offset: Int, count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: self._base + offset, count: count))
    }

    /// A little-endian integer at `offset`.
    @inlinable
    @inline(__always)
    func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(littleEndian: self._base.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    @inlinable
    @inline(__always)
    func byte(at offset: Int) -> UInt8 {
        self._base.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// The bytes `from..<to` as a String (validated UTF-8).
    @inlinable
    func string(from: Int, to: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(start: self._base + from, count: to &- from), as: UTF8.self)
    }

    /// Whether the `other.count` bytes at `offset` equal `other`.
    @inlinable
    func bytesEqual(at offset: Int, _ other: UnsafeRawBufferPointer) -> Bool {
        other.isEmpty || _bsonBytesEqual(self._base + offset, other.baseAddress.unsafelyUnwrapped, other.count)
    }

    /// A slice of the pinned bytes sharing the storage.
    @inlinable
    func slice(at offset: Int, length: Int) -> ByteBuffer {
        self._buffer.getSlice(at: self._buffer.readerIndex &+ offset, length: length).unsafelyUnwrapped
    }

    // MARK: Writing (writable pins; offsets are buffer indices)

    /// The address of buffer index `index`, for the stores of one element; it must not be kept.
    @inlinable
    @inline(__always)
    package func address(_ index: Int) -> UnsafeMutableRawPointer {
        self._base + index
    }
}

/// Whether `count` bytes at `a` equal those at `b`: eight bytes at a time (the last word
/// overlapping the one before), four for keys of 4 to 7 bytes, bytes only below that. Keys are
/// compared with this whenever their fingerprint matches, so it stays a handful of loads.
@inlinable
@inline(__always)
package func _bsonBytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    if count >= 8 {
        var i = 0
        while i &+ 8 < count {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                return false
            }
            i &+= 8
        }
        let last = count &- 8
        return a.loadUnaligned(fromByteOffset: last, as: UInt64.self) == b.loadUnaligned(fromByteOffset: last, as: UInt64.self)
    }
    if count >= 4 {
        let last = count &- 4
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
            && a.loadUnaligned(fromByteOffset: last, as: UInt32.self) == b.loadUnaligned(fromByteOffset: last, as: UInt32.self)
    }
    var i = 0
    while i < count {
        if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
        i &+= 1
    }
    return true
}
