import NIOCore
import SDLTestSupport
import Testing

@testable import SDLProtocol

/// Hostile and edge-case input at the seams of the decoder, the reassembler and the fragmenter:
/// what a peer can make us hold, and what we refuse to send.
@Suite struct HardeningTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static let heartbeat = MalformedInputTests.heartbeat

    /// 0x50 0x50 … : every offset starts a v5 control frame whose service byte (0x50) is undefined.
    /// Fed one byte per `append`, the bad header always spans chunks, so the decoder slides through
    /// a gathered buffer. It must not keep the bytes it slid over.
    @Test func garbageThatKeepsCrossingChunkBoundariesHoldsNoMemory() throws {
        var decoder = FrameDecoder()
        var errors: [SDLProtocolError] = []
        var peakStorage = 0
        let byte = ByteBuffer(bytes: [0x50])
        for _ in 0..<100_000 {
            decoder.append(byte)
            while true {
                do {
                    guard try decoder.nextFrame() == nil else {
                        Issue.record("a frame out of garbage")
                        return
                    }
                    break
                } catch {
                    errors.append(error)
                }
            }
            peakStorage = max(peakStorage, decoder.bufferedStorageBytes)
        }
        #expect(errors.map(\.code) == [.unknownServiceType])
        #expect(errors.first?.offset == 0)
        #expect(decoder.skippedByteCount == 99_999)
        #expect(decoder.bufferedByteCount == 1)
        // A header's worth of bytes, rounded up by the allocator, not 100,000.
        #expect(peakStorage <= 64, "peak storage \(peakStorage) bytes")
        // And a good frame after the run is still found, with nothing of the garbage in it.
        decoder.append(contentsOf: [0x00] + Self.heartbeat)
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.bytes == Self.heartbeat)
        #expect(decoder.bufferedStorageBytes <= 64)
    }

    /// A megabyte of garbage split across two received buffers, then a good frame: one error, every
    /// garbage byte skipped and counted, the frame delivered, and nothing but the received buffers
    /// held (the bytes gathered to read headers across the split are let go once passed).
    @Test func aLongGarbageRunAcrossTwoBuffers() throws {
        for filler: UInt8 in [0x00, 0x50, 0xFF] {
            let garbage = [UInt8](repeating: filler, count: 1 << 20)
            var decoder = FrameDecoder()
            decoder.append(contentsOf: garbage[..<500_001])
            decoder.append(contentsOf: garbage[500_001...] + Self.heartbeat)
            var errors: [SDLProtocolError.Code] = []
            var frames: [ProtocolFrame] = []
            while true {
                do {
                    guard let frame = try decoder.nextFrame() else { break }
                    frames.append(frame)
                } catch {
                    errors.append(error.code)
                }
            }
            #expect(errors.count == 1, "filler \(filler)")
            #expect(frames.map(\.bytes) == [Self.heartbeat], "filler \(filler)")
            #expect(decoder.skippedByteCount == 1 << 20, "filler \(filler)")
            #expect(decoder.bufferedByteCount == 0)
        }
    }

    /// Random garbage (any bytes, as long as no valid header starts inside it) between good frames,
    /// fed in random chunkings: every good frame arrives, and each run is reported once, at its
    /// first byte.
    @Test func randomGarbageInRandomChunkingsIsReportedOncePerRun() throws {
        var rng = SplitMix64(seed: 0xBAD_5EED)
        let good = [
            MalformedInputTests.frame(.single, payload: [1, 2, 3]).bytes,
            MalformedInputTests.frame(.single, service: .video, session: 9, message: 2, payload: Array(repeating: 7, count: 300)).bytes,
            MalformedInputTests.frame(.control, service: .rpc, payload: [], version: .v1).bytes,
            MalformedInputTests.frame(.first, service: .audio, payload: [0, 0, 0, 9, 0, 0, 0, 2], version: .v3).bytes,
            Self.heartbeat,
        ]
        var runsChecked = 0
        for _ in 0..<400 {
            var stream: [UInt8] = []
            var runStarts: [Int] = []
            for frame in good {
                let garbage = (0..<Int.random(in: 0...24, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if !garbage.isEmpty { runStarts.append(stream.count) }
                stream += garbage + frame
            }
            // Skip draws where a header that passes validation starts inside a garbage run: the
            // decoder would rightly take it for a frame.
            let limits = ProtocolLimits()
            var frameStarts = Set<Int>()
            var offset = 0
            for frame in good {
                while !stream[offset...].starts(with: frame) { offset += 1 }
                frameStarts.insert(offset)
                offset += frame.count
            }
            let hidesAHeader = (0..<stream.count).contains { start in
                guard !frameStarts.contains(start),
                    let header = FrameHeader(bytes: stream[start...]), header.isValid(against: limits)
                else { return false }
                return true
            }
            if hidesAHeader { continue }
            var cuts = Set<Int>()
            for _ in 0..<Int.random(in: 0...20, using: &rng) { cuts.insert(Int.random(in: 1..<stream.count, using: &rng)) }
            var chunks: [[UInt8]] = []
            var previous = 0
            for cut in cuts.sorted() + [stream.count] {
                chunks.append(Array(stream[previous..<cut]))
                previous = cut
            }
            let result = decode(chunks)
            #expect(result.frames.map(\.bytes) == good, "\(stream.hex)")
            #expect(result.errors.compactMap(\.offset) == runStarts, "\(stream.hex)")
            runsChecked += runStarts.count
        }
        #expect(runsChecked > 500)
    }

    /// A garbage run ends where a whole valid header starts; if its frame is then cut short,
    /// `finish()` reports the truncation.
    @Test func finishReportsATruncatedFrameAfterGarbage() throws {
        var decoder = FrameDecoder()
        let header = FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 4)
        decoder.append(contentsOf: [0x00] + header.bytes + [1, 2])
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame() }
        #expect(try decoder.nextFrame() == nil)
        decoder.finish()
        expectError(SDLProtocolError(.truncatedFrame, offset: 1, "stream ended with 14 bytes of an incomplete frame")) {
            try decoder.nextFrame()
        }
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == 0)
    }

    /// Version 1 has no message id, so all messages of a session's service share one reassembly
    /// key. After one of them fails, the next one must still get through.
    @Test func aFailedMessageDoesNotCostTheNextOneOnTheSameKey() throws {
        func frame(_ type: FrameType, info: UInt8 = 0, _ payload: [UInt8]) -> ProtocolFrame {
            MalformedInputTests.frame(type, info: info, payload: payload, version: .v1)
        }
        var reassembler = Reassembler()
        _ = try reassembler.process(frame(.first, [0, 0, 0, 4, 0, 0, 0, 4]), now: Self.t0)
        _ = try reassembler.process(frame(.consecutive, info: 1, [1]), now: Self.t0)
        #expect(throws: SDLProtocolError.self) { try reassembler.process(frame(.consecutive, info: 3, [3]), now: Self.t0) }
        #expect(reassembler.reservedBytes == 0)
        // The broken message's last frame never comes; the next message starts.
        #expect(try reassembler.process(frame(.first, [0, 0, 0, 2, 0, 0, 0, 1]), now: Self.t0) == nil)
        let message = try #require(try reassembler.process(frame(.consecutive, info: 0, [8, 9]), now: Self.t0))
        #expect(message.payload.bytes == [8, 9])
        #expect(message.messageID == nil)
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
        // A second First frame while a message is still healthy is still refused.
        _ = try reassembler.process(frame(.first, [0, 0, 0, 2, 0, 0, 0, 1]), now: Self.t0)
        let key = MessageKey(sessionID: SessionID(1), serviceType: .rpc, messageID: MessageID(0))
        expectError(SDLProtocolError(.duplicateFirstFrame, "second First frame for message 0 of session 1 service RPC"), key: key) {
            try reassembler.process(frame(.first, [0, 0, 0, 2, 0, 0, 0, 1]), now: Self.t0)
        }
    }

    /// The reassembler counts against its limit what a message may come to hold: its declared
    /// total rounded up to the allocator's power of two (totals one byte above a power of two
    /// cost twice their size), while the storage it holds is at most that: a message above 1 MiB
    /// starts with 1 MiB and grows as its frames come.
    @Test func reservedBytesBoundTheStorageHeld() throws {
        var limits = ProtocolLimits()
        limits.maxReassemblyBytes = 24 << 20
        limits.maxReassembliesPerSession = 64
        var reassembler = Reassembler(limits: limits)
        var started = 0
        var refused = 0
        for message in 1...20 {
            let first = MalformedInputTests.first(total: (2 << 20) + 1, count: 17, message: UInt32(message), service: .video)
            do {
                _ = try reassembler.process(first, now: Self.t0)
                started += 1
            } catch {
                #expect(error.code == .tooManyReassemblies)
                refused += 1
            }
            let held = reassembler.assemblies.values.reduce(0) { $0 + $1.buffer.capacity }
            #expect(reassembler.reservedBytes == started * (4 << 20))
            #expect(held == started * (1 << 20))
            #expect(held <= reassembler.reservedBytes && reassembler.reservedBytes <= limits.maxReassemblyBytes)
        }
        // Each 2 MiB + 1 message takes 4 MiB: six fit into 24 MiB, not eleven.
        #expect(started == 6 && refused == 14)
        #expect(reassembler.reservedBytes == 24 << 20)
        #expect(Reassembler.storageSize(forCapacity: 1) == 1)
        #expect(Reassembler.storageSize(forCapacity: 4096) == 4096)
        #expect(Reassembler.storageSize(forCapacity: 4097) == 8192)
    }

    /// Many sessions opening one small reassembly each: the per-transport count is the limit that
    /// holds, whatever the byte budget.
    @Test func perTransportReassemblyCountIsALimit() throws {
        var limits = ProtocolLimits()
        limits.maxReassembliesPerTransport = 20
        var reassembler = Reassembler(limits: limits)
        var codes: [SDLProtocolError.Code] = []
        for session in 0...255 {
            do {
                _ = try reassembler.process(MalformedInputTests.first(total: 10, count: 2, session: UInt8(session)), now: Self.t0)
            } catch {
                codes.append(error.code)
            }
        }
        #expect(reassembler.activeCount == 20)
        #expect(codes.count == 236 && codes.allSatisfy { $0 == .tooManyReassemblies })
        #expect(reassembler.reservedBytes == 20 * 16)
        // Completing one makes room for another.
        let done = try reassembler.process(MalformedInputTests.frame(.consecutive, session: 0, info: 1, payload: Array(0..<5)), now: Self.t0)
        #expect(done == nil)
        #expect(try reassembler.process(MalformedInputTests.frame(.consecutive, session: 0, info: 0, payload: Array(5..<10)), now: Self.t0)?.payload.bytes == Array(0..<10))
        #expect(try reassembler.process(MalformedInputTests.first(total: 10, count: 2, session: 255), now: Self.t0) == nil)
        #expect(reassembler.activeCount == 20)
    }

    /// The E bit of a received First frame means nothing (its payload is two sizes, never
    /// encrypted); the message's encryption is that of its Consecutive frames.
    @Test func encryptionBitOnAReceivedFirstFrameIsIgnored() throws {
        var reassembler = Reassembler()
        var first = MalformedInputTests.first(total: 4, count: 2)
        first.header.isEncrypted = true
        #expect(try reassembler.process(first, now: Self.t0) == nil)
        _ = try reassembler.process(MalformedInputTests.frame(.consecutive, info: 1, payload: [1, 2]), now: Self.t0)
        let plain = try #require(try reassembler.process(MalformedInputTests.frame(.consecutive, info: 0, payload: [3, 4]), now: Self.t0))
        #expect(!plain.isEncrypted)
        _ = try reassembler.process(first, now: Self.t0)
        _ = try reassembler.process(MalformedInputTests.frame(.consecutive, info: 1, payload: [1, 2], encrypted: true), now: Self.t0)
        let secret = try #require(try reassembler.process(MalformedInputTests.frame(.consecutive, info: 0, payload: [3, 4], encrypted: true), now: Self.t0))
        #expect(secret.isEncrypted)
    }

    /// The fragmenter never builds what the decoder refuses: no empty data message, and no
    /// "encrypted" version 1 message (its bit would read as "compressed").
    @Test func fragmenterRefusesWhatCouldNotBeReceived() throws {
        expectError(SDLProtocolError(.emptyFrame, "a data message needs at least 1 byte of payload")) {
            try MessageFragmenter(payload: ByteBuffer(), version: .v5, serviceType: .audio, sessionID: SessionID(1),
                                  maxPayloadPerFrame: 100)
        }
        // An empty control message (a heartbeat) is fine.
        let heartbeat = try MessageFragmenter(payload: ByteBuffer(), version: .v5, serviceType: .control, sessionID: SessionID(1),
                                              messageID: MessageID(1), control: .heartbeat, maxPayloadPerFrame: 100)
        #expect(Array(heartbeat).map(\.bytes) == [Self.heartbeat])
        expectError(SDLProtocolError(.fieldOutOfRange, "protocol version 1 has no encryption flag")) {
            try MessageFragmenter(payload: ByteBuffer(bytes: [1]), version: .v1, serviceType: .rpc, sessionID: SessionID(1),
                                  encrypted: true, maxPayloadPerFrame: 100)
        }
        // Encrypted v2+: the First frame is clear, the Consecutive frames carry the bit.
        let frames = Array(try MessageFragmenter(payload: ByteBuffer(bytes: Array(0..<10)), version: .v2, serviceType: .rpc,
                                                 sessionID: SessionID(1), encrypted: true, maxPayloadPerFrame: 4))
        #expect(frames.map(\.header.isEncrypted) == [false, true, true, true])
    }

    /// `frameSize` saturates instead of trapping where a hostile data size does not fit `Int`.
    @Test func frameSizeOfTheLargestDataSize() {
        let header = FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: .max)
        #if arch(x86_64) || arch(arm64)
        #expect(header.frameSize == 12 + Int(UInt32.max))
        #else
        #expect(header.frameSize == Int.max)
        #endif
    }
}
