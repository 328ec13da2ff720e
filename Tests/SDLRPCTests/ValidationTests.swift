import NIOCore
import SDLProtocol
import SDLRPC
import Testing

/// One failing case (at least) per constraint kind, each with the exact error text.
@Suite("Spec validation")
struct ValidationTests {
    static func climate(_ members: String) -> String {
        #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{\#(members)}}}"#
    }

    static func decodeError<T: RPCStruct>(_ type: T.Type, _ json: String) throws -> RPCError {
        try #require(throws: RPCError.self) { try T(jsonParameters: json) }
    }

    @Test("violations name the parameter path", arguments: [
        // mandatory
        (#"{"moduleData":{"climateControlData":{}}}"#, "moduleData.moduleType: missing mandatory parameter", "missingParameter"),
        // maxvalue / minvalue, Integer
        (climate(#""fanSpeed":101"#), "moduleData.climateControlData.fanSpeed: above maxvalue 100", "valueOutOfRange"),
        (climate(#""fanSpeed":-1"#), "moduleData.climateControlData.fanSpeed: below minvalue 0", "valueOutOfRange"),
        // unknown enum value
        (climate(#""ventilationMode":"SIDEWAYS""#), #"moduleData.climateControlData.ventilationMode: unknown VentilationMode value "SIDEWAYS""#, "unknownEnumValue"),
        // duplicate
        (climate(#""fanSpeed":1,"fanSpeed":2"#), "moduleData.climateControlData.fanSpeed: parameter appears more than once", "duplicateParameter"),
        // type
        (climate(#""acEnable":"yes""#), "moduleData.climateControlData.acEnable: expected Boolean, found string (at byte 71)", "typeMismatch"),
        (#"{"moduleData":[]}"#, "moduleData: expected object, found array (at byte 14)", "typeMismatch"),
    ])
    func setInteriorVehicleData(json: String, message: String, code: String) throws {
        let error = try Self.decodeError(SDLSetInteriorVehicleDataRequest.self, json)
        #expect(error.description == message)
        #expect(error.code.name == code)
    }

    @Test("Float ranges, string lengths, array sizes, array elements")
    func sendLocation() throws {
        let cases: [(String, String, RPCError.Code)] = [
            (#"{"longitudeDegrees":180.5}"#, "longitudeDegrees: above maxvalue 180", .valueOutOfRange),
            (#"{"latitudeDegrees":-90.25}"#, "latitudeDegrees: below minvalue -90", .valueOutOfRange),
            (#"{"locationName":"\#(String(repeating: "x", count: 501))"}"#, "locationName: above maxlength 500 (501 characters)", .lengthOutOfRange),
            (#"{"locationName":""}"#, "locationName: below minlength 1 (0 characters)", .lengthOutOfRange),
            (#"{"addressLines":["a","b","c","d","e"]}"#, "addressLines: above maxsize 4 (5 elements)", .sizeOutOfRange),
            (#"{"addressLines":["a","b",""]}"#, "addressLines[2]: below minlength 1 (0 characters)", .lengthOutOfRange),
            (#"{"addressLines":["a",7]}"#, "addressLines[1]: expected String, found number (at byte 21)", .typeMismatch),
            (#"{"locationImage":{"value":"x.png"}}"#, "locationImage.imageType: missing mandatory parameter", .missingParameter),
        ]
        for (json, message, code) in cases {
            let error = try Self.decodeError(SDLSendLocationRequest.self, json)
            #expect(error.description == message)
            #expect(error.code == code)
        }
    }

    @Test("minsize and nested array paths")
    func minSize() throws {
        let json = #"{"serviceData":{"serviceType":"WEATHER","serviceID":"w1","weatherServiceData":{"location":{},"alerts":[{"title":"a"},{"regions":[]}]}}}"#
        let error = try Self.decodeError(SDLOnAppServiceData.self, json)
        #expect(error.description == "serviceData.weatherServiceData.alerts[1].regions: below minsize 1 (0 elements)")
        #expect(error.code == .sizeOutOfRange)
    }

    @Test("validate() on demand, on values built in code")
    func onDemand() throws {
        var climate = SDLClimateControlData(fanSpeed: 100)
        try climate.validate()
        climate.fanSpeed = 101
        expectError(RPCError(.valueOutOfRange, path: [.key("fanSpeed")], "above maxvalue 100")) { try climate.validate() }
        let request = SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, climateControlData: climate))
        #expect(request.validationErrors().map(\.description) == ["moduleData.climateControlData.fanSpeed: above maxvalue 100"])

        // NaN and infinity are violations, and JSON cannot carry them.
        let temperature = SDLTemperature(unit: .celsius, value: .nan)
        #expect(temperature.validationErrors().map(\.description) == ["value: not a finite number"])
        let unchecked = RPCCodingOptions(validate: false)
        #expect(throws: RPCError.self) { try temperature.jsonParametersText(options: unchecked) }

        // Every violation is listed, in parameter order, up to the limit.
        var many = SDLSendLocationRequest(longitudeDegrees: 500, latitudeDegrees: -500, locationName: "")
        many.addressLines = Array(repeating: "", count: 6)
        #expect(many.validationErrors().map(\.description) == [
            "longitudeDegrees: above maxvalue 180", "latitudeDegrees: below minvalue -90",
            "locationName: below minlength 1 (0 characters)", "addressLines: above maxsize 4 (6 elements)",
            "addressLines[0]: below minlength 1 (0 characters)", "addressLines[1]: below minlength 1 (0 characters)",
            "addressLines[2]: below minlength 1 (0 characters)", "addressLines[3]: below minlength 1 (0 characters)",
            "addressLines[4]: below minlength 1 (0 characters)", "addressLines[5]: below minlength 1 (0 characters)",
        ])
        #expect(many.validationErrors(limit: 2).count == 2)
    }

    @Test("encoding validates first unless told not to")
    func encodingValidates() throws {
        let request = SDLSetInteriorVehicleDataRequest(
            moduleData: SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 200)))
        expectError(RPCError(.valueOutOfRange, path: [.key("moduleData"), .key("climateControlData"), .key("fanSpeed")], "above maxvalue 100")) {
            try request.payload(correlationID: 1)
        }
        let unchecked = RPCCodingOptions(validate: false)
        let text = try request.jsonParametersText(options: unchecked)
        #expect(text == #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":200}}}"#)
        #expect(try SDLSetInteriorVehicleDataRequest(jsonParameters: text, options: unchecked) == request)
    }

    @Test("unknown enum values decode as .unknown with validation off and round-trip")
    func unknownEnumRoundTrip() throws {
        let unchecked = RPCCodingOptions(validate: false)
        let json = #"{"moduleData":{"moduleType":"HOVERCRAFT"}}"#
        let request = try SDLSetInteriorVehicleDataRequest(jsonParameters: json, options: unchecked)
        #expect(request.moduleData.moduleType == .unknown("HOVERCRAFT"))
        #expect(request.validationErrors().map(\.description) == [#"moduleData.moduleType: unknown ModuleType value "HOVERCRAFT""#])
        #expect(try request.jsonParametersText(options: unchecked) == json)
    }

    @Test("unknown parameters are kept in order and re-emitted after the known ones")
    func unknownParameters() throws {
        let json = #"{"future":{"a":[1,2.5,"x",null,true,{"b":-9000000000}]},"serviceID":"s1","zeta":[]}"#
        let request = try SDLUnpublishAppServiceRequest(jsonParameters: json)
        #expect(request.serviceID == "s1")
        #expect(request.unknownParameters.map(\.key) == ["future", "zeta"])
        #expect(request.unknownParameters["future"] == .object(["a": .array([.int32(1), .double(2.5), .string("x"), .null, .bool(true), .object(["b": .int64(-9_000_000_000)])])]))
        #expect(try request.jsonParametersText() == #"{"serviceID":"s1","future":{"a":[1,2.5,"x",null,true,{"b":-9000000000}]},"zeta":[]}"#)
        // The fixture with `moduleIds` (not a spec param of this request) keeps it as unknown.
        let release = try SDLReleaseInteriorVehicleDataModuleRequest(jsonParameters: #"{"moduleType":"CLIMATE","moduleIds":"A0A"}"#)
        #expect(release.moduleId == nil)
        #expect(release.unknownParameters["moduleIds"] == .string("A0A"))
        // Syntax errors inside unknown values still name their path.
        let error = try #require(throws: RPCError.self) {
            try SDLUnpublishAppServiceRequest(jsonParameters: #"{"serviceID":"s1","future":{"a":[1,tru]}}"#)
        }
        #expect(error.pathString == "future.a[1]")
        #expect(error.code == .malformedInput)
    }
}
