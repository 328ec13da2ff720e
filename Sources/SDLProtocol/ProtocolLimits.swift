import NIOCore

/// Every limit of the protocol layer, as named values with documented defaults.
///
/// A hostile peer cannot make the decoder or the reassembler hold more memory than these allow
/// (DESIGN.md §3). The MTU part follows protocol spec 5.4.1 §2.4.1: each service may negotiate its
/// own MTU in StartServiceACK; until then the defaults per version apply.
public struct ProtocolLimits: Hashable, Sendable {
    /// The highest protocol version accepted in a frame header. Default 5.
    public var maxVersion: ProtocolVersion = .v5

    /// The largest reassembled message, in bytes; a First frame declaring more is rejected before
    /// anything is allocated. Default 16 MiB.
    public var maxMessageSize: Int = 16 << 20

    /// The most messages one session may have in reassembly at once. Default 16.
    public var maxReassembliesPerSession: Int = 16

    /// The most messages one transport may have in reassembly at once, all sessions together.
    /// Default 64.
    public var maxReassembliesPerTransport: Int = 64

    /// The most bytes all reassemblies of one transport may hold together, counted by the total
    /// sizes their First frames declare (that is what the reassembler reserves). Default 64 MiB.
    public var maxReassemblyBytes: Int = 64 << 20

    /// How long an incomplete message may go without a frame before the reassembler drops it and
    /// releases its memory. Default 10 seconds.
    public var reassemblyTimeout: TimeAmount = .seconds(10)

    /// The MTUs negotiated per service; empty until a StartServiceACK sets them.
    public var negotiatedMTU = ServiceMTUTable()

    /// The largest data size any header may declare: 2^31 − 1. Sizes are 32-bit on the wire, but
    /// the official peers read them as signed integers, so anything from 2^31 on is refused even
    /// when a negotiated MTU is larger.
    public static let absoluteMaxDataSize: UInt32 = UInt32(Int32.max)

    /// The limits with their documented defaults.
    public init() {}

    /// The default MTU (whole frame, header included) for a protocol version: 1500 bytes for
    /// versions 1 and 2, 131,084 bytes for versions 3–5 (protocol spec 5.4.1 §2.4.1).
    @inlinable
    public static func defaultMTU(for version: ProtocolVersion) -> Int {
        version.rawValue <= 2 ? 1500 : 131_084
    }

    /// The MTU that applies to `service` on `version`: the negotiated one if any, else the
    /// version's default.
    @inlinable
    public func mtu(version: ProtocolVersion, service: ServiceType) -> Int {
        self.negotiatedMTU[service] ?? Self.defaultMTU(for: version)
    }

    /// The largest data size accepted in a received frame: the MTU itself (DESIGN.md §3, receive
    /// tolerantly: SDL Core writes `mtu` as a payload size), capped at 2^31 − 1.
    @inlinable
    public func receivePayloadLimit(version: ProtocolVersion, service: ServiceType) -> UInt32 {
        let mtu = self.mtu(version: version, service: service)
        return UInt32(clamping: min(mtu, Int(Self.absoluteMaxDataSize)))
    }

    /// The largest payload put into one frame when sending: the MTU minus the header size
    /// (DESIGN.md §3, send conservatively, as spec §2.4.1 reads), at least 1.
    @inlinable
    public func sendPayloadLimit(version: ProtocolVersion, service: ServiceType) -> Int {
        let mtu = min(self.mtu(version: version, service: service), Int(Self.absoluteMaxDataSize))
        return max(1, mtu - version.headerSize)
    }
}

/// MTUs negotiated per service (protocol spec 5.4.1 §3.1.3.2: StartServiceACK `mtu`), for the
/// five service types the spec defines.
public struct ServiceMTUTable: Hashable, Sendable {
    @usableFromInline var control: Int?
    @usableFromInline var rpc: Int?
    @usableFromInline var audio: Int?
    @usableFromInline var video: Int?
    @usableFromInline var hybrid: Int?

    /// An empty table: every service uses its version's default.
    public init() {}

    /// The MTU negotiated for `service`, nil if none. Setting an MTU for a service the spec does
    /// not define is ignored; values below 1 are stored as 1.
    @inlinable
    public subscript(service: ServiceType) -> Int? {
        get {
            switch service {
            case .control: return self.control
            case .rpc: return self.rpc
            case .audio: return self.audio
            case .video: return self.video
            case .hybrid: return self.hybrid
            default: return nil
            }
        }
        set {
            let value = newValue.map { max(1, $0) }
            switch service {
            case .control: self.control = value
            case .rpc: self.rpc = value
            case .audio: self.audio = value
            case .video: self.video = value
            case .hybrid: self.hybrid = value
            default: break
            }
        }
    }
}
