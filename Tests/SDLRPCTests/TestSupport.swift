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

    /// A JSON file decoded into `type`; a file of another shape fails with the decoder's path to
    /// the offending value.
    static func decode<Value: Decodable>(
        _ type: Value.Type, from relativePath: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Value {
        try JSONDecoder().decode(type, from: self.data(relativePath, sourceLocation: sourceLocation))
    }

    /// One vector of `vectors/rpc_binary_headers.json`: its id and payload hex (the rest of its
    /// fields are not needed here).
    struct HeaderVector: Decodable {
        var id: String
        var hex: String
    }

    /// The payload of the RPC binary header vector `id`.
    static func headerVectorPayload(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ByteBuffer {
        let vectors = try self.decode([HeaderVector].self, from: "vectors/rpc_binary_headers.json", sourceLocation: sourceLocation)
        let vector = try #require(vectors.first(where: { $0.id == id }), "no vector \(id)", sourceLocation: sourceLocation)
        return ByteBuffer(hex: vector.hex)
    }

    /// The spec, parsed once.
    static func spec(sourceLocation: SourceLocation = #_sourceLocation) throws -> Spec {
        try SpecParser.parse(Array(self.data("rpc_spec/MOBILE_API.xml", sourceLocation: sourceLocation)))
    }
}

/// A JSON value read from test data, for fixtures whose parameters the tests edit before feeding
/// them to the decoders. Numbers compare by value, objects regardless of key order.
enum JSONValue: Codable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .object(let object): try container.encode(object)
        case .array(let array): try container.encode(array)
        case .string(let string): try container.encode(string)
        case .number(let number): try container.encode(number)
        case .bool(let bool): try container.encode(bool)
        case .null: try container.encodeNil()
        }
    }

    /// The member `key` of an object; nil for other values and absent keys. Setting adds or
    /// replaces the member of an object.
    subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let object) = self else { return nil }
            return object[key]
        }
        set {
            guard case .object(var object) = self else { return }
            object[key] = newValue
            self = .object(object)
        }
    }

    /// The value with `transform` applied to every member of every object, inside out: it gets the
    /// key and the (already transformed) value and returns the member to keep.
    func mappingMembers(_ transform: (String, JSONValue) -> (String, JSONValue)) -> JSONValue {
        switch self {
        case .object(let object):
            var result: [String: JSONValue] = [:]
            for (key, value) in object {
                let (newKey, newValue) = transform(key, value.mappingMembers(transform))
                result[newKey] = newValue
            }
            return .object(result)
        case .array(let array):
            return .array(array.map { $0.mappingMembers(transform) })
        default:
            return self
        }
    }

    /// Compact JSON text with sorted keys.
    var text: String {
        get throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }
    }
}

/// Two JSON texts denote the same JSON value (numbers compared by value, key order ignored).
func sameJSON(_ lhs: String, _ rhs: String) throws -> Bool {
    try JSONDecoder().decode(JSONValue.self, from: Data(lhs.utf8)) == JSONDecoder().decode(JSONValue.self, from: Data(rhs.utf8))
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
