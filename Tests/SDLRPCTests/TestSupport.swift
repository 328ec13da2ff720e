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

/// Builds parameter objects for any struct or message of the spec from the spec model alone: every
/// optional parameter set, values that satisfy every constraint (at the edges: maxvalue, maxlength
/// in Unicode scalars with non-ASCII and escaped characters), arrays at `maxsize` while a value
/// budget lasts (then at the smallest size allowed), recursion cut at a depth.
struct ExampleBuilder {
    let spec: Spec
    /// Arrays get `maxsize` elements (or `unboundedCount` when the spec gives none) until this many
    /// values have been built for one message; after that, `minsize` (at least 1).
    var valueBudget = 20_000
    var unboundedCount = 3
    /// Below this depth only mandatory parameters are set (ends `VideoStreamingCapability` recursion).
    var maxDepth = 8
    /// Longest string built for an unbounded or very long `maxlength`.
    var maxStringLength = 80

    private var built = 0

    init(spec: Spec) {
        self.spec = spec
    }

    mutating func parameters(of function: SpecFunction) -> RPCValue {
        self.built = 0
        return self.object(function.params, depth: 1)
    }

    mutating func object(_ params: [SpecParam], depth: Int) -> RPCValue {
        var object = RPCObject()
        for param in params where param.mandatory || depth < self.maxDepth {
            object.append(key: param.name, value: self.value(param, depth: depth))
        }
        return .object(object)
    }

    mutating func value(_ param: SpecParam, depth: Int) -> RPCValue {
        guard param.isArray else {
            return self.scalar(param, depth: depth, salt: 0)
        }
        let preferred = param.maxSize ?? self.unboundedCount
        let count = self.built < self.valueBudget ? preferred : max(param.minSize ?? 1, 1)
        return .array((0..<min(count, param.maxSize ?? count)).map { self.scalar(param, depth: depth + 1, salt: $0) })
    }

    mutating func scalar(_ param: SpecParam, depth: Int, salt: Int) -> RPCValue {
        self.built += 1
        switch param.type {
        case .boolean:
            return .bool(salt % 2 == 0)
        case .integer:
            let value = Int64(param.maxValueText ?? param.minValueText ?? "42")!
            if let int32 = Int32(exactly: value), !param.needsInt64 {
                return .int32(int32)
            }
            return .int64(value)
        case .float:
            return .double(param.maxValue ?? param.minValue ?? 1.25)
        case .string:
            let length = max(param.effectiveMinLength, min(param.maxLength ?? 20, self.maxStringLength))
            return .string(Self.string(scalars: length))
        case .enumeration(let name):
            let elements = self.spec.enumNamed(name)!.elements
            return .string(elements[(param.name.utf8.count + salt) % elements.count].name)
        case .structure(let name):
            return self.object(self.spec.structNamed(name)!.params, depth: depth + 1)
        }
    }

    /// A string of exactly `scalars` Unicode scalars mixing ASCII, 2-, 3- and 4-byte UTF-8 and
    /// characters JSON must escape.
    static func string(scalars: Int) -> String {
        let alphabet: [Unicode.Scalar] = ["a", "é", "€", "😀", "\"", "\\", "\n", "/", "Z", "\u{01}"]
        var text = String.UnicodeScalarView()
        for index in 0..<scalars {
            text.append(alphabet[index % alphabet.count])
        }
        return String(text)
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
