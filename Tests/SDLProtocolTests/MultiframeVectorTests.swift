import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

/// multiframe.json: fragmentation, reassembly, First-frame robustness and stream-parser vectors
/// from sdl_ios, sdl_java_suite and sdl_core tests.
@Suite struct MultiframeVectorTests {
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// The message payload of a vector: its 12-byte prefix (an RPC binary header) then a byte
    /// pattern (the peers' tests use uninitialised bytes there).
    static func payload(_ params: MultiframeVector.Params?, _ id: String) throws -> [UInt8] {
        let length = try #require(params?.payloadLength, "\(id): params.payloadLength")
        var bytes = [UInt8](hex: params?.payloadPrefixHex ?? "")
        while bytes.count < length { bytes.append(UInt8(truncatingIfNeeded: bytes.count &* 31 &+ 7)) }
        return bytes
    }

    /// Reassembles frames through decoder and reassembler, fed in every chunking, and hands the
    /// messages and errors of each run to `check`; every run must give what the whole stream gives
    /// (errors with their message keys and details).
    static func reassemble(
        _ stream: [UInt8], limits: ProtocolLimits = ProtocolLimits(), sourceLocation: SourceLocation = #_sourceLocation,
        check: (_ name: String, _ messages: [ProtocolMessage], _ errors: [SDLProtocolError]) throws -> Void
    ) rethrows {
        var whole: (messages: [ProtocolMessage], errors: [String])?
        for (name, chunks) in chunkings(of: stream) {
            var reassembler = Reassembler(limits: limits)
            var messages: [ProtocolMessage] = []
            var errors: [SDLProtocolError] = []
            for frame in decode(chunks, limits: limits).frames {
                do throws(SDLProtocolError) {
                    if let message = try reassembler.process(frame, now: start) { messages.append(message) }
                } catch {
                    errors.append(error)
                }
            }
            let errorFields = errors.map { everyField(of: $0) }
            if let whole {
                #expect(messages == whole.messages, "\(name)", sourceLocation: sourceLocation)
                #expect(errorFields == whole.errors, "\(name)", sourceLocation: sourceLocation)
            } else {
                whole = (messages, errorFields)
            }
            try check(name, messages, errors)
        }
    }

    /// A frame's payload in a fragmentation vector: its bytes, or its place in the message payload.
    static func framePayload(_ want: MultiframeVector.Frame, of payload: [UInt8], _ id: String) throws -> [UInt8] {
        if let payloadHex = want.payloadHex { return [UInt8](hex: payloadHex) }
        let offset = want.payloadOffset ?? 0
        let length = try #require(want.payloadLength, "\(id): payloadLength")
        return Array(payload[offset..<offset + length])
    }

