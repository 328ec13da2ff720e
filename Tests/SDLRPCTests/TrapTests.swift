import Foundation
import NIOCore
import SDLBSON
import SDLProtocol
import SDLRPC
import SDLTestSupport
import Testing

/// One test (or more) per trap of the RPC spec that generated code easily falls into: number types,
/// string lengths, names that are not Swift identifiers, recursion, documentation-only constraints.
@Suite("RPC spec traps")
struct TrapTests {
    // MARK: Float is Double, Integer is integer, crc needs 64 bits

    @Test("Float params are Doubles and accept JSON integers")
    func floatParams() throws {
        let request = try SDLSendLocationRequest(jsonParameters: #"{"latitudeDegrees":42,"longitudeDegrees":-71.0592}"#)
        let latitude: Double? = request.latitudeDegrees
        #expect(latitude == 42.0)
        #expect(request.longitudeDegrees == -71.0592)
        #expect(try request.jsonParametersText() == #"{"longitudeDegrees":-71.0592,"latitudeDegrees":42.0}"#
            || request.jsonParametersText() == #"{"latitudeDegrees":42.0,"longitudeDegrees":-71.0592}"#)
    }

    @Test("Integer params reject fractions, accept integral 1.0 and 1e2, reject what does not fit")
    func integerParams() throws {
        func fanSpeed(_ text: String) throws -> Int32? {
            let json = #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":\#(text)}}}"#
            return try SDLSetInteriorVehicleDataRequest(jsonParameters: json).moduleData.climateControlData?.fanSpeed
        }
        #expect(try fanSpeed("50") == 50)
        #expect(try fanSpeed("50.0") == 50)
        #expect(try fanSpeed("5e1") == 50)
        #expect(try fanSpeed("-0") == 0)
        let fraction = try #require(throws: RPCError.self) { try fanSpeed("1.5") }
        #expect(fraction.code == .notAnInteger)
        #expect(fraction.description == "moduleData.climateControlData.fanSpeed: 1.5 is not an integer (at byte 71)")
        let tooBig = try #require(throws: RPCError.self) { try fanSpeed("3000000000") }
        #expect(tooBig.code == .numberOutOfRange)
        #expect(tooBig.pathString == "moduleData.climateControlData.fanSpeed")
        let huge = try #require(throws: RPCError.self) { try fanSpeed(String(repeating: "9", count: 5000)) }
        #expect(huge.code == .numberOutOfRange)
        #expect(try fanSpeed("-0") == 0)
        #expect(try fanSpeed("1500e-2") == 15)
        #expect(try fanSpeed("0.0") == 0)
        #expect(try fanSpeed("0.1e1") == 1)
        #expect(try fanSpeed("-0.0e5") == 0)
        // A zero mantissa is zero whatever the exponent.
        for zero in ["0e-2", "0.0e-3", "-0", "0e5", "0.000", "-0.0e-400", "0E+0"] {
            #expect(try fanSpeed(zero) == 0, "\(zero)")
        }
        #expect(try fanSpeed("1.0e2") == 100)
        #expect(try fanSpeed("1.5e1") == 15)
        #expect(try fanSpeed("100.0e-2") == 1)
        let notInteger = try #require(throws: RPCError.self) { try fanSpeed("1.05e1") }
        #expect(notInteger.code == .notAnInteger)
        #expect(notInteger.detail == "1.05e1 is not an integer")
        // Exactness is judged on the digits: these round to integral Doubles but are not integers.
        for inexact in ["150e-2", "99999999999999999999e-18", "1.0000000000000000001", "5e-1"] {
            let error = try #require(throws: RPCError.self) { try fanSpeed(inexact) }
            #expect(error.code == .notAnInteger, "\(inexact)")
        }
        for malformed in ["01", "-", "1.", "1e", "--1", "0x10"] {
            let error = try #require(throws: RPCError.self) { try fanSpeed(malformed) }
            #expect(error.code == .malformedInput, "\(malformed)")
        }
        let string = try #require(throws: RPCError.self) { try fanSpeed(#""50""#) }
        #expect(string.code == .typeMismatch)
        #expect(string.detail == "expected Integer, found string")
    }

    @Test("integral doubles are Integers up to ±2^53, in JSON and BSON alike")
    func integralDoubleRange() throws {
        // OnSystemRequest offset is a 64-bit Integer (maxvalue 100000000000); with validation off
        // the reader's own range is what decides.
        let unchecked = RPCCodingOptions(validate: false)
        func offset(json number: String) throws -> Int64? {
            try SDLOnSystemRequest(jsonParameters: #"{"requestType":"HTTP","offset":\#(number)}"#, options: unchecked).offset
        }
        func offset(bson number: Double) throws -> Int64? {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { document in
                document.appendString("requestType", "HTTP")
                document.appendDouble("offset", number)
            }
            return try SDLOnSystemRequest(bsonParameters: buffer, options: unchecked).offset
        }
        #expect(try offset(json: "9007199254740992.0") == 9_007_199_254_740_992)
        #expect(try offset(json: "-9.007199254740992e15") == -9_007_199_254_740_992)
        #expect(try offset(bson: 9_007_199_254_740_992) == 9_007_199_254_740_992)
        #expect(try offset(bson: -9_007_199_254_740_992) == -9_007_199_254_740_992)
        // 2^53 + 1 rounds to 2^53 as a Double: judged on the digits, it is out of range, not 2^53.
        for text in ["9007199254740993.0", "9007199254740994e0", "1e16", "-9007199254740993.0"] {
            let error = try #require(throws: RPCError.self) { try offset(json: text) }
            #expect(error.code == .numberOutOfRange, "\(text)")
            #expect(error.pathString == "offset")
        }
        // The next doubles above 2^53, and 2^62 (which BSON used to accept up to 2^63).
        for double in [9_007_199_254_740_994.0, -9_007_199_254_740_994.0, 4_611_686_018_427_387_904.0] {
            let error = try #require(throws: RPCError.self) { try offset(bson: double) }
            #expect(error.code == .numberOutOfRange, "\(double)")
            #expect(error.pathString == "offset")
        }
        // Plain integers are exact at any width: the range there is the parameter's Int64.
        #expect(try offset(json: "9007199254740993") == 9_007_199_254_740_993)
    }

    @Test("GetFile response crc is Int64 and reaches 4294967295")
    func crcNeeds64Bits() throws {
        let json = #"{"success":true,"resultCode":"SUCCESS","crc":4294967295}"#
        let response = try SDLGetFileResponse(jsonParameters: json)
        let crc: Int64? = response.crc
        #expect(crc == 4_294_967_295)
        #expect(try response.jsonParametersText() == json)
        let above = try #require(throws: RPCError.self) {
            try SDLGetFileResponse(jsonParameters: #"{"success":true,"resultCode":"SUCCESS","crc":4294967296}"#)
        }
        #expect(above.description == "crc: above maxvalue 4294967295")
        #expect(throws: RPCError.self) {
            try SDLGetFileResponse(jsonParameters: #"{"success":true,"resultCode":"SUCCESS","crc":-1}"#)
        }
        // A 32-bit writer would have to truncate; the writer protocol is told the width.
        var writer = WidthRecorder()
        response.encodeParameters(to: &writer)
        #expect(writer.widths == ["success": "bool", "resultCode": "string", "crc": "int64"])
    }

    // MARK: String length in Unicode scalars, minlength 1 by default

    @Test("string limits count Unicode scalars, not bytes or characters")
    func scalarLengths() throws {
        func locationName(_ name: String) throws -> SDLSendLocationRequest {
            var request = SDLSendLocationRequest()
            request.locationName = name
            try request.validate()
            return request
        }
        // maxlength 500: 500 four-byte scalars (2000 UTF-8 bytes) fit.
        _ = try locationName(String(repeating: "😀", count: 500))
        // 250 characters of two scalars each (e + combining acute) are 500 scalars: fit.
        _ = try locationName(String(repeating: "e\u{301}", count: 250))
        let over = try #require(throws: RPCError.self) { try locationName(String(repeating: "e\u{301}", count: 251)) }
        #expect(over.description == "locationName: above maxlength 500 (502 characters)")
        #expect(over.code == .lengthOutOfRange)
    }

    @Test("minlength defaults to 1: an empty string is invalid unless the spec allows it")
    func emptyStrings() throws {
        let empty = try #require(throws: RPCError.self) {
            try SDLUnpublishAppServiceRequest(jsonParameters: #"{"serviceID":""}"#)
        }
        #expect(empty.description == "serviceID: below minlength 1 (0 characters)")
        // Image.value has minlength="0".
        let image = try SDLImage(jsonParameters: #"{"value":"","imageType":"STATIC"}"#)
        #expect(image.value == "")
        // RdsData.CT has minlength 24.
        let rds = try #require(throws: RPCError.self) {
            try SDLRdsData(jsonParameters: #"{"CT":"2024-01-01T00:00:00"}"#)
        }
        #expect(rds.description == "CT: below minlength 24 (19 characters)")
    }

    // MARK: Names

    @Test("enum wire names that are not Swift identifiers")
    func enumNames() throws {
        #expect(SDLDimension._2d.wireName == "2D")
        #expect(SDLDimension(wireName: "3D") == ._3d)
        #expect(SDLDimension(wireName: "NO_FIX") == .noFix)
        #expect(SDLLanguage.enUs.wireName == "EN-US")
        #expect(SDLLanguage(wireName: "EN_US") == .unknown("EN_US"))
        #expect(SDLSamplingRate._8khz.wireName == "8KHZ")
        #expect(SDLBitsPerSample._8Bit.wireName == "8_BIT")
        #expect(SDLDisplayType.gen3_8Inch.wireName == "GEN3_8-INCH")
        #expect(SDLPredefinedLayout.nonMedia.wireName == "NON-MEDIA")
        // NONE must not be confused with Optional.none.
        let mode: SDLTimerMode? = .none_
        #expect(mode != nil)
        #expect(mode?.wireName == "NONE")
        let absent: SDLTimerMode? = .none
        #expect(absent == nil)
        // Keywords and the catch-all's name.
        #expect(SDLPRNDL.unknown_.wireName == "UNKNOWN")
        #expect(SDLPRNDL(wireName: "UNKNOWN") == .unknown_)
        #expect(SDLPRNDL(wireName: "WARP") == .unknown("WARP"))
        #expect(SDLPRNDL.unknown_ != SDLPRNDL.unknown("UNKNOWN"))
        #expect(SDLPRNDL.unknown_.isKnown)
        // Every known case maps back to itself through its wire name, in every enum we touch.
        for value in SDLLanguage.knownCases + [] {
            #expect(SDLLanguage(wireName: value.wireName) == value)
        }
        #expect(SDLLanguage.knownCases.count == 39)
    }

    @Test("LightName has numeric spec values but travels as its name")
    func lightName() throws {
        let state = SDLLightState(id: .frontLeftHighBeam, status: .on)
        #expect(try state.jsonParametersText() == #"{"id":"FRONT_LEFT_HIGH_BEAM","status":"ON"}"#)
        let number = try #require(throws: RPCError.self) {
            try SDLLightState(jsonParameters: #"{"id":0,"status":"ON"}"#)
        }
        #expect(number.description == "id: expected String, found number (at byte 6)")
    }

    @Test("keyword param names and type names that shadow the standard library and Foundation")
    func shadowingNames() throws {
        let format = SDLVideoStreamingFormat(protocol: .rtp, codec: .h264)
        #expect(format.protocol == .rtp)
        #expect(try format.jsonParametersText() == #"{"protocol":"RTP","codec":"H264"}"#)
        #expect(try SDLVideoStreamingFormat(jsonParameters: #"{"codec":"H265","protocol":"RAW"}"#) == SDLVideoStreamingFormat(protocol: .raw, codec: .h265))
        // Swift.Result, Foundation.CharacterSet and SDL's own types side by side.
        let result: Result<Int, RPCError> = .success(1)
        let sdlResult: SDLResult = .success
        let characters = CharacterSet.letters
        let sdlCharacters: SDLCharacterSet = .utf8
        #expect(result.isSuccess && sdlResult.wireName == "SUCCESS")
        #expect(characters.contains("a") && sdlCharacters.wireName == "UTF_8")
        #expect(SDLImage(value: "icon.png", imageType: .dynamic).value == "icon.png")
        #expect(SDLDimension.knownCases == [.noFix, ._2d, ._3d])
    }

    // MARK: Recursion, mandatory and deprecated

    @Test("VideoStreamingCapability contains an array of itself")
    func recursion() throws {
        let leaf = SDLVideoStreamingCapability(maxBitrate: 1000, scale: 1.5)
        let middle = SDLVideoStreamingCapability(maxBitrate: 2000, additionalVideoStreamingCapabilities: [leaf, leaf])
        let root = SDLVideoStreamingCapability(
            preferredResolution: SDLImageResolution(resolutionWidth: 800, resolutionHeight: 480),
            additionalVideoStreamingCapabilities: [middle])
        let json = try root.jsonParametersText()
        #expect(json == #"{"preferredResolution":{"resolutionWidth":800,"resolutionHeight":480},"additionalVideoStreamingCapabilities":[{"maxBitrate":2000,"additionalVideoStreamingCapabilities":[{"maxBitrate":1000,"scale":1.5},{"maxBitrate":1000,"scale":1.5}]}]}"#)
        #expect(try SDLVideoStreamingCapability(jsonParameters: json) == root)
        let invalid = SDLVideoStreamingCapability(additionalVideoStreamingCapabilities: [middle, SDLVideoStreamingCapability(maxBitrate: -1)])
        expectError(RPCError(.valueOutOfRange, path: [.key("additionalVideoStreamingCapabilities"), .index(1), .key("maxBitrate")], "below minvalue 0")) {
            try invalid.validate()
        }
        // Hostile nesting stops at the depth limit with a typed error, not a stack overflow.
        let deep = String(repeating: #"{"additionalVideoStreamingCapabilities":["#, count: 5000) + String(repeating: "]}", count: 5000)
        let error = try #require(throws: RPCError.self) {
            try SDLVideoStreamingCapability(jsonParameters: deep)
        }
        #expect(error.code == .nestingTooDeep)
    }

    @Test("SeatControlData.id is mandatory and deprecated at once")
    func mandatoryAndDeprecated() throws {
        let missing = try #require(throws: RPCError.self) {
            try SDLSeatControlData(jsonParameters: #"{"heatingEnabled":true}"#)
        }
        #expect(missing.description == "id: missing mandatory parameter")
        let data = try SDLSeatControlData(jsonParameters: #"{"id":"DRIVER","heatingEnabled":true}"#)
        #expect(data.id == .driver)
        #expect(try data.jsonParametersText() == #"{"id":"DRIVER","heatingEnabled":true}"#)
    }

    // MARK: Documentation-only constraints

    @Test("per-response resultCode subsets are documentation: pass-through codes decode")
    func resultCodeSubsets() throws {
        let spec = try SharedData.spec()
        let sendLocation = try #require(spec.functions.first(where: { $0.name == "SendLocation" && $0.messageType == .response }))
        let documented = try #require(sendLocation.params.first(where: { $0.name == "resultCode" })).documentedElements
        #expect(documented.contains("SUCCESS"))
        for code in ["UNSUPPORTED_REQUEST", "TIMED_OUT"] {
            #expect(!documented.contains(code))
            let response = try SDLSendLocationResponse(jsonParameters: #"{"success":false,"resultCode":"\#(code)"}"#)
            #expect(response.resultCode.wireName == code)
            #expect(response.resultCode.isKnown)
        }
        // A name Result itself does not define is still an error (but decodes with validation off).
        let unknown = try #require(throws: RPCError.self) {
            try SDLSendLocationResponse(jsonParameters: #"{"success":false,"resultCode":"ON_FIRE"}"#)
        }
        #expect(unknown.description == #"resultCode: unknown Result value "ON_FIRE""#)
        let lenient = try SDLSendLocationResponse(jsonParameters: #"{"success":false,"resultCode":"ON_FIRE"}"#, options: RPCCodingOptions(validate: false))
        #expect(lenient.resultCode == .unknown("ON_FIRE"))
        #expect(try lenient.jsonParametersText(options: RPCCodingOptions(validate: false)) == #"{"success":false,"resultCode":"ON_FIRE"}"#)
    }

    @Test("AppServiceType and PredefinedLayout are documentation: the params are plain strings")
    func documentationEnums() throws {
        let manifest = try SDLAppServiceManifest(jsonParameters: #"{"serviceType":"TELEPORTATION"}"#)
        let serviceType: String = manifest.serviceType
        #expect(serviceType == "TELEPORTATION")
        #expect(SDLAppServiceType.media.wireName == "MEDIA")
        #expect(SDLAppServiceType(wireName: serviceType) == .unknown("TELEPORTATION"))
        let layout = try SDLSetDisplayLayoutRequest(jsonParameters: #"{"displayLayout":"MY_OWN_LAYOUT"}"#)
        #expect(layout.displayLayout == "MY_OWN_LAYOUT")
        #expect(SDLPredefinedLayout(wireName: "TILES_ONLY") == .tilesOnly)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}

/// Records what each top-level parameter was written as.
struct WidthRecorder: RPCParameterWriter {
    var widths: [String: String] = [:]
    var depth = 0

    mutating func note(_ key: RPCKey, _ kind: String) {
        if self.depth == 0, !key.isElement { self.widths[key.name.description] = kind }
    }

    mutating func writeBool(_ value: Bool, forKey key: RPCKey) { self.note(key, "bool") }
    mutating func writeInt32(_ value: Int32, forKey key: RPCKey) { self.note(key, "int32") }
    mutating func writeInt64(_ value: Int64, forKey key: RPCKey) { self.note(key, "int64") }
    mutating func writeDouble(_ value: Double, forKey key: RPCKey) { self.note(key, "double") }
    mutating func writeString(_ value: String, forKey key: RPCKey) { self.note(key, "string") }
    mutating func beginObject(forKey key: RPCKey) { self.note(key, "object"); self.depth += 1 }
    mutating func endObject() { self.depth -= 1 }
    mutating func beginArray(forKey key: RPCKey) { self.note(key, "array"); self.depth += 1 }
    mutating func endArray() { self.depth -= 1 }
    mutating func writeUnknown(_ value: RPCValue, forKey key: String) { self.widths[key] = "unknown" }
    mutating func writeUnknownElement(_ value: RPCValue) {}
}
