// Keys of one validated document: the repeated-key check (validation with
// `rejectingDuplicateKeys`, the Codable decoder) and the Codable decoder's lookup by key, both
// linear in the document's size however hostile its keys.
//
// Small documents (SDL's control payloads, most structs) compare keys pairwise, by fingerprint
// first, from a stack buffer: no allocation, no hashing. Larger ones hash every key once into
// an open-addressing table with the standard library's `Hasher`, which is seeded per process,
// so a peer cannot choose keys that collide and turn the table into a list.

/// A constant-time fingerprint of a key for `switch`-based matching against known names: the
/// UTF-8 length in the high 8 bits, then the first, middle and last bytes; 0 for the empty key.
///
/// It needs no pass over the key, so it costs the same for any length. Different keys may share
/// a fingerprint, so a match is always confirmed by comparing the bytes. SDLRPC's parameter
/// readers switch on it (its `RPCKeyHash`), and sdl-rpc-gen computes the same function at
/// generation time for the constants it emits: changing it changes the generated code. Support
/// for SDLRPC, not API; public (rather than `package`) so that it inlines into the readers.
public enum _BSONKeyHash {
    /// The fingerprint of `key`.
    @inlinable
    @inline(__always)
    public static func hash(_ key: UnsafeRawBufferPointer) -> UInt32 {
        let count = key.count
        guard count > 0 else { return 0 }
        return UInt32(truncatingIfNeeded: count) << 24
            | UInt32(key.load(as: UInt8.self)) << 16
            | UInt32(key.load(fromByteOffset: count &>> 1, as: UInt8.self)) << 8
            | UInt32(key.load(fromByteOffset: count &- 1, as: UInt8.self))
    }
}

/// The keys of one validated document: whether one repeats, and (past ``linearLimit``
/// elements) a hash table to look them up.
internal struct _BSONKeyIndex {
    /// Up to this many elements, keys are compared pairwise and looked up by a scan.
    static let linearLimit = 16

    /// Open addressing with linear probing: an element's offset + 1 (0 for an empty slot).
    /// Empty for documents of at most ``linearLimit`` elements.
    private(set) var slots: [Int] = []
    /// Key comparisons made and table slots probed: what the time spent grows with (tests
    /// check that it grows linearly with the element count).
    private(set) var operations = 0

    /// One element's key: where it starts, its length, its fingerprint.
    struct Key {
        let start: Int
        let count: Int
        let hash: UInt32
    }

    /// Indexes the elements of the document whose element list runs from `from` to its
    /// terminator before `end`, in validated bytes at `base`; `index` keeps the table for
    /// ``find(_:base:from:end:)`` (otherwise it is dropped once checked). Returns the index and
    /// the offset (type byte) of the first element whose key an earlier element has.
    static func build(_ base: UnsafeRawPointer, from: Int, end: Int, keepingTable: Bool) -> (index: _BSONKeyIndex, repeated: Int?) {
        var index = _BSONKeyIndex()
        var count = 0
        var position = from
        while base.load(fromByteOffset: position, as: UInt8.self) != 0 {
            count &+= 1
            position = Self.next(base, after: position, end: end)
        }
        if count <= 1 { return (index, nil) }
        if count <= Self.linearLimit {
            let repeated = withUnsafeTemporaryAllocation(of: Key.self, capacity: Self.linearLimit) { keys in
                index.pairwise(base, from: from, end: end, keys: keys)
            }
            return (index, repeated)
        }
        var capacity = 32
        while capacity < count &* 2 { capacity &*= 2 }
        index.slots = Array(repeating: 0, count: capacity)
        let repeated = index.insertAll(base, from: from, end: end)
        if !keepingTable { index.slots = [] }
        return (index, repeated)
    }

    /// The offset of the element after the one at `position`.
    static func next(_ base: UnsafeRawPointer, after position: Int, end: Int) -> Int {
        let keyEnd = _bsonFindNUL(base, from: position &+ 1, end: end)
        return _bsonValueEnd(base, type: base.load(fromByteOffset: position, as: UInt8.self), at: keyEnd &+ 1)
    }

    static func key(_ base: UnsafeRawPointer, at position: Int, end: Int) -> Key {
        let start = position &+ 1
        let count = _bsonFindNUL(base, from: start, end: end) &- start
        return Key(start: start, count: count, hash: _BSONKeyHash.hash(UnsafeRawBufferPointer(start: base + start, count: count)))
    }

