import NIOCore
import SDLProtocol
import Testing

@Suite struct FrameDecoderTests {
    static func singleFrame(_ payload: [UInt8], message: UInt32, service: ServiceType = .rpc) -> [UInt8] {
        Frame(header: FrameHeader(version: .v5, frameType: .single, serviceType: service, sessionID: SessionID(1),
                                  dataSize: UInt32(payload.count), messageID: MessageID(message)),
              payload: ByteBuffer(bytes: payload)).bytes
    }

    /// A frame that arrived inside one appended buffer is a slice of it; only a frame that spans
    /// two appended buffers is gathered (copied).
    @Test func framesThatArrivedWholeAreNotCopied() throws {
        let first = Self.singleFrame(Array(repeating: 1, count: 100), message: 1)
        let second = Self.singleFrame(Array(repeating: 2, count: 100), message: 2)
        let third = Self.singleFrame(Array(repeating: 3, count: 100), message: 3)
        // Chunk A: first frame whole and half of the second; chunk B: the rest and the third.
        let chunkA = ByteBuffer(bytes: first + second.prefix(50))
        let chunkB = ByteBuffer(bytes: second.dropFirst(50) + third)
        func address(_ buffer: ByteBuffer) -> UnsafeRawPointer {
            buffer.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) }
        }
        var decoder = FrameDecoder()
        decoder.append(chunkA)
        decoder.append(chunkB)
        let frames = [try decoder.nextFrame(), try decoder.nextFrame(), try decoder.nextFrame()].compactMap { $0 }
        #expect(frames.map { $0.payload.readableBytesView.first } == [1, 2, 3])
        #expect(address(frames[0].payload) == address(chunkA) + 12)
        #expect(address(frames[2].payload) == address(chunkB) + 62 + 12)
        // The spanning frame lives in a buffer of its own.
        #expect(address(frames[1].payload) != address(chunkA) + 112 + 12)
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.streamOffset == 336)
        #expect(decoder.lastFrameOffset == 224)
    }

    /// A negotiated MTU raises (or lowers) the receive limit of its service only.
    @Test func negotiatedMTUAppliesPerService() throws {
        let big = Self.singleFrame(Array(repeating: 9, count: 200_000), message: 1, service: .video)
        var decoder = FrameDecoder()
        decoder.append(contentsOf: big)
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame() }

        var limits = ProtocolLimits()
        limits.negotiatedMTU[.video] = 200_000
        decoder = FrameDecoder(limits: limits)
        decoder.append(contentsOf: big)
        #expect(try decoder.nextFrame()?.payload.readableBytes == 200_000)

        limits.negotiatedMTU[.rpc] = 100
        decoder = FrameDecoder(limits: limits)
        decoder.append(contentsOf: Self.singleFrame(Array(repeating: 1, count: 101), message: 2))
        do {
            _ = try decoder.nextFrame()
            Issue.record("accepted")
        } catch {
            #expect(error.code == .frameTooLarge)
            #expect(error.detail == "data size 101 exceeds the receive limit 100 for v5 RPC")
        }
    }

    /// The decoder's limits can change between frames (a StartServiceACK negotiates an MTU).
    @Test func limitsCanChangeMidStream() throws {
        let frame = Self.singleFrame(Array(repeating: 9, count: 150_000), message: 1, service: .hybrid)
        var decoder = FrameDecoder()
        decoder.append(contentsOf: Self.singleFrame([1], message: 1) + frame)
        #expect(try decoder.nextFrame() != nil)
        decoder.limits.negotiatedMTU[.hybrid] = 150_000
        #expect(try decoder.nextFrame()?.payload.readableBytes == 150_000)
    }
}
