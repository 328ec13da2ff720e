/// The engine's session and transport records by key, each kept in a slot that never moves while
/// the record lives.
///
/// A `Dictionary` with a struct value moves the whole value out and back in for every
/// `dictionary[key]!.field = x`, and reading `dictionary[key]!.field` copies the record first:
/// for a session record, hundreds of bytes and a dozen reference counts per access, several times
/// per message. Here ``subscript(existing:)`` reads and modifies the record where it lies (the
/// slot's address), so the hot path touches only the fields it uses. The optional subscript is
/// for insertion, removal and cold paths: reading through it copies. Lookup is one hash of the
/// key; iteration order is unspecified, as a dictionary's. Copies of a table share its storage
/// until one of them changes (copy on write).
///
/// Keys are the engine's own handles and the transport ids the I/O layer picks, never values a
/// peer chooses, so the index hashes them with one multiplication (``SlotIndex``) instead of a
/// seeded SipHash: a peer has no way to make them collide.
struct RecordTable<Key: RecordKey, Value: Sendable>: Sendable {
    private var storage = SlotStorage<Key, Value>()
    private var slotOfKey = SlotIndex()

    init() {}

    /// The record of a key the table holds (a precondition), read and changed in place.
    subscript(existing key: Key) -> Value {
        _read {
            yield self.storage.values[self.slotOfKey[key]!]
        }
        _modify {
            let slot = self.slotOfKey[key]!
            self.makeUnique()
            yield &self.storage.values[slot]
        }
    }

    /// The record of `key`, nil when there is none; assigning a record inserts or replaces it,
    /// assigning nil removes it. Reading and changing through this subscript copies the record.
    subscript(key: Key) -> Value? {
        get {
            self.slotOfKey[key].map { self.storage.values[$0] }
        }
        set {
            if let newValue {
                if let slot = self.slotOfKey[key] {
                    self.makeUnique()
                    self.storage.values[slot] = newValue
                } else {
                    self.makeUnique()
                    self.slotOfKey[key] = self.storage.insert(newValue, for: key)
                }
            } else {
                self.removeValue(forKey: key)
            }
        }
    }

    func contains(_ key: Key) -> Bool { self.slotOfKey[key] != nil }

    var count: Int { self.slotOfKey.count }

    var isEmpty: Bool { self.slotOfKey.isEmpty }

    /// The keys, in no particular order.
    var keys: [Key] { self.storage.keys.compactMap { $0 } }

    /// The records, in no particular order.
    var values: some Sequence<Value> { self.map(\.value) }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = self.slotOfKey.removeValue(forKey: key) else { return nil }
        self.makeUnique()
        return self.storage.remove(slot)
    }

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&self.storage) { self.storage = self.storage.copy() }
    }
}

extension RecordTable: Sequence {
    /// Key and record pairs, in no particular order.
    func makeIterator() -> some IteratorProtocol<(key: Key, value: Value)> {
        let storage = self.storage
        return (0..<storage.count).lazy.compactMap { slot -> (key: Key, value: Value)? in
            guard let key = storage.keys[slot] else { return nil }
            return (key: key, value: storage.values[slot])
        }.makeIterator()
    }
}

/// The slots of a ``RecordTable``: records in a growable buffer, initialized exactly where
/// `keys` names an owner, read and written through their address. Shared between copies of a
/// table until one changes (the table copies it first); never mutated while shared, hence
/// Sendable when its keys and records are.
final class SlotStorage<Key: Sendable, Value: Sendable>: @unchecked Sendable {
    // Unchecked: the table is a value type with exclusive access of its own; a dynamic check
    // per record access would cost more than the lookup.
    @exclusivity(unchecked) private(set) var values: UnsafeMutablePointer<Value>
    /// The owner of each slot below `count`; nil for a free slot (its record is uninitialized).
    @exclusivity(unchecked) private(set) var keys: [Key?] = []
    private var freeSlots: [Int] = []
    private var capacity: Int

    var count: Int { self.keys.count }

    init(capacity: Int = 4) {
        self.capacity = max(1, capacity)
        self.values = .allocate(capacity: self.capacity)
    }

    deinit {
        for slot in self.keys.indices where self.keys[slot] != nil {
            (self.values + slot).deinitialize(count: 1)
        }
        self.values.deallocate()
    }

