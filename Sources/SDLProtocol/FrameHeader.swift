import NIOCore

/// The header in front of every frame (protocol spec 5.4.1 §3.1).
///
/// ```
///  byte 0                   1              2             3            4 ... 7       8 ... 11
/// +---------+---+---------+--------------+-------------+------------+-------------+------------+
/// | version | E | frame   | service type | frame info  | session id | data size   | message id |
/// | 4 bits  |   | type 3b |   8 bits     |   8 bits    |   8 bits   | 32 bits BE  | 32 bits BE |
/// +---------+---+---------+--------------+-------------+------------+-------------+------------+
///                                                                    version 1 ends here (8 bytes)
/// ```
///
/// Bit E is "encrypted" for versions 2–5; version 1 defines the same bit as C, "compressed".
/// The header itself is a plain value: `validate(against:)` and the stream decoder decide whether a
/// peer's header is acceptable.
public struct FrameHeader: Hashable, Sendable {
    /// The size of a version 1 header.
    public static let v1Size = 8
    /// The size of a version 2–5 header.
    public static let v2Size = 12
    /// The data size of every First frame: total size and frame count, 4 bytes each.
    public static let firstFrameDataSize: UInt32 = 8

    /// Byte 0 as on the wire: the version in the high nibble, bit 3 (E or C), the frame type in
    /// the low 3 bits. The header keeps the wire's first four bytes in their wire order, so that
    /// its first eight bytes in memory are those four and the data size: a header read off the
    /// wire is a few loads with no fields to shuffle, and one handed to a closure is two registers.
    @usableFromInline var byte0: UInt8
    /// The service the frame belongs to.
    public var serviceType: ServiceType
    /// Control frames: the control frame info; Consecutive frames: the sequence number (0 = last);
    /// Single and First frames: reserved, 0.
    public var frameInfo: UInt8
    /// The session id.
    public var sessionID: SessionID
    /// The number of payload bytes that follow the header.
    public var dataSize: UInt32
    /// The message id; nil for version 1, whose header has none.
    public var messageID: MessageID?

    /// The protocol version (4 bits: only the low 4 bits of a value set are kept).
    @inlinable
    public var version: ProtocolVersion {
        get { ProtocolVersion(rawValue: self.byte0 >> 4) }
        set { self.byte0 = newValue.rawValue << 4 | self.byte0 & 0x0F }
    }

    /// Bit 3 of byte 0 as it is on the wire: E (encrypted) for versions 2–5, C (compressed) for
    /// version 1. `isEncrypted` and `isCompressed` interpret it.
    @inlinable
    public var protectionBit: Bool {
        get { self.byte0 & 0x08 != 0 }
        set { self.byte0 = newValue ? self.byte0 | 0x08 : self.byte0 & ~0x08 }
    }

    /// The frame type (3 bits: only the low 3 bits of a value set are kept).
    @inlinable
    public var frameType: FrameType {
        get { FrameType(rawValue: self.byte0 & 0x07) }
        set { self.byte0 = self.byte0 & ~0x07 | newValue.rawValue & 0x07 }
    }

    /// Creates a header. `messageID` is ignored for version 1 and defaults to 0 for versions 2–5.
    @inlinable
    public init(
        version: ProtocolVersion,
        encrypted: Bool = false,
        frameType: FrameType,
        serviceType: ServiceType,
        frameInfo: UInt8 = 0,
        sessionID: SessionID,
        dataSize: UInt32,
        messageID: MessageID? = nil
    ) {
        self.byte0 = version.rawValue << 4 | (encrypted ? 0x08 : 0) | frameType.rawValue & 0x07
        self.serviceType = serviceType
        self.frameInfo = frameInfo
        self.sessionID = sessionID
        self.dataSize = dataSize
        self.messageID = version.hasMessageID ? (messageID ?? MessageID(0)) : nil
    }

    /// Whether the frame's payload is encrypted (E bit, versions 2–5).
    @inlinable
    public var isEncrypted: Bool {
        get { self.version.hasMessageID && self.protectionBit }
        set { self.protectionBit = newValue }
    }

    /// Whether the frame's payload is compressed (C bit, version 1 only).
    @inlinable
    public var isCompressed: Bool { !self.version.hasMessageID && self.protectionBit }

    /// The control frame info of a control frame, nil for other frame types.
    @inlinable
    public var controlFrameInfo: ControlFrameInfo? {
        self.frameType == .control ? ControlFrameInfo(rawValue: self.frameInfo) : nil
    }

    /// The header's size on the wire: 8 bytes for version 1, 12 for versions 2–5.
    @inlinable
    public var size: Int { self.version.headerSize }

