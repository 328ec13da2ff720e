/// The MTUs negotiated per session, service and direction (protocol spec 5.4.1 §2.4.1, §3.1.3.2:
/// StartServiceACK `mtu`), for the five service types the spec defines.
///
/// One owner (the session engine) keeps the table and lends it to every `FrameDecoder` and
/// `Reassembler` call that needs it (`nextFrame(mtus:)`, `process(_:now:mtus:)`), so one table
/// can serve several transports (a session's video may arrive on its secondary transport) and
/// never goes out of sync with a copy. Unset entries mean the protocol version's default MTU.
/// Lookups are array-indexed, O(1).
///
/// Negotiated values never lift a configured ceiling: `receivePayloadLimit` and
/// `sendPayloadLimit` clamp every MTU to `ProtocolLimits.receivePayloadCeiling`.
public struct MTUTable: Hashable, Sendable {
    /// Which way the bytes travel.
    public enum Direction: Hashable, Sendable {
        /// Frames we send: payload per frame ≤ MTU − header size.
        case send
        /// Frames we receive: data size ≤ MTU.
        case receive
    }

    /// 256 sessions × 5 services × 2 directions, 0 for "not negotiated"; empty until the first
    /// MTU is set, so a table without negotiated values allocates nothing.
    @usableFromInline var entries: [UInt32]

    @usableFromInline static let servicesPerSession = 5

    /// A table without negotiated MTUs: every session and service uses its version's default.
    @inlinable
    public init() { self.entries = [] }

    /// The entry of a session's service in one direction; nil for a service the spec does not
    /// define. Branch-free for the decoder's hot path: the five known services are all below 16,
    /// so one bit mask says whether a service is known and one nibble table gives its slot
    /// (0x00 → 0, 0x07 → 1, 0x0A → 2, 0x0B → 3, 0x0F → 4).
    @inlinable @inline(__always)
    static func index(session: SessionID, service: ServiceType, direction: Direction) -> Int? {
        let raw = UInt64(service.rawValue)
        guard raw < 16, (0x8C81 as UInt64) >> raw & 1 != 0 else { return nil }
        let slot = Int(truncatingIfNeeded: (0x4000_3200_1000_0000 as UInt64) >> (raw &* 4) & 0xF)
        let pair = (Int(session.rawValue) &* Self.servicesPerSession &+ slot) &* 2
        return direction == .receive ? pair &+ 1 : pair
    }

    /// The MTU negotiated for a session's service in one direction, nil if none. Setting nil
    /// removes it; values below 1 are stored as 1 and values above 2^31 − 1 as 2^31 − 1; an MTU
    /// for a service the spec does not define is ignored.
    public subscript(session: SessionID, service: ServiceType, direction: Direction) -> Int? {
        get {
            guard !self.entries.isEmpty, let index = Self.index(session: session, service: service, direction: direction)
            else { return nil }
            let value = self.entries[index]
            return value == 0 ? nil : Int(value)
        }
        set {
            guard let index = Self.index(session: session, service: service, direction: direction) else { return }
            if self.entries.isEmpty {
                guard newValue != nil else { return }
                self.entries = [UInt32](repeating: 0, count: 256 * Self.servicesPerSession * 2)
            }
            self.entries[index] = newValue.map { UInt32(clamping: min(max(1, $0), Int(ProtocolLimits.absoluteMaxDataSize))) } ?? 0
        }
    }

    /// Forgets every MTU of a session (when it ends), in both directions.
    public mutating func removeAll(session: SessionID) {
        guard !self.entries.isEmpty else { return }
        let start = Int(session.rawValue) * Self.servicesPerSession * 2
        for index in start..<(start + Self.servicesPerSession * 2) {
            self.entries[index] = 0
        }
    }

    /// The MTU in force for a session's service in one direction: the negotiated one, else the
    /// version's default (`ProtocolLimits.defaultMTU(for:)`). Not clamped: the limits below are.
    public func mtu(version: ProtocolVersion, session: SessionID, service: ServiceType, direction: Direction) -> Int {
        self[session, service, direction] ?? ProtocolLimits.defaultMTU(for: version)
    }

    /// The largest data size accepted in a received frame: the receive MTU itself (receive
    /// tolerantly: SDL Core writes `mtu` as a payload size), clamped to the limits' ceiling.
    @inlinable
    public func receivePayloadLimit(
        version: ProtocolVersion, session: SessionID, service: ServiceType, limits: ProtocolLimits
    ) -> UInt32 {
        self.receivePayloadLimit(version: version, session: session, service: service, ceiling: limits.receivePayloadCeiling)
    }

    @inlinable
    func receivePayloadLimit(version: ProtocolVersion, session: SessionID, service: ServiceType, ceiling: UInt32) -> UInt32 {
        var mtu = UInt32(truncatingIfNeeded: ProtocolLimits.defaultMTU(for: version))
        if !self.entries.isEmpty, let index = Self.index(session: session, service: service, direction: .receive) {
            let negotiated = self.entries[index]
            if negotiated != 0 { mtu = negotiated }
        }
        return min(mtu, ceiling)
    }

    /// The largest payload put into one frame when sending: the send MTU minus the header size
    /// (send conservatively, as spec §2.4.1 reads), clamped to the limits' ceiling, at least 1.
    public func sendPayloadLimit(
        version: ProtocolVersion, session: SessionID, service: ServiceType, limits: ProtocolLimits
    ) -> Int {
        ProtocolLimits.sendPayloadLimit(
            mtu: self.mtu(version: version, session: session, service: service, direction: .send), version: version,
            ceiling: limits.receivePayloadCeiling)
    }
}
