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
}