    @Test func iosDisassemblyMatchesOurFragmenter() throws {
        let vectors = try Vectors.multiframe().filter { $0.id.hasPrefix("ios-disassemble-") }
        #expect(vectors.count == 2)
        for vector in vectors {
            let id = vector.id
            let params = try #require(vector.params, "\(id): params")
            let payload = try Self.payload(params, id)
            // sdl_ios's `mtu` is a whole-frame size: payload per frame = mtu − 12 (our send rule too).
            let fragmenter = try MessageFragmenter(
                payload: ByteBuffer(bytes: payload), version: ProtocolVersion(rawValue: UInt8(try #require(params.version))),
                serviceType: ServiceType(rawValue: UInt8(try #require(params.serviceType))),
                sessionID: SessionID(UInt8(try #require(params.sessionId))),
                messageID: MessageID(UInt32(params.messageId ?? 0)),
                maxPayloadPerFrame: try #require(params.mtu) - 12)
            let frames = Array(fragmenter)
            let expected = try #require(vector.expect.frames, "\(id): frames")
            #expect(frames.count == vector.expect.frameCount, "\(id)")
            #expect(frames.count == expected.count, "\(id)")
            var stream: [UInt8] = []
            for (frame, want) in zip(frames, expected) {
                #expect(frame.header.bytes.hex == want.headerHex, "\(id)")
                #expect(frame.payload.bytes == (try Self.framePayload(want, of: payload, id)), "\(id)")
                expectHeader(frame.header, try #require(want.expect, "\(id): frame expect"), id)
                stream += frame.bytes
            }
            // And the frames reassemble to the payload, whatever the chunking.
            Self.reassemble(stream) { name, messages, errors in
                #expect(errors.isEmpty, "\(id) \(name)")
                #expect(messages.count == 1 && messages[0].payload.bytes == payload, "\(id) \(name)")
                #expect(messages.first?.frameCount == frames.count, "\(id) \(name)")
            }
        }
    }

    @Test func iosReassembly() throws {
        let vectors = try Vectors.multiframe().filter { $0.kind == "multiframe_reassembly" }
        #expect(vectors.count == 2)
        for vector in vectors {
            let id = vector.id
            let payload = try Self.payload(vector.params, id)
            let expect = vector.expect
            var stream: [UInt8] = []
            for want in try #require(expect.frames, "\(id): frames") {
                let headerHex = try #require(want.headerHex, "\(id): headerHex")
                var header = try #require(FrameHeader(bytes: [UInt8](hex: headerHex)))
                let framePayload = try Self.framePayload(want, of: payload, id)
                // The last header of this sdl_ios test keeps the data size 500 of the frame
                // before it while carrying 12 bytes (its assembler never reads the size); on a
                // stream the size must be the real one.
                header.dataSize = UInt32(framePayload.count)
                stream += header.bytes + framePayload
            }
            let assembled = try #require(expect.assembled, "\(id): assembled")
            Self.reassemble(stream) { name, messages, errors in
                #expect(errors.isEmpty, "\(id) \(name)")
                guard messages.count == 1 else {
                    Issue.record("\(id) \(name): \(messages.count) messages")
                    return
                }
                let message = messages[0]
                // The First frame carries frame info 1 in this sdl_ios test; like sdl_ios and
                // sdl_core we accept it (the spec reserves the byte, nothing depends on it).
                #expect(message.payload.bytes == payload, "\(id) \(name)")
                #expect(message.payload.readableBytes == assembled.payloadLength, "\(id)")
                #expect(message.frameType == .single && message.frameInfo == 0, "\(id)")
                #expect(message.frameCount == expect.frameCount, "\(id)")
                #expect(message.serviceType == .hybrid && message.version == .v2, "\(id)")
            }
        }
    }

    @Test func sendRPCWithBulkDataTakesThreeFrames() throws {
        let vector = try #require(try Vectors.multiframe().first { $0.id == "ios-sendrpc-1100-bulk-v2-three-frames" })
        // DeleteCommand {cmdID 55}, correlation id 12345, 1100 bytes of bulk data, v2, MTU 1024.
        var payload = ByteBuffer()
        try RPCPayload(
            header: RPCBinaryHeader(rpcType: .request, functionID: 6, correlationID: 12345, jsonSize: 0),
            parameters: ByteBuffer(string: #"{"cmdID":55}"#),
            bulkData: ByteBuffer(repeating: 0x42, count: 1100)
        ).write(to: &payload)
        let fragmenter = try MessageFragmenter(
            payload: payload, version: .v2, serviceType: .hybrid, sessionID: SessionID(1), maxPayloadPerFrame: 1024 - 12)
        #expect(fragmenter.frameCount == vector.expect.transportWrites)
        #expect(Array(fragmenter).map(\.header.frameType) == [.first, .consecutive, .consecutive])
    }

    @Test func coreSendsFirstThenTwoConsecutiveFrames() throws {
        let vector = try #require(try Vectors.multiframe().first { $0.id == "core-send-multiframe-2976-v3-bulk" })
        let params = try #require(vector.params)
        // sdl_core's test runs with a 1488-byte frame payload.
        let fragmenter = try MessageFragmenter(
            payload: ByteBuffer(repeating: 1, count: try #require(params.payloadLength)), version: .v3,
            serviceType: ServiceType(rawValue: UInt8(try #require(params.serviceType))), sessionID: SessionID(1),
            maxPayloadPerFrame: 1488)
        let frames = Array(fragmenter)
        let expected = try #require(vector.expect.frames)
        #expect(frames.count == expected.count)
        for (frame, want) in zip(frames, expected) {
            #expect(frame.header.frameType.description == want.header.frameType)
            #expect(Int(frame.header.frameInfo) == want.header.frameInfo)
            #expect(Int(frame.header.serviceType.rawValue) == want.header.serviceType)
        }
    }

    @Test func coreSequenceOf511ConsecutiveFramesWrapsAround() async throws {
        try await onCPUThreads {
            let vector = try #require(try Vectors.multiframe().first { $0.kind == "multiframe_sequence" })
            let params = try #require(vector.params)
            let expect = vector.expect
            let total = try #require(expect.assembledPayloadLength)
            let payload = (0..<total).map { UInt8(truncatingIfNeeded: $0 + 1) }
            let frames = Array(try MessageFragmenter(
                payload: ByteBuffer(bytes: payload), version: .v2, serviceType: .rpc, sessionID: SessionID(0),
                maxPayloadPerFrame: try #require(params.framePayloadSize)))
            #expect(frames.count == expect.frameCount)
            for want in try #require(expect.frames) {
                let index = try #require(want.index)
                #expect(frames[index].bytes.hex == want.hex, "frame \(index)")
                expectHeader(frames[index].header, try #require(want.expect), "frame \(index)")
            }
            let numbering: [UInt8] = (1...511).map { (index: Int) -> UInt8 in index == 511 ? 0 : UInt8((index - 1) % 255 + 1) }
            #expect(frames.dropFirst().map(\.header.frameInfo) == numbering)
            // The 512 frames as a byte stream, through decoder and reassembler in every chunking.
            let stream = frames.flatMap(\.bytes)
            Self.reassemble(stream) { name, messages, errors in
                #expect(errors.isEmpty, "\(name)")
                #expect(messages.count == 1, "\(name)")
                #expect(messages.first?.payload.bytes == payload, "\(name)")
                #expect(messages.first?.frameCount == 512, "\(name)")
            }
        }
    }

    /// sdl_java_suite feeds First frames whose declared sizes would make a naive receiver allocate
    /// hundreds of megabytes, then a Consecutive frame. We refuse the First frame before
    /// allocating, and the Consecutive frame then has no First frame.
    @Test func firstFrameRobustness() throws {
        let vectors = try Vectors.multiframe().filter { $0.kind == "multiframe_robustness" }
        let expectedCodes: [String: SDLProtocolError.Code] = [
            // 16,844,032 frames cannot carry 132,353 bytes.
            "java-firstframe-v1-odd-payload": .frameCountMismatch,
            // 252,645,135 bytes are above the 16 MiB default message limit.
            "java-firstframe-v1-overallocation": .messageTooLarge,
        ]
        #expect(vectors.count == expectedCodes.count)
        for vector in vectors {
            let id = vector.id
            let followedBy = try #require(vector.followedBy, "\(id): followedBy")
            let stream = [UInt8](hex: try #require(vector.hex, "\(id): hex"))
                + [UInt8](hex: followedBy.headerHex) + [UInt8](hex: followedBy.payloadHex)
            let decoded = decode([stream])
            #expect(decoded.errors.isEmpty, "\(id)")
            #expect(decoded.frames.count == 2, "\(id)")
            let want = try #require(vector.expect.frames?.first, "\(id): frames").header
            expectHeader(decoded.frames[0].header, want, id)
            #expect(decoded.frames[0].firstFramePayload?.totalSize == want.totalSize.map(UInt32.init), "\(id)")
            #expect(decoded.frames[0].firstFramePayload?.frameCount == want.consecutiveFrameCount.map(UInt32.init), "\(id)")
            expectHeader(decoded.frames[1].header, followedBy.expect, id)
            let code = try #require(expectedCodes[id], "\(id): no expected code")
            Self.reassemble(stream) { name, messages, errors in
                #expect(messages.isEmpty, "\(id) \(name)")
                #expect(errors.map(\.code) == [code, .consecutiveWithoutFirst], "\(id) \(name)")
            }
            var reassembler = Reassembler()
            _ = try? reassembler.process(decoded.frames[0], now: Self.start)
            #expect(reassembler.reservedBytes == 0 && reassembler.activeCount == 0, "\(id): nothing held")
        }
    }
}
