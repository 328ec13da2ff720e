import NIOCore
import SDLTestSupport
import Testing

@testable import SDLBSON

/// Inputs the official SDL BSON library (bson_c_lib) mishandles, and other hostile shapes:
/// each must be a typed error with an offset, never a crash, hang or unbounded allocation.
@Suite struct HostileInputTests {
    /// The error validating the bytes `hexString` spells gives (nil if they are accepted), the
    /// same in every buffer layout: offsets count from the reader index.
    func rejection(
        _ hexString: String, limits: BSONLimits = .default, sourceLocation: SourceLocation = #_sourceLocation
    ) -> BSONError? {
        let read = readInEveryLayout([UInt8](hex: hexString), sourceLocation: sourceLocation) { buffer in
            ReadResult { try BSONDocument(validating: buffer, limits: limits) }
        }
        guard let error = read.error else { return nil }
        #expect(error is BSONError, "\(error)", sourceLocation: sourceLocation)
        return error as? BSONError
    }

    @Test func stringWithDeclaredLengthZero() {
        // {"a": string of length 0}: bson_c_lib reads it as an empty string.
        let error = rejection("0d000000 02 6100 00000000 00 00")
        #expect(error?.code == .invalidStringLength)
        #expect(error?.offset == 7)
    }

    @Test func documentLengthLargerThanBuffer() {
        let error = rejection("0f000000 10 6100 01000000 00")
        #expect(error?.code == .invalidDocumentLength)
        #expect(error?.offset == 0)
    }

    @Test func documentLengthSmallerThanBuffer() {
        let error = rejection("0b000000 10 6100 01000000 00 00")
        #expect(error?.code == .trailingBytes)
        #expect(error?.offset == 11)
        // Smaller than the content it holds: the terminator is then in the wrong place.
        let inner = rejection("0a000000 10 6100 01000000 00")
        #expect(inner?.code == .trailingBytes)
    }

    @Test func documentLengthNegativeOrTiny() {
        #expect(rejection("ffffffff 00")?.code == .invalidDocumentLength)
        #expect(rejection("04000000")?.code == .trailingBytes || rejection("04000000")?.code == .invalidDocumentLength)
        #expect(rejection("0500")?.code == .truncated)
        #expect(rejection("")?.code == .truncated)
    }

    @Test func unterminatedKey() {
        // Type byte then key bytes running into the document terminator.
        let error = rejection("09000000 10 616263 00")
        #expect(error?.code == .unterminatedCString)
        #expect(error?.offset == 5)
    }

    @Test func invalidUTF8InKeyAndString() {
        #expect(rejection("0c000000 10 c3 00 01000000 00")?.code == .invalidUTF8)
        // Overlong encoding of '/' and a UTF-16 surrogate are ill-formed UTF-8.
        #expect(rejection("0f000000 02 6100 03000000 c0af00 00")?.code == .invalidUTF8)
        #expect(rejection("10000000 02 6100 04000000 eda08000 00")?.code == .invalidUTF8)
        // Valid 4-byte UTF-8 is accepted.
        #expect(rejection("11000000 02 6100 05000000 f09f9880 00 00") == nil)
    }

    @Test func booleanOtherThanZeroOrOne() {
        let error = rejection("09000000 08 6200 02 00")
        #expect(error?.code == .invalidBoolean)
        #expect(error?.offset == 7)
    }

    @Test func unknownElementType() {
        let error = rejection("08000000 14 6100 00")
        #expect(error?.code == .unknownElementType)
        #expect(error?.offset == 4)
    }

    @Test func oldBinaryInnerLengthMismatch() {
        #expect(rejection("13000000 05 7800 06000000 02 03000000 ffff 00")?.code == .invalidBinaryLength)
        #expect(rejection("13000000 05 7800 06000000 02 02000000 ffff 00") == nil)
    }

    @Test func nestedLengthInconsistentWithParent() {
        // The subdocument claims to run past the parent's terminator.
        #expect(rejection("1800000003666f6f000f0000001062617200ffffff7f0000")?.code == .invalidDocumentLength)
    }

    static func nestingBomb(depth: Int) -> [UInt8] {
        // {"a": {"a": … {} …}}: `depth` document elements around an empty document, written
        // outside in (each wrapper adds 8 bytes: length, type, "a\0", terminator).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(5 + 8 * depth)
        for level in 0..<depth {
            let length = UInt32(5 + 8 * (depth - level))
            bytes += withUnsafeBytes(of: length.littleEndian, Array.init)
            bytes += [0x03, 0x61, 0x00]
        }
        bytes += [5, 0, 0, 0, 0]
        bytes += repeatElement(0, count: depth)
        return bytes
    }

    @Test func binaryNestingBombHitsTheDepthLimit() {
        let bomb = Self.nestingBomb(depth: 10_000)
        #expect(throws: BSONError.self) { try BSONDocument(validating: bomb) }
        do {
            _ = try BSONDocument(validating: bomb)
        } catch {
            #expect(error.code == .nestingTooDeep)
            // The 101st document starts 100 levels × 7 header bytes in.
            #expect(error.offset == 700)
        }
        // Exactly at the limit is accepted; one more is not; the limit is configurable.
        #expect((try? BSONDocument(validating: Self.nestingBomb(depth: 99))) != nil)
        #expect((try? BSONDocument(validating: Self.nestingBomb(depth: 100))) == nil)
        #expect((try? BSONDocument(validating: Self.nestingBomb(depth: 100), limits: BSONLimits(maximumNestingDepth: 101))) != nil)
        #expect((try? BSONDocument(validating: Self.nestingBomb(depth: 5), limits: BSONLimits(maximumNestingDepth: 5))) == nil)
    }

