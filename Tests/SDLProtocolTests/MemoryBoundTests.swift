import NIOCore
import SDLProtocol
import Testing

/// A hostile peer opens as many reassemblies as it can, each declaring a huge message, and never
/// completes them. The reassembler never holds more than its limits allow.
@Suite struct MemoryBoundTests {
    @Test func hostileStreamOfHugeFirstFramesStaysWithinLimits() throws {
        var limits = ProtocolLimits()
        limits.maxMessageSize = 4 << 20
        limits.maxReassembliesPerSession = 4
        limits.maxReassembliesPerTransport = 20
        limits.maxReassemblyBytes = 24 << 20
        var decoder = FrameDecoder(limits: limits)
        var reassembler = Reassembler(limits: limits)
        var rng = SplitMix64(seed: 7)
        var errors: [SDLProtocolError.Code: Int] = [:]
        var started = 0
        var peakReserved = 0
        let t0 = NIODeadline.uptimeNanoseconds(0)
        // 256 sessions × 16 message ids over all four data services: 4,096 First frames.
        var stream = ByteBuffer()
        for session in 0...255 {
            for message in 1...16 {
                let service = [ServiceType.rpc, .audio, .video, .hybrid][message % 4]
                // Declared sizes up to, and sometimes just beyond, the message limit.
                let total = UInt32.random(in: (3 << 20)...((4 << 20) + 1), using: &rng)
                var payload = ByteBuffer()
                payload.writeMultipleIntegers(total, total / 1000, endianness: .big)
                FrameEncoder.write(
                    ProtocolFrame(header: FrameHeader(version: .v5, frameType: .first, serviceType: service,
                                              sessionID: SessionID(UInt8(session)), dataSize: 8, messageID: MessageID(UInt32(message))),
                          payload: payload),
                    to: &stream)
            }
        }
        decoder.append(stream)
        while let frame = try decoder.nextFrame() {
            do {
                _ = try reassembler.process(frame, now: t0)
                started += 1
            } catch {
                errors[error.code, default: 0] += 1
            }
            peakReserved = max(peakReserved, reassembler.reservedBytes)
            #expect(reassembler.activeCount <= limits.maxReassembliesPerTransport)
            #expect(reassembler.activeCount(session: frame.header.sessionID) <= limits.maxReassembliesPerSession)
            #expect(reassembler.reservedBytes <= limits.maxReassemblyBytes)
        }
        #expect(started + errors.values.reduce(0, +) == 256 * 16)
        #expect(started <= limits.maxReassembliesPerTransport)
        #expect(started >= 5)  // 24 MiB hold at least five messages of up to 4 MiB
        #expect(errors[.tooManyReassemblies, default: 0] > 4_000)
        #expect(peakReserved <= limits.maxReassemblyBytes)
        // Every incomplete message expires and its memory is released.
        let expired = reassembler.expire(now: t0 + limits.reassemblyTimeout)
        #expect(expired.count == started)
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
    }

    @Test func perSessionLimitLeavesRoomForOtherSessions() throws {
        var limits = ProtocolLimits()
        limits.maxReassembliesPerSession = 2
        var reassembler = Reassembler(limits: limits)
        let t0 = NIODeadline.uptimeNanoseconds(0)
        func first(session: UInt8, message: UInt32) -> ProtocolFrame {
            var payload = ByteBuffer()
            payload.writeMultipleIntegers(UInt32(100), UInt32(2), endianness: .big)
            return ProtocolFrame(header: FrameHeader(version: .v5, frameType: .first, serviceType: .rpc, sessionID: SessionID(session),
                                             dataSize: 8, messageID: MessageID(message)), payload: payload)
        }
        _ = try reassembler.process(first(session: 1, message: 1), now: t0)
        _ = try reassembler.process(first(session: 1, message: 2), now: t0)
        #expect(throws: SDLProtocolError.self) { try reassembler.process(first(session: 1, message: 3), now: t0) }
        #expect(try reassembler.process(first(session: 2, message: 3), now: t0) == nil)
        #expect(reassembler.activeCount == 3)
        #expect(reassembler.reservedBytes == 3 * 128)  // 100-byte messages in 128-byte buffers
    }

    /// A peer that announces a large frame and then trickles its payload makes the decoder buffer
    /// only the bytes that have arrived, never the announced size.
    @Test func decoderBuffersOnlyWhatArrived() throws {
        var limits = ProtocolLimits()
        limits.maxFramePayloadSize = 1 << 30
        limits.maxMessageSize = 1 << 30
        var mtus = MTUTable()
        mtus[SessionID(1), .video, .receive] = 1 << 30
        var decoder = FrameDecoder(limits: limits)
        let header = FrameHeader(version: .v5, frameType: .single, serviceType: .video, sessionID: SessionID(1),
                                 dataSize: 1 << 30, messageID: MessageID(1))
        decoder.append(contentsOf: header.bytes)
        for _ in 0..<100 {
            decoder.append(contentsOf: [1, 2, 3])
            #expect(try decoder.nextFrame(mtus: mtus) == nil)
        }
        #expect(decoder.bufferedByteCount == 12 + 300)
        #expect(decoder.bufferedStorageBytes <= 4 * decoder.bufferedByteCount + 4096)
    }
}
