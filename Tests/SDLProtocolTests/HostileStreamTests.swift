import NIOCore
import SDLTestSupport
import Testing

@testable import SDLProtocol

/// The four classes of hostile input of issue 9, each with a test that would have caught it:
/// decoding work that grows faster than the bytes appended, memory that follows the number of
/// reads instead of the bytes, limits a negotiated value can lift, and resynchronisation that
/// swallows good frames.
@Suite struct HostileStreamTests {
    // MARK: Streams, chunkings and pull patterns

    /// A good v5 frame (control frames have no payload; First frames the 8 bytes they must have).
    static func frame(
        _ type: FrameType = .single, service: ServiceType = .rpc, session: UInt8 = 1, message: UInt32 = 1,
        info: UInt8 = 0, payload: Int, version: ProtocolVersion = .v5
    ) -> [UInt8] {
        let bytes = (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
        return ProtocolFrame(
            header: FrameHeader(version: version, frameType: type, serviceType: service, frameInfo: info,
                                sessionID: SessionID(session), dataSize: UInt32(payload), messageID: MessageID(message)),
            payload: ByteBuffer(bytes: bytes)
        ).bytes
    }

    /// About `size` bytes of good frames: mostly small, now and then one of 128 KiB.
    static func goodStream(bytes size: Int, rng: inout SplitMix64) -> [UInt8] {
        var stream: [UInt8] = []
        var message: UInt32 = 1
        while stream.count < size {
            let payload = Int.random(in: 0..<40, using: &rng) == 0 ? 131_072 : Int.random(in: 1...600, using: &rng)
            stream += Self.frame(message: message, payload: payload)
            message += 1
        }
        return stream
    }

    /// `size` pseudo-random bytes.
    static func garbage(bytes size: Int, rng: inout SplitMix64) -> [UInt8] {
        (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Good frames with runs of random garbage between them.
    static func mixedStream(bytes size: Int, rng: inout SplitMix64) -> [UInt8] {
        var stream: [UInt8] = []
        var message: UInt32 = 1
        while stream.count < size {
            stream += Self.garbage(bytes: Int.random(in: 0...30, using: &rng), rng: &rng)
            stream += Self.frame(message: message, payload: Int.random(in: 1...400, using: &rng))
            message += 1
        }
        return stream
    }

    /// How received bytes are cut into buffers.
    enum Chunking: CaseIterable {
        /// One byte per buffer, each buffer with 2 KiB of storage (a read into a 2 KiB buffer).
        case oneBytePer2KiB
        /// 1 to 3,000 bytes per buffer, with storage 1 to 8 times the bytes.
        case random
    }

    /// When the caller pulls frames.
    enum Pulls: CaseIterable {
        case afterEveryAppend, onlyAtTheEnd, now_and_then
    }

    static func buffers(_ stream: [UInt8], _ chunking: Chunking, rng: inout SplitMix64) -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        var offset = 0
        while offset < stream.count {
            let length: Int
            let capacity: Int
            switch chunking {
            case .oneBytePer2KiB:
                length = 1
                capacity = 2048
            case .random:
                length = min(stream.count - offset, Int.random(in: 1...3000, using: &rng))
                capacity = length * Int.random(in: 1...8, using: &rng)
            }
            var buffer = ByteBufferAllocator().buffer(capacity: capacity)
            buffer.writeBytes(stream[offset..<(offset + length)])
            buffers.append(buffer)
            offset += length
        }
        return buffers
    }

    struct Run {
        var frames: [ProtocolFrame] = []
        var errors: [SDLProtocolError] = []
        var decoder = FrameDecoder()
    }

    /// Feeds `buffers` in order, pulling as `pulls` says, then finishes the stream; `check` runs
    /// after every append and whenever `nextFrame()` returns nil.
    static func feed(_ buffers: [ByteBuffer], pulls: Pulls, rng: inout SplitMix64,
                     check: (FrameDecoder) -> Void = { _ in }) -> Run {
        var run = Run()
        func pull() {
            while true {
                do {
                    guard let frame = try run.decoder.nextFrame() else {
                        check(run.decoder)
                        return
                    }
                    run.frames.append(frame)
                } catch {
                    run.errors.append(error)
                }
            }
        }
        for buffer in buffers {
            run.decoder.append(buffer)
            check(run.decoder)
            switch pulls {
            case .afterEveryAppend: pull()
            case .onlyAtTheEnd: break
            case .now_and_then: if Int.random(in: 0..<50, using: &rng) == 0 { pull() }
            }
        }
        run.decoder.finish()
        pull()
        return run
    }

    // MARK: Class 1: work linear in the bytes appended

    /// Every stream, chunking and pull pattern at two sizes: the decoder's slow-path work (bytes
    /// copied or scanned, segments visited, candidates weighed) doubles when the stream doubles.
    /// Before, 80 KB of garbage appended one byte per buffer cost work quadratic in the buffers.
    @Test(arguments: Pulls.allCases)
    func decodingIsLinearInTheBytesAppended(pulls: Pulls) async {
        await onCPUThreads {
            let kinds: [(String, (Int, inout SplitMix64) -> [UInt8])] = [
                ("garbage", { Self.garbage(bytes: $0, rng: &$1) }),
                ("frames", { Self.goodStream(bytes: $0, rng: &$1) }),
                ("mixed", { Self.mixedStream(bytes: $0, rng: &$1) }),
            ]
            for (name, make) in kinds {
                for chunking in Chunking.allCases {
                    var work: [Int] = []
                    var sizes: [Int] = []
                    for copies in [2, 4] {
                        var rng = SplitMix64(seed: 0xC0FFEE)
                        // The 2n stream is the n stream twice over, so both have the same make-up.
                        let unit = make(20_000, &rng)
                        let stream = Array([[UInt8]](repeating: unit, count: copies).joined())
                        let buffers = Self.buffers(stream, chunking, rng: &rng)
                        let run = Self.feed(buffers, pulls: pulls, rng: &rng)
                        #expect(run.decoder.bufferedByteCount == 0)
                        #expect(run.decoder.streamOffset == stream.count)
                        work.append(run.decoder.workCount)
                        sizes.append(stream.count)
                    }
                    let label = "\(name), \(chunking), \(pulls): work \(work) for \(sizes) bytes"
                    #expect(Double(work[1]) <= 2.3 * Double(work[0]) + 64, "\(label)")
                    #expect(work[1] <= 8 * sizes[1], "\(label)")
                }
            }
        }
    }

    /// A candidate after garbage that waits on a rival with a long frame (garbage joined with a
    /// good frame's first bytes), fed one byte per append and pulled after each: it is weighed
    /// again only when enough bytes have arrived to change the answer, so the work per byte stays
    /// small, not a dozen header inspections per byte.
    @Test(arguments: [30_000, 60_000])
    func waitingOnALongRivalIsCheap(payload: Int) throws {
        let good = Self.frame(payload: payload)
        let stream = [0xFF, 0x51, 0x07] + good + Self.frame(message: 2, payload: 1)
        var rng = SplitMix64(seed: 1)
        let run = Self.feed(Self.buffers(stream, .oneBytePer2KiB, rng: &rng), pulls: .afterEveryAppend, rng: &rng)
        #expect(run.frames.map(\.bytes) == [good, Self.frame(message: 2, payload: 1)])
        #expect(run.errors.count == 1)
        #expect(run.decoder.workCount <= 3 * stream.count, "work \(run.decoder.workCount) for \(stream.count) bytes")
    }

    // MARK: Class 2: memory that follows the bytes held

    /// One 128 KiB frame arriving one byte per read, each read in a buffer with 2 KiB of storage
    /// (before: over 250 MB held), and a stream of frames and garbage in reads of 1–3,000 bytes:
    /// after every append and whenever `nextFrame()` returns nil, the storage held is at most
    /// 4 × the bytes held + 4 KiB, and the running count equals a recount.
    @Test(arguments: Pulls.allCases)
    func memoryHeldFollowsTheBytesHeld(pulls: Pulls) {
        var rng = SplitMix64(seed: 0x3E3)
        let bigFrame = Self.frame(payload: 131_072)
        let streams = [
            (bigFrame, Chunking.oneBytePer2KiB),
            (Self.mixedStream(bytes: 200_000, rng: &rng) + bigFrame, Chunking.random),
            (Self.goodStream(bytes: 400_000, rng: &rng), Chunking.random),
        ]
        for (stream, chunking) in streams {
            var peakRatio = 0.0
            var checks = 0
            var failed = false
            let buffers = Self.buffers(stream, chunking, rng: &rng)
            let run = Self.feed(buffers, pulls: pulls, rng: &rng) { decoder in
                checks += 1
                let held = decoder.bufferedStorageBytes
                let bound = 4 * decoder.bufferedByteCount + 4096
                // Only the first violation is reported (and the recount, linear in the buffers
                // held, is skipped after it), so a broken decoder fails fast.
                if !failed && (held > bound || held != decoder.recountedStorageBytes) {
                    failed = true
                    let problem = "\(chunking) \(pulls): \(held) bytes of storage for \(decoder.bufferedByteCount) bytes, "
                        + "recount \(decoder.recountedStorageBytes)"
                    Issue.record(Comment(rawValue: problem))
                }
                if decoder.bufferedByteCount > 10_000 {
                    peakRatio = max(peakRatio, Double(held) / Double(decoder.bufferedByteCount))
                }
            }
            #expect(checks >= buffers.count)
            #expect(run.frames.last?.bytes == bigFrame || chunking == .random)
            #expect(run.decoder.bufferedStorageBytes == 0)
            #expect(peakRatio <= 4, "\(chunking) \(pulls)")
        }
    }

    /// Large reads whose storage fits their bytes are kept as they are: frames inside them are
    /// slices, and the storage counted is theirs.
    @Test func largeReadsAreKeptAndCounted() throws {
        let frames = (1...20).map { Self.frame(message: UInt32($0), payload: 500) }
        let read = ByteBuffer(bytes: frames.joined())
        var decoder = FrameDecoder()
        decoder.append(read)
        #expect(decoder.bufferedStorageBytes == read.storageCapacity)
        let first = try #require(try decoder.nextFrame())
        let readStart = read.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) }
        #expect(first.payload.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) } == readStart + 12)
        #expect(decoder.workCount == 0)
    }

