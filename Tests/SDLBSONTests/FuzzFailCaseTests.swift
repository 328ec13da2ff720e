import NIOCore
import SDLBSON
import SDLTestSupport
import Testing

/// Every input the fuzzers found that broke the library, replayed (Fuzz/FailCases/).
@Suite struct FuzzFailCaseTests {
    /// Regular-expression options with a multi-byte character: sorting them for the canonical form
    /// sorted their UTF-8 bytes, which broke the character into U+FFFD replacements (each pass
    /// changed the bytes again). Options are now sorted by Unicode scalar.
    @Test func regexOptionsWithAMultibyteCharacter() throws {
        let bytes = try SharedData.packageFile("Fuzz/FailCases/FuzzBSON/regex-options-multibyte")
        let read = readInEveryLayout(bytes) { buffer in ReadResult { try BSONDocument(validating: buffer) } }
        let document = try #require(read.value, "\(read)")
        let tree = BSONOrderedDocument(document)
        let once = try tree.encoded()
        let twice = try BSONOrderedDocument(once).encoded()
        #expect(once.bytes == twice.bytes)
        guard case .regularExpression(let regex)? = tree["r"] else {
            Issue.record("no regex")
            return
        }
        #expect(regex.options == "\u{F2C8}")
        #expect(BSONRegularExpression(pattern: "", options: "x\u{F2C8}im").sortedOptions == "imx\u{F2C8}")
    }

    /// `wrapper-key-in-a-document-value` (a finding about FuzzBSON's invariant, not the library):
    /// a valid document whose value `dbref` is a document with the keys `$oid`, `$id`, … prints
    /// as canonical Extended JSON that reads back as a malformed `$oid` wrapper. Extended JSON v2
    /// has no escape for such keys and its parsers must take them as a wrapper with exactly the
    /// wrapper's keys, so the refusal is right; the top level reads as a document whatever its
    /// keys, and a lone well-formed wrapper key reads back as the wrapper's type with the same
    /// text. FuzzBSON now allows exactly these documents not to read back.
    @Test func aDocumentValueWithAWrapperKeyDoesNotReadBack() throws {
        let bytes = try SharedData.packageFile("Fuzz/FailCases/FuzzBSON/wrapper-key-in-a-document-value")
        let document = try BSONDocument(validating: ByteBuffer(bytes: bytes))
        let text = document.canonicalExtendedJSON
        #expect(
            text == #"{"dbref": {"$oid": "collection", "$id": {"$oid": "582469646e32ab156a22b59a"}, "a.\u000e": {"$numberInt": "1"}, "$c": {"$numberInt": "1"}}}"#)
        let error = #expect(throws: BSONError.self) { try BSONDocument(extendedJSON: text) }
        #expect(error?.code == .invalidExtendedJSON)
        #expect(error?.detail == "dbref: $oid must be the only key of its object")
        #expect(error?.offset == nil)

        let topLevel = try BSONDocument(extendedJSON: #"{"$oid": "collection", "b": 1}"#)
        #expect(BSONOrderedDocument(topLevel).fields.map(\.key) == ["$oid", "b"])
        var value = BSONOrderedDocument()
        value.append("$oid", .string("582469646e32ab156a22b59a"))
        var outer = BSONOrderedDocument()
        outer.append("a", .document(value))
        let lone = try BSONDocument(validating: outer.encoded().buffer)
        let reread = try BSONDocument(extendedJSON: lone.canonicalExtendedJSON)
        #expect(reread.canonicalExtendedJSON == lone.canonicalExtendedJSON)
        guard case .objectID? = BSONOrderedDocument(reread)["a"] else {
            Issue.record("a lone $oid key did not read back as an ObjectId")
            return
        }
    }
}
