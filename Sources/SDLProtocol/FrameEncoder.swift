import NIOCore

/// Writes frames to a byte stream (protocol spec 5.4.1 §3).
public enum FrameEncoder {
    /// Writes the frame's header, with its data size set to the payload's size, then the payload.
    @inlinable
    public static func write(_ frame: ProtocolFrame, to buffer: inout ByteBuffer) {
        buffer.reserveCapacity(minimumWritableBytes: frame.header.size + frame.payload.readableBytes)
        Self.writeHeader(frame, to: &buffer)
        buffer.writeImmutableBuffer(frame.payload)
    }

    /// Writes only the frame's header (8 or 12 bytes), with its data size set to the payload's
    /// size, so that a transport can write the header and then the payload slice as it is
    /// (e.g. gathered in one `writev`) instead of copying the payload behind the header.
    @inlinable
    public static func writeHeader(_ frame: ProtocolFrame, to buffer: inout ByteBuffer) {
        var header = frame.header
        header.dataSize = UInt32(truncatingIfNeeded: frame.payload.readableBytes)
        header.write(to: &buffer)
    }

    /// Fragments a message into frames (see `MessageFragmenter`) and writes them all.
    ///
    /// - Parameter control: the control frame info of a control message; nil (the default) for a
    ///   data message.
    public static func writeMessage(
        _ payload: ByteBuffer,
        version: ProtocolVersion,
        serviceType: ServiceType,
        sessionID: SessionID,
        messageID: MessageID = MessageID(0),
        control: ControlFrameInfo? = nil,
        encrypted: Bool = false,
        maxPayloadPerFrame: Int,
        to buffer: inout ByteBuffer
    ) throws(SDLProtocolError) {
        let fragmenter = try MessageFragmenter(
            payload: payload, version: version, serviceType: serviceType, sessionID: sessionID,
            messageID: messageID, control: control, encrypted: encrypted, maxPayloadPerFrame: maxPayloadPerFrame)
        for frame in fragmenter {
            Self.write(frame, to: &buffer)
        }
    }
}

/// Splits one message into the frames that carry it (protocol spec 5.4.1 §4.1).
///
/// A data message that fits `maxPayloadPerFrame` becomes one Single frame; a control message is
/// always one control frame. A larger data message becomes a First frame, whose 8-byte payload is the total size and the number of
/// Consecutive frames (both big-endian 32-bit), then Consecutive frames numbered 1…255, 1 again
/// after 255, and 0 on the last one. The First frame is never encrypted; Consecutive frames carry
/// the message's encryption flag. Frames are produced lazily and their payloads are slices of the
/// message payload, not copies: a transport can write each frame's header
/// (`FrameEncoder.writeHeader(_:to:)`) and then its payload slice.
public struct MessageFragmenter: Sequence, Sendable {
    /// The whole message.
    public let payload: ByteBuffer
    /// The protocol version of every frame.
    public let version: ProtocolVersion
    /// The service every frame belongs to.
    public let serviceType: ServiceType
    /// The session every frame belongs to.
    public let sessionID: SessionID
    /// The message id every frame carries (versions 2–5).
    public let messageID: MessageID
    /// The control frame info of a control message; nil for a data message (whose frames carry
    /// frame info 0, or the sequence number on Consecutive frames).
    public let control: ControlFrameInfo?
    /// Whether the Single or Consecutive frames carry the E bit.
    public let encrypted: Bool
    /// The most payload bytes put into one frame.
    public let maxPayloadPerFrame: Int

    /// The number of Consecutive frames, 0 when the message goes in one frame.
    public let consecutiveFrameCount: Int

