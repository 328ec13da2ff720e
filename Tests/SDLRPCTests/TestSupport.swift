import NIOCore
import SDLProtocol
import SDLRPC
import SDLRPCGenerator
import SDLTestSupport
import Testing

extension SharedData {
    /// The payload of the RPC binary header vector `id` (`vectors/rpc_binary_headers.json`).
    static func headerVectorPayload(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ByteBuffer {
        let vectors = try Vectors.rpcBinaryHeaders(sourceLocation: sourceLocation)
        let vector = try #require(vectors.first(where: { $0.id == id }), "no vector \(id)", sourceLocation: sourceLocation)
        return ByteBuffer(hex: vector.hex, sourceLocation: sourceLocation)
    }

    /// The spec, parsed.
    static func spec(sourceLocation: SourceLocation = #_sourceLocation) throws -> Spec {
        try SpecParser.parse(self.bytes("rpc_spec/MOBILE_API.xml", sourceLocation: sourceLocation))
    }
}

/// Decodes a whole RPC payload from `payload`'s bytes in every buffer layout, expecting the same
/// message, or the same error (code, path, offset from the reader index, detail), from each.
func decodeInEveryLayout(
    payload: ByteBuffer, format: RPCParameterFormat? = nil, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) -> ReadResult<AnyRPCMessage> {
    readInEveryLayout(payload.readableBytesView, comment, sourceLocation: sourceLocation) { buffer in
        ReadResult { try AnyRPCMessage(payload: buffer, format: format) }
    }
}

/// Decodes JSON parameters `text` as the message `functionName`/`rpcType` (correlation id 7, as
/// `roundTrip`'s) from the text's bytes in every buffer layout, expecting the same message, or the
/// same error (code, path, offset into the text, detail), from each.
func decodeInEveryLayout(
    functionName: String, rpcType: RPCType, jsonParameters text: String, sourceLocation: SourceLocation = #_sourceLocation
) throws -> ReadResult<AnyRPCMessage> {
    let functionID = try #require(FunctionID(name: functionName), "no function \(functionName)", sourceLocation: sourceLocation)
    let type = try #require(
        AnyRPCMessage.messageType(functionID: functionID, rpcType: rpcType), "no \(rpcType) \(functionName)",
        sourceLocation: sourceLocation)
    return readInEveryLayout(Array(text.utf8), "\(functionName) \(rpcType)", sourceLocation: sourceLocation) { buffer in
        ReadResult { AnyRPCMessage(try type.init(parameters: buffer, format: .json), correlationID: 7) }
    }
}

/// The formats every round trip runs through.
let roundTripFormats: [RPCParameterFormat] = [.json, .bson]

/// Decodes `parameters` as the message of `function`/`type`, validates, re-encodes in every
/// format and decodes again; returns the decoded message and its JSON re-encoding.
func roundTrip(
    functionName: String, rpcType: RPCType, parameters: String, sourceLocation: SourceLocation = #_sourceLocation
) throws -> (message: AnyRPCMessage, json: String) {
    let decoded = try AnyRPCMessage(functionName: functionName, rpcType: rpcType, correlationID: 7, jsonParameters: parameters)
    for format in roundTripFormats {
        let payload = try decoded.payload(format: format)
        let again = try AnyRPCMessage(payload: payload, format: format)
        #expect(again == decoded, "\(functionName) \(rpcType) changed in a \(format) round trip", sourceLocation: sourceLocation)
        // JSON → format → JSON gives the same JSON text.
        #expect(try again.jsonParametersText() == decoded.jsonParametersText(), sourceLocation: sourceLocation)
    }
    return (decoded, try decoded.jsonParametersText())
}

extension SpecMessageType {
    var rpcType: RPCType {
        switch self {
        case .request: .request
        case .response: .response
        case .notification: .notification
        }
    }
}

/// Expects `error` to equal `expected` in every field (`RPCError`'s `==` compares codes only).
func expectIdentical(_ error: RPCError, _ expected: RPCError, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(error.code == expected.code, sourceLocation: sourceLocation)
    #expect(error.path == expected.path, sourceLocation: sourceLocation)
    #expect(error.offset == expected.offset, sourceLocation: sourceLocation)
    #expect(error.detail == expected.detail, sourceLocation: sourceLocation)
}

/// Expects `body` to throw an `RPCError` equal to `expected` in every field.
func expectError<Result>(_ expected: RPCError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Result) {
    do {
        _ = try body()
        Issue.record("expected \(expected.code): \(expected), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as RPCError {
        expectIdentical(error, expected, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(expected.code): \(expected), \(error) was thrown", sourceLocation: sourceLocation)
    }
}