    // MARK: Class 3: ceilings no peer can raise

    /// A negotiated MTU of 2 GiB lifts no receive limit above `maxFramePayloadSize`, for any
    /// frame type; `maxMessageSize` bounds Single and control frames as it bounds First frames.
    @Test func negotiatedMTUsNeverLiftTheCeilings() throws {
        var mtus = MTUTable()
        for service in ServiceType.known {
            mtus[SessionID(1), service, .receive] = .max
            mtus[SessionID(1), service, .send] = .max
        }
        #expect(mtus[SessionID(1), .video, .receive] == Int(Int32.max))
        let limits = ProtocolLimits()
        #expect(limits.receivePayloadCeiling == 1 << 20)
        #expect(mtus.receivePayloadLimit(version: .v5, session: SessionID(1), service: .video, limits: limits) == 1 << 20)
        #expect(mtus.sendPayloadLimit(version: .v5, session: SessionID(1), service: .video, limits: limits) == 1 << 20)
        func header(_ type: FrameType, _ size: UInt32, service: ServiceType = .video) -> FrameHeader {
            FrameHeader(version: .v5, frameType: type, serviceType: service, sessionID: SessionID(1), dataSize: size)
        }
        for type in [FrameType.single, .consecutive] {
            #expect(header(type, 1 << 20).isValid(against: limits, mtus: mtus))
            expectError(SDLProtocolError(
                .frameTooLarge, offset: 7, "data size 1048577 exceeds the receive limit 1048576 for v5 VIDEO session 1")) {
                try header(type, (1 << 20) + 1).validate(against: limits, mtus: mtus, offset: 7)
            }
        }
        #expect(!header(.control, (1 << 20) + 1, service: .control).isValid(against: limits, mtus: mtus))
        // The decoder refuses the header before buffering its payload.
        var decoder = FrameDecoder()
        decoder.append(contentsOf: header(.single, (1 << 20) + 1).bytes)
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame(mtus: mtus) }