    /// The whole frame's size on the wire: header plus data size (saturating at `Int.max` where
    /// `Int` is 32 bits wide and a hostile data size would not fit).
    @inlinable
    public var frameSize: Int {
        guard let dataSize = Int(exactly: self.dataSize) else { return .max }
        let (sum, overflow) = self.size.addingReportingOverflow(dataSize)
        return overflow ? .max : sum
    }
}

extension FrameHeader {
    /// Reads a header at the reader index without consuming it. Returns nil when fewer bytes than
    /// the header needs are readable; any bytes are a header, `validate` says whether a good one.
    @inlinable
    public static func peek(in buffer: ByteBuffer) -> FrameHeader? {
        Self.peek(in: buffer, at: buffer.readerIndex)
    }

    /// Reads a header at `index` without consuming it; nil when the bytes up to the end of the
    /// header are not all readable.
    @inlinable
    public static func peek(in buffer: ByteBuffer, at index: Int) -> FrameHeader? {
        // One borrow of the storage for both words: every ByteBuffer read pays a dynamic
        // exclusivity check on its storage, which costs more than the parse itself.
        let offset = index &- buffer.readerIndex
        guard index >= buffer.readerIndex, offset <= buffer.readableBytes &- 8 else { return nil }
        return buffer.withUnsafeReadableBytes { Self.peek(in: $0, at: offset) }
    }

    /// Reads a header at `offset` of `bytes` without validating it; nil when the bytes up to the
    /// end of the header are not all there. For code that walks many headers in bytes it holds
    /// (one access to a `ByteBuffer`'s storage for all of them, where `peek(in:at:)` on the
    /// buffer pays a dynamic exclusivity check per header): two loads and no other check.
    @inlinable
    public static func peek(in bytes: UnsafeRawBufferPointer, at offset: Int) -> FrameHeader? {
        guard offset >= 0, offset <= bytes.count &- FrameHeader.v1Size else { return nil }
        let word = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        var messageID: UInt32 = 0
        if ProtocolVersion(rawValue: UInt8(truncatingIfNeeded: word >> 60)).hasMessageID {
            guard offset &+ FrameHeader.v2Size <= bytes.count else { return nil }
            messageID = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset &+ FrameHeader.v1Size, as: UInt32.self))
        }
        return FrameHeader(word: word, messageID: messageID)
    }

    /// A header from its first 8 bytes as one big-endian word and, for versions 2–5, its message id.
    @inlinable
    init(word: UInt64, messageID: UInt32) {
        // The bytes in wire order again (a caller's big-endian load and this swap cancel out):
        // the first four go to the first four fields as they are.
        let wire = word.byteSwapped
        self.byte0 = UInt8(truncatingIfNeeded: wire)
        self.serviceType = ServiceType(rawValue: UInt8(truncatingIfNeeded: wire >> 8))
        self.frameInfo = UInt8(truncatingIfNeeded: wire >> 16)
        self.sessionID = SessionID(UInt8(truncatingIfNeeded: wire >> 24))
        self.dataSize = UInt32(truncatingIfNeeded: word)
        self.messageID = self.version.hasMessageID ? MessageID(messageID) : nil
    }

    /// Parses a header from the start of `bytes`; nil when `bytes` is shorter than the header.
    public init?(bytes: some Collection<UInt8>) {
        guard let header = FrameHeader.peek(in: ByteBuffer(bytes: bytes)) else { return nil }
        self = header
    }

    /// Writes the header (8 or 12 bytes) at the writer index.
    @inlinable
    public func write(to buffer: inout ByteBuffer) {
        var word = UInt64(self.byte0) << 56
        word |= UInt64(self.serviceType.rawValue) << 48
        word |= UInt64(self.frameInfo) << 40
        word |= UInt64(self.sessionID.rawValue) << 32
        word |= UInt64(self.dataSize)
        // Both words in one write: ByteBuffer.writeInteger checks capacity, uniqueness and
        // exclusivity for each integer (two calls cost 2.4× this one, callgrind).
        let messageID = self.version.hasMessageID ? self.messageID?.rawValue ?? 0 : nil
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: messageID == nil ? 8 : 12) { bytes in
            bytes.storeBytes(of: word.bigEndian, toByteOffset: 0, as: UInt64.self)
            guard let messageID else { return 8 }
            bytes.storeBytes(of: messageID.bigEndian, toByteOffset: 8, as: UInt32.self)
            return 12
        }
    }

    /// The header's bytes.
    public var bytes: [UInt8] {
        var buffer = ByteBuffer()
        self.write(to: &buffer)
        return Array(buffer.readableBytesView)
    }
}

