import Foundation
import NIOCore
import Testing

@testable import SDLBSON

/// Every BSON vector of ../shared/vectors/control_payloads.json (kinds bson_document,
/// bson_control_payload, bson_le_int32|int64|double): decoded regardless of key order, each
/// typed field checked (int32 vs int64 vs double vs string vs bool vs array vs document), and
/// the invalid ones rejected with a typed error.
@Suite struct ControlPayloadVectorTests {
    static var entries: [[String: Any]] {
        (SharedData.loadJSON(SharedData.controlPayloads) as? [[String: Any]]) ?? []
    }

    static func entries(kind prefix: String) -> [[String: Any]] {
        entries.filter { ($0["kind"] as? String)?.hasPrefix(prefix) == true }
    }

    @Test func vectorsArePresent() {
        #expect(
            Self.entries(kind: "bson").count >= 52,
            "missing test data: \(SharedData.controlPayloads.path) should hold the BSON control payload vectors"
        )
    }

    /// Checks one element against a typed expectation from the vector file.
    static func expect(_ element: BSONElement, matches spec: [String: Any], path: String) {
        let type = spec["type"] as! String
        switch type {
        case "int32":
            #expect(element.type == .int32, "\(path): want int32, got \(element.type)")
            #expect(element.int32Value.map(Int64.init) == (spec["value"] as? NSNumber)?.int64Value, "\(path)")
        case "int64":
            #expect(element.type == .int64, "\(path): want int64, got \(element.type)")
            #expect(element.int64Value == (spec["value"] as? NSNumber)?.int64Value, "\(path)")
        case "double":
            #expect(element.type == .double, "\(path): want double, got \(element.type)")
            #expect(element.doubleValue == (spec["value"] as? NSNumber)?.doubleValue, "\(path)")
        case "string":
            #expect(element.stringValue == spec["value"] as? String, "\(path)")
        case "bool":
            #expect(element.boolValue == (spec["value"] as? NSNumber)?.boolValue, "\(path)")
        case "array":
            guard let array = element.arrayValue else {
                Issue.record("\(path): want array, got \(element.type)")
                return
            }
            let items = spec["items"] as! [[String: Any]]
            let elements = Array(array)
            #expect(elements.count == items.count, "\(path): item count")
            for (i, (e, s)) in zip(elements, items).enumerated() { expect(e, matches: s, path: "\(path)[\(i)]") }
        case "document":
            guard let document = element.documentValue else {
                Issue.record("\(path): want document, got \(element.type)")
                return
            }
            expect(document, fields: spec["fields"] as! [String: [String: Any]], path: path)
        default:
            Issue.record("\(path): unknown expectation type \(type)")
        }
    }

    static func expect(_ document: BSONDocument, fields: [String: [String: Any]], path: String) {
        #expect(document.count == fields.count, "\(path): field count")
        for (key, spec) in fields {
            guard let element = document[key] else {
                Issue.record("\(path).\(key) missing")
                continue
            }
            expect(element, matches: spec, path: "\(path).\(key)")
        }
    }

    @Test func documentsAndControlPayloads() throws {
        var valid = 0
        var invalid = 0
        for entry in Self.entries(kind: "bson_document") + Self.entries(kind: "bson_control_payload") {
            let id = entry["id"] as! String
            let input = bytes(hex: entry["hex"] as! String)
            let expectation = entry["expect"] as! [String: Any]
            if expectation["valid"] as? Bool == false {
                #expect(throws: BSONError.self, "\(id) must be rejected") { try BSONDocument(validating: input) }
                invalid += 1
                continue
            }
            let document = try BSONDocument(validating: input)
            Self.expect(document, fields: expectation["fields"] as! [String: [String: Any]], path: id)
            // The wire key order is kept by the view.
            if let order = expectation["keyOrder"] as? [String] {
                #expect(document.map(\.key) == order, "\(id): key order")
            }
            // The value tree re-encodes to the same bytes.
            #expect(try BSONOrderedDocument(document).encoded().bytes == input, "\(id): re-encode")
            valid += 1
        }
        print("control payload vectors: \(valid) valid decoded, \(invalid) invalid rejected")
        #expect(valid == 29)
        #expect(invalid == 5)
    }

    @Test func littleEndianPrimitives() throws {
        var checked = 0
        for entry in Self.entries(kind: "bson_le_") {
            let id = entry["id"] as! String
            let raw = bytes(hex: entry["hex"] as! String)
            let value = (entry["expect"] as! [String: Any])["value"] as! NSNumber
            // Read each primitive as the value of a one-element document, the way BSON carries it.
            var buffer = ByteBuffer()
            switch entry["kind"] as! String {
            case "bson_le_int32":
                buffer.writeBSONDocument { $0.appendInt32("v", 0) }
                buffer.setBytes(raw, at: 7)
                let document = try BSONDocument(validating: buffer)
                #expect(document["v"]?.int32Value == value.int32Value, "\(id)")
            case "bson_le_int64":
                buffer.writeBSONDocument { $0.appendInt64("v", 0) }
                buffer.setBytes(raw, at: 7)
                let document = try BSONDocument(validating: buffer)
                #expect(document["v"]?.int64Value == value.int64Value, "\(id)")
            case "bson_le_double":
                buffer.writeBSONDocument { $0.appendDouble("v", 0) }
                buffer.setBytes(raw, at: 7)
                let document = try BSONDocument(validating: buffer)
                #expect(document["v"]?.doubleValue == value.doubleValue, "\(id)")
            default:
                Issue.record("unknown kind in \(id)")
            }
            checked += 1
        }
        #expect(checked == 18)
    }
}
