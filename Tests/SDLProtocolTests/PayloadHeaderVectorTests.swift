import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

/// rpc_binary_headers.json: the 12-byte RPC binary header and the security-query header.
@Suite struct PayloadHeaderVectorTests {
    /// Header-only vectors: sdl_ios uses these 12 bytes as a payload prefix followed by
    /// uninitialised bytes that are not part of the vector, so only the header is checked.
    static let headerOnly: Set<String> = ["ios-testpayloadheader-400", "ios-testpayloadheader-2000", "ios-testpayloadheader-4000"]

    /// What reading the RPC binary header off `buffer` gives, and the bytes it leaves.
    static func readHeader(_ buffer: ByteBuffer) -> ReadResult<[String]> {
        ReadResult {
            var rest = buffer
            return ["\(try RPCBinaryHeader.read(from: &rest))", rest.hex]
        }
    }

    @Test func rpcBinaryHeadersAndPayloads() throws {
        let vectors = try Vectors.rpcBinaryHeaders().filter { ["rpc_binary_header", "rpc_payload"].contains($0.kind) }
        #expect(vectors.count == 14)
        for vector in vectors {
            let id = vector.id
            let expect = vector.expect
            let bytes = [UInt8](hex: vector.hex)
            var buffer = ByteBuffer(bytes: bytes)
            let header = try RPCBinaryHeader.read(from: &buffer)
            readInEveryLayout(bytes, "\(id)", Self.readHeader)
            if let rpcType = expect.rpcType { #expect(Int(header.rpcType.rawValue) == rpcType, "\(id)") }
            if let functionID = expect.functionId { #expect(Int(header.functionID) == functionID, "\(id)") }
            if let correlationID = expect.correlationId { #expect(Int(header.correlationID) == correlationID, "\(id)") }
            if let jsonSize = expect.jsonSize { #expect(Int(header.jsonSize) == jsonSize, "\(id)") }
            var written = ByteBuffer()
            try header.write(to: &written)
            #expect(written.bytes == Array(bytes.prefix(12)), "\(id): header re-encodes byte-exactly")

            // The whole payload, read wherever its bytes sit: the same payload or the same error.
            let parsed = readInEveryLayout(bytes, "\(id)") { buffer in ReadResult { try RPCPayload(parsing: buffer) } }
            if Self.headerOnly.contains(id) {
                // The header announces JSON that is not part of the vector.
                expectError(SDLProtocolError(.jsonSizeExceedsPayload, offset: 8,
                                                 "JSON size \(header.jsonSize) exceeds the 0 bytes after the RPC binary header")) {
                    try RPCPayload(parsing: ByteBuffer(bytes: bytes))
                }
                continue
            }
            if expect.valid == false {
                let error = try #require(throws: SDLProtocolError.self, "\(id)") { try RPCPayload(parsing: ByteBuffer(bytes: bytes)) }
                #expect(error.code == .jsonSizeExceedsPayload, "\(id)")
                #expect(error.offset == 8, "\(id)")
                continue
            }
            let payload = try #require(parsed.value, "\(id): \(parsed)")
            #expect(payload.parameters.readableBytes == Int(header.jsonSize), "\(id)")
            // The same payload as the stream carries it, in a Single frame of the RPC service,
            // through the decoder in every chunking.
            let frame = ProtocolFrame(header: FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1),
                                                  dataSize: UInt32(bytes.count), messageID: MessageID(1)),
                              payload: ByteBuffer(bytes: bytes))
            try MultiframeVectorTests.reassemble(frame.bytes) { name, messages, errors throws in
                #expect(errors.isEmpty && messages.count == 1, "\(id) \(name)")
                #expect(try messages.first.map { try RPCPayload(parsing: $0.payload) } == payload, "\(id) \(name)")
            }
            if let jsonText = expect.jsonText {
                #expect(String(buffer: payload.parameters) == jsonText, "\(id)")
            }
            if let json = expect.json {
                #expect(try JSONValue(parsing: payload.parameters.readableBytesView) == json, "\(id)")
            }
            #expect(payload.bulkData.hex == (expect.bulkHex ?? ""), "\(id)")
            var reencoded = ByteBuffer()
            try payload.write(to: &reencoded)
            #expect(reencoded.bytes == bytes, "\(id): payload re-encodes byte-exactly")
        }
    }

    @Test func securityQueries() throws {
        let vectors = try Vectors.rpcBinaryHeaders().filter { $0.kind == "security_query" }
        #expect(vectors.count == 5)
        for vector in vectors {
            let id = vector.id
            let expect = vector.expect
            let bytes = [UInt8](hex: vector.hex)
            let parsed = readInEveryLayout(bytes, "\(id)") { buffer in ReadResult { try SecurityQuery(parsing: buffer) } }
            if expect.valid == false {
                // 0x99 everywhere: query type 0x99 is not defined and the JSON size exceeds the
                // payload; the split refuses it.
                expectError(SDLProtocolError(.jsonSizeExceedsPayload, offset: 8,
                                                 "JSON size 2576980377 exceeds the 0 bytes after the security query header"), "\(id)") {
                    try SecurityQuery(parsing: ByteBuffer(bytes: bytes))
                }
                continue
            }
            let query = try #require(parsed.value, "\(id): \(parsed)")
            #expect(Int(query.header.queryType.rawValue) == expect.queryType, "\(id)")
            #expect(query.header.queryType.description == expect.queryTypeName, "\(id)")
            #expect(Int(query.header.queryID.rawValue) == expect.queryId, "\(id)")
            #expect(query.header.queryID.description == expect.queryIdName, "\(id)")
            #expect(Int(query.header.sequenceNumber) == expect.sequenceNumber, "\(id)")
            #expect(Int(query.header.jsonSize) == expect.jsonSize, "\(id)")
            if let json = expect.json {
                #expect(try JSONValue(parsing: query.json.readableBytesView) == json, "\(id)")
            }
            #expect(query.binaryData.hex == (expect.bulkHex ?? ""), "\(id)")
            var reencoded = ByteBuffer()
            try query.write(to: &reencoded)
            #expect(reencoded.bytes == bytes, "\(id): re-encodes byte-exactly")
        }
    }

    @Test func truncatedHeadersAreRefused() throws {
        for length in 0..<12 {
            let bytes = [UInt8](repeating: 0, count: length)
            do {
                _ = try RPCPayload(parsing: ByteBuffer(bytes: bytes))
                Issue.record("RPC payload of \(length) bytes accepted")
            } catch {
                #expect(error.code == .truncatedHeader)
            }
            do {
                _ = try SecurityQuery(parsing: ByteBuffer(bytes: bytes))
                Issue.record("security query of \(length) bytes accepted")
            } catch {
                #expect(error.code == .truncatedHeader)
            }
        }
        // JSON size one larger than what follows.
        let bytes: [UInt8] = [0x00, 0, 0, 0x01, 0, 0, 0, 0x07, 0, 0, 0, 3, 0x7B, 0x7D]
        expectError(SDLProtocolError(.jsonSizeExceedsPayload, offset: 8,
                                         "JSON size 3 exceeds the 2 bytes after the RPC binary header")) {
            try RPCPayload(parsing: ByteBuffer(bytes: bytes))
        }
        // The function id has 28 bits.
        var buffer = ByteBuffer()
        expectError(SDLProtocolError(.fieldOutOfRange, "function id 268435456 does not fit 28 bits")) {
            try RPCBinaryHeader(rpcType: .request, functionID: 0x1000_0000, correlationID: 1, jsonSize: 0).write(to: &buffer)
        }
        #expect(buffer.readableBytes == 0)
    }
}
