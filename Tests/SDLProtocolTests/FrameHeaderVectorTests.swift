import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

/// frame_headers.json: v1 and v2+ headers from sdl_ios, sdl_java_suite and sdl_core tests.
@Suite struct FrameHeaderVectorTests {
    /// Vectors whose bytes are not a frame our decoder accepts, and why. Each is a peer test that
    /// checks something narrower than a whole frame (see the vector's `asserted`/`notes`).
    static let rejectedByDesign: [String: SDLProtocolError.Code] = [
        // Header (de)serialisation tests with data size 4660: above the 1500-byte MTU of versions
        // 1 and 2, so not a frame any stream parser accepts (sdl_ios's own parser refuses data
        // sizes from 1024 − header on; sdl_core's from 1488).
        "ios-v1-header-control-startservice-encrypted": .frameTooLarge,
        "ios-v2-header-control-startservice-encrypted": .frameTooLarge,
        // Only the version nibble is tested by sdl_ios; as a frame it is a First frame with data
        // size 0, which the spec (and sdl_core's validator) refuse: a First frame carries 8 bytes.
        "ios-determineversion-v1": .invalidFirstFrameDataSize,
        "ios-determineversion-v2": .invalidFirstFrameDataSize,
        // The header is an OCMock stub: a First frame whose data size reads 0x0E000009.
        "ios-protocolmessage-data-concat": .invalidFirstFrameDataSize,
        // A router-level test that passes an empty Single frame along; on the wire an empty Single
        // frame is malformed (sdl_core's validator refuses it, and there is no message in it).
        "ios-router-single-rpc": .emptyFrame,
        // sdl_core deserialises only 12 of 17 bytes; as a frame it is a First frame with data size 0.
        "core-deserialize-firstframe": .invalidFirstFrameDataSize,
    ]

