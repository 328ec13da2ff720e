import NIOCore
import SDLBSON
import SDLTestSupport
import Testing

/// The shared test helpers do what the vector tests rely on: were the awkward layouts plain
/// buffers, or the chunkings to drop bytes, every test built on them would pass for nothing.
@Suite struct TestSupportTests {
    static let bytes: [UInt8] = [0x0C, 0x00, 0x00, 0x00, 0x10, 0x61, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00]

    @Test func awkwardLayoutsHoldTheBytesAmongOthers() {
        let plain = BufferLayout.plain.buffer(Self.bytes)
        #expect(plain.readerIndex == 0 && plain.bytes == Self.bytes)

        let afterPrefix = BufferLayout.afterConsumedPrefix.buffer(Self.bytes)
        #expect(afterPrefix.bytes == Self.bytes)
        #expect(afterPrefix.readerIndex == 7)
        #expect(afterPrefix.withVeryUnsafeBytes { Array($0.prefix(7)) } == [UInt8](repeating: 0xA5, count: 7))
        // The storage goes on after the readable bytes.
        #expect(afterPrefix.capacity >= 7 + Self.bytes.count + 9)

        let slice = BufferLayout.sliceOfLargerBuffer.buffer(Self.bytes)
        #expect(slice.bytes == Self.bytes)
        #expect(slice.readerIndex == 0)
        #expect(slice.capacity == Self.bytes.count)
        #expect(slice.storageCapacity >= 7 + Self.bytes.count + 9, "a slice of a larger allocation")

        #expect(BufferLayout.awkward == [.afterConsumedPrefix, .sliceOfLargerBuffer])
    }

    @Test func readResultsCompareErrorsByEveryField() {
        let atFour = ReadResult<Int> { throw BSONError.invalidLengthForTest(offset: 4) }
        let atFive = ReadResult<Int> { throw BSONError.invalidLengthForTest(offset: 5) }
        // BSONError's own == looks at the code alone; a ReadResult must not.
        #expect(atFour.error as? BSONError == atFive.error as? BSONError)
        #expect(atFour != atFive)
        #expect(atFour == ReadResult<Int> { throw BSONError.invalidLengthForTest(offset: 4) })
        #expect(ReadResult { 7 } == .value(7))
        #expect(ReadResult { 7 } != ReadResult { 8 })
        #expect(atFour.value == nil && ReadResult { 7 }.error == nil)
    }

    @Test func readInEveryLayoutReportsALayoutThatDiffers() {
        withKnownIssue {
            // A reader that looks at storage before the reader index sees the 0xA5 prefix.
            readInEveryLayout(Self.bytes) { buffer in buffer.getInteger(at: 0, as: UInt8.self) }
        }
        #expect(readInEveryLayout(Self.bytes) { $0.bytes } == Self.bytes)
    }

    @Test func chunkingsCoverTheStreamEveryWay() {
        let stream = Array(0..<UInt8(10))
        let runs = Array(chunkings(of: stream))
        // Whole, byte by byte, 9 splits, then whole and halves in each of the 2 awkward layouts.
        #expect(runs.count == 2 + 9 + 4)
        #expect(runs.map(\.name).prefix(3) == ["whole", "byte by byte", "split at 1"])
        #expect(runs.map(\.name).suffix(4) == [
            "whole, after a consumed prefix", "halves, after a consumed prefix",
            "whole, slice of a larger buffer", "halves, slice of a larger buffer",
        ])
        for (name, chunks) in runs {
            #expect(chunks.flatMap(\.bytes) == stream, "\(name)")
        }
        #expect(runs[1].chunks.count == 10)
        #expect(runs[14].chunks.map(\.readerIndex) == [0, 0])
        #expect(runs[11].chunks.map(\.readerIndex) == [7])
        // A long stream is cut at every offset near its ends and at every 509th between.
        #expect(Array(chunkings(of: [UInt8](repeating: 0, count: 10_000))).count == 2 + (2048 + 2048 + 11) + 4)
    }

    @Test func hexSpellsAndReadsBytes() {
        #expect([UInt8](hex: "0d00 FF\n7a") == [0x0D, 0x00, 0xFF, 0x7A])
        #expect([0x0D, 0x00, 0xFF, 0x7A].hex == "0d00ff7a")
        #expect(ByteBuffer(hex: "abcd").hex == "abcd")
        withKnownIssue {
            _ = [UInt8](hex: "0g")
        }
        withKnownIssue {
            _ = [UInt8](hex: "abc")
        }
    }

    @Test func splitMix64FollowsTheReferenceGenerator() {
        // The reference implementation's first outputs for seeds 0 and 42.
        var zero = SplitMix64(seed: 0)
        #expect([zero.next(), zero.next()] == [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4])
        var fortyTwo = SplitMix64(seed: 42)
        #expect([fortyTwo.next(), fortyTwo.next()] == [0xBDD7_3226_2FEB_6E95, 0x28EF_E333_B266_F103])
    }

    @Test func missingTestDataFailsNamingThePath() throws {
        try withKnownIssue {
            _ = try SharedData.bytes("vectors/no-such-file.json")
        } matching: { issue in
            "\(issue)".contains("no-such-file.json")
        }
    }
}

extension BSONError {
    /// A BSON error with a fixed code and detail at `offset`.
    fileprivate static func invalidLengthForTest(offset: Int) -> BSONError {
        BSONError(.invalidDocumentLength, offset: offset, "test")
    }
}
