import NIOCore

/// One frame of the SDL transport protocol: a header and its payload (protocol spec 5.4.1 §3).
///
/// Naming: public types of this package never take a bare generic noun that apps use for their
/// own types (Frame, Message, Session, Event, Action, Transport, Error, Value); the name says the
/// layer, as in `ProtocolFrame`, `ProtocolMessage`, `SDLProtocolError`.
///
/// The payload is a `ByteBuffer` slice. Frames the decoder hands out share storage with the bytes
/// they arrived in, so a frame that arrived whole is never copied.
public struct ProtocolFrame: Hashable, Sendable {
    /// The header as received or to be sent.
    public var header: FrameHeader
    /// The payload bytes (`header.dataSize` of them in a decoded frame).
    public var payload: ByteBuffer

    /// Creates a frame; `header.dataSize` should equal `payload.readableBytes` (the encoder writes
    /// the payload's size regardless).
    @inlinable
    public init(header: FrameHeader, payload: ByteBuffer) {
        self.header = header
        self.payload = payload
    }

    /// For a First frame, the total message size and the number of Consecutive frames its
    /// payload declares (two big-endian 32-bit integers); nil for other frames or a short payload.
    @inlinable
    public var firstFramePayload: (totalSize: UInt32, frameCount: UInt32)? {
        guard self.header.frameType == .first,
            let (total, count) = self.payload.getMultipleIntegers(
                at: self.payload.readerIndex, endianness: .big, as: (UInt32, UInt32).self)
        else { return nil }
        return (total, count)
    }

    /// The frame's bytes on the wire: header then payload.
    public var bytes: [UInt8] {
        var buffer = ByteBuffer()
        FrameEncoder.write(self, to: &buffer)
        return Array(buffer.readableBytesView)
    }
}
