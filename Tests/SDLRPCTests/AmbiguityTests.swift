import NIOCore
import SDLBSON
import SDLProtocol
import SDLRPC
import Testing

/// What peers could read in different ways is refused on both sides: repeated keys (RFC 8259 leaves
/// them undefined; jsoncpp keeps the last, others the first), unknown parameters named like spec
/// parameters, and nesting one side accepts and the other does not.
@Suite("Duplicate keys, shadowing unknown parameters, nesting limits")
struct AmbiguityTests {
    static let unchecked = RPCCodingOptions(validate: false)

    static func bson(_ body: (inout BSONDocumentWriter) -> Void) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { body(&$0) }
        return buffer
    }

    // MARK: Decoding

    @Test("a repeated key is duplicateParameter in JSON, known or unknown, at any level, validated or not", arguments: [
        (#"{"serviceID":"s1","serviceID":"s2"}"#, "serviceID"),
        (#"{"serviceID":"s1","x":1,"x":2}"#, "x"),
        (#"{"serviceID":"s1","x":1,"\u0078":2}"#, "x"),
        (#"{"serviceID":"s1","f":{"a":1,"b":2,"a":[]}}"#, "f.a"),
        (#"{"serviceID":"s1","f":[{"a":1},{"b":1,"b":2}]}"#, "f[1].b"),
        (#"{"serviceID":"s1","f":[[{"a":{"c":1,"c":1}}]]}"#, "f[0][0].a.c"),
    ])
    func jsonDuplicates(json: String, path: String) throws {
        for options in [RPCCodingOptions.default, Self.unchecked] {
            let error = try #require(throws: RPCError.self) { try SDLUnpublishAppServiceRequest(jsonParameters: json, options: options) }
            #expect(error.code == .duplicateParameter)
            #expect(error.pathString == path)
            #expect(error.detail == "parameter appears more than once")
        }
        // The generic reader (sdl rpc, sdl dissect, the fuzzers) refuses the same.
        let generic = try #require(throws: RPCError.self) { try RPCValue(jsonObject: json) }
        #expect(generic.code == .duplicateParameter)
        #expect(generic.pathString == path)
    }

    @Test("a repeated key inside a nested spec struct names the whole path")
    func nestedStructDuplicates() throws {
        let unknown = #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"zz":1,"fanSpeed":3,"zz":2}}}"#
        let error = try #require(throws: RPCError.self) { try SDLSetInteriorVehicleDataRequest(jsonParameters: unknown) }
        #expect(error.description == "moduleData.climateControlData.zz: parameter appears more than once")
        let inArray = #"{"allocatedModules":[{"moduleType":"RADIO"},{"moduleType":"SEAT","moduleType":"SEAT"}],"freeModules":[]}"#
        let second = try #require(throws: RPCError.self) { try SDLOnRCStatus(jsonParameters: inArray, options: Self.unchecked) }
        #expect(second.description == "allocatedModules[1].moduleType: parameter appears more than once")
    }

    @Test("a repeated key is duplicateParameter in BSON, known or unknown, at any level")
    func bsonDuplicates() throws {
        let known = Self.bson { document in
            document.appendString("serviceID", "s1")
            document.appendString("serviceID", "s2")
        }
        let unknown = Self.bson { document in
            document.appendString("serviceID", "s1")
            document.appendInt32("x", 1)
            document.appendInt64("x", 2)
        }
        let nested = Self.bson { document in
            document.appendString("serviceID", "s1")
            document.appendArray("f") { array in
                array.appendDocument { inner in
                    inner.appendBool("b", true)
                    inner.appendNull("b")
                }
            }
        }
        let nestedStruct = Self.bson { document in
            document.appendDocument("moduleData") { module in
                module.appendString("moduleType", "CLIMATE")
                module.appendDocument("climateControlData") { climate in
                    climate.appendInt32("fanSpeed", 1)
                    climate.appendInt32("fanSpeed", 2)
                }
            }
        }
        for options in [RPCCodingOptions.default, Self.unchecked] {
            for (buffer, path) in [(known, "serviceID"), (unknown, "x"), (nested, "f[0].b")] {
                let error = try #require(throws: RPCError.self) { try SDLUnpublishAppServiceRequest(bsonParameters: buffer, options: options) }
                #expect(error.code == .duplicateParameter)
                #expect(error.pathString == path)
            }
            let error = try #require(throws: RPCError.self) { try SDLSetInteriorVehicleDataRequest(bsonParameters: nestedStruct, options: options) }
            #expect(error.description == "moduleData.climateControlData.fanSpeed: parameter appears more than once")
        }
        for (buffer, path) in [(unknown, "x"), (nested, "f[0].b")] {
            let error = try #require(throws: RPCError.self) { try RPCValue(bsonObject: buffer) }
            #expect(error.code == .duplicateParameter)
            #expect(error.pathString == path)
        }
    }

    @Test("objects of many keys are checked in one pass, and the repeat is found wherever it is")
    func largeObjects() throws {
        let keys = (0..<20_000).map { "k\($0)" }
        let members = keys.map { #""\#($0)":1"# }.joined(separator: ",")
        let request = try SDLUnpublishAppServiceRequest(jsonParameters: #"{"serviceID":"s1",\#(members)}"#)
        #expect(request.unknownParameters.count == 20_000)
        #expect(request.unknownParameters.last?.key == "k19999")
        let repeated = #"{"serviceID":"s1",\#(members),"k12345":2}"#
        let error = try #require(throws: RPCError.self) { try SDLUnpublishAppServiceRequest(jsonParameters: repeated) }
        #expect(error.pathString == "k12345")
        let generic = try #require(throws: RPCError.self) { try RPCValue(jsonObject: #"{"f":{\#(members),"k0":0}}"#) }
        #expect(generic.pathString == "f.k0")

        let document = Self.bson { document in
            document.appendString("serviceID", "s1")
            for key in keys { document.appendInt32(key, 1) }
            document.appendInt32("k7", 2)
        }
        let bsonError = try #require(throws: RPCError.self) { try SDLUnpublishAppServiceRequest(bsonParameters: document) }
        #expect(bsonError.pathString == "k7")
        #expect(bsonError.code == .duplicateParameter)
        #expect(RPCObject(keys.map { RPCObject.Entry(key: $0, value: .null) }).firstRepeatedKey == nil)
    }

    // MARK: Encoding

    @Test("an unknown parameter named like a spec parameter is refused by validate() and every encoder")
    func unknownNamedLikeKnown() throws {
        var climate = SDLClimateControlData(fanSpeed: 1)
        climate.unknownParameters.append(key: "fanSpeed", value: .int32(2))
        // Both set: the output would repeat the key. Typed one nil: the unknown one would come back typed.
        var shadowing = SDLClimateControlData(acEnable: true)
        shadowing.unknownParameters.append(key: "fanSpeed", value: .int32(2))
        for value in [climate, shadowing] {
            let expected = RPCError(
                .unknownParameterNamedLikeKnown, path: [.key("fanSpeed")], "an unknown parameter cannot have the name of a spec parameter")
            expectError(expected) { try value.validate() }
            for options in [RPCCodingOptions.default, Self.unchecked] {
                expectError(expected) { try value.jsonParameters(options: options) }
                expectError(expected) { try value.bsonParameters(options: options) }
            }
            let request = SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, climateControlData: value))
            for format in [RPCParameterFormat.json, .bson] {
                let error = try #require(throws: RPCError.self) { try request.payload(correlationID: 1, format: format, options: Self.unchecked) }
                #expect(error.description == "moduleData.climateControlData.fanSpeed: an unknown parameter cannot have the name of a spec parameter")
            }
            #expect(value.validationErrors().map(\.code) == [.unknownParameterNamedLikeKnown])
        }
        // Names of other structs' params are fine here: `moduleType` is not a ClimateControlData param.
        var fine = SDLClimateControlData(fanSpeed: 1)
        fine.unknownParameters.append(key: "moduleType", value: .string("x"))
        let text = try fine.jsonParametersText()
        #expect(text == #"{"fanSpeed":1,"moduleType":"x"}"#)
        #expect(try SDLClimateControlData(jsonParameters: text) == fine)
        #expect(try SDLClimateControlData(bsonParameters: fine.bsonParameters()) == fine)
    }

    @Test("repeated unknown keys, at any level, are refused by every encoder, validated or not")
    func encodingDuplicates() throws {
        var top = SDLUnpublishAppServiceRequest(serviceID: "s1")
        top.unknownParameters.append(key: "x", value: .int32(1))
        top.unknownParameters.append(key: "x", value: .int32(2))
        var nested = SDLUnpublishAppServiceRequest(serviceID: "s1")
        nested.unknownParameters.append(key: "f", value: .array([.object(RPCObject([.init(key: "a", value: .null), .init(key: "a", value: .null)]))]))
        for (value, path) in [(top, "x"), (nested, "f[0].a")] {
            let expected = RPCError(.duplicateParameter, path: path == "x" ? [.key("x")] : [.key("f"), .index(0), .key("a")], "parameter appears more than once")
            expectError(expected) { try value.validate() }
            for options in [RPCCodingOptions.default, Self.unchecked] {
                expectError(expected) { try value.jsonParameters(options: options) }
                expectError(expected) { try value.bsonParameters(options: options) }
            }
        }
        // Generic trees too.
        let tree = RPCValue.object(["a": .object(RPCObject([.init(key: "b", value: .int32(1)), .init(key: "b", value: .int32(2))]))])
        let expected = RPCError(.duplicateParameter, path: [.key("a"), .key("b")], "parameter appears more than once")
        expectError(expected) { try tree.jsonText() }
        expectError(expected) { try tree.bsonDocument() }
    }

    // MARK: Nesting

    /// A VideoStreamingCapability with `levels` more of itself below it, one per level; the
    /// innermost gets `innermost` as its own additional capabilities.
    static func chain(_ levels: Int, innermost: [SDLVideoStreamingCapability]? = nil) -> SDLVideoStreamingCapability {
        var capability = SDLVideoStreamingCapability(maxBitrate: Int32(levels), additionalVideoStreamingCapabilities: innermost)
        for level in stride(from: levels - 1, through: 0, by: -1) {
            capability = SDLVideoStreamingCapability(maxBitrate: Int32(level), additionalVideoStreamingCapabilities: [capability])
        }
        return capability
    }

    @Test("a VideoStreamingCapability chain encodes exactly when it decodes: up to 32 levels, JSON and BSON")
    func depthLimit() throws {
        // Standalone, the chain's root is level 1 and each step adds an array and an object: the
        // 15th nested capability sits at level 31, its preferredResolution at 32.
        var deepest = Self.chain(15)
        #expect(try deepest.jsonParametersText().components(separatedBy: "[").count - 1 == 15)
        let resolution = SDLImageResolution(resolutionWidth: 1, resolutionHeight: 1)
        func withInnermost(_ value: SDLVideoStreamingCapability, _ change: (inout SDLVideoStreamingCapability) -> Void) -> SDLVideoStreamingCapability {
            guard var next = value.additionalVideoStreamingCapabilities?.first else {
                var copy = value
                change(&copy)
                return copy
            }
            next = withInnermost(next, change)
            var copy = value
            copy.additionalVideoStreamingCapabilities = [next]
            return copy
        }
        deepest = withInnermost(deepest) { $0.preferredResolution = resolution }
        // Just under: level 32 is the limit, and an (empty) array there is fine too.
        for value in [deepest, withInnermost(Self.chain(15)) { $0.supportedFormats = [] }] {
            #expect(try SDLVideoStreamingCapability(jsonParameters: value.jsonParameters()) == value)
            #expect(try SDLVideoStreamingCapability(bsonParameters: value.bsonParameters()) == value)
        }
        // Just over: a 16th capability (level 33).
        let over = Self.chain(16)
        let path = Array(repeating: [RPCError.PathComponent.key("additionalVideoStreamingCapabilities"), .index(0)], count: 16).flatMap { $0 }
        let expected = RPCError(.nestingTooDeep, path: path, "nesting deeper than 32 levels")
        expectError(expected) { try over.validate() }
        for options in [RPCCodingOptions.default, Self.unchecked] {
            expectError(expected) { try over.jsonParameters(options: options) }
            expectError(expected) { try over.bsonParameters(options: options) }
        }
        // ... which is what the decoders refuse: the same value written with a higher limit.
        var roomy = RPCCodingOptions()
        roomy.maxNestingDepth = 33
        let json = try over.jsonParameters(options: roomy)
        let bson = try over.bsonParameters(options: roomy)
        #expect(try #require(throws: RPCError.self) { try SDLVideoStreamingCapability(jsonParameters: json) }.code == .nestingTooDeep)
        #expect(try #require(throws: RPCError.self) { try SDLVideoStreamingCapability(bsonParameters: bson) }.code == .nestingTooDeep)
        #expect(try SDLVideoStreamingCapability(jsonParameters: json, options: roomy) == over)
        #expect(try SDLVideoStreamingCapability(bsonParameters: bson, options: roomy) == over)
        // Arrays count as decoders count them: an array at level 32 fits, its element at 33 does not.
        let oneFormat = withInnermost(Self.chain(15)) { $0.supportedFormats = [SDLVideoStreamingFormat(protocol: .raw, codec: .h264)] }
        let formatError = try #require(throws: RPCError.self) { try oneFormat.bsonParameters(options: Self.unchecked) }
        #expect(formatError.code == .nestingTooDeep)
        #expect(formatError.path == Array(path.dropLast(2)) + [.key("supportedFormats"), .index(0)])
        let formatJSON = try oneFormat.jsonParameters(options: roomy)
        #expect(try #require(throws: RPCError.self) { try SDLVideoStreamingCapability(jsonParameters: formatJSON) }.code == .nestingTooDeep)
    }

    @Test("inside a message the chain starts two levels down; the error names the path from the message")
    func depthInMessage() throws {
        func message(_ capability: SDLVideoStreamingCapability) -> SDLOnSystemCapabilityUpdated {
            SDLOnSystemCapabilityUpdated(systemCapability: SDLSystemCapability(systemCapabilityType: .videoStreaming, videoStreamingCapability: capability))
        }
        // Parameters 1, systemCapability 2, the root capability 3: 14 more reach level 31, and
        // an array there is at 32.
        var innermost = SDLVideoStreamingCapability()
        innermost.supportedFormats = []
        let fits = message(Self.chain(13, innermost: [innermost]))
        for format in [RPCParameterFormat.json, .bson] {
            let payload = try fits.payload(correlationID: 1, format: format)
            #expect(try AnyRPCMessage(payload: payload).message as? SDLOnSystemCapabilityUpdated == fits)
        }
        let over = message(Self.chain(14, innermost: [SDLVideoStreamingCapability()]))
        for format in [RPCParameterFormat.json, .bson] {
            let error = try #require(throws: RPCError.self) { try over.payload(correlationID: 1, format: format, options: Self.unchecked) }
            #expect(error.code == .nestingTooDeep)
            #expect(error.pathString == "systemCapability.videoStreamingCapability" + String(repeating: ".additionalVideoStreamingCapabilities[0]", count: 15))
        }
    }

    @Test("unknown values nest within the limit too, counted from their struct")
    func unknownDepth() throws {
        func nested(_ levels: Int) -> RPCValue {
            var value = RPCValue.int32(1)
            for _ in 0..<levels { value = .array([value]) }
            return value
        }
        // The request's object is level 1: 31 arrays below it reach 32.
        var fits = SDLUnpublishAppServiceRequest(serviceID: "s1")
        fits.unknownParameters.append(key: "deep", value: nested(31))
        #expect(try SDLUnpublishAppServiceRequest(jsonParameters: fits.jsonParameters()) == fits)
        #expect(try SDLUnpublishAppServiceRequest(bsonParameters: fits.bsonParameters()) == fits)
        var over = SDLUnpublishAppServiceRequest(serviceID: "s1")
        over.unknownParameters.append(key: "deep", value: nested(32))
        let error = try #require(throws: RPCError.self) { try over.jsonParameters(options: Self.unchecked) }
        #expect(error.code == .nestingTooDeep)
        #expect(error.path == [.key("deep")] + Array(repeating: .index(0), count: 31))
        #expect(try #require(throws: RPCError.self) { try over.bsonParameters(options: Self.unchecked) }.code == .nestingTooDeep)
        // Generic trees: the same limit as their readers.
        let tree = RPCValue.object(["deep": nested(32)])
        #expect(try #require(throws: RPCError.self) { try tree.jsonText() }.code == .nestingTooDeep)
        #expect(try #require(throws: RPCError.self) { try tree.bsonDocument() }.code == .nestingTooDeep)
        let text = #"{"deep":\#(String(repeating: "[", count: 32))1\#(String(repeating: "]", count: 32))}"#
        #expect(try #require(throws: RPCError.self) { try RPCValue(jsonObject: text) }.code == .nestingTooDeep)
        #expect(try RPCValue.object(["deep": nested(31)]).jsonText() == #"{"deep":\#(String(repeating: "[", count: 31))1\#(String(repeating: "]", count: 31))}"#)
    }
}
