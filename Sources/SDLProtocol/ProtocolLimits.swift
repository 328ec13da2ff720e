import NIOCore

/// The configured limits of the protocol layer: named values with documented defaults, and the
/// ceilings no peer can raise.
///
/// A hostile peer cannot make the decoder or the reassembler hold more memory than these allow
/// (ARCHITECTURE.md). Negotiated values are not configuration and do not live here: the MTUs a
/// StartServiceACK negotiates go into an `MTUTable` that the session engine owns and lends to the
/// decoder and the reassembler per call; every MTU in it is clamped to the ceilings below.
public struct ProtocolLimits: Hashable, Sendable {
    /// The highest protocol version accepted in a frame header. Default 5.
    public var maxVersion: ProtocolVersion = .v5

    /// The ceiling on the data size of every received frame (control, Single, First, Consecutive),
    /// whatever MTU was negotiated. Default 1 MiB; never above 2^31 − 1
    /// (`absoluteMaxDataSize`). The default MTUs (1,500 and 131,084 bytes) are below it.
    public var maxFramePayloadSize: Int = 1 << 20

    /// The largest message, in bytes: a First frame declaring more is rejected before anything is
    /// allocated, and no received frame may carry more (a Single frame is a whole message).
    /// Default 16 MiB.
    public var maxMessageSize: Int = 16 << 20

    /// The most messages one session may have in reassembly at once. Default 16.
    public var maxReassembliesPerSession: Int = 16

    /// The most messages one transport may have in reassembly at once, all sessions together.
    /// Default 64.
    public var maxReassembliesPerTransport: Int = 64

    /// The most bytes all reassemblies of one transport may hold together, counted by the storage
    /// their buffers take (the declared total sizes, rounded up by the allocator). Default 64 MiB.
    public var maxReassemblyBytes: Int = 64 << 20

    /// How long an incomplete message may go without a frame before the reassembler drops it and
    /// releases its memory. Default 10 seconds.
    public var reassemblyTimeout: TimeAmount = .seconds(10)

    /// How long a message may take from its First frame to its last, however often frames come:
    /// a peer that trickles a byte now and then cannot keep a reassembly alive forever. Default
    /// 60 seconds (a 16 MiB message at 300 KB/s).
    public var maxReassemblyDuration: TimeAmount = .seconds(60)

    /// The largest data size any header may declare: 2^31 − 1. Sizes are 32-bit on the wire, but
    /// the official peers read them as signed integers, so anything from 2^31 on is refused
    /// whatever the configuration.
    public static let absoluteMaxDataSize: UInt32 = UInt32(Int32.max)

    /// The limits with their documented defaults.
    public init() {}

    /// The default MTU (whole frame, header included) for a protocol version: 1500 bytes for
    /// versions 1 and 2, 131,084 bytes for versions 3–5 (protocol spec 5.4.1 §2.4.1).
    @inlinable
    public static func defaultMTU(for version: ProtocolVersion) -> Int {
        version.rawValue <= 2 ? 1500 : 131_084
    }

    /// The ceiling on any received frame's data size: the smaller of `maxFramePayloadSize` and
    /// `maxMessageSize`, at most `absoluteMaxDataSize`.
    @inlinable
    public var receivePayloadCeiling: UInt32 {
        UInt32(clamping: max(0, min(self.maxFramePayloadSize, self.maxMessageSize, Int(Self.absoluteMaxDataSize))))
    }

    /// The largest data size accepted in a received frame of `version` when no MTU was negotiated:
    /// the default MTU itself (receive tolerantly: SDL Core writes `mtu` as a payload size),
    /// clamped to `receivePayloadCeiling`. `MTUTable.receivePayloadLimit` is the same with
    /// negotiated MTUs.
    @inlinable
    public func receivePayloadLimit(version: ProtocolVersion) -> UInt32 {
        min(UInt32(Self.defaultMTU(for: version)), self.receivePayloadCeiling)
    }

    /// The largest payload put into one frame of `version` when no MTU was negotiated: the
    /// default MTU minus the header size (send conservatively, as spec §2.4.1 reads), clamped to
    /// `receivePayloadCeiling` (we never send what we would refuse), at least 1.
    @inlinable
    public func sendPayloadLimit(version: ProtocolVersion) -> Int {
        Self.sendPayloadLimit(mtu: Self.defaultMTU(for: version), version: version, ceiling: self.receivePayloadCeiling)
    }

    @inlinable
    static func sendPayloadLimit(mtu: Int, version: ProtocolVersion, ceiling: UInt32) -> Int {
        max(1, min(mtu - version.headerSize, Int(ceiling)))
    }
}
