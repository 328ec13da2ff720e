import NIOCore
import SDLProtocol
import Testing

/// Every kind of bad input gets a typed error, and the decoder and reassembler keep working.
@Suite struct MalformedInputTests {
    static let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    static func frame(_ type: FrameType, service: ServiceType = .rpc, session: UInt8 = 1, message: UInt32 = 1,
                      info: UInt8 = 0, payload: [UInt8], version: ProtocolVersion = .v5, encrypted: Bool = false) -> ProtocolFrame {
        ProtocolFrame(
            header: FrameHeader(version: version, encrypted: encrypted, frameType: type, serviceType: service, frameInfo: info,
                                sessionID: SessionID(session), dataSize: UInt32(payload.count), messageID: MessageID(message)),
            payload: ByteBuffer(bytes: payload))
    }

    static func first(total: UInt32, count: UInt32, session: UInt8 = 1, message: UInt32 = 1, service: ServiceType = .rpc) -> ProtocolFrame {
        var payload = ByteBuffer()
        payload.writeMultipleIntegers(total, count, endianness: .big)
        return frame(.first, service: service, session: session, message: message, payload: payload.bytes)
    }

    static let heartbeat = frame(.control, service: .control, payload: []).bytes

    /// A bad header byte followed by a good frame: one error, then the frame.
    static func expectOneErrorThenHeartbeat(_ bad: [UInt8], _ code: SDLProtocolError.Code,
                                            sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, chunks) in chunkings(of: bad + heartbeat) {
            let result = decode(chunks)
            #expect(result.errors.map(\.code) == [code], "\(bad.hex) \(name)", sourceLocation: sourceLocation)
            #expect(result.errors.first?.offset == 0, sourceLocation: sourceLocation)
            #expect(result.frames.map(\.bytes) == [heartbeat], "\(bad.hex) \(name)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [0, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])
    func unsupportedVersions(version: UInt8) {
        Self.expectOneErrorThenHeartbeat([version << 4 | 1, 0x07, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 1, 2, 3, 4], .unsupportedVersion)
    }

    @Test(arguments: [4, 5, 6, 7] as [UInt8])
    func reservedFrameTypes(frameType: UInt8) {
        Self.expectOneErrorThenHeartbeat([0x50 | frameType, 0x07, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 1, 2, 3, 4], .reservedFrameType)
    }

    @Test func unknownServiceTypes() {
        // The bytes after the service byte are chosen so that no window into them is a header a
        // resynchronising decoder would accept (which could then swallow the heartbeat).
        for service in 0...255 where !ServiceType(rawValue: UInt8(service)).isKnown {
            Self.expectOneErrorThenHeartbeat([0x51, UInt8(service), 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], .unknownServiceType)
        }
    }

    @Test func unknownControlFrameInfo() {
        for info in 0x0A...0xFC {
            Self.expectOneErrorThenHeartbeat([0x50, 0x00, UInt8(info), 1, 0, 0, 0, 0, 0, 0, 0, 1], .unknownControlFrameInfo)
        }
    }

    @Test func dataSizeOf2To31AndAboveIsAlwaysRefused() throws {
        var limits = ProtocolLimits()
        limits.maxFramePayloadSize = .max
        limits.maxMessageSize = .max
        var mtus = MTUTable()
        mtus[SessionID(1), .video, .receive] = .max
        #expect(mtus.receivePayloadLimit(version: .v5, session: SessionID(1), service: .video, limits: limits) == UInt32(Int32.max))
        for size: UInt32 in [0x8000_0000, 0x8000_0001, 0xFFFF_FFFF] {
            let header = FrameHeader(version: .v5, frameType: .single, serviceType: .video, sessionID: SessionID(1), dataSize: size)
            #expect(throws: SDLProtocolError.self) { try header.validate(against: limits, mtus: mtus) }
            let result = decode([header.bytes + Self.heartbeat], limits: limits, mtus: mtus)
            #expect(result.errors.map(\.code) == [.frameTooLarge])
            #expect(result.frames.map(\.bytes) == [Self.heartbeat])
        }
        // Below the default limit is fine, one above is not.
        let ok = FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 131_084)
        #expect(ok.isValid(against: ProtocolLimits()))
        var tooBig = ok
        tooBig.dataSize = 131_085
        #expect(!tooBig.isValid(against: ProtocolLimits()))
    }

