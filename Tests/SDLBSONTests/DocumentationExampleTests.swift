import NIOCore
import SDLBSON
import Testing

/// The code of SDLBSON.docc's getting-started article, run.
@Suite struct DocumentationExampleTests {
    @Test func gettingStarted() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "5.4.1")
            doc.appendInt64("mtu", 131_072)
            doc.appendArray("videoServiceTransports") { $0.appendInt32(2); $0.appendInt32(1) }
        }
        let document = try BSONDocument(validating: buffer)
        #expect(document["protocolVersion"]?.stringValue == "5.4.1")
        #expect(document["mtu"]?.integerValue == 131_072)
        #expect(document.map(\.key) == ["protocolVersion", "mtu", "videoServiceTransports"])
        let text = document.extendedJSON()
        #expect(text.contains("\"$numberLong\": \"131072\""))
        #expect(document.relaxedExtendedJSON.contains("131072"))
        #expect(try BSONDocument(extendedJSON: text) == document)

        struct Forecast: Codable, Equatable { var hour: Int32; var temperature: Double }
        let bson = try BSONEncoder().encode(Forecast(hour: 7, temperature: 21.5))
        #expect(try BSONDecoder().decode(Forecast.self, from: bson) == Forecast(hour: 7, temperature: 21.5))
    }
}