extension FrameHeader {
    /// Checks the header against the spec and the receive limits, as the stream decoder does
    /// before it buffers any payload (protocol spec 5.4.1 §3.1):
    /// - version 1 through `limits.maxVersion`;
    /// - frame type 0–3;
    /// - a service type the spec defines;
    /// - a control frame's frame info one the spec defines (0x00–0x09, 0xFD–0xFF);
    /// - a First frame's data size exactly 8; Single and Consecutive frames not empty;
    /// - the data size within the receive limit of the frame's session and service: its MTU in
    ///   `mtus` (or the version's default), clamped to `limits.receivePayloadCeiling`.
    ///
    /// Message ids and the reserved frame info of Single and First frames are not checked: peers
    /// disagree on them (sdl_ios sends message id 0 on bulk frames and a First frame with frame
    /// info 1), and they carry no risk.
    ///
    /// - Parameter offset: the stream offset reported in the error.
    public func validate(
        against limits: ProtocolLimits, mtus: MTUTable = MTUTable(), offset: Int? = nil
    ) throws(SDLProtocolError) {
        let ceiling = limits.receivePayloadCeiling
        if let problem = self.problem(maxVersion: limits.maxVersion, mtus: mtus, ceiling: ceiling) {
            throw self.error(for: problem, limits: limits, mtus: mtus, offset: offset)
        }
    }

    /// Whether `validate(against:mtus:)` would accept the header.
    @inlinable
    public func isValid(against limits: ProtocolLimits, mtus: MTUTable = MTUTable()) -> Bool {
        self.problem(maxVersion: limits.maxVersion, mtus: mtus, ceiling: limits.receivePayloadCeiling) == nil
    }

    @usableFromInline
    enum Problem: Sendable {
        case version, frameType, serviceType, controlFrameInfo, firstFrameSize, empty, tooLarge
    }

    /// The hot check: the caller computes the limits' ceiling once per call, not per header.
    /// Inlined into the decoder's loops, where a call cost a quarter of a frame's decoding.
    @inlinable @inline(__always)
    func problem(maxVersion: ProtocolVersion, mtus: borrowing MTUTable, ceiling: UInt32) -> Problem? {
        guard self.version.rawValue >= 1, self.version <= maxVersion else { return .version }
        guard self.frameType.rawValue <= 3 else { return .frameType }
        guard self.serviceType.isKnown else { return .serviceType }
        switch self.frameType {
        case .control:
            guard ControlFrameInfo(rawValue: self.frameInfo).isKnown else { return .controlFrameInfo }
        case .first:
            guard self.dataSize == FrameHeader.firstFrameDataSize else { return .firstFrameSize }
        default:
            guard self.dataSize > 0 else { return .empty }
        }
        let limit = mtus.receivePayloadLimit(
            version: self.version, session: self.sessionID, service: self.serviceType, ceiling: ceiling)
        guard self.dataSize <= limit else { return .tooLarge }
        return nil
    }

    @usableFromInline
    func error(
        for problem: Problem, limits: ProtocolLimits, mtus: MTUTable, offset: Int?, sizeIsLowerBound: Bool = false
    ) -> SDLProtocolError {
        // A header refused before its last data size byte arrived: the size is the least those
        // bytes allow, and the detail must not state it as the size on the wire.
        let atLeast = sizeIsLowerBound ? "at least " : ""
        switch problem {
        case .version:
            return SDLProtocolError(
                .unsupportedVersion, offset: offset,
                "protocol version \(self.version.rawValue) is not in 1...\(limits.maxVersion.rawValue)")
        case .frameType:
            return SDLProtocolError(.reservedFrameType, offset: offset, "frame type \(self.frameType.rawValue) is reserved")
        case .serviceType:
            return SDLProtocolError(
                .unknownServiceType, offset: offset, "service type 0x\(hexByte(self.serviceType.rawValue)) is not defined")
        case .controlFrameInfo:
            return SDLProtocolError(
                .unknownControlFrameInfo, offset: offset, "control frame info 0x\(hexByte(self.frameInfo)) is not defined")
        case .firstFrameSize:
            return SDLProtocolError(
                .invalidFirstFrameDataSize, offset: offset, "First frame data size is \(atLeast)\(self.dataSize), must be 8")
        case .empty:
            return SDLProtocolError(.emptyFrame, offset: offset, "\(self.frameType) frame with data size 0")
        case .tooLarge:
            let limit = mtus.receivePayloadLimit(
                version: self.version, session: self.sessionID, service: self.serviceType, limits: limits)
            return SDLProtocolError(
                .frameTooLarge, offset: offset,
                "data size \(atLeast)\(self.dataSize) exceeds the receive limit \(limit) for \(self.version) \(self.serviceType) "
                    + "session \(self.sessionID)")
        }
    }
}
