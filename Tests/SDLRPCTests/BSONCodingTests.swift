import NIOCore
import SDLBSON
import SDLProtocol
import SDLRPC
import Testing

/// RPC parameters as BSON (protocol version 5): wire types, tolerance on read, errors.
@Suite("BSON parameters")
struct BSONCodingTests {
    static func climate(_ fanSpeed: (inout BSONDocumentWriter) -> Void) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendDocument("moduleData") { module in
                module.appendString("moduleType", "CLIMATE")
                module.appendDocument("climateControlData") { fanSpeed(&$0) }
            }
        }
        return buffer
    }

    @Test("Integer params are int32, crc is int64, Float params are doubles")
    func wireTypes() throws {
        let response = SDLGetFileResponse(success: true, resultCode: .success, crc: 4_294_967_295)
        let document = try BSONDocument(validating: try response.bsonParameters())
        #expect(document["crc"]?.type == .int64 && document["crc"]?.int64Value == 4_294_967_295)
        #expect(document["success"]?.type == .bool)
        #expect(document["resultCode"]?.stringValue == "SUCCESS")

        let location = try SDLSendLocationRequest(jsonParameters: #"{"latitudeDegrees":42,"longitudeDegrees":-71.0592,"timeStamp":{"hour":3}}"#)
        let sent = try BSONDocument(validating: try location.bsonParameters())
        #expect(sent["latitudeDegrees"]?.type == .double && sent["latitudeDegrees"]?.doubleValue == 42)
        #expect(sent["timeStamp"]?.documentValue?["hour"]?.type == .int32)
        #expect(try SDLSendLocationRequest(bsonParameters: try location.bsonParameters()) == location)
    }

    @Test("Integer params accept int64 and integral doubles that fit; fractions and overflow are refused with their path")
    func integerTolerance() throws {
        func fanSpeed(_ write: @escaping (inout BSONDocumentWriter) -> Void) throws -> Int32? {
            try SDLSetInteriorVehicleDataRequest(bsonParameters: Self.climate(write)).moduleData.climateControlData?.fanSpeed
        }
        #expect(try fanSpeed { $0.appendInt32("fanSpeed", 50) } == 50)
        #expect(try fanSpeed { $0.appendInt64("fanSpeed", 50) } == 50)
        #expect(try fanSpeed { $0.appendDouble("fanSpeed", 50.0) } == 50)
        let fraction = try #require(throws: RPCError.self) { try fanSpeed { $0.appendDouble("fanSpeed", 1.5) } }
        #expect(fraction.code == .notAnInteger)
        #expect(fraction.pathString == "moduleData.climateControlData.fanSpeed")
        let wide = try #require(throws: RPCError.self) { try fanSpeed { $0.appendInt64("fanSpeed", 3_000_000_000) } }
        #expect(wide.code == .numberOutOfRange)
        let range = try #require(throws: RPCError.self) { try fanSpeed { $0.appendInt32("fanSpeed", 101) } }
        #expect(range.description.hasPrefix("moduleData.climateControlData.fanSpeed: above maxvalue 100"))
        let string = try #require(throws: RPCError.self) { try fanSpeed { $0.appendString("fanSpeed", "50") } }
        #expect(string.code == .typeMismatch)
        #expect(string.detail == "expected Integer, found BSON string")
        #expect(string.offset != nil)
    }

    @Test("unknown parameters round-trip through BSON with their wire types")
    func unknownParameters() throws {
        let json = #"{"moduleData":{"moduleType":"RADIO","futureThing":{"a":[1,2.5,"x",true,null,{"b":5000000000}]}},"extra":-7}"#
        let request = try SDLSetInteriorVehicleDataRequest(jsonParameters: json)
        let bson = try request.bsonParameters()
        let document = try BSONDocument(validating: bson)
        #expect(document["extra"]?.type == .int32)
        let back = try SDLSetInteriorVehicleDataRequest(bsonParameters: bson)
        #expect(back == request)
        #expect(try back.jsonParametersText() == request.jsonParametersText())
        // A generic tree too.
        let value = try RPCValue(jsonObject: json)
        #expect(try RPCValue(bsonObject: value.bsonDocument()) == value)
    }

    @Test("names BSON cannot carry, malformed and too deep documents are typed errors")
    func errors() throws {
        var request = SDLUnsubscribeWayPointsRequest()
        request.unknownParameters.append(key: "bad\u{0}key", value: .int32(1))
        let nul = try #require(throws: RPCError.self) { try request.bsonParameters() }
        #expect(nul.code == .invalidPayload)

        let truncated: [UInt8] = [0x10, 0, 0, 0, 0x08, 0x61, 0, 1, 0]
        let malformed = try #require(throws: RPCError.self) {
            try SDLUnsubscribeWayPointsRequest(bsonParameters: ByteBuffer(bytes: truncated))
        }
        #expect(malformed.code == .malformedInput)
        #expect(malformed.offset == 0)

        var deep = BSONStreamWriter(appendingTo: ByteBuffer())
        for _ in 0..<40 { deep.beginDocument(forKey: "x") }
        for _ in 0..<40 { deep.end() }
        let deepBytes = deep.finish()
        let tooDeep = try #require(throws: RPCError.self) {
            try SDLUnsubscribeWayPointsRequest(bsonParameters: deepBytes)
        }
        #expect(tooDeep.code == .nestingTooDeep)

        var binary = ByteBuffer()
        binary.writeBSONDocument { $0.appendBinary("blob", bytes: [1, 2]) }
        let notJSONShaped = try #require(throws: RPCError.self) { try SDLUnsubscribeWayPointsRequest(bsonParameters: binary) }
        #expect(notJSONShaped.code == .typeMismatch)
        #expect(notJSONShaped.pathString == "blob")
    }
}
