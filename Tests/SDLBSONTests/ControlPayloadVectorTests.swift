import NIOCore
import SDLTestSupport
import Testing

@testable import SDLBSON

/// Every BSON vector of ../shared/vectors/control_payloads.json (kinds bson_document,
/// bson_control_payload, bson_le_int32|int64|double): decoded regardless of key order, each
/// typed field checked (int32 vs int64 vs double vs string vs bool vs array vs document), and
/// the invalid ones rejected with a typed error.
@Suite struct ControlPayloadVectorTests {
    static func vectors(kind prefix: String) throws -> [ControlPayloadVector] {
        try Vectors.controlPayloads().filter { $0.kind.hasPrefix(prefix) }
    }

    @Test func vectorsArePresent() throws {
        #expect(try Self.vectors(kind: "bson").count == 52)
    }

    /// Checks one element against a typed expectation from the vector file.
    static func expect(_ element: BSONElement, matches expected: BSONFieldExpectation, path: String) {
        switch expected {
        case .int32(let value):
            #expect(element.type == .int32, "\(path): want int32, got \(element.type)")
            #expect(element.int32Value == value, "\(path)")
        case .int64(let value):
            #expect(element.type == .int64, "\(path): want int64, got \(element.type)")
            #expect(element.int64Value == value, "\(path)")
        case .double(let value):
            #expect(element.type == .double, "\(path): want double, got \(element.type)")
            #expect(element.doubleValue == value, "\(path)")
        case .string(let value):
            #expect(element.stringValue == value, "\(path)")
        case .bool(let value):
            #expect(element.boolValue == value, "\(path)")
        case .array(let items):
            guard let array = element.arrayValue else {
                Issue.record("\(path): want array, got \(element.type)")
                return
            }
            let elements = Array(array)
            #expect(elements.count == items.count, "\(path): item count")
            for (i, (e, want)) in zip(elements, items).enumerated() { expect(e, matches: want, path: "\(path)[\(i)]") }
        case .document(let fields, let keyOrder):
            guard let document = element.documentValue else {
                Issue.record("\(path): want document, got \(element.type)")
                return
            }
            expect(document, fields: fields, path: path)
            #expect(document.map(\.key) == keyOrder, "\(path): key order")
        }
    }

    static func expect(_ document: BSONDocument, fields: [String: BSONFieldExpectation], path: String) {
        #expect(document.count == fields.count, "\(path): field count")
        for (key, want) in fields {
            guard let element = document[key] else {
                Issue.record("\(path).\(key) missing")
                continue
            }
            expect(element, matches: want, path: "\(path).\(key)")
        }
    }

    @Test func documentsAndControlPayloads() throws {
        var valid = 0
        var invalid = 0
        for vector in try Self.vectors(kind: "bson_document") + Self.vectors(kind: "bson_control_payload") {
            let id = vector.id
            let input = [UInt8](hex: vector.hex)
            // The same document, or the same error at the same offset, wherever the bytes sit.
            let read = readInEveryLayout(input, "\(id)") { buffer in ReadResult { try BSONDocument(validating: buffer) } }
            if vector.expect.valid == false {
                #expect(read.error is BSONError, "\(id) must be rejected with a BSONError: \(read)")
                invalid += 1
                continue
            }
            let document = try #require(read.value, "\(id): \(read)")
            Self.expect(document, fields: try #require(vector.expect.fields, "\(id): fields"), path: id)
            // The wire key order is kept by the view.
            if let order = vector.expect.keyOrder {
                #expect(document.map(\.key) == order, "\(id): key order")
            }
            // The value tree re-encodes to the same bytes.
            #expect(try BSONOrderedDocument(document).encoded().bytes == input, "\(id): re-encode")
            valid += 1
        }
        #expect(valid == 29)
        #expect(invalid == 5)
    }

    @Test func littleEndianPrimitives() throws {
        var checked = 0
        for vector in try Self.vectors(kind: "bson_le_") {
            let id = vector.id
            let raw = [UInt8](hex: vector.hex)
            let (type, expected): (BSONType, BSONValue) =
                switch try #require(vector.primitive, "\(id): value") {
                case .int32(let value): (.int32, .int32(value))
                case .int64(let value): (.int64, .int64(value))
                case .double(let value): (.double, .double(value))
                default: (.null, .null)
                }
            #expect(type != .null, "\(id): not a little-endian primitive")
            // The primitive as the value of a one-element document, the way BSON carries it, read
            // from every buffer layout.
            var document = ByteBuffer()
            document.writeInteger(Int32(4 + 1 + 2 + raw.count + 1), endianness: .little)
            document.writeBytes([type.rawValue, UInt8(ascii: "v"), 0] + raw + [0])
            let value = try readInEveryLayout(document.readableBytesView, "\(id)") { BSONOrderedDocument(try BSONDocument(validating: $0))["v"] }
            #expect(value == expected, "\(id)")
            checked += 1
        }
        #expect(checked == 18)
    }
}
