import NIOCore

/// Counts events in a sliding window of ``RateLimit/period``, kept as eight sub-windows, so it
/// needs 48 bytes whatever the limit (a session's flood meter must fit its idle memory budget).
/// An event counts while it is within the last period, to the granularity of a sub-window.
struct RateMeter: Sendable {
    let limit: RateLimit
    private let slotNanos: UInt64
    /// Counts per sub-window, ring-indexed by sub-window number.
    private var counts = SIMD8<UInt32>()
    /// The sub-window number (uptime / sub-window length) of the newest count.
    private var newestSlot: UInt64?

    init(_ limit: RateLimit) {
        self.limit = limit
        self.slotNanos = UInt64(max(8, limit.period.nanoseconds / 8))
    }

    /// Counts one event at `now`; returns whether the window now holds more than the limit.
    mutating func record(now: NIODeadline) -> Bool {
        let slot = now.uptimeNanoseconds / self.slotNanos
        if let newest = self.newestSlot {
            if slot > newest {
                // Clear the sub-windows the window slid past since the newest count.
                let stale = min(8, slot - newest)
                for offset in 0..<stale { self.counts[Int((slot - offset) % 8)] = 0 }
                self.newestSlot = slot
            }
        } else {
            self.newestSlot = slot
        }
        let index = Int((self.newestSlot ?? slot) % 8)
        self.counts[index] &+= 1
        return UInt64(self.counts.wrappedSum()) > UInt64(max(0, self.limit.count))
    }
}
