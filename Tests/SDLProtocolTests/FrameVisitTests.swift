import NIOCore
import SDLTestSupport
import Testing

@testable import SDLProtocol

/// `FrameDecoder.forEachFrame(mtus:_:)`, the decoder without a slice per frame: it must decode
/// exactly what `nextFrame(mtus:)` decodes, lend payloads in place, and keep the decoder's memory
/// bound. (Every vector's stream is also visited in half of its chunkings, by
/// `decodeInEveryChunking`.)
@Suite struct FrameVisitTests {
    typealias Hostile = HostileStreamTests

    /// What one pull pattern produced, with the decoder's counters after the end of the stream.
    struct Outcome: Equatable {
        var frames: [ProtocolFrame]
        var errors: [String]
        var skipped: Int
        var offset: Int
        var lastFrameOffset: Int
    }

    static func outcome(_ buffers: [ByteBuffer], policy: FrameDecoder.InvalidHeaderPolicy, visiting: Bool,
                        check: (FrameDecoder) -> Void = { _ in }) -> Outcome {
        var decoder = FrameDecoder(invalidHeaderPolicy: policy)
        var result = DecodeResult()
        for buffer in buffers {
            decoder.append(buffer)
            if visiting { visit(&decoder, into: &result) } else { drain(&decoder, into: &result) }
            check(decoder)
        }
        decoder.finish()
        if visiting { visit(&decoder, into: &result) } else { drain(&decoder, into: &result) }
        return Outcome(frames: result.frames, errors: result.errorFields, skipped: decoder.skippedByteCount,
                       offset: decoder.streamOffset, lastFrameOffset: decoder.lastFrameOffset)
    }

    /// Good frames, garbage between frames (resynchronisation, held candidates), frames spanning
    /// reads and small copied reads: the visited frames, errors, skipped bytes and offsets equal
    /// those of `nextFrame`, under both policies, and the memory bound holds after every pull.
    @Test(arguments: [FrameDecoder.InvalidHeaderPolicy.resynchronize, .fail])
    func visitingDecodesWhatNextFrameDecodes(policy: FrameDecoder.InvalidHeaderPolicy) {
        var rng = SplitMix64(seed: 0xF15)
        let streams = [
            Hostile.goodStream(bytes: 300_000, rng: &rng),
            Hostile.mixedStream(bytes: 150_000, rng: &rng),
            Hostile.garbage(bytes: 20_000, rng: &rng) + Hostile.goodStream(bytes: 50_000, rng: &rng),
        ]
        for (index, stream) in streams.enumerated() {
            let buffers = Hostile.buffers(stream, .random, rng: &rng)
            let pulled = Self.outcome(buffers, policy: policy, visiting: false)
            var worst = 0
            let visited = Self.outcome(buffers, policy: policy, visiting: true) { decoder in
                worst = max(worst, decoder.bufferedStorageBytes - (4 * decoder.bufferedByteCount + 4096))
            }
            #expect(visited == pulled, "stream \(index), \(policy)")
            #expect(worst <= 0, "stream \(index): \(worst) bytes of storage above the bound")
            // (Random garbage may hold a candidate that swallows frames after it: stream 2 is
            // there for the equality alone.)
            if policy == .resynchronize && index < 2 {
                #expect(pulled.frames.count > 100, "stream \(index)")
            }
        }
        // The garbage-free stream has no errors, and its last frame ends the stream.
        let good = Self.outcome(Hostile.buffers(streams[0], .random, rng: &rng), policy: policy, visiting: true)
        #expect(good.errors == [])
        #expect(good.offset == streams[0].count)
        #expect(good.lastFrameOffset == streams[0].count - good.frames.last!.header.frameSize)
    }