    /// Stores a record in a free slot, or a new one; returns the slot.
    func insert(_ value: Value, for key: Key) -> Int {
        if let slot = self.freeSlots.popLast() {
            (self.values + slot).initialize(to: value)
            self.keys[slot] = key
            return slot
        }
        if self.count == self.capacity {
            let grown = UnsafeMutablePointer<Value>.allocate(capacity: self.capacity * 2)
            for slot in self.keys.indices where self.keys[slot] != nil {
                (grown + slot).moveInitialize(from: self.values + slot, count: 1)
            }
            self.values.deallocate()
            self.values = grown
            self.capacity *= 2
        }
        (self.values + self.count).initialize(to: value)
        self.keys.append(key)
        return self.count - 1
    }

    func remove(_ slot: Int) -> Value {
        self.keys[slot] = nil
        self.freeSlots.append(slot)
        return (self.values + slot).move()
    }

    func copy() -> SlotStorage {
        let copy = SlotStorage(capacity: self.capacity)
        for slot in self.keys.indices where self.keys[slot] != nil {
            (copy.values + slot).initialize(to: self.values[slot])
        }
        copy.keys = self.keys
        copy.freeSlots = self.freeSlots
        return copy
    }
}

/// A key of a ``RecordTable``: a value whose bits identify it.
protocol RecordKey: Hashable, Sendable {
    var recordKeyBits: UInt64 { get }
}

extension TransportID: RecordKey {
    var recordKeyBits: UInt64 { self.rawValue }
}

extension SessionHandle: RecordKey {
    var recordKeyBits: UInt64 { UInt64(self.rawValue) }
}

/// Slots by key bits: open addressing with linear probing, Fibonacci hashing (one
/// multiplication), at most half full, deletion by backward shift (no tombstones).
struct SlotIndex: Sendable {
    private var keys: [UInt64] = []
    /// -1: empty.
    private var slots: [Int32] = []
    private var shift = 64
    private(set) var count = 0

    var isEmpty: Bool { self.count == 0 }

    @inline(__always)
    private func home(_ bits: UInt64) -> Int {
        Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> UInt64(self.shift))
    }

    @inline(__always)
    private func position(of bits: UInt64) -> Int? {
        guard self.count > 0 else { return nil }
        let mask = self.slots.count - 1
        var position = self.home(bits)
        while self.slots[position] >= 0 {
            if self.keys[position] == bits { return position }
            position = (position + 1) & mask
        }
        return nil
    }

    subscript<Key: RecordKey>(key: Key) -> Int? {
        get {
            self.position(of: key.recordKeyBits).map { Int(self.slots[$0]) }
        }
        set {
            if let newValue {
                self.insert(key.recordKeyBits, Int32(newValue))
            } else {
                _ = self.removeValue(forKey: key)
            }
        }
    }

    mutating func removeValue<Key: RecordKey>(forKey key: Key) -> Int? {
        guard var hole = self.position(of: key.recordKeyBits) else { return nil }
        let removed = Int(self.slots[hole])
        let mask = self.slots.count - 1
        // Backward shift: move later members of the probe run into the hole when their home
        // position does not lie after the hole (cyclically).
        var next = (hole + 1) & mask
        while self.slots[next] >= 0 {
            let home = self.home(self.keys[next])
            if (next > hole && (home <= hole || home > next)) || (next < hole && (home <= hole && home > next)) {
                self.keys[hole] = self.keys[next]
                self.slots[hole] = self.slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        self.slots[hole] = -1
        self.count -= 1
        return removed
    }

    private mutating func insert(_ bits: UInt64, _ slot: Int32) {
        if (self.count + 1) * 2 > self.slots.count { self.grow() }
        let mask = self.slots.count - 1
        var position = self.home(bits)
        while self.slots[position] >= 0 {
            if self.keys[position] == bits {
                self.slots[position] = slot
                return
            }
            position = (position + 1) & mask
        }
        self.keys[position] = bits
        self.slots[position] = slot
        self.count += 1
    }

    private mutating func grow() {
        let oldKeys = self.keys
        let oldSlots = self.slots
        let capacity = max(8, self.slots.count * 2)
        self.keys = Array(repeating: 0, count: capacity)
        self.slots = Array(repeating: -1, count: capacity)
        self.shift = 64 - capacity.trailingZeroBitCount
        self.count = 0
        for position in oldSlots.indices where oldSlots[position] >= 0 {
            self.insert(oldKeys[position], oldSlots[position])
        }
    }
}

extension UInt8: RecordKey {
    var recordKeyBits: UInt64 { UInt64(self) }
}

extension UInt16: RecordKey {
    var recordKeyBits: UInt64 { UInt64(self) }
}