    @Test func headersParseAndSerialiseByteExactly() throws {
        var checked = 0
        for vector in try Vectors.frameHeaders() where ["frame_header", "frame", "header_validation"].contains(vector.kind) {
            let id = vector.id
            let bytes = [UInt8](hex: vector.hex)
            let header = try #require(FrameHeader(bytes: bytes), "\(id)")
            expectHeader(header, vector.expect, id)
            #expect(header.bytes == Array(bytes.prefix(header.size)), "\(id): serialises to the same bytes")
            // Peeked out of a buffer, wherever its bytes sit in the storage: the same header.
            #expect(readInEveryLayout(bytes, "\(id)") { FrameHeader.peek(in: $0) } == header)
            // Peeked out of raw bytes at an offset, and refused where they end before the header does.
            let padded = [0xAA, 0xBB, 0xCC] + bytes
            padded.withUnsafeBytes { raw in
                #expect(FrameHeader.peek(in: raw, at: 3) == header, "\(id)")
                #expect(FrameHeader.peek(in: UnsafeRawBufferPointer(rebasing: raw[..<(2 + header.size)]), at: 3) == nil, "\(id)")
                #expect(FrameHeader.peek(in: UnsafeRawBufferPointer(rebasing: raw[..<(3 + header.size)]), at: 3) == header, "\(id)")
                #expect(FrameHeader.peek(in: raw, at: -1) == nil, "\(id)")
                #expect(FrameHeader.peek(in: raw, at: raw.count) == nil, "\(id)")
            }
            if try #require(vector.expect.frameTypeValue, "\(id): frameTypeValue") == 0 {
                #expect(header.controlFrameInfo?.rawValue == header.frameInfo, "\(id)")
            }
            if header.version == .v1 {
                #expect(header.isCompressed == header.protectionBit && !header.isEncrypted, "\(id): v1 bit is compression")
            } else {
                #expect(header.isEncrypted == header.protectionBit && !header.isCompressed, "\(id): v2+ bit is encryption")
            }
            checked += 1
        }
        #expect(checked == 65)
    }

    /// Byte 0 is kept as on the wire: every version, E bit and frame type reads back as built
    /// and as parsed from its bytes, and each setter changes its own bits only (a version or
    /// frame type set keeps its low 4 or 3 bits, the bits the wire has room for).
    @Test func byteZeroFieldsKeepTheirWireBits() throws {
        for version in UInt8(0)...15 {
            for encrypted in [false, true] {
                for type in UInt8(0)...7 {
                    let header = FrameHeader(
                        version: ProtocolVersion(rawValue: version), encrypted: encrypted, frameType: FrameType(rawValue: type),
                        serviceType: .video, frameInfo: 7, sessionID: SessionID(9), dataSize: 300, messageID: MessageID(77))
                    #expect(header.version.rawValue == version && header.protectionBit == encrypted && header.frameType.rawValue == type)
                    #expect(header.bytes[0] == version << 4 | (encrypted ? 0x08 : 0) | type)
                    #expect(FrameHeader(bytes: header.bytes + [0, 0, 0, 0]) == header)
                    var changed = header
                    changed.version = ProtocolVersion(rawValue: 15 - version)
                    changed.protectionBit.toggle()
                    changed.frameType = FrameType(rawValue: 7 - type)
                    #expect(changed.version.rawValue == 15 - version && changed.protectionBit != encrypted)
                    #expect(changed.frameType.rawValue == 7 - type && changed.serviceType == .video && changed.frameInfo == 7)
                    #expect(changed.sessionID == SessionID(9) && changed.dataSize == 300 && changed.messageID == header.messageID)
                }
            }
        }
        var header = FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 1)
        header.version = ProtocolVersion(rawValue: 0x13)
        header.frameType = FrameType(rawValue: 0x08)
        #expect(header.version == .v3 && header.frameType == .control && header.bytes[0] == 0x30)
    }

    /// sdl_core's header validator cases: our validation agrees on every one (the validator's
    /// config, where given, is applied to our limits).
    @Test func headerValidationAgreesWithCore() async throws {
        try await onCPUThreads {
            let vectors = try Vectors.frameHeaders().filter { $0.kind == "header_validation" }
            #expect(vectors.count == 33)
            for vector in vectors {
                let id = vector.id
                var limits = ProtocolLimits()
                if let maxVersion = vector.config?.maxProtocolVersionSupported {
                    limits.maxVersion = ProtocolVersion(rawValue: UInt8(maxVersion))
                }
                let header = try #require(FrameHeader(bytes: [UInt8](hex: vector.hex)))
                let valid = try #require(vector.expect.valid as Bool?, "\(id): valid")
                #expect(header.isValid(against: limits) == valid, "\(id)")
                // The stream decoder applies the same validation, whatever the chunking.
                let stream = header.bytes + [UInt8](repeating: 0xAB, count: Int(header.dataSize))
                decodeInEveryChunking(stream, limits: limits, "\(id)") { name, result in
                    if valid {
                        #expect(result.errors.isEmpty && result.frames.count == 1, "\(id) \(name)")
                        #expect(result.frames.first?.header == header, "\(id) \(name)")
                    } else {
                        #expect(result.frames.isEmpty && result.errors.count == 1, "\(id) \(name): \(result.errors)")
                        #expect(result.errors.first?.offset == 0, "\(id) \(name)")
                    }
                }
            }
        }
    }

    /// Every header and frame vector streamed through the decoder: whole, byte by byte, split
    /// at every offset, and in awkward buffers.
    @Test func framesStreamThroughTheDecoder() throws {
        let vectors = try Vectors.frameHeaders().filter { ["frame_header", "frame"].contains($0.kind) }
        for vector in vectors {
            let id = vector.id
            let bytes = [UInt8](hex: vector.hex)
            let header = try #require(FrameHeader(bytes: bytes))
            var payload = Array(bytes.dropFirst(header.size))
            if let payloadHex = vector.expect.payloadHex {
                #expect(payload == [UInt8](hex: payloadHex), "\(id): payload")
            }
            if payload.count != Int(header.dataSize) && Self.rejectedByDesign[id] == nil {
                // Header-only vector: give it the payload its data size announces.
                #expect(payload.isEmpty, "\(id)")
                payload = [UInt8](repeating: 0x5A, count: Int(header.dataSize))
            }
            let stream = Array(bytes.prefix(header.size)) + payload
            decodeInEveryChunking(stream, "\(id)") { name, result in
                if let code = Self.rejectedByDesign[id] {
                    #expect(result.frames.isEmpty, "\(id) \(name)")
                    #expect(result.errors.map(\.code) == [code], "\(id) \(name)")
                    #expect(result.errors.first?.offset == 0, "\(id) \(name)")
                } else {
                    #expect(result.errors.isEmpty, "\(id) \(name): \(result.errors)")
                    #expect(result.frames.count == 1, "\(id) \(name)")
                    #expect(result.frames.first?.header == header, "\(id) \(name)")
                    #expect(result.frames.first?.payload.bytes.hex == payload.hex, "\(id) \(name)")
                }
            }
        }
    }
}
