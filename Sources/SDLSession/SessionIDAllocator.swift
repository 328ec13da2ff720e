import NIOCore
import SDLProtocol

/// Session ids 1–255 for a head unit, unique across all its connections (as in SDL Core since
/// SDL-0141), and the hash ids that go with them (ARCHITECTURE.md, D-session-ids).
struct SessionIDAllocator: Sendable {
    let policy: SessionIDPolicy
    let maxSessions: Int
    /// Free ids, freed longest ago first (least-recently-freed policy).
    private var free: CircularBuffer<UInt8>
    /// Which ids are in use (lowest-free policy and bookkeeping).
    private var inUse = [Bool](repeating: false, count: 256)
    private(set) var liveCount = 0
    /// The hash each id had last, so a reused id never gets its predecessor's hash.
    private var lastHash = [UInt32](repeating: 0, count: 256)
    private var liveHashes: Set<UInt32> = []
    private var random: SplitMix64

    init(policy: SessionIDPolicy, maxSessions: Int, seed: UInt64?) {
        self.policy = policy
        self.maxSessions = min(255, max(1, maxSessions))
        self.free = CircularBuffer(initialCapacity: 256)
        for id in 1...255 { self.free.append(UInt8(id)) }
        self.random = SplitMix64(seed: seed ?? UInt64.random(in: .min ... .max))
    }

    /// Whether ``allocate()`` would find no id.
    var isExhausted: Bool { self.liveCount >= self.maxSessions }

    /// A free id and a fresh hash, or nil when none is free.
    mutating func allocate() -> (SessionID, UInt32)? {
        guard self.liveCount < self.maxSessions else { return nil }
        let id: UInt8
        switch self.policy {
        case .leastRecentlyFreed:
            guard let next = self.free.popFirst() else { return nil }
            id = next
        case .lowestFree:
            guard let lowest = (1...255).first(where: { !self.inUse[$0] }) else { return nil }
            id = UInt8(lowest)
            if let index = self.free.firstIndex(of: id) { self.free.remove(at: index) }
        }
        self.inUse[Int(id)] = true
        self.liveCount += 1
        let hash = self.freshHash(avoiding: self.lastHash[Int(id)])
        self.lastHash[Int(id)] = hash
        self.liveHashes.insert(hash)
        return (SessionID(id), hash)
    }

    /// Returns an id to the pool.
    mutating func release(_ id: SessionID, hash: UInt32) {
        guard id.rawValue != 0, self.inUse[Int(id.rawValue)] else { return }
        self.inUse[Int(id.rawValue)] = false
        self.liveCount -= 1
        self.liveHashes.remove(hash)
        self.free.append(id.rawValue)
    }

    /// A random non-zero int32 bit pattern that no live session has, unlike the previous holder's,
    /// and not Core's `HASH_ID_WRONG` (0xFFFF0000).
    private mutating func freshHash(avoiding previous: UInt32) -> UInt32 {
        while true {
            let candidate = UInt32(truncatingIfNeeded: self.random.next())
            if candidate != 0 && candidate != 0xFFFF_0000 && candidate != previous && !self.liveHashes.contains(candidate) {
                return candidate
            }
        }
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64), for hash ids that
/// tests can repeat.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