    @Test func extendedJSONNestingBombHitsTheDepthLimit() {
        let objects = String(repeating: "{\"a\":", count: 10_000) + "{}" + String(repeating: "}", count: 10_000)
        let arrays = "{\"a\":" + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
        for text in [objects, arrays] {
            do {
                _ = try BSONDocument(extendedJSON: text)
                Issue.record("nesting bomb accepted")
            } catch {
                #expect(error.code == .nestingTooDeep)
            }
        }
        // Unterminated bombs too (no closing brackets at all).
        #expect(throws: BSONError.self) { try BSONDocument(extendedJSON: String(repeating: "[", count: 100_000)) }
    }

    @Test func everyTruncationOfAValidDocumentIsRejected() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendString("s", "hello")
            doc.appendDocument("d") { $0.appendInt64("x", 1) }
            doc.appendArray("a") { $0.appendBool(true); $0.appendDouble(1.5) }
            doc.appendRegularExpression("r", BSONRegularExpression(pattern: "p", options: "i"))
        }
        let full = Array(buffer.readableBytesView)
        #expect((try? BSONDocument(validating: full)) != nil)
        for length in 0..<full.count {
            #expect((try? BSONDocument(validating: Array(full[..<length]))) == nil, "prefix of \(length) bytes accepted")
        }
    }

    @Test func streamingReadNeedsMoreBytesThenValidates() throws {
        var source = ByteBuffer()
        source.writeBSONDocument { $0.appendInt32("hashId", 7) }
        let full = Array(source.readableBytesView)
        var stream = ByteBuffer()
        for (i, byte) in full.enumerated() {
            #expect(try stream.readBSONDocument() == nil, "complete after \(i) bytes?")
            stream.writeInteger(byte)
        }
        let document = try #require(try stream.readBSONDocument())
        #expect(document["hashId"]?.int32Value == 7)
        #expect(stream.readableBytes == 0)
        var bad = ByteBuffer(bytes: [1, 0, 0, 0])
        #expect(throws: BSONError.self) { try bad.readBSONDocument() }
    }

    @Test func documentSizeLimit() throws {
        // A peer declaring a 1 GiB document is refused at once, not waited for.
        var stream = ByteBuffer(bytes: [0x00, 0x00, 0x00, 0x40, 0x03])
        do {
            _ = try stream.readBSONDocument()
            Issue.record("1 GiB declared length accepted")
        } catch {
            #expect(error.code == .invalidDocumentLength)
        }
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { $0.appendString("s", String(repeating: "x", count: 100)) }
        let small = BSONLimits(maximumNestingDepth: 100, maximumDocumentSize: 64)
        #expect(throws: BSONError.self) { try BSONDocument(validating: buffer, limits: small) }
        #expect((try? BSONDocument(validating: buffer)) != nil)
    }

    @Test func malformedJSONIsRejectedWithOffsets() {
        let cases: [(String, BSONError.Code)] = [
            ("", .invalidJSON),
            ("[]", .invalidJSON),
            ("{\"a\": 1,}", .invalidJSON),
            ("{\"a\": 01}", .invalidJSON),
            ("{\"a\": +1}", .invalidJSON),
            ("{\"a\": 1.}", .invalidJSON),
            ("{\"a\": \"\u{01}\"}", .invalidJSON),
            ("{\"a\": \"\\ud800\"}", .invalidJSON),
            ("{\"a\": tru}", .invalidJSON),
            ("{\"a\": 1} x", .invalidJSON),
            ("{'a': 1}", .invalidJSON),
            ("{\"a\" 1}", .invalidJSON),
            ("{\"a\": {\"$numberInt\": \"1.5\"}}", .invalidExtendedJSON),
            ("{\"a\": {\"$numberLong\": \"+1\"}}", .invalidExtendedJSON),
            ("{\"a\": {\"$numberDouble\": \"inf\"}}", .invalidExtendedJSON),
            ("{\"a\": {\"$numberDouble\": \"1e400\"}}", .invalidExtendedJSON),
            ("{\"a\": 1e400}", .invalidExtendedJSON),
            ("{\"a\": {\"$oid\": \"0123\"}}", .invalidExtendedJSON),
            ("{\"a\": {\"$binary\": {\"base64\": \"AAA\", \"subType\": \"00\"}}}", .invalidExtendedJSON),
            ("{\"a\": {\"$date\": \"2012-13-01T00:00:00Z\"}}", .invalidExtendedJSON),
            ("{\"a\": {\"$scope\": {}}}", .invalidExtendedJSON),
            ("{\"a\": {\"$numberDecimal\": \"1e99999\"}}", .invalidDecimal128),
            ("{\"a\\u0000b\": 1}", .invalidKey),
        ]
        for (text, code) in cases {
            do {
                let document = try BSONDocument(extendedJSON: text)
                Issue.record("accepted \(text) as \(document.canonicalExtendedJSON)")
            } catch {
                #expect(error.code == code, "\(text): \(error)")
                if error.code == .invalidJSON { #expect(error.offset != nil, "\(text)") }
            }
        }
    }
}
