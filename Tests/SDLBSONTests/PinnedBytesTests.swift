import NIOCore
import Testing

@testable import SDLBSON

/// What the pinned storage (`_BSONBytes`) promises: a view reads the bytes it validated, whatever
/// later happens to the buffer it came from or to buffers sharing its storage, and writers write
/// only into storage they own.
@Suite struct PinnedBytesTests {
    static var sample: ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendString("s", "text")
            doc.appendInt32("n", 7)
            doc.appendDocument("d") { $0.appendBool("b", true) }
        }
        return buffer
    }

    @Test func aDocumentKeepsItsBytesWhenTheBufferItCameFromChanges() throws {
        var buffer = ByteBuffer(bytes: [0xEE, 0xEE])
        buffer.writeImmutableBuffer(Self.sample)
        buffer.moveReaderIndex(forwardBy: 2)
        let document = try BSONDocument(validating: buffer)
        let element = try #require(document["n"])
        // Overwrite the value in the original buffer, then release the original altogether.
        buffer.setInteger(Int32(99), at: buffer.readerIndex + element.offset + 3, endianness: .little)
        buffer.clear()
        buffer.writeBytes(Array(repeating: 0xFF, count: 64))
        #expect(document["n"]?.int32Value == 7)
        #expect(element.int32Value == 7)
        #expect(document.bytes == Array(Self.sample.readableBytesView))
        #expect(document.buffer.readableBytesView.elementsEqual(Self.sample.readableBytesView))
    }

    @Test func elementsAndNestedDocumentsOutliveTheirDocument() throws {
        var nested: BSONDocument?
        var element: BSONElement?
        do {
            let document = try BSONDocument(validating: Self.sample)
            nested = document["d"]?.documentValue
            element = document["s"]
        }
        #expect(nested?["b"]?.boolValue == true)
        #expect(element?.stringValue == "text")
    }

    @Test func writingIntoAnotherCopyOfTheStorageLeavesTheDocumentAlone() throws {
        // `slice` shares the document's storage; writing a document after it must copy first.
        let document = try BSONDocument(validating: Self.sample)
        var slice = document.buffer
        slice.moveWriterIndex(to: 0)
        slice.writeBSONDocument { $0.appendInt64("other", -1) }
        var stream = BSONStreamWriter(appendingTo: document.buffer)
        stream.appendString("more", forKey: "x")
        _ = stream.finish()
        #expect(document.bytes == Array(Self.sample.readableBytesView))
        #expect(try BSONDocument(validating: slice)["other"]?.int64Value == -1)
    }
}

/// The pull cursor SDLRPC's BSON reader is built on.
@Suite struct BSONCursorTests {
    /// `cursor.next()` (`#expect` cannot call a mutating method).
    static func step(_ cursor: inout _BSONCursor) -> Bool { cursor.next() }

    @Test func walksNestedDocumentsAndArraysInPlace() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "5.4.1")
            doc.appendDocument("fanSpeed") { $0.appendInt64("value", 1 << 40) }
            doc.appendArray("list") { $0.appendDouble(1.5); $0.appendBool(true) }
            doc.appendInt32("", -3)
        }
        var cursor = _BSONCursor(try BSONDocument(validating: buffer))
        #expect(cursor.type == .document && cursor.offset == 0)
        cursor.enter()
        #expect(!cursor.hasElement)

        #expect(Self.step(&cursor) == true)
        #expect(cursor.type == .string && cursor.key == "protocolVersion" && cursor.string == "5.4.1")
        #expect(cursor.keyEquals("protocolVersion") && !cursor.keyEquals("protocolVersio"))
        #expect(cursor.keyHash == 0x0F70_6C6E)
        #expect(cursor.offset == 4)

        #expect(Self.step(&cursor) == true)
        #expect(cursor.keyHash == 0x0866_7064, "the fingerprint sdl-rpc-gen emits for fanSpeed")
        cursor.enter()
        #expect(Self.step(&cursor) == true)
        #expect(cursor.key == "value" && cursor.int64 == 1 << 40)
        #expect(Self.step(&cursor) == false, "the end of the nested document")

        #expect(Self.step(&cursor) == true)
        #expect(cursor.key == "list" && cursor.type == .array)
        cursor.enter()
        #expect(Self.step(&cursor) == true)
        #expect(cursor.double == 1.5 && cursor.key == "0")
        #expect(Self.step(&cursor) == true)
        #expect(cursor.bool)
        cursor.clear()
        #expect(!cursor.hasElement)
        #expect(Self.step(&cursor) == false)

        #expect(Self.step(&cursor) == true)
        #expect(cursor.keyByteCount == 0 && cursor.keyHash == 0 && cursor.int32 == -3)
        #expect(Self.step(&cursor) == false, "the end of the top-level document")
    }

    @Test func aCursorOwnsItsBytes() throws {
        var cursor: _BSONCursor
        do {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { $0.appendString("k", "v") }
            cursor = _BSONCursor(try BSONDocument(validating: buffer))
        }
        cursor.enter()
        let copy = cursor
        #expect(Self.step(&cursor) == true)
        #expect(cursor.string == "v")
        var other = copy
        #expect(Self.step(&other) == true)
        #expect(other.key == "k")
    }
}