    @Test func firstFrameDataSizeMustBeEight() {
        for size: UInt8 in [0, 1, 7, 9, 12] {
            Self.expectOneErrorThenHeartbeat(
                [0x52, 0x07, 0, 1, 0, 0, 0, size, 0, 0, 0, 1] + [UInt8](repeating: 0, count: Int(size)), .invalidFirstFrameDataSize)
        }
    }

    @Test func emptySingleAndConsecutiveFramesAreRefused() {
        Self.expectOneErrorThenHeartbeat([0x51, 0x07, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1], .emptyFrame)
        Self.expectOneErrorThenHeartbeat([0x53, 0x07, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1], .emptyFrame)
    }

    @Test func garbageBetweenValidFramesIsSkippedAndReportedOncePerRun() {
        let good = [
            Self.frame(.single, payload: [1, 2, 3]).bytes,
            Self.frame(.single, service: .video, session: 9, message: 2, payload: Array(repeating: 7, count: 300)).bytes,
            Self.frame(.control, service: .rpc, payload: [], version: .v1).bytes,
            Self.heartbeat,
        ]
        var rng = SplitMix64(seed: 42)
        for _ in 0..<50 {
            // Garbage of bytes that can never start a header (version nibble 0 or above 5).
            func garbage() -> [UInt8] {
                (0..<Int.random(in: 1...40, using: &rng)).map { _ in
                    UInt8.random(in: 0...255, using: &rng) & 0x0F | (Bool.random(using: &rng) ? 0x00 : 0xF0)
                }
            }
            let stream = garbage() + good[0] + garbage() + good[1] + garbage() + good[2] + good[3] + garbage()
            for chunks in [[stream], stream.map { [$0] }] {
                var decoder = FrameDecoder()
                var result = DecodeResult()
                for chunk in chunks {
                    decoder.append(contentsOf: chunk)
                    drain(&decoder, into: &result)
                }
                #expect(result.frames.map(\.bytes) == good)
                #expect(result.errors.count == 4)
                #expect(result.errors.allSatisfy { $0.code == .unsupportedVersion })
                // The garbage after the last frame was reported; the end of the stream adds nothing.
                decoder.finish()
                #expect(throws: Never.self) { try decoder.nextFrame() }
                #expect(decoder.bufferedByteCount == 0)
            }
        }
    }

    @Test func failPolicyStopsTheDecoder() {
        let stream = [0x60] + Self.heartbeat + Self.heartbeat
        var decoder = FrameDecoder(invalidHeaderPolicy: .fail)
        decoder.append(contentsOf: stream)
        expectError(SDLProtocolError(.unsupportedVersion, offset: 0, "protocol version 6 is not in 1...5")) {
            try decoder.nextFrame()
        }
        for _ in 0..<3 {
            do {
                _ = try decoder.nextFrame()
                Issue.record("decoder continued")
            } catch {
                #expect(error.code == .decoderFailed)
                #expect(error.offset == 0)
            }
        }
    }

    @Test func truncatedStreamIsReportedAtTheEnd() throws {
        var decoder = FrameDecoder()
        decoder.append(contentsOf: Self.heartbeat + Self.frame(.single, payload: [1, 2, 3, 4]).bytes.dropLast())
        #expect(try decoder.nextFrame() != nil)
        #expect(try decoder.nextFrame() == nil)
        decoder.finish()
        expectError(SDLProtocolError(.truncatedFrame, offset: 12, "stream ended with 15 bytes of an incomplete frame")) {
            try decoder.nextFrame()
        }
        #expect(try decoder.nextFrame() == nil)
    }

