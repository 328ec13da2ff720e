import NIOCore
import SDLProtocol
import Testing

@Suite struct FrameDecoderTests {
    static func singleFrame(_ payload: [UInt8], message: UInt32, service: ServiceType = .rpc) -> [UInt8] {
        ProtocolFrame(header: FrameHeader(version: .v5, frameType: .single, serviceType: service, sessionID: SessionID(1),
                                  dataSize: UInt32(payload.count), messageID: MessageID(message)),
              payload: ByteBuffer(bytes: payload)).bytes
    }

    /// A frame that arrived inside one retained buffer (at least 256 readable bytes, storage at
    /// most twice that) is a slice of it; only a frame that spans two appended buffers is
    /// gathered (copied).
    @Test func framesThatArrivedWholeAreNotCopied() throws {
        let first = Self.singleFrame(Array(repeating: 1, count: 200), message: 1)
        let second = Self.singleFrame(Array(repeating: 2, count: 200), message: 2)
        let third = Self.singleFrame(Array(repeating: 3, count: 200), message: 3)
        // Chunk A: first frame whole and half of the second; chunk B: the rest and the third.
        let chunkA = ByteBuffer(bytes: first + second.prefix(106))
        let chunkB = ByteBuffer(bytes: second.dropFirst(106) + third)
        func address(_ buffer: ByteBuffer) -> UnsafeRawPointer {
            buffer.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) }
        }
        var decoder = FrameDecoder()
        decoder.append(chunkA)
        decoder.append(chunkB)
        let frames = [try decoder.nextFrame(), try decoder.nextFrame(), try decoder.nextFrame()].compactMap { $0 }
        #expect(frames.map { $0.payload.readableBytesView.first } == [1, 2, 3])
        #expect(address(frames[0].payload) == address(chunkA) + 12)
        #expect(address(frames[2].payload) == address(chunkB) + 106 + 12)
        // The spanning frame lives in a buffer of its own.
        #expect(address(frames[1].payload) != address(chunkA) + 212 + 12)
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.bufferedStorageBytes == 0)
        #expect(decoder.streamOffset == 636)
        #expect(decoder.lastFrameOffset == 424)
    }

    /// A negotiated MTU raises (or lowers) the receive limit of its session's service only.
    @Test func negotiatedMTUAppliesPerSessionAndService() throws {
        let big = Self.singleFrame(Array(repeating: 9, count: 200_000), message: 1, service: .video)
        var decoder = FrameDecoder()
        decoder.append(contentsOf: big)
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame() }

        var mtus = MTUTable()
        mtus[SessionID(1), .video, .receive] = 200_000
        decoder = FrameDecoder()
        decoder.append(contentsOf: big)
        #expect(try decoder.nextFrame(mtus: mtus)?.payload.readableBytes == 200_000)
        // The same frame on session 2, or with the MTU set for sending only, is refused.
        var other = mtus
        other.removeAll(session: SessionID(1))
        other[SessionID(2), .video, .receive] = 200_000
        other[SessionID(1), .video, .send] = 200_000
        decoder = FrameDecoder()
        decoder.append(contentsOf: big)
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame(mtus: other) }

        mtus[SessionID(1), .rpc, .receive] = 100
        decoder = FrameDecoder()
        decoder.append(contentsOf: Self.singleFrame(Array(repeating: 1, count: 101), message: 2))
        expectError(SDLProtocolError(.frameTooLarge, offset: 0, "data size 101 exceeds the receive limit 100 for v5 RPC session 1")) {
            try decoder.nextFrame(mtus: mtus)
        }
    }

    /// The MTUs lent to the decoder can change between frames (a StartServiceACK negotiates one).
    @Test func mtusCanChangeMidStream() throws {
        let frame = Self.singleFrame(Array(repeating: 9, count: 150_000), message: 1, service: .hybrid)
        var decoder = FrameDecoder()
        var mtus = MTUTable()
        decoder.append(contentsOf: Self.singleFrame([1], message: 1) + frame)
        #expect(try decoder.nextFrame(mtus: mtus) != nil)
        mtus[SessionID(1), .hybrid, .receive] = 150_000
        #expect(try decoder.nextFrame(mtus: mtus)?.payload.readableBytes == 150_000)
    }
}
