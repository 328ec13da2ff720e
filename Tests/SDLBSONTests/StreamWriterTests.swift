import NIOCore
import SDLBSON
import Testing

@Suite struct StreamWriterTests {
    /// The begin/end writer produces exactly the bytes of the closure writer.
    @Test func sameBytesAsTheClosureWriter() throws {
        var expected = ByteBuffer()
        expected.writeInteger(UInt8(0xEE))  // something before the document
        expected.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "5.4.1")
            doc.appendInt64("mtu", 131_084)
            doc.appendDocument("nested") { inner in
                inner.appendBool("flag", true)
                inner.appendArray("matrix") { rows in
                    for row in 0..<12 {
                        rows.appendArray { items in
                            for column in 0..<row { items.appendInt32(Int32(row * column)) }
                        }
                    }
                }
                inner.appendDouble("ratio", -0.25)
            }
            doc.appendArray("names") { $0.appendString("TCP_WIFI"); $0.appendDocument { $0.appendNull("nothing") } }
            doc.appendInt32("hashId", -1)
        }

        var buffer = ByteBuffer()
        buffer.writeInteger(UInt8(0xEE))
        var writer = BSONStreamWriter(appendingTo: buffer)
        writer.appendString("5.4.1", forKey: "protocolVersion")
        writer.appendInt64(131_084, forKey: "mtu")
        writer.beginDocument(forKey: "nested")
        writer.appendBool(true, forKey: "flag")
        writer.beginArray(forKey: "matrix")
        #expect(writer.isInArray && writer.depth == 3)
        for row in 0..<12 {
            writer.beginArray(forKey: "ignored")
            for column in 0..<row { writer.appendInt32(Int32(row * column), forKey: "") }
            writer.end()
        }
        writer.end()
        writer.appendDouble(-0.25, forKey: "ratio")
        writer.end()
        let dynamicKey = String("names")
        writer.beginArray(forKey: dynamicKey)
        writer.appendString("TCP_WIFI", forKey: dynamicKey)
        writer.beginDocument(forKey: "")
        writer.appendNull(forKey: "nothing")
        writer.end()
        writer.end()
        writer.appendInt32(-1, forKey: "hashId")
        #expect(writer.depth == 1 && !writer.isInArray)
        buffer = writer.finish()
        #expect(Array(buffer.readableBytesView) == Array(expected.readableBytesView))
        var reader = buffer
        reader.moveReaderIndex(forwardBy: 1)
        let document = try BSONDocument(validating: reader)
        #expect(document["nested"]?.documentValue?["matrix"]?.arrayValue?.count == 12)
    }

    @Test func generatedValuesAndEmptyDocument() throws {
        let writer = BSONStreamWriter(appendingTo: ByteBuffer())
        let empty = writer.finish()
        #expect(Array(empty.readableBytesView) == [5, 0, 0, 0, 0])

        var tree = BSONStreamWriter(appendingTo: ByteBuffer())
        tree.append(.array([.int32(1), .string("two"), .document(["three": .double(3)])]), forKey: "values")
        let bytes = tree.finish()
        let document = try BSONDocument(validating: bytes)
        #expect(document.canonicalExtendedJSON == #"{"values": [{"$numberInt": "1"}, "two", {"three": {"$numberDouble": "3.0"}}]}"#)
    }

    /// The writer writes into the buffer it was given (after its bytes, whatever its reader
    /// index), through the same output as the closure writer, growing it as needed.
    @Test func appendsToTheGivenBufferAndGrowsThroughManyReallocations() throws {
        var buffer = ByteBuffer()
        buffer.writeBytes([0xAA, 0xBB, 0xCC])
        buffer.moveReaderIndex(forwardBy: 2)
        var writer = BSONStreamWriter(appendingTo: buffer)
        writer.beginArray(forKey: "items")
        for i in 0..<10_000 { writer.appendString("item \(i)", forKey: "") }
        writer.end()
        let written = writer.finish()

        var expected = ByteBuffer()
        expected.writeBytes([0xAA, 0xBB, 0xCC])
        expected.moveReaderIndex(forwardBy: 2)
        expected.writeBSONDocument { doc in
            doc.appendArray("items") { array in for i in 0..<10_000 { array.appendString("item \(i)") } }
        }
        #expect(written.readerIndex == 2)
        #expect(Array(written.readableBytesView) == Array(expected.readableBytesView))
        #expect(written.readableBytes > 100_000)
    }
}