        // A message limit below the MTU bounds every frame: a Single frame is a whole message.
        var small = ProtocolLimits()
        small.maxMessageSize = 1000
        #expect(small.receivePayloadCeiling == 1000)
        for type in [FrameType.single, .consecutive] {
            #expect(header(type, 1000).isValid(against: small, mtus: mtus))
            #expect(!header(type, 1001).isValid(against: small, mtus: mtus))
        }
        #expect(!header(.control, 1001, service: .control).isValid(against: small, mtus: mtus))
        #expect(!header(.single, 1001).isValid(against: small))
        #expect(small.sendPayloadLimit(version: .v5) == 1000)
        var reassembler = Reassembler(limits: small)
        let first = MalformedInputTests.first(total: 1001, count: 2, service: .video)
        expectError(SDLProtocolError(.messageTooLarge, "First frame declares 1001 bytes, above the limit of 1000"),
                    key: MessageKey(of: first.header)) {
            try reassembler.process(first, now: .uptimeNanoseconds(0), mtus: mtus)
        }
        // The absolute ceiling holds whatever the configuration says.
        var unbounded = ProtocolLimits()
        unbounded.maxFramePayloadSize = .max
        unbounded.maxMessageSize = .max
        #expect(unbounded.receivePayloadCeiling == ProtocolLimits.absoluteMaxDataSize)
    }

    /// A First frame's frame count is checked against the MTU lent for its session and service.
    @Test func reassemblerUsesTheLentMTUs() throws {
        var mtus = MTUTable()
        mtus[SessionID(1), .video, .receive] = 500_000
        var reassembler = Reassembler()
        // 900,000 bytes in 2 frames needs 450,000 bytes per frame: only with the negotiated MTU.
        let first = MalformedInputTests.first(total: 900_000, count: 2, service: .video)
        #expect(throws: SDLProtocolError.self) { try reassembler.process(first, now: .uptimeNanoseconds(0)) }
        #expect(try reassembler.process(first, now: .uptimeNanoseconds(0), mtus: mtus) == nil)
        #expect(reassembler.activeCount == 1)
    }

    // MARK: Class 4: resynchronisation that swallows nothing

    /// The issue's example: a garbage run whose last two bytes and the next frame's first ten
    /// form a header that passes validation and declares 65,536 bytes, then 10,000 good frames.
    /// With 13-byte frames the bogus frame even ends exactly on a frame boundary (65,546 =
    /// 13 × 5,042), so the bytes after it confirm it; the good frame it overlaps is confirmed too,
    /// and the later candidate wins. Every good frame arrives, in every chunking.
    @Test(arguments: [1, 37])
    func garbageJoinedWithAFrameHeaderSwallowsNothing(payload: Int) async throws {
        try await onCPUThreads {
            let good = (1...10_000).map { Self.frame(message: UInt32($0), payload: payload) }
            let stream = [0xFF, 0x51, 0x07] + good.joined()
            let bogus = try #require(FrameHeader(bytes: stream[1...]))
            #expect(bogus.isValid(against: ProtocolLimits()))
            #expect(bogus.dataSize == 65_536)
            var rng = SplitMix64(seed: UInt64(payload))
            for chunking in ["whole", "byte by byte", "random"] {
                var chunks: [[UInt8]] = []
                switch chunking {
                case "whole": chunks = [stream]
                case "byte by byte": chunks = stream.map { [$0] }
                default:
                    var offset = 0
                    while offset < stream.count {
                        let length = min(stream.count - offset, Int.random(in: 1...5000, using: &rng))
                        chunks.append(Array(stream[offset..<(offset + length)]))
                        offset += length
                    }
                }
                let result = decode(chunks)
                #expect(result.frames.count == good.count, "\(chunking)")
                #expect(result.frames.map(\.bytes) == good, "\(chunking)")
                #expect(result.errors.map(\.code) == [.unsupportedVersion], "\(chunking)")
                #expect(result.errors.first?.offset == 0)
            }
        }
    }

    /// A frame right after garbage whose header overlaps another candidate is held until the
    /// bytes after it decide (here: the end of the stream), then delivered; a lone frame after
    /// garbage with no overlapping candidate is delivered at once.
    @Test func aHeldFrameIsDeliveredOnceDecided() throws {
        let good = Self.frame(payload: 1)
        var decoder = FrameDecoder()
        decoder.append(contentsOf: [0xFF, 0x51, 0x07] + good)
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame() }
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == 15)
        decoder.finish()
        #expect(try decoder.nextFrame()?.bytes == good)
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.skippedByteCount == 3)

        decoder = FrameDecoder()
        decoder.append(contentsOf: [0xFF, 0xFF] + good)
        #expect(throws: SDLProtocolError.self) { try decoder.nextFrame() }
        #expect(try decoder.nextFrame()?.bytes == good)
    }

    /// A draw of the randomised test: good frames with garbage runs between them.
    struct Draw {
        var stream: [UInt8] = []
        var frames: [[UInt8]] = []
        var frameStarts: [Int] = []
        var runs: [Range<Int>] = []
    }

    /// Random good frames (versions 1–5, every service and frame type, sessions mostly 0–2 so
    /// that garbage joins their headers into candidates, sometimes any) with garbage runs between
    /// them. A run starts with a byte no header starts with (so the decoder sees garbage there)
    /// and often ends with two or three bytes that join the next frame's header into a candidate.
    static func draw(_ rng: inout SplitMix64) -> Draw {
        var draw = Draw()
        for index in 0..<Int.random(in: 2...8, using: &rng) {
            if Int.random(in: 0..<3, using: &rng) != 0 {
                var run = [UInt8.random(in: 0...15, using: &rng) | (Bool.random(using: &rng) ? 0x00 : 0xF0)]
                run += Self.garbage(bytes: Int.random(in: 0...20, using: &rng), rng: &rng)
                if Bool.random(using: &rng) {
                    // Mostly a v3–v5 Single or Consecutive frame type: what joins a header into a
                    // candidate whose data size comes from the frame's session and size bytes.
                    let type = Int.random(in: 0..<4, using: &rng) == 0 ? UInt8.random(in: 0...3, using: &rng) : [1, 3].randomElement(using: &rng)!
                    let joiner = UInt8.random(in: 3...5, using: &rng) << 4 | type
                    run += [joiner, ServiceType.known.randomElement(using: &rng)!.rawValue]
                    if Bool.random(using: &rng) { run.append(0) }
                }
                draw.runs.append(draw.stream.count..<(draw.stream.count + run.count))
                draw.stream += run
            }
            let version = ProtocolVersion(rawValue: UInt8.random(in: 1...5, using: &rng))
            let type = FrameType(rawValue: UInt8.random(in: 0...3, using: &rng))
            let service = type == .control ? ServiceType.known.randomElement(using: &rng)! : [.rpc, .audio, .video, .hybrid].randomElement(using: &rng)!
            let session = Bool.random(using: &rng) ? UInt8.random(in: 1...2, using: &rng) : UInt8.random(in: 0...255, using: &rng)
            let info: UInt8 = switch type {
            case .control: [0, 1, 2, 3, 4, 5, 0xFF].randomElement(using: &rng)!
            case .consecutive: UInt8.random(in: 0...255, using: &rng)
            default: 0
            }
            let payload = switch type {
            case .first: 8
            case .control: Int.random(in: 0...40, using: &rng)
            default: Int.random(in: 1...300, using: &rng)
            }
            let frame = Self.frame(type, service: service, session: session, message: UInt32(index + 1), info: info,
                                   payload: payload, version: version)
            draw.frameStarts.append(draw.stream.count)
            draw.frames.append(frame)
            draw.stream += frame
        }
        if Bool.random(using: &rng) {
            let run = [UInt8(0xF0)] + Self.garbage(bytes: Int.random(in: 0...20, using: &rng), rng: &rng)
            draw.runs.append(draw.stream.count..<(draw.stream.count + run.count))
            draw.stream += run
        }
        return draw
    }

    /// Whether the README's guarantee covers every frame of the draw: no header made only of
    /// garbage bytes passes validation, no frame hides another valid header in its header bytes,
    /// and no frame followed by garbage has a candidate overlapping its header from the garbage
    /// side whose frame is followed by a header that passes validation (or by the end).
    static func isCovered(_ draw: Draw, limits: ProtocolLimits = ProtocolLimits()) -> (covered: Bool, overlaps: Int) {
        let stream = draw.stream
        func header(at start: Int) -> FrameHeader? {
            guard start < stream.count, let header = FrameHeader(bytes: stream[start..<min(start + 12, stream.count)]),
                header.isValid(against: limits)
            else { return nil }
            return header
        }
        func confirmed(_ end: Int) -> Bool {
            if end > stream.count { return false }
            if end + FrameHeader.v2Size > stream.count { return true }
            return header(at: end) != nil
        }
        for run in draw.runs {
            for start in run {
                if let hidden = header(at: start), start + hidden.size <= run.upperBound { return (false, 0) }
            }
        }
        var overlaps = 0
        for (start, frame) in zip(draw.frameStarts, draw.frames) {
            let size = FrameHeader(bytes: frame)!.size
            for inner in (start + 1)..<(start + size) {
                if let rival = header(at: inner), inner + rival.size <= stream.count { return (false, 0) }
            }
            guard let before = draw.runs.first(where: { $0.upperBound == start }) else { continue }
            let end = start + frame.count
            let followedByGarbage = draw.runs.contains { $0.lowerBound == end }
            for candidate in max(before.lowerBound, start - 11)..<start {
                guard let bogus = header(at: candidate), candidate + bogus.size > start else { continue }
                overlaps += 1
                if followedByGarbage && confirmed(candidate + bogus.frameSize) { return (false, overlaps) }
            }
        }
        return (true, overlaps)
    }

    /// Seeded random draws in random chunkings: in every draw the guarantee covers, every good
    /// frame arrives, each garbage run is reported once at its first byte, and every garbage
    /// byte is counted as skipped.
    @Test func randomGarbageRunsLoseNoCoveredFrame() async throws {
        try await onCPUThreads {
            var rng = SplitMix64(seed: 0x5EED_F00D)
            var covered = 0
            var uncovered = 0
            var overlapsTested = 0
            for case_ in 0..<3000 {
                let draw = Self.draw(&rng)
                let (isCovered, overlaps) = Self.isCovered(draw)
                guard isCovered else {
                    uncovered += 1
                    continue
                }
                covered += 1
                overlapsTested += overlaps
                var chunks: [[UInt8]] = []
                var offset = 0
                let small = Bool.random(using: &rng)
                while offset < draw.stream.count {
                    let length = min(draw.stream.count - offset, Int.random(in: 1...(small ? 4 : 400), using: &rng))
                    chunks.append(Array(draw.stream[offset..<(offset + length)]))
                    offset += length
                }
                let result = decode(chunks)
                let lost = draw.frames.count - result.frames.count
                #expect(result.frames.map(\.bytes) == draw.frames, "case \(case_), \(lost) lost: \(draw.stream.hex)")
                #expect(result.errors.compactMap(\.offset) == draw.runs.map(\.lowerBound), "case \(case_): \(draw.stream.hex)")
                if result.frames.map(\.bytes) != draw.frames { return }
            }
            // The draws exercise the overlap rule often, and the guarantee covers nearly all of them.
            #expect(overlapsTested > 500, "\(overlapsTested) overlapping candidates")
            #expect(covered > 2700, "\(covered) covered, \(uncovered) not")
        }
    }

    // MARK: Reassembly: version mismatch

    /// A Consecutive frame whose protocol version differs from its First frame's is an error;
    /// the message is dropped and its remaining frames absorbed.
    @Test func consecutiveFrameWithAnotherVersionIsAnError() throws {
        var reassembler = Reassembler()
        let t0 = NIODeadline.uptimeNanoseconds(0)
        _ = try reassembler.process(MalformedInputTests.first(total: 4, count: 2), now: t0)
        let key = MessageKey(sessionID: SessionID(1), serviceType: .rpc, messageID: MessageID(1))
        expectError(SDLProtocolError(
            .versionMismatch,
            "Consecutive frame 1 of 2 for message 1 of session 1 has protocol version v4, its First frame v5"), key: key) {
            try reassembler.process(MalformedInputTests.frame(.consecutive, info: 1, payload: [1, 2], version: .v4), now: t0)
        }
        #expect(reassembler.reservedBytes == 0)
        #expect(try reassembler.process(MalformedInputTests.frame(.consecutive, info: 0, payload: [3, 4]), now: t0) == nil)
        #expect(reassembler.activeCount == 0)
    }
}