    /// Small documents: each key against the earlier ones, fingerprint first.
    private mutating func pairwise(_ base: UnsafeRawPointer, from: Int, end: Int, keys: UnsafeMutableBufferPointer<Key>) -> Int? {
        var n = 0
        var position = from
        while base.load(fromByteOffset: position, as: UInt8.self) != 0 {
            let key = Self.key(base, at: position, end: end)
            for earlier in keys[..<n] {
                self.operations &+= 1
                if earlier.hash == key.hash && earlier.count == key.count
                    && _bsonBytesEqual(base + earlier.start, base + key.start, key.count)
                {
                    return position
                }
            }
            keys[n] = key
            n &+= 1
            position = Self.next(base, after: position, end: end)
        }
        return nil
    }

    static func tableHash(_ key: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: key)
        return hasher.finalize()
    }

    /// Large documents: every key into the table; stops at the first repeat.
    private mutating func insertAll(_ base: UnsafeRawPointer, from: Int, end: Int) -> Int? {
        let mask = self.slots.count &- 1
        var position = from
        while base.load(fromByteOffset: position, as: UInt8.self) != 0 {
            let key = Self.key(base, at: position, end: end)
            var slot = Self.tableHash(UnsafeRawBufferPointer(start: base + key.start, count: key.count)) & mask
            while true {
                self.operations &+= 1
                let occupant = self.slots[slot]
                if occupant == 0 {
                    self.slots[slot] = position &+ 1
                    break
                }
                let other = Self.key(base, at: occupant &- 1, end: end)
                if other.hash == key.hash && other.count == key.count
                    && _bsonBytesEqual(base + other.start, base + key.start, key.count)
                {
                    return position
                }
                slot = (slot &+ 1) & mask
            }
            position = Self.next(base, after: position, end: end)
        }
        return nil
    }

    /// The offset of the element whose key is `key`, in the document the index was built for
    /// (with `keepingTable`); the first such element if keys repeat in a small document.
    func find(_ key: UnsafeRawBufferPointer, base: UnsafeRawPointer, from: Int, end: Int) -> Int? {
        if self.slots.isEmpty {
            var position = from
            while base.load(fromByteOffset: position, as: UInt8.self) != 0 {
                let candidate = Self.key(base, at: position, end: end)
                if candidate.count == key.count && (key.isEmpty || _bsonBytesEqual(base + candidate.start, key.baseAddress!, key.count)) {
                    return position
                }
                position = Self.next(base, after: position, end: end)
            }
            return nil
        }
        let mask = self.slots.count &- 1
        var slot = Self.tableHash(key) & mask
        while true {
            let occupant = self.slots[slot]
            if occupant == 0 { return nil }
            let candidate = Self.key(base, at: occupant &- 1, end: end)
            if candidate.count == key.count && (key.isEmpty || _bsonBytesEqual(base + candidate.start, key.baseAddress!, key.count)) {
                return occupant &- 1
            }
            slot = (slot &+ 1) & mask
        }
    }
}

/// The first element whose key repeats an earlier key of its own document, in the validated
/// document at `start` and every document nested in it (the document's own keys first, then
/// each nested value in wire order); arrays' keys are not compared, but documents inside arrays
/// are. One walk of the layout plus one key index per document: linear in the size. Recursion
/// follows the nesting, which validation bounded.
internal func _bsonFirstRepeatedKey(_ base: UnsafeRawPointer, document start: Int, keysMatter: Bool) -> Int? {
    @inline(__always) func int32(_ offset: Int) -> Int {
        Int(Int32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
    }
    let end = start &+ int32(start)
    if keysMatter, let repeated = _BSONKeyIndex.build(base, from: start &+ 4, end: end, keepingTable: false).repeated {
        return repeated
    }
    var position = start &+ 4
    while true {
        let type = base.load(fromByteOffset: position, as: UInt8.self)
        if type == 0 { return nil }
        let value = _bsonFindNUL(base, from: position &+ 1, end: end) &+ 1
        let nested: Int?
        switch type {
        case 0x03: nested = _bsonFirstRepeatedKey(base, document: value, keysMatter: true)
        case 0x04: nested = _bsonFirstRepeatedKey(base, document: value, keysMatter: false)
        case 0x0F:  // code with scope: int32 total, string (int32 length, bytes), scope document
            nested = _bsonFirstRepeatedKey(base, document: value &+ 8 &+ int32(value &+ 4), keysMatter: true)
        default: nested = nil
        }
        if let nested { return nested }
        position = _bsonValueEnd(base, type: type, at: value)
    }
}
