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

    /// One element's key: where it starts, its length, its fingerprint (32-bit offsets keep a
    /// stack full of them small; a document is at most 2 GiB).
    struct Key {
        let start: Int32
        let count: Int32
        let hash: UInt32

        init(_ base: UnsafeRawPointer, start: Int, count: Int) {
            self.start = Int32(truncatingIfNeeded: start)
            self.count = Int32(truncatingIfNeeded: count)
            self.hash = _BSONKeyHash.hash(UnsafeRawBufferPointer(start: base + start, count: count))
        }

        func equals(_ other: Key, _ base: UnsafeRawPointer) -> Bool {
            self.hash == other.hash && self.count == other.count
                && _bsonBytesEqual(base + Int(self.start), base + Int(other.start), Int(self.count))
        }
    }

    /// The key of the element at `position`.
    static func key(_ base: UnsafeRawPointer, at position: Int, end: Int) -> Key {
        let start = position &+ 1
        return Key(base, start: start, count: _bsonFindNUL(base, from: start, end: end) &- start)
    }

    /// Up to ``linearLimit`` keys of one document, on the stack, each compared with the earlier
    /// ones as it comes: fingerprint, length, then bytes.
    struct FewKeys {
        private let keys: UnsafeMutableBufferPointer<Key>
        private var count = 0

        init(_ keys: UnsafeMutableBufferPointer<Key>) {
            self.keys = keys
        }

        var isFull: Bool { self.count == self.keys.count }

        /// Adds `key`, or returns false if an earlier key equals it. Precondition: not full.
        @inline(__always)
        mutating func insert(_ key: Key, _ base: UnsafeRawPointer, operations: inout Int) -> Bool {
            for earlier in self.keys[..<self.count] {
                operations &+= 1
                if earlier.equals(key, base) { return false }
            }
            self.keys[self.count] = key
            self.count &+= 1
            return true
        }

        /// Calls `body` with an empty set of room for ``_BSONKeyIndex/linearLimit`` keys.
        static func with<R>(_ body: (inout FewKeys) -> R) -> R {
            withUnsafeTemporaryAllocation(of: Key.self, capacity: _BSONKeyIndex.linearLimit) { storage in
                var keys = FewKeys(storage)
                return body(&keys)
            }
        }
    }

    /// Indexes the elements of the document whose element list runs from `from` to its
    /// terminator before `end`, in validated bytes at `base`; `index` keeps the table for
    /// ``find(_:base:from:end:)`` (otherwise it is dropped once checked). Returns the index and
    /// the offset (type byte) of the first element whose key an earlier element has.
    static func build(_ base: UnsafeRawPointer, from: Int, end: Int, keepingTable: Bool) -> (index: _BSONKeyIndex, repeated: Int?) {
        var index = _BSONKeyIndex()
        // One walk while the keys fit on the stack: nil when there are more.
        let few: Int?? = FewKeys.with { keys in
            var position = from
            while base.load(fromByteOffset: position, as: UInt8.self) != 0 {
                if keys.isFull { return nil }
                if !keys.insert(Self.key(base, at: position, end: end), base, operations: &index.operations) { return .some(position) }
                position = Self.next(base, after: position, end: end)
            }
            return .some(nil)
        }
        if let few { return (index, few) }
        var count = 0
        var position = from
        while base.load(fromByteOffset: position, as: UInt8.self) != 0 {
            count &+= 1
            position = Self.next(base, after: position, end: end)
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
            var slot = Self.tableHash(UnsafeRawBufferPointer(start: base + Int(key.start), count: Int(key.count))) & mask
            while true {
                self.operations &+= 1
                let occupant = self.slots[slot]
                if occupant == 0 {
                    self.slots[slot] = position &+ 1
                    break
                }
                if Self.key(base, at: occupant &- 1, end: end).equals(key, base) { return position }
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
                if Int(candidate.count) == key.count && (key.isEmpty || _bsonBytesEqual(base + Int(candidate.start), key.baseAddress!, key.count)) {
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
            if Int(candidate.count) == key.count && (key.isEmpty || _bsonBytesEqual(base + Int(candidate.start), key.baseAddress!, key.count)) {
                return occupant &- 1
            }
            slot = (slot &+ 1) & mask
        }
    }
}

/// An element whose key repeats an earlier key of its own document, in the validated document
/// at `start` or in any document nested in it (arrays' own keys are not compared, but
/// documents inside arrays are); nil if there is none. Small documents are checked in the same
/// walk that looks for nested ones; a document of more than ``_BSONKeyIndex/linearLimit``
/// elements is hashed once its nested documents are checked. Linear in the size; recursion
/// follows the nesting, which validation bounded.
internal func _bsonFirstRepeatedKey(_ base: UnsafeRawPointer, document start: Int, keysMatter: Bool) -> Int? {
    @inline(__always) func int32(_ offset: Int) -> Int {
        Int(Int32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
    }
    let end = start &+ int32(start)
    /// The repeat inside the value of an element of `type` at `value`, if it holds documents.
    @inline(__always) func nested(_ type: UInt8, _ value: Int) -> Int? {
        switch type {
        case 0x03: return _bsonFirstRepeatedKey(base, document: value, keysMatter: true)
        case 0x04: return _bsonFirstRepeatedKey(base, document: value, keysMatter: false)
        case 0x0F:  // code with scope: int32 total, string (int32 length, bytes), scope document
            return _bsonFirstRepeatedKey(base, document: value &+ 8 &+ int32(value &+ 4), keysMatter: true)
        default: return nil
        }
    }
    guard keysMatter else {
        var position = start &+ 4
        while true {
            let type = base.load(fromByteOffset: position, as: UInt8.self)
            if type == 0 { return nil }
            let value = _bsonFindNUL(base, from: position &+ 1, end: end) &+ 1
            if let found = nested(type, value) { return found }
            position = _bsonValueEnd(base, type: type, at: value)
        }
    }
    var operations = 0
    var many = false
    let found: Int? = _BSONKeyIndex.FewKeys.with { keys in
        var position = start &+ 4
        while true {
            let type = base.load(fromByteOffset: position, as: UInt8.self)
            if type == 0 { return nil }
            let keyEnd = _bsonFindNUL(base, from: position &+ 1, end: end)
            if !many {
                // Past the few that fit on the stack, the keys are hashed after the walk.
                if keys.isFull {
                    many = true
                } else if !keys.insert(.init(base, start: position &+ 1, count: keyEnd &- position &- 1), base, operations: &operations) {
                    return position
                }
            }
            if let found = nested(type, keyEnd &+ 1) { return found }
            position = _bsonValueEnd(base, type: type, at: keyEnd &+ 1)
        }
    }
    if let found { return found }
    return many ? _BSONKeyIndex.build(base, from: start &+ 4, end: end, keepingTable: false).repeated : nil
}

/// Throws ``BSONError/Code/duplicateKey``, at the element, if ``_bsonFirstRepeatedKey(_:document:keysMatter:)``
/// finds one in the validated document at `start`.
internal func _bsonCheckKeysAreUnique(_ base: UnsafeRawPointer, document start: Int) throws(BSONError) {
    guard let repeated = _bsonFirstRepeatedKey(base, document: start, keysMatter: true) else { return }
    let end = start &+ Int(Int32(littleEndian: base.loadUnaligned(fromByteOffset: start, as: Int32.self)))
    let key = _BSONKeyIndex.key(base, at: repeated, end: end)
    let name = String(decoding: UnsafeRawBufferPointer(start: base + Int(key.start), count: Int(key.count)), as: UTF8.self)
    throw BSONError(.duplicateKey, offset: repeated, "key \"\(name)\" appears more than once in one document")
}