    /// Prepares the frames of a message.
    ///
    /// - Parameters:
    ///   - control: the control frame info of a control message; nil (the default) for a data
    ///     message. Control messages are never fragmented: a control payload above the limit
    ///     throws.
    ///   - encrypted: sets the E bit on the Single or Consecutive frames (versions 2–5 only; the
    ///     First frame is never encrypted).
    ///   - maxPayloadPerFrame: payload bytes per frame, usually
    ///     `ProtocolLimits.sendPayloadLimit(version:service:)`.
    public init(
        payload: ByteBuffer,
        version: ProtocolVersion,
        serviceType: ServiceType,
        sessionID: SessionID,
        messageID: MessageID = MessageID(0),
        control: ControlFrameInfo? = nil,
        encrypted: Bool = false,
        maxPayloadPerFrame: Int
    ) throws(SDLProtocolError) {
        guard maxPayloadPerFrame >= 1 else {
            throw SDLProtocolError(.payloadTooLarge, "payload per frame must be at least 1 byte, not \(maxPayloadPerFrame)")
        }
        let size = payload.readableBytes
        guard UInt64(size) <= UInt64(UInt32.max) else {
            throw SDLProtocolError(.payloadTooLarge, "a message of \(size) bytes does not fit the 32-bit total size")
        }
        // The decoder refuses empty Single frames; a data message must carry at least one byte.
        guard size > 0 || control != nil else {
            throw SDLProtocolError(.emptyFrame, "a data message needs at least 1 byte of payload")
        }
        // Version 1's bit in that place means "compressed": an encrypted message would arrive as a
        // compressed one.
        guard !encrypted || version.hasMessageID else {
            throw SDLProtocolError(.fieldOutOfRange, "protocol version 1 has no encryption flag")
        }
        if control != nil && size > maxPayloadPerFrame {
            throw SDLProtocolError(
                .payloadTooLarge, "control payload of \(size) bytes exceeds \(maxPayloadPerFrame) bytes per frame")
        }
        self.payload = payload
        self.version = version
        self.serviceType = serviceType
        self.sessionID = sessionID
        self.messageID = messageID
        self.control = control
        self.encrypted = encrypted
        self.maxPayloadPerFrame = maxPayloadPerFrame
        self.consecutiveFrameCount = size <= maxPayloadPerFrame ? 0 : (size + maxPayloadPerFrame - 1) / maxPayloadPerFrame
    }

    /// The number of frames: 1, or the First frame plus the Consecutive frames.
    public var frameCount: Int { self.consecutiveFrameCount == 0 ? 1 : self.consecutiveFrameCount + 1 }

    /// The sequence number of Consecutive frame `index` (1-based) out of `count`: 1…255, then 1
    /// again, and 0 for the last.
    @inlinable
    public static func sequenceNumber(ofConsecutiveFrame index: Int, count: Int) -> UInt8 {
        index == count ? 0 : UInt8((index - 1) % 255 + 1)
    }

    /// An iterator over the frames, First frame first.
    public func makeIterator() -> Iterator { Iterator(self) }

    /// Produces the frames one by one; each payload is a slice of the message.
    public struct Iterator: IteratorProtocol, Sendable {
        private let fragmenter: MessageFragmenter
        private var position = 0

        init(_ fragmenter: MessageFragmenter) { self.fragmenter = fragmenter }

        /// The next frame, nil after the last.
        public mutating func next() -> ProtocolFrame? {
            let f = self.fragmenter
            let index = self.position
            guard index < f.frameCount else { return nil }
            self.position += 1
            func header(_ type: FrameType, info: UInt8, encrypted: Bool, size: Int) -> FrameHeader {
                FrameHeader(
                    version: f.version, encrypted: encrypted, frameType: type, serviceType: f.serviceType,
                    frameInfo: info, sessionID: f.sessionID, dataSize: UInt32(size), messageID: f.messageID)
            }
            if f.consecutiveFrameCount == 0 {
                let size = f.payload.readableBytes
                let (type, info) = f.control.map { (FrameType.control, $0.rawValue) } ?? (.single, 0)
                return ProtocolFrame(header: header(type, info: info, encrypted: f.encrypted, size: size), payload: f.payload)
            }
            if index == 0 {
                var first = ByteBuffer()
                first.writeMultipleIntegers(
                    UInt32(f.payload.readableBytes), UInt32(f.consecutiveFrameCount), endianness: .big)
                return ProtocolFrame(header: header(.first, info: 0, encrypted: false, size: 8), payload: first)
            }
            let start = (index - 1) * f.maxPayloadPerFrame
            let length = Swift.min(f.maxPayloadPerFrame, f.payload.readableBytes - start)
            let slice = f.payload.getSlice(at: f.payload.readerIndex + start, length: length)!
            let info = MessageFragmenter.sequenceNumber(ofConsecutiveFrame: index, count: f.consecutiveFrameCount)
            return ProtocolFrame(header: header(.consecutive, info: info, encrypted: f.encrypted, size: length), payload: slice)
        }
    }
}
