import Foundation
import NIOCore
import Testing

@testable import SDLBSON

/// Foundation's `Data` as BSON binary, though the library imports no Foundation.
@Suite struct CodableDataTests {
    struct Inner: Codable, Equatable { var blob: Data }
    struct Payload: Codable, Equatable {
        var data: Data
        var bytes: [UInt8]
        var empty: Data
        var present: Data?
        var absent: Data?
        var list: [Data]
        var inner: Inner
    }

    static let payload = Payload(
        data: Data([0x00, 0xFF, 0x10, 0x7F]),
        bytes: [9, 8, 7],
        empty: Data(),
        present: Data([1]),
        absent: nil,
        list: [Data([2, 3]), Data()],
        inner: Inner(blob: Data(repeating: 0xAB, count: 300))
    )

    @Test func dataEncodesAsGenericBinaryAndRoundTrips() throws {
        let document = try BSONEncoder().encode(Self.payload)
        #expect(document.map(\.key) == ["data", "bytes", "empty", "present", "list", "inner"])
        #expect(document["data"]?.binaryValue == BSONBinary(subtype: .generic, bytes: [0x00, 0xFF, 0x10, 0x7F]))
        #expect(document["bytes"]?.binaryValue == BSONBinary(subtype: .generic, bytes: [9, 8, 7]))
        #expect(document["empty"]?.binaryValue == BSONBinary(subtype: .generic, bytes: []))
        #expect(document["present"]?.binaryValue?.bytes == [1])
        #expect(document["list"]?.arrayValue?.map { $0.binaryValue?.bytes } == [[2, 3], []])
        #expect(document["inner"]?.documentValue?["blob"]?.binaryValue?.bytes == Array(repeating: 0xAB, count: 300))
        // Exactly the bytes a hand-written document with binary elements has.
        var expected = ByteBuffer()
        expected.writeBSONDocument { $0.appendBinary("data", bytes: [0x00, 0xFF, 0x10, 0x7F]) }
        struct One: Codable { var data: Data }
        #expect(try BSONEncoder().encodeBytes(One(data: Data([0x00, 0xFF, 0x10, 0x7F]))) == Array(expected.readableBytesView))

        #expect(try BSONDecoder().decode(Payload.self, from: document) == Self.payload)
    }

    @Test func dataDecodesFromAnyBinarySubtypeAndFromAnIntegerArray() throws {
        struct One: Codable, Equatable { var data: Data }
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { $0.appendBinary("data", subtype: .uuid, bytes: Array(0..<16)) }
        #expect(try BSONDecoder().decode(One.self, from: buffer).data == Data(0..<16))
        // What Data's own encode(to:) used to produce here: an array of int32.
        var array = ByteBuffer()
        array.writeBSONDocument { doc in
            doc.appendArray("data") { items in
                for byte in [Int32(5), 6, 255] { items.appendInt32(byte) }
            }
        }
        #expect(try BSONDecoder().decode(One.self, from: array).data == Data([5, 6, 255]))
        // Binary items are bytes: another item type is a typeMismatch with the item's path.
        struct Strings: Codable { var data: [String] }
        do {
            _ = try BSONDecoder().decode(Strings.self, from: buffer)
            Issue.record("binary decoded as [String]")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["data", "0"])
        }
    }
}
