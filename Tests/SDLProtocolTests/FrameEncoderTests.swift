import NIOCore
import SDLProtocol
import Testing

/// The send path: header-only writes next to payload slices, typed control frame infos.
@Suite struct FrameEncoderTests {
    /// A transport can write each frame's header, then its payload slice as it is: the bytes are
    /// those of `write`, and the payload is never copied behind the header.
    @Test func headerThenPayloadSliceEqualsTheWholeFrame() throws {
        let payload = ByteBuffer(bytes: (0..<5000).map { UInt8(truncatingIfNeeded: $0) })
        let fragmenter = try MessageFragmenter(
            payload: payload, version: .v5, serviceType: .video, sessionID: SessionID(3), messageID: MessageID(8),
            encrypted: true, maxPayloadPerFrame: 1500)
        var whole = ByteBuffer()
        var pieces = ByteBuffer()
        let payloadStart = payload.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) }
        for (index, frame) in fragmenter.enumerated() {
            FrameEncoder.write(frame, to: &whole)
            var header = ByteBuffer()
            FrameEncoder.writeHeader(frame, to: &header)
            #expect(header.readableBytes == 12)
            pieces.writeImmutableBuffer(header)
            pieces.writeImmutableBuffer(frame.payload)
            if index > 0 {
                let start = frame.payload.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) }
                #expect(start == payloadStart + (index - 1) * 1500)
            }
        }
        #expect(pieces == whole)
        #expect(fragmenter.frameCount == 5)
        // The header's data size follows the payload, whatever the header said.
        var frame = ProtocolFrame(header: FrameHeader(version: .v1, frameType: .single, serviceType: .rpc, sessionID: SessionID(1),
                                                      dataSize: 999), payload: ByteBuffer(bytes: [1, 2, 3]))
        var header = ByteBuffer()
        FrameEncoder.writeHeader(frame, to: &header)
        #expect(header.bytes == [0x11, 0x07, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03])
        frame.header.dataSize = 3
        #expect(FrameHeader(bytes: header.bytes) == frame.header)
    }

    /// Control messages name their frame info by type; data frames carry 0, Consecutive frames
    /// their sequence number.
    @Test func controlFrameInfosAreTyped() throws {
        var out = ByteBuffer()
        try FrameEncoder.writeMessage(ByteBuffer(), version: .v5, serviceType: .control, sessionID: SessionID(2),
                                      messageID: MessageID(4), control: .heartbeatACK, maxPayloadPerFrame: 100, to: &out)
        #expect(out.bytes == [0x50, 0x00, 0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 4])
        let ack = try MessageFragmenter(payload: ByteBuffer(bytes: [1, 2]), version: .v4, serviceType: .rpc, sessionID: SessionID(1),
                                        control: .startServiceACK, maxPayloadPerFrame: 10)
        #expect(ack.control == .startServiceACK)
        #expect(Array(ack).map(\.header.controlFrameInfo) == [.startServiceACK])
        let data = try MessageFragmenter(payload: ByteBuffer(bytes: Array(0..<10)), version: .v5, serviceType: .rpc,
                                         sessionID: SessionID(1), maxPayloadPerFrame: 4)
        #expect(data.control == nil)
        #expect(Array(data).map(\.header.frameInfo) == [0, 1, 2, 0])
        #expect(Array(data).map(\.header.frameType) == [.first, .consecutive, .consecutive, .consecutive])
    }
}
