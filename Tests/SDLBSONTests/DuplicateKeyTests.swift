import NIOCore
import Testing

@testable import SDLBSON

/// One policy for repeated keys per API, and the same bytes give the documented outcome
/// everywhere: the validated view keeps every element and looks up the first; every API that
/// builds a typed value refuses the repeat with `duplicateKey` at the second occurrence.
@Suite struct DuplicateKeyTests {
    /// `{a: 1, f0…: …, b: 2, a: 3}`: the second "a" is at 18 without filler, 18 + 9 × `filler`
    /// with it (each filler element `f0`…`f9` takes 8 bytes, `f10`… 9).
    static func repeatedTopLevelKey(filler: Int = 0) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendInt32("a", 1)
            for i in 0..<filler { doc.appendInt32("f\(i)", Int32(i)) }
            doc.appendInt32("b", 2)
            doc.appendInt32("a", 3)
        }
        return buffer
    }

    /// The offset of the second "a" in ``repeatedTopLevelKey(filler:)``.
    static func repeatOffset(filler: Int) -> Int {
        18 + (0..<filler).reduce(0) { $0 + ($1 < 10 ? 8 : 9) }
    }

    /// `{name: {key: first, key: second}}` with the embedded value's type byte `type`: the
    /// repeated key is at 18.
    static func repeatedNestedKey(_ name: String, _ key: String, _ values: (Int32, Int32), type: UInt8) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendDocument(name) { inner in
                inner.appendInt32(key, values.0)
                inner.appendInt32(key, values.1)
            }
        }
        buffer.setInteger(type, at: 4)
        return buffer
    }

    /// `{d: {x: 1, x: 2}}`: the nested repeat is at 18.
    static var repeatedNestedKey: ByteBuffer { repeatedNestedKey("d", "x", (1, 2), type: 0x03) }

    /// `{list: [3, 4]}` with both items keyed "0" (readers ignore array keys).
    static var arrayWithRepeatedKeys: ByteBuffer { repeatedNestedKey("list", "0", (3, 4), type: 0x04) }

    func duplicateKeyError(_ body: () throws -> Any) -> BSONError? {
        do {
            _ = try body()
            return nil
        } catch let error as BSONError {
            return error
        } catch DecodingError.dataCorrupted(let context) {
            return context.underlyingError as? BSONError
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func theViewKeepsEveryElementAndLooksUpTheFirst() throws {
        for filler in [0, 40] {
            let document = try BSONDocument(validating: Self.repeatedTopLevelKey(filler: filler))
            #expect(document.count == 3 + filler)
            #expect(document.map(\.key).filter { $0 == "a" }.count == 2)
            #expect(document.compactMap { $0.hasKey("a") ? $0.int32Value : nil } == [1, 3], "wire order")
            #expect(document["a"]?.int32Value == 1, "first match")
            var seen: [Int32] = []
            document.forEachElement { if $0.hasKey("a") { seen.append($0.int32Value!) } }
            #expect(seen == [1, 3])
            #expect(try BSONDocument(validating: Self.repeatedNestedKey)["d"]?.documentValue?["x"]?.int32Value == 1)
        }
    }

    @Test func validationRefusesRepeatsOnRequestAtTheSecondOccurrence() throws {
        for filler in [0, 5, 40] {
            let error = duplicateKeyError { try BSONDocument(validating: Self.repeatedTopLevelKey(filler: filler), rejectingDuplicateKeys: true) }
            #expect(error?.code == .duplicateKey)
            #expect(error?.offset == Self.repeatOffset(filler: filler))
            #expect(error?.detail == "key \"a\" appears more than once in one document")
        }
        let nested = duplicateKeyError { try BSONDocument(validating: Self.repeatedNestedKey, rejectingDuplicateKeys: true) }
        #expect(nested?.code == .duplicateKey)
        #expect(nested?.offset == 18)
        // Array keys are not keys anyone reads.
        let array = try BSONDocument(validating: Self.arrayWithRepeatedKeys, rejectingDuplicateKeys: true)
        #expect(array["list"]?.arrayValue?.map(\.int32Value) == [3, 4])

        // The streaming reader: the same refusal, nothing consumed.
        var stream = Self.repeatedTopLevelKey()
        stream.writeBytes([1, 2, 3])
        let streamed = duplicateKeyError { try stream.readBSONDocument(rejectingDuplicateKeys: true) as Any }
        #expect(streamed?.code == .duplicateKey)
        #expect(streamed?.offset == 18)
        #expect(stream.readerIndex == 0)
    }

    /// Names equal as Strings (canonical equivalence) but not as bytes are different names
    /// (the binary side is in CodableKeyedDecodingTests).
    @Test func jsonNamesCompareAsBytes() throws {
        #expect(try BSONDocument(extendedJSON: #"{"\#u{e9}": 1, "e\#u{301}": 2}"#).count == 2)
        let members = (0..<40).map { "\"f\($0)\": 0" }.joined(separator: ", ")
        #expect(try BSONDocument(extendedJSON: "{\"\u{e9}\": 1, " + members + ", \"e\u{301}\": 2}").count == 42)
    }

    struct AB: Codable, Equatable {
        var a: Int32
        var b: Int32
    }

    @Test func theDecoderRefusesARepeatedKeyInAKeyedContainer() throws {
        for filler in [0, 40] {
            let buffer = Self.repeatedTopLevelKey(filler: filler)
            let fromBytes = duplicateKeyError { try BSONDecoder().decode(AB.self, from: buffer) }
            #expect(fromBytes?.code == .duplicateKey)
            #expect(fromBytes?.offset == Self.repeatOffset(filler: filler))
            let document = try BSONDocument(validating: buffer)
            let fromView = duplicateKeyError { try BSONDecoder().decode(AB.self, from: document) }
            #expect(fromView?.code == .duplicateKey)
            #expect(fromView?.offset == Self.repeatOffset(filler: filler))
            let dictionary = duplicateKeyError { try BSONDecoder().decode([String: Int32].self, from: buffer) }
            #expect(dictionary?.code == .duplicateKey)
            #expect(dictionary?.offset == Self.repeatOffset(filler: filler))
        }
        struct Nested: Codable { var d: [String: Int32] }
        let nested = duplicateKeyError { try BSONDecoder().decode(Nested.self, from: Self.repeatedNestedKey) }
        #expect(nested?.code == .duplicateKey)
        #expect(nested?.offset == 18)
        // Arrays are read by position.
        struct List: Codable, Equatable { var list: [Int32] }
        #expect(try BSONDecoder().decode(List.self, from: Self.arrayWithRepeatedKeys) == List(list: [3, 4]))
        // Without repeats, nothing changes.
        var distinct = ByteBuffer()
        distinct.writeBSONDocument { $0.appendInt32("a", 1); $0.appendInt32("b", 2) }
        #expect(try BSONDecoder().decode(AB.self, from: distinct) == AB(a: 1, b: 2))
    }

    @Test func extendedJSONRefusesARepeatedNameAtItsOffsetInTheText() throws {
        let cases: [(text: String, offset: Int, detail: String)] = [
            (#"{"a": 1, "a": 2}"#, 9, #"top level: the name "a" appears more than once in one object"#),
            (#"{"d": {"x": 1, "x": 2}}"#, 15, #"d: the name "x" appears more than once in one object"#),
            (#"{"n": {"$numberInt": "1", "$numberInt": "2"}}"#, 26, #"n: the name "$numberInt" appears more than once in one object"#),
            (#"{"b": {"$binary": {"base64": "", "subType": "00", "base64": ""}}}"#, 50, #"b: the name "base64" appears more than once in one object"#),
        ]
        for (text, offset, detail) in cases {
            let error = duplicateKeyError { try BSONDocument(extendedJSON: text) }
            #expect(error?.code == .duplicateKey, "\(text)")
            #expect(error?.offset == offset, "\(text)")
            #expect(error?.detail == detail, "\(text)")
        }
        // Many members (a hash set past 16): the repeat is still found, at its offset.
        let members = (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")
        let text = "{" + members + ", \"k7\": 0}"
        let error = duplicateKeyError { try BSONDocument(extendedJSON: text) }
        #expect(error?.code == .duplicateKey)
        #expect(error?.offset == text.utf8.count - 8)
        // What the view writes for a document with a repeated key does not read back.
        let written = try BSONDocument(validating: Self.repeatedTopLevelKey()).canonicalExtendedJSON
        #expect(written == #"{"a": {"$numberInt": "1"}, "b": {"$numberInt": "2"}, "a": {"$numberInt": "3"}}"#)
        #expect(duplicateKeyError { try BSONDocument(extendedJSON: written) }?.code == .duplicateKey)
    }

    /// `count` distinct keys k0, k1, …, validated with repeats refused: the key index's work.
    func operations(distinctKeys count: Int, key: (Int) -> String = { "k\($0)" }) throws -> Int {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            for i in 0..<count { doc.appendBool(key(i), true) }
        }
        let document = try BSONDocument(validating: buffer, rejectingDuplicateKeys: true)
        #expect(document.count == count)
        let (index, repeated) = document._bytes.withBase {
            _BSONKeyIndex.build($0, from: 4, end: document._length, keepingTable: false)
        }
        #expect(repeated == nil)
        return index.operations
    }

    /// The repeated-key check grows linearly: comparing every key with every other was
    /// 1.25 × 10^9 comparisons for 50,000 keys.
    @Test func theRepeatedKeyCheckIsLinear() throws {
        let small = try operations(distinctKeys: 5_000)
        let large = try operations(distinctKeys: 50_000)
        #expect(small >= 5_000 && small <= 3 * 5_000)
        #expect(large >= 50_000 && large <= 3 * 50_000)
        #expect(large <= 12 * small, "10 times the keys, about 10 times the work")
        // Keys that all share one fingerprint (length, first, middle and last byte) are hashed
        // apart all the same: the fingerprint only pre-filters comparisons.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let colliding = try operations(distinctKeys: 3_000) { i in
            String(decoding: [UInt8(ascii: "a"), alphabet[i % 62], UInt8(ascii: "m"), alphabet[i / 62], UInt8(ascii: "z")], as: UTF8.self)
        }
        #expect(colliding <= 3 * 3_000)
        // A repeat among 50,000 keys is found, at its place.
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            for i in 0..<50_000 { doc.appendBool("k\(i)", true) }
            doc.appendBool("k49999", false)
        }
        let error = duplicateKeyError { try BSONDocument(validating: buffer, rejectingDuplicateKeys: true) }
        #expect(error?.code == .duplicateKey)
        #expect(error?.offset == buffer.readableBytes - 1 - 9)
    }

    /// A JSON object of 50,000 distinct names reads; a repeat at its end is found.
    @Test func extendedJSONWithManyNames() throws {
        let members = (0..<50_000).map { "\"k\($0)\": true" }.joined(separator: ", ")
        #expect(try BSONDocument(extendedJSON: "{" + members + "}").count == 50_000)
        let repeated = "{" + members + ", \"k0\": false}"
        let error = duplicateKeyError { try BSONDocument(extendedJSON: repeated) }
        #expect(error?.code == .duplicateKey)
        #expect(error?.offset == repeated.utf8.count - 12)
    }
}

/// BSONError compares by code alone (the shape of swift-asn1's ASN1Error); offset and detail
/// stay readable.
@Suite struct BSONErrorTests {
    @Test func equalityAndHashingConsiderOnlyTheCode() {
        let a = BSONError(.truncated, offset: 1, "one")
        let b = BSONError(.truncated, offset: 7, "another")
        let c = BSONError(.invalidUTF8, offset: 1, "one")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != c)
        #expect(b.offset == 7)
        #expect(b.detail == "another")
        #expect(Set([a, b, c]).count == 2)
    }

    /// The names are the stable strings the `sdl` tool prints.
    @Test func codeNamesAreStable() {
        let codes: [BSONError.Code] = [
            .truncated, .invalidDocumentLength, .invalidDocumentTerminator, .trailingBytes, .unterminatedCString,
            .invalidStringLength, .invalidUTF8, .invalidBoolean, .unknownElementType, .nestingTooDeep, .invalidBinaryLength,
            .invalidCodeWithScopeLength, .invalidKey, .duplicateKey, .invalidJSON, .invalidExtendedJSON, .invalidDecimal128,
        ]
        #expect(codes.map(\.name) == [
            "truncated", "invalidDocumentLength", "invalidDocumentTerminator", "trailingBytes", "unterminatedCString",
            "invalidStringLength", "invalidUTF8", "invalidBoolean", "unknownElementType", "nestingTooDeep", "invalidBinaryLength",
            "invalidCodeWithScopeLength", "invalidKey", "duplicateKey", "invalidJSON", "invalidExtendedJSON", "invalidDecimal128",
        ])
        #expect(codes.map(\.description) == codes.map(\.name))
        #expect(Set(codes).count == codes.count)
        #expect(BSONError(.duplicateKey, offset: 18, "x").description == "BSONError.duplicateKey at offset 18: x")
    }
}
