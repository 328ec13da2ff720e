import Foundation
import NIOCore
import SDLProtocol
import Testing

/// rpc_binary_headers.json: the 12-byte RPC binary header and the security-query header.
@Suite struct PayloadHeaderVectorTests {
    /// Header-only vectors: sdl_ios uses these 12 bytes as a payload prefix followed by
    /// uninitialised bytes that are not part of the vector, so only the header is checked.
    static let headerOnly: Set<String> = ["ios-testpayloadheader-400", "ios-testpayloadheader-2000", "ios-testpayloadheader-4000"]

    @Test func rpcBinaryHeadersAndPayloads() throws {
        let vectors = try loadVectors("rpc_binary_headers.json").filter {
            ["rpc_binary_header", "rpc_payload"].contains($0["kind"] as? String)
        }
        #expect(vectors.count == 14)
        for vector in vectors {
            let id = vector["id"] as! String
            let expect = vector["expect"] as! [String: Any]
            let bytes = [UInt8](hex: vector["hex"] as! String)
            var buffer = ByteBuffer(bytes: bytes)
            let header = try RPCBinaryHeader.read(from: &buffer)
            if let rpcType = expect["rpcType"] as? Int { #expect(Int(header.rpcType.rawValue) == rpcType, "\(id)") }
            if let functionID = expect["functionId"] as? Int { #expect(Int(header.functionID) == functionID, "\(id)") }
            if let correlationID = expect["correlationId"] as? Int { #expect(Int(header.correlationID) == correlationID, "\(id)") }
            if let jsonSize = expect["jsonSize"] as? Int { #expect(Int(header.jsonSize) == jsonSize, "\(id)") }
            var written = ByteBuffer()
            try header.write(to: &written)
            #expect(written.bytes == Array(bytes.prefix(12)), "\(id): header re-encodes byte-exactly")

            let valid = expect["valid"] as? Bool ?? true
            if Self.headerOnly.contains(id) {
                // The header announces JSON that is not part of the vector.
                expectError(SDLProtocolError(.jsonSizeExceedsPayload, offset: 8,
                                                 "JSON size \(header.jsonSize) exceeds the 0 bytes after the RPC binary header")) {
                    try RPCPayload(parsing: ByteBuffer(bytes: bytes))
                }
                continue
            }
            if !valid {
                do {
                    _ = try RPCPayload(parsing: ByteBuffer(bytes: bytes))
                    Issue.record("\(id): accepted")
                } catch {
                    #expect(error.code == .jsonSizeExceedsPayload, "\(id)")
                    #expect(error.offset == 8, "\(id)")
                }
                continue
            }
            let payload = try RPCPayload(parsing: ByteBuffer(bytes: bytes))
            #expect(payload.parameters.readableBytes == Int(header.jsonSize), "\(id)")
            // The same payload as the stream carries it, in a Single frame of the RPC service,
            // through the decoder in every chunking.
            let frame = ProtocolFrame(header: FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1),
                                                  dataSize: UInt32(bytes.count), messageID: MessageID(1)),
                              payload: ByteBuffer(bytes: bytes))
            for (name, messages, errors) in MultiframeVectorTests.reassemble(frame.bytes) {
                #expect(errors.isEmpty && messages.count == 1, "\(id) \(name)")
                #expect(try messages.first.map { try RPCPayload(parsing: $0.payload) } == payload, "\(id) \(name)")
            }
            if let jsonText = expect["jsonText"] as? String {
                #expect(String(buffer: payload.parameters) == jsonText, "\(id)")
            }
            if let json = expect["json"] {
                let parsed = try JSONSerialization.jsonObject(with: Data(payload.parameters.bytes))
                #expect(try canonicalJSON(parsed) == canonicalJSON(json), "\(id)")
            }
            #expect(payload.bulkData.bytes.hex == (expect["bulkHex"] as? String ?? ""), "\(id)")
            var reencoded = ByteBuffer()
            try payload.write(to: &reencoded)
            #expect(reencoded.bytes == bytes, "\(id): payload re-encodes byte-exactly")
        }
    }

    @Test func securityQueries() throws {
        let vectors = try loadVectors("rpc_binary_headers.json").filter { $0["kind"] as? String == "security_query" }
        #expect(vectors.count == 5)
        for vector in vectors {
            let id = vector["id"] as! String
            let expect = vector["expect"] as! [String: Any]
            let bytes = [UInt8](hex: vector["hex"] as! String)
            if expect["valid"] as? Bool == false {
                // 0x99 everywhere: query type 0x99 is not defined and the JSON size exceeds the
                // payload; the split refuses it.
                expectError(SDLProtocolError(.jsonSizeExceedsPayload, offset: 8,
                                                 "JSON size 2576980377 exceeds the 0 bytes after the security query header"), "\(id)") {
                    try SecurityQuery(parsing: ByteBuffer(bytes: bytes))
                }
                continue
            }
            let query = try SecurityQuery(parsing: ByteBuffer(bytes: bytes))
            #expect(Int(query.header.queryType.rawValue) == expect["queryType"] as! Int, "\(id)")
            #expect(query.header.queryType.description == expect["queryTypeName"] as! String, "\(id)")
            #expect(Int(query.header.queryID.rawValue) == expect["queryId"] as! Int, "\(id)")
            #expect(query.header.queryID.description == expect["queryIdName"] as! String, "\(id)")
            #expect(Int(query.header.sequenceNumber) == expect["sequenceNumber"] as! Int, "\(id)")
            #expect(Int(query.header.jsonSize) == expect["jsonSize"] as! Int, "\(id)")
            if let json = expect["json"] {
                let parsed = try JSONSerialization.jsonObject(with: Data(query.json.bytes))
                #expect(try canonicalJSON(parsed) == canonicalJSON(json), "\(id)")
            }
            #expect(query.binaryData.bytes.hex == (expect["bulkHex"] as? String ?? ""), "\(id)")
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
