import Foundation
import NIOCore
import SDLProtocol
import SDLRPC
import SDLRPCGenerator
import Testing

/// Test data is read in place from `<package root>/../shared/`; a missing file fails the test with
/// its path, it never skips.
enum SharedData {
    /// The folder of Package.swift, found by walking up from this file.
    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url
            }
            url = url.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }()

    static func url(_ relativePath: String) -> URL {
        packageRoot.deletingLastPathComponent().appendingPathComponent("shared").appendingPathComponent(relativePath)
    }

    static func data(_ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        let path = self.url(relativePath).standardizedFileURL.path
        return try #require(
            FileManager.default.contents(atPath: path), "missing test data: \(path)", sourceLocation: sourceLocation)
    }

    static func json(_ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Any {
        try JSONSerialization.jsonObject(with: self.data(relativePath, sourceLocation: sourceLocation), options: [.fragmentsAllowed])
    }

    /// The spec, parsed once.
    static func spec(sourceLocation: SourceLocation = #_sourceLocation) throws -> Spec {
        try SpecParser.parse(Array(self.data("rpc_spec/MOBILE_API.xml", sourceLocation: sourceLocation)))
    }
}

/// JSON text of a Foundation value, with sorted keys.
func jsonText(_ value: Any) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
}

/// Two JSON texts denote the same JSON value (numbers compared by value, key order ignored).
func sameJSON(_ lhs: String, _ rhs: String) throws -> Bool {
    let left = try JSONSerialization.jsonObject(with: Data(lhs.utf8), options: [.fragmentsAllowed])
    let right = try JSONSerialization.jsonObject(with: Data(rhs.utf8), options: [.fragmentsAllowed])
    return NSDictionary(dictionary: ["v": left]).isEqual(to: ["v": right])
}

extension ByteBuffer {
    init(hex: String) {
        var bytes: [UInt8] = []
        var iterator = hex.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(String([high, low]), radix: 16)!)
        }
        self.init(bytes: bytes)
    }

    var hexString: String {
        self.readableBytesView.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
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
