import CLibBSON
import NIOCore
import SDLTestSupport
import Testing

@testable import SDLBSON

@Suite struct WriterTests {
    @Test func startServiceACKBytesAndBackFilledLengths() throws {
        var buffer = ByteBuffer()
        buffer.writeString("prefix")  // the document is appended after existing bytes
        let written = buffer.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "5.4.1")
            doc.appendInt32("hashId", 0x1234567)
            doc.appendInt64("mtu", 131_084)
            doc.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI") }
            doc.appendArray("audioServiceTransports") {
                $0.appendInt32(1)
                $0.appendInt32(2)
            }
        }
        #expect(buffer.readString(length: 6) == "prefix")
        #expect(written == buffer.readableBytes)
        // The same document built by libbson, the reference implementation.
        let reference = LibBSON.build([
            "protocolVersion": .string("5.4.1"),
            "hashId": .int32(0x1234567),
            "mtu": .int64(131_084),
            "secondaryTransports": .array([.string("TCP_WIFI")]),
            "audioServiceTransports": .array([.int32(1), .int32(2)]),
        ])
        #expect(Array(buffer.readableBytesView) == LibBSON.bytes(reference))
        bson_destroy(reference)
        #expect(buffer.getInteger(at: buffer.readerIndex, endianness: .little, as: Int32.self) == Int32(written))
        let document = try BSONDocument(validating: buffer)
        #expect(document["mtu"]?.int64Value == 131_084)
        #expect(document["hashId"]?.int32Value == 0x1234567)
        #expect(document["hashId"]?.int64Value == nil)
        #expect(document["hashId"]?.integerValue == 0x1234567)
        #expect(document["protocolVersion"]?.stringValue == "5.4.1")
        #expect(document["audioServiceTransports"]?.arrayValue?.compactMap(\.int32Value) == [1, 2])
        #expect(document["missing"] == nil)
    }

    @Test func sharedAndSlicedBuffersAreNotWrittenThrough() throws {
        var buffer = ByteBuffer()
        buffer.writeString("abc")
        let snapshot = buffer
        buffer.writeBSONDocument { $0.appendInt32("a", 1) }
        #expect(snapshot.readableBytes == 3)
        #expect(snapshot.getString(at: snapshot.readerIndex, length: 3) == "abc")
        #expect(buffer.readableBytes == 3 + 12)

        var big = ByteBuffer()
        big.writeString("0123456789")
        var slice = try #require(big.getSlice(at: 2, length: 3))
        slice.writeBSONDocument { $0.appendString("k", "v") }
        #expect(big.getString(at: 0, length: 10) == "0123456789")
        #expect(slice.getString(at: 0, length: 3) == "234")
        slice.moveReaderIndex(forwardBy: 3)
        let document = try BSONDocument(validating: slice)
        #expect(document["k"]?.stringValue == "v")
    }

    @Test func growsFromAnEmptyBufferThroughManyReallocations() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendArray("items") { items in
                for i in 0..<2_000 {
                    items.appendDocument { item in
                        item.appendInt32("i", Int32(i))
                        item.appendString("s", String(repeating: "x", count: i % 50))
                    }
                }
            }
            doc.appendString("after", "end")
        }
        let document = try BSONDocument(validating: buffer)
        let items = try #require(document["items"]?.arrayValue)
        #expect(items.count == 2_000)
        #expect(items.map { $0.documentValue!["i"]!.int32Value! } == (0..<2_000).map { Int32($0) })
        #expect(document["after"]?.stringValue == "end")
    }

    @Test func nestedViewsShareStorageAndCompareByBytes() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendDocument("a") { $0.appendInt32("x", 1) }
            doc.appendDocument("b") { $0.appendInt32("x", 1) }
            doc.appendArray("c") { _ in }
        }
        let document = try BSONDocument(validating: buffer)
        let a = try #require(document["a"]?.documentValue)
        let b = try #require(document["b"]?.documentValue)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a.bytes == [12, 0, 0, 0, 0x10, 0x78, 0, 1, 0, 0, 0, 0])
        #expect(Array(a.buffer.readableBytesView) == a.bytes)
        #expect(document["c"]?.arrayValue?.isEmpty == true)
        #expect(document.count == 3)
        #expect(a != document)
    }

    @Test func arrayKeysBeyondNine() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendArray("a") { array in
                for i in 0..<1005 { array.appendInt32(Int32(i)) }
            }
        }
        let array = try #require(try BSONDocument(validating: buffer)["a"]?.arrayValue)
        let keys = array.map(\.key)
        #expect(keys.count == 1005)
        #expect(keys == (0..<1005).map { String($0) })
        #expect(array.map { $0.int32Value! } == (0..<1005).map { Int32($0) })
    }

    @Test func throwingBodyLeavesNoPartialDocument() {
        struct Stop: Error {}
        var buffer = ByteBuffer()
        buffer.writeString("keep")
        #expect(throws: Stop.self) {
            try buffer.writeBSONDocument { (doc: inout BSONDocumentWriter) throws(Stop) in
                doc.appendInt32("a", 1)
                throw Stop()
            }
        }
        #expect(buffer.readableBytes == 4)
    }

    /// Every typed writer call against the corpus's canonical bytes.
    @Test func everyElementTypeMatchesTheCorpusBytes() throws {
        func written(_ body: (inout BSONDocumentWriter) -> Void) -> String {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument(body)
            return buffer.hex.uppercased()
        }
        let oid = try #require(BSONObjectID(hexString: "56e1fc72e0c917e9c4714161"))
        #expect(written { $0.appendDouble("d", 1.0) } == "10000000016400000000000000F03F00")
        #expect(written { $0.appendString("a", "b") } == "0E00000002610002000000620000")
        #expect(written { $0.appendDocument("x") { $0.appendString("a", "b") } } == "160000000378000E0000000261000200000062000000")
        #expect(written { doc in doc.appendArray("a") { $0.appendInt32(10) } } == "140000000461000C0000001030000A0000000000")
        #expect(written { $0.appendBinary("x", BSONBinary(subtype: .generic, bytes: [0xFF, 0xFF])) } == "0F0000000578000200000000FFFF00")
        #expect(written { $0.appendBinary("x", subtype: .binaryOld, bytes: [0xFF, 0xFF]) } == "13000000057800060000000202000000FFFF00")
        #expect(written { $0.appendUndefined("a") } == "0800000006610000")
        #expect(written { $0.appendObjectID("a", oid) } == "1400000007610056E1FC72E0C917E9C471416100")
        #expect(written { $0.appendBool("b", true) } == "090000000862000100")
        #expect(written { $0.appendDateTime("a", BSONDateTime(millisecondsSinceEpoch: 1_356_351_330_501)) } == "10000000096100C5D8D6CC3B01000000")
        #expect(written { $0.appendNull("a") } == "080000000A610000")
        #expect(
            written { $0.appendRegularExpression("a", BSONRegularExpression(pattern: "abc", options: "im")) }
                == "0F0000000B610061626300696D0000"
        )
        #expect(written { $0.appendDBPointer("a", BSONDBPointer(ref: "b", id: oid)) } == "1A0000000C610002000000620056E1FC72E0C917E9C471416100")
        #expect(written { $0.appendJavaScript("a", "b") } == "0E0000000D610002000000620000")
        #expect(written { $0.appendSymbol("a", "b") } == "0E0000000E610002000000620000")
        #expect(
            written { $0.appendJavaScriptWithScope("a", code: "abcd") { $0.appendInt32("x", 1) } }
                == "210000000F6100190000000500000061626364000C000000107800010000000000"
        )
        #expect(written { $0.appendInt32("i", -2_147_483_648) } == "0C0000001069000000008000")
        #expect(written { $0.appendTimestamp("a", BSONTimestamp(timestamp: 123_456_789, increment: 42)) } == "100000001161002A00000015CD5B0700")
        #expect(written { $0.appendInt64("a", Int64.min) } == "10000000126100000000000000008000")
        #expect(written { $0.appendDecimal128("d", try! BSONDecimal128("1")) } == "180000001364000100000000000000000000000000403000")
        #expect(written { $0.appendMinKey("a") } == "08000000FF610000")
        #expect(written { $0.appendMaxKey("a") } == "080000007F610000")
    }

    /// The writer reproduces every valid SDL peer vector byte for byte, given the vector's key
    /// order and field types.
    @Test func writerReproducesPeerVectors() throws {
        let vectors = try Vectors.controlPayloads().filter { ["bson_document", "bson_control_payload"].contains($0.kind) }
        var reproduced = 0
        for vector in vectors where vector.expect.valid != false {
            let id = vector.id
            let fields = try #require(vector.expect.fields, "\(id): fields")
            let keyOrder = try #require(vector.expect.keyOrder, "\(id): keyOrder")
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { doc in
                for field in Self.document(fields: fields, keyOrder: keyOrder, id).fields {
                    doc.append(field.key, field.value)
                }
            }
            #expect(buffer.hex == vector.hex, "\(id)")
            reproduced += 1
        }
        #expect(reproduced == 29)
    }

    /// The document a vector's typed fields describe, its keys in `keyOrder`.
    static func document(fields: [String: BSONFieldExpectation], keyOrder: [String], _ id: String) -> BSONOrderedDocument {
        #expect(Set(keyOrder) == Set(fields.keys), "\(id): keyOrder names the fields")
        return BSONOrderedDocument(fields: keyOrder.compactMap { key in
            fields[key].map { BSONOrderedDocument.Field(key: key, value: Self.value($0, "\(id).\(key)")) }
        })
    }

    /// The value a vector's typed field describes.
    static func value(_ expected: BSONFieldExpectation, _ id: String) -> BSONValue {
        switch expected {
        case .int32(let value): .int32(value)
        case .int64(let value): .int64(value)
        case .double(let value): .double(value)
        case .string(let value): .string(value)
        case .bool(let value): .bool(value)
        case .array(let items): .array(items.map { Self.value($0, id + "[]") })
        case .document(let fields, let keyOrder): .document(Self.document(fields: fields, keyOrder: keyOrder, id))
        }
    }

    @Test func valueTreeRoundTripsAndRejectsNULKeys() throws {
        let tree: BSONOrderedDocument = [
            "s": .string("x\u{0}y"),
            "n": .document(["a": .array([.int32(1), .int64(2), .double(-0.0), .null])]),
            "r": .regularExpression(BSONRegularExpression(pattern: "^a", options: "xi")),
        ]
        let document = try tree.encoded()
        #expect(BSONOrderedDocument(document)["s"] == .string("x\u{0}y"))
        #expect(BSONOrderedDocument(document)["n"] == tree["n"])
        // The tree's canonical form sorts regex options; the wire keeps what was written.
        #expect(document["r"]?.regularExpressionValue?.options == "xi")
        #expect(BSONOrderedDocument(document)["r"] == .regularExpression(BSONRegularExpression(pattern: "^a", options: "ix")))
        let bad: BSONOrderedDocument = ["a\u{0}b": .int32(1)]
        #expect(throws: BSONError.self) { try bad.encoded() }
        let badRegex: BSONOrderedDocument = ["a": .regularExpression(BSONRegularExpression(pattern: "a\u{0}", options: ""))]
        #expect(throws: BSONError.self) { try badRegex.encoded() }
    }

    @Test func extendedJSONDoublesAndDates() throws {
        func canonical(_ d: Double) -> String {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { $0.appendDouble("d", d) }
            return BSONDocument(_unchecked: buffer).canonicalExtendedJSON
        }
        #expect(canonical(1.0) == #"{"d": {"$numberDouble": "1.0"}}"#)
        #expect(canonical(-1e12) == #"{"d": {"$numberDouble": "-1000000000000.0"}}"#)
        #expect(canonical(1e16) == #"{"d": {"$numberDouble": "1.0E+16"}}"#)
        #expect(canonical(1.2345678921232e18) == #"{"d": {"$numberDouble": "1.2345678921232E+18"}}"#)
        #expect(canonical(2.5e-5) == #"{"d": {"$numberDouble": "2.5E-5"}}"#)
        #expect(canonical(.leastNonzeroMagnitude) == #"{"d": {"$numberDouble": "5.0E-324"}}"#)
        #expect(canonical(-.infinity) == #"{"d": {"$numberDouble": "-Infinity"}}"#)
        // Every formatted double parses back to the same bits.
        var rng = SplitMix64(seed: 7)
        for _ in 0..<10_000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            let text = canonical(d)
            let parsed = try BSONDocument(extendedJSON: text)
            #expect(parsed["d"]?.doubleValue?.bitPattern == d.bitPattern, "\(text)")
        }
        var buffer = ByteBuffer()
        buffer.writeBSONDocument {
            $0.appendDateTime("a", BSONDateTime(millisecondsSinceEpoch: 951_782_400_000))  // 2000-02-29
            $0.appendDateTime("b", BSONDateTime(millisecondsSinceEpoch: 253_402_300_799_999))
        }
        #expect(
            BSONDocument(_unchecked: buffer).relaxedExtendedJSON
                == #"{"a": {"$date": "2000-02-29T00:00:00Z"}, "b": {"$date": "9999-12-31T23:59:59.999Z"}}"#
        )
        let offset = try BSONDocument(extendedJSON: #"{"a": {"$date": "2000-02-29T01:30:00.5+01:30"}}"#)
        #expect(offset["a"]?.dateTimeValue?.millisecondsSinceEpoch == 951_782_400_500)
    }

    @Test func decimal128Strings() throws {
        #expect(try BSONDecimal128("1.0").description == "1.0")
        #expect(try BSONDecimal128("-0.000001").description == "-0.000001")
        #expect(try BSONDecimal128("0.0000001").description == "1E-7")
        #expect(try BSONDecimal128("1234567890123456789012345678901234E+10").description == "1.234567890123456789012345678901234E+43")
        #expect(try BSONDecimal128("1E6144").description == "1.000000000000000000000000000000000E+6144")
        #expect(try BSONDecimal128("-inf").description == "-Infinity")
        #expect(throws: BSONError.self) { try BSONDecimal128("1E6145") }
        #expect(throws: BSONError.self) { try BSONDecimal128("123456789012345678901234567890123456") }
        #expect(throws: BSONError.self) { try BSONDecimal128("1E-6177") }
        #expect(throws: BSONError.self) { try BSONDecimal128("1_0") }
    }
}