    @Test func firstFrameDeclaringFourGiBOrMoreThanTheLimit() throws {
        var reassembler = Reassembler()
        for total: UInt32 in [0xFFFF_FFFF, UInt32(16 << 20) + 1] {
            #expect(throws: SDLProtocolError.self) {
                try reassembler.process(Self.first(total: total, count: 40000), now: Self.t0)
            }
            do {
                _ = try reassembler.process(Self.first(total: total, count: 40000), now: Self.t0)
            } catch {
                #expect(error.code == .messageTooLarge)
            }
        }
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
        // At the limit it is accepted.
        #expect(try reassembler.process(Self.first(total: UInt32(16 << 20), count: 200), now: Self.t0) == nil)
        #expect(reassembler.reservedBytes == 16 << 20)
    }

    @Test func frameCountThatDisagreesWithTheTotal() throws {
        var reassembler = Reassembler()
        // More frames than bytes, zero frames, zero bytes, and too few frames for the receive
        // limit (v5: 131,084 bytes per frame).
        for (total, count): (UInt32, UInt32) in [(10, 11), (10, 0), (0, 0), (0, 1), (300_000, 2)] {
            do {
                _ = try reassembler.process(Self.first(total: total, count: count), now: Self.t0)
                Issue.record("First frame \(total)/\(count) accepted")
            } catch {
                #expect(error.code == .frameCountMismatch, "\(total)/\(count)")
            }
        }
        #expect(reassembler.activeCount == 0)
        // The frames announced must carry exactly the total: a last frame that falls short.
        _ = try reassembler.process(Self.first(total: 10, count: 2), now: Self.t0)
        _ = try reassembler.process(Self.frame(.consecutive, info: 1, payload: [1, 2, 3, 4]), now: Self.t0)
        do {
            _ = try reassembler.process(Self.frame(.consecutive, info: 0, payload: [5, 6, 7]), now: Self.t0)
            Issue.record("short message delivered")
        } catch {
            #expect(error.code == .messageSizeMismatch)
        }
        // More bytes than declared, before the last frame.
        _ = try reassembler.process(Self.first(total: 10, count: 3), now: Self.t0)
        do {
            _ = try reassembler.process(Self.frame(.consecutive, info: 1, payload: Array(repeating: 0, count: 11)), now: Self.t0)
            Issue.record("overlong frame accepted")
        } catch {
            #expect(error.code == .messageSizeMismatch)
        }
        // Its remaining frames are absorbed quietly; the last one ends the absorption.
        #expect(try reassembler.process(Self.frame(.consecutive, info: 2, payload: [1]), now: Self.t0) == nil)
        #expect(try reassembler.process(Self.frame(.consecutive, info: 0, payload: [1]), now: Self.t0) == nil)
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
    }

    @Test func consecutiveFrameWithoutFirstFrame() {
        var reassembler = Reassembler()
        for info: UInt8 in [1, 0, 200] {
            do {
                _ = try reassembler.process(Self.frame(.consecutive, info: info, payload: [1]), now: Self.t0)
                Issue.record("accepted")
            } catch {
                #expect(error.code == .consecutiveWithoutFirst)
            }
        }
    }

    @Test func outOfOrderSequenceNumbers() throws {
        var reassembler = Reassembler()
        _ = try reassembler.process(Self.first(total: 4, count: 4), now: Self.t0)
        _ = try reassembler.process(Self.frame(.consecutive, info: 1, payload: [1]), now: Self.t0)
        do {
            _ = try reassembler.process(Self.frame(.consecutive, info: 3, payload: [3]), now: Self.t0)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .unexpectedSequenceNumber)
            #expect(error.detail.contains("sequence number 3, expected 2"))
        }
        #expect(reassembler.reservedBytes == 0)
        // A last frame (0) too early is out of order too.
        _ = try reassembler.process(Self.first(total: 4, count: 4, message: 2), now: Self.t0)
        #expect(throws: SDLProtocolError.self) {
            try reassembler.process(Self.frame(.consecutive, message: 2, info: 0, payload: [1]), now: Self.t0)
        }
        // The reassembler still works: a proper message on another key completes.
        _ = try reassembler.process(Self.first(total: 2, count: 2, message: 3), now: Self.t0)
        _ = try reassembler.process(Self.frame(.consecutive, message: 3, info: 1, payload: [8]), now: Self.t0)
        let message = try reassembler.process(Self.frame(.consecutive, message: 3, info: 0, payload: [9]), now: Self.t0)
        #expect(message?.payload.bytes == [8, 9])
    }

    @Test func duplicateFirstFrame() throws {
        var reassembler = Reassembler()
        _ = try reassembler.process(Self.first(total: 4, count: 2), now: Self.t0)
        _ = try reassembler.process(Self.frame(.consecutive, info: 1, payload: [1, 2]), now: Self.t0)
        do {
            _ = try reassembler.process(Self.first(total: 4, count: 2), now: Self.t0)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .duplicateFirstFrame)
        }
        // Neither message is delivered; the key is free again after the last frame.
        #expect(try reassembler.process(Self.frame(.consecutive, info: 0, payload: [3, 4]), now: Self.t0) == nil)
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
        _ = try reassembler.process(Self.first(total: 2, count: 1), now: Self.t0)
        #expect(try reassembler.process(Self.frame(.consecutive, info: 0, payload: [5, 6]), now: Self.t0)?.payload.bytes == [5, 6])
    }

    @Test func messageThatNeverCompletesExpires() throws {
        var limits = ProtocolLimits()
        limits.reassemblyTimeout = .seconds(5)
        var reassembler = Reassembler(limits: limits)
        _ = try reassembler.process(Self.first(total: 100_000, count: 10, session: 3, message: 7), now: Self.t0)
        _ = try reassembler.process(Self.frame(.consecutive, session: 3, message: 7, info: 1, payload: Array(repeating: 1, count: 10_000)), now: Self.t0 + .seconds(2))
        // 100,000 bytes take a 128 KiB buffer, and that is what counts against the limit.
        #expect(reassembler.reservedBytes == 131_072)
        #expect(reassembler.nextExpiry == Self.t0 + .seconds(7))
        #expect(reassembler.expire(now: Self.t0 + .seconds(6)).isEmpty)
        let errors = reassembler.expire(now: Self.t0 + .seconds(7))
        #expect(errors.map(\.code) == [.reassemblyExpired])
        #expect(errors.first?.detail.contains("10000 of 100000 bytes") == true)
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
        #expect(reassembler.activeCount(session: SessionID(3)) == 0)
        #expect(reassembler.nextExpiry == nil)
        // Its late frames now have no First frame.
        #expect(throws: SDLProtocolError.self) {
            try reassembler.process(Self.frame(.consecutive, session: 3, message: 7, info: 2, payload: [1]), now: Self.t0 + .seconds(8))
        }
    }

    @Test func firstFrameIsNeverEncryptedButConsecutiveFramesAre() throws {
        let payload = ByteBuffer(bytes: (0..<5000).map { UInt8(truncatingIfNeeded: $0) })
        let frames = Array(try MessageFragmenter(
            payload: payload, version: .v5, serviceType: .rpc, sessionID: SessionID(2), messageID: MessageID(9),
            encrypted: true, maxPayloadPerFrame: 1000))
        #expect(frames.map(\.header.isEncrypted) == [false, true, true, true, true, true])
        var reassembler = Reassembler()
        var message: ProtocolMessage?
        for frame in frames { message = try reassembler.process(frame, now: Self.t0) ?? message }
        #expect(message?.isEncrypted == true)
        #expect(message?.payload == payload)
        // Control payloads never fragment.
        #expect(throws: SDLProtocolError.self) {
            try MessageFragmenter(payload: payload, version: .v5, serviceType: .control, sessionID: SessionID(2),
                                  control: .startService, maxPayloadPerFrame: 1000)
        }
    }
}