    /// Frames lying whole in a retained read are lent in place (no copy, no slice); a frame
    /// spanning two reads is gathered and lent from the gathered bytes; the visit stops where
    /// bytes are missing and resumes with the next read.
    @Test func payloadsAreLentInPlace() throws {
        let first = FrameDecoderTests.singleFrame(Array(repeating: 1, count: 300), message: 1)
        let second = FrameDecoderTests.singleFrame(Array(repeating: 2, count: 300), message: 2)
        let third = FrameDecoderTests.singleFrame(Array(repeating: 3, count: 300), message: 3)
        let chunkA = ByteBuffer(bytes: first + second.prefix(100))
        let chunkB = ByteBuffer(bytes: second.dropFirst(100) + third)
        let base = { (buffer: ByteBuffer) in buffer.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) } }
        var decoder = FrameDecoder()
        var seen: [(UInt32, UInt8, Int, UnsafeRawPointer)] = []
        func record(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer) {
            seen.append((header.messageID!.rawValue, payload.first!, payload.count, payload.baseAddress!))
        }
        decoder.append(chunkA)
        #expect(try decoder.forEachFrame(record) == 1)
        #expect(decoder.bufferedByteCount == 100)
        #expect(decoder.lastFrameOffset == 0)
        decoder.append(chunkB)
        #expect(try decoder.forEachFrame(record) == 2)
        #expect(seen.map(\.0) == [1, 2, 3])
        #expect(seen.map(\.1) == [1, 2, 3])
        #expect(seen.map(\.2) == [300, 300, 300])
        #expect(seen[0].3 == base(chunkA) + 12)
        #expect(seen[1].3 != base(chunkA) + 312 + 12)
        #expect(seen[2].3 == base(chunkB) + 212 + 12)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.streamOffset == 936)
        #expect(decoder.lastFrameOffset == 624)
        #expect(try decoder.forEachFrame(record) == 0)
    }

    /// A bad header in the middle of whole frames: the frames before it are visited, the call
    /// throws the header's error at its offset, and the next call resumes after the garbage.
    @Test func aBadHeaderStopsTheVisitAfterTheFramesBeforeIt() throws {
        let good = (1...3).map { FrameDecoderTests.singleFrame(Array(repeating: UInt8($0), count: 250), message: UInt32($0)) }
        // Version 7 is above the default maximum (5): the byte is garbage.
        let garbage: [UInt8] = [0x71, 0x07, 0x00, 0x01, 0, 0, 0, 1, 0, 0, 0, 9]
        var decoder = FrameDecoder()
        decoder.append(contentsOf: good[0] + good[1] + garbage + good[2])
        var ids: [UInt32] = []
        var caught: SDLProtocolError?
        do {
            try decoder.forEachFrame { header, _ in ids.append(header.messageID!.rawValue) }
        } catch {
            caught = error
        }
        #expect(caught?.code == .unsupportedVersion)
        #expect(caught?.offset == 524)
        #expect(ids == [1, 2])
        #expect(decoder.lastFrameOffset == 262)
        #expect(try decoder.forEachFrame { header, _ in ids.append(header.messageID!.rawValue) } == 1)
        #expect(ids == [1, 2, 3])
        #expect(decoder.skippedByteCount == 12)
        #expect(decoder.lastFrameOffset == 536)
    }

    /// Small reads (1,448 bytes, a TCP segment): each frame cut by the end of a read is read from
    /// the two reads it lies in, with its 200 payload bytes copied once, and the partial frame a
    /// read ends with is judged by the walk over that read: the slow-path work counted (bytes
    /// copied, headers inspected, segments searched) is those payload bytes and a constant, at
    /// 1,000 and at 2,000 frames alike.
    @Test func smallReadsCostTheSamePerFrame() throws {
        func visit(frames: Int) throws -> (visited: Int, work: Int, spanning: Int, reads: Int) {
            var stream: [UInt8] = []
            for index in 0..<frames {
                stream += FrameDecoderTests.singleFrame(Array(repeating: UInt8(truncatingIfNeeded: index), count: 200), message: UInt32(index + 1))
            }
            var decoder = FrameDecoder()
            var visited = 0
            var spanning = 0
            var start = 0
            var reads = 0
            while start < stream.count {
                reads += 1
                let end = min(start + 1448, stream.count)
                let read = ByteBuffer(bytes: stream[start..<end])
                let range = read.withUnsafeReadableBytes { $0.baseAddress! ..< $0.baseAddress! + $0.count }
                decoder.append(read)
                visited += try decoder.forEachFrame { header, payload in
                    precondition(payload.count == 200 && payload.allSatisfy { $0 == UInt8(truncatingIfNeeded: header.messageID!.rawValue - 1) })
                    if !range.contains(payload.baseAddress!) { spanning += 1 }
                }
                start = end
            }
            #expect(decoder.bufferedByteCount == 0)
            return (visited, decoder.workCount, spanning, reads)
        }
        let small = try visit(frames: 1000)
        let large = try visit(frames: 2000)
        #expect(small.visited == 1000)
        #expect(large.visited == 2000)
        // 212-byte frames against 1,448-byte reads: a read boundary falls inside a frame 144 and
        // 287 times (every 76,744 bytes the two line up).
        #expect(small.spanning == 144)
        #expect(large.spanning == 287)
        for run in [small, large] {
            #expect(run.work >= run.spanning * 200)
            #expect(run.work <= run.spanning * 200 + 16, "work \(run.work) for \(run.spanning) spanning frames in \(run.reads) reads")
        }
    }

    /// A frame cut by the end of a read at every offset of its header and payload, then (cut
    /// twice) over three reads: the two-read fast path and the general path decode what
    /// `nextFrame` decodes, for good frames of both header sizes and every frame type, a frame
    /// ending exactly at the end of the next read, bad headers, and an oversized data size;
    /// every read is retained (256 bytes or more), as TCP reads are.
    @Test(arguments: [FrameDecoder.InvalidHeaderPolicy.resynchronize, .fail])
    func framesCutAtEveryOffset(policy: FrameDecoder.InvalidHeaderPolicy) {
        let lead = Hostile.frame(message: 1, payload: 300)
        let trail = Hostile.frame(message: 3, payload: 280)
        var tooLarge = Hostile.frame(message: 2, payload: 40)
        tooLarge.replaceSubrange(4..<8, with: [0x00, 0x02, 0x00, 0x0D])
        let middles: [(String, [UInt8])] = [
            ("v5 Single", Hostile.frame(message: 2, payload: 90)),
            ("v1 Single", Hostile.frame(message: 2, payload: 90, version: .v1)),
            ("v2 Single", Hostile.frame(message: 2, payload: 1, version: .v2)),
            ("First", Hostile.frame(.first, message: 2, payload: 8)),
            ("Consecutive", Hostile.frame(.consecutive, message: 2, info: 3, payload: 50)),
            ("control", Hostile.frame(.control, service: .control, message: 2, info: 0x01, payload: 20)),
            ("bad service", Hostile.frame(service: ServiceType(rawValue: 0x08), message: 2, payload: 30)),
            ("reserved frame type", Hostile.frame(FrameType(rawValue: 5), message: 2, payload: 30)),
            ("empty Single", Hostile.frame(message: 2, payload: 0)),
            ("too large", tooLarge),
        ]
        var compared = 0
        for (name, middle) in middles {
            let stream = lead + middle + trail
            let start = lead.count
            let end = start + middle.count
            for cut in start..<end {
                let reads = [stream[..<cut], stream[cut...]].map { ByteBuffer(bytes: $0) }
                let pulled = Self.outcome(reads, policy: policy, visiting: false)
                #expect(Self.outcome(reads, policy: policy, visiting: true) == pulled, "\(name) cut at \(cut)")
                compared += 1
                // Ending with the next read: the trailing frame in a read of its own.
                let exact = [stream[..<cut], stream[cut..<end], stream[end...]].map { ByteBuffer(bytes: $0) }
                #expect(Self.outcome(exact, policy: policy, visiting: true) == Self.outcome(exact, policy: policy, visiting: false),
                        "\(name) cut at \(cut), next read ending with it")
                // Three reads, the second ending inside the cut frame: that read, of fewer than 256
                // bytes, is copied into the decoder's own buffer, not retained.
                for second in stride(from: cut + 1, to: end, by: 7) {
                    let three = [stream[..<cut], stream[cut..<second], stream[second...]].map { ByteBuffer(bytes: $0) }
                    #expect(Self.outcome(three, policy: policy, visiting: true) == Self.outcome(three, policy: policy, visiting: false),
                            "\(name) cut at \(cut) and \(second)")
                }
            }
        }
        #expect(compared == 475)
    }
}
