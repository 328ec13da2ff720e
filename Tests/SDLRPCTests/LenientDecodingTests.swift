import SDLTestSupport
import Foundation
import NIOCore
import SDLBSON
import SDLProtocol
import SDLRPC
import Testing

/// A violation in one line: `code path`, then `dropped droppedPath` when the part was dropped.
func summary(_ violation: RPCViolation) -> String {
    var text = "\(violation.code) \(violation.pathString)"
    if let droppedPath = violation.droppedPath {
        text += " dropped \(RPCError(violation.code, path: droppedPath, "").pathString)"
    }
    return text
}

/// The same parameters in `format`: the JSON text itself, or a BSON document of the same value.
func parameters(_ json: String, _ format: RPCParameterFormat) throws -> ByteBuffer {
    switch format {
    case .json: ByteBuffer(string: json)
    case .bson: try RPCValue(jsonObject: json).bsonDocument()
    }
}

/// The `RPCError` `body` throws, or a recorded issue and nil.
func thrownError<Result>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Result) -> RPCError? {
    do {
        _ = try body()
        Issue.record("nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as RPCError {
        return error
    } catch {
        Issue.record("\(error) was thrown", sourceLocation: sourceLocation)
    }
    return nil
}

/// Whether parameters encoded from a decoded value denote the same JSON value as `original`
/// (numbers by value, key order ignored), whatever the format they were encoded in.
func sameParameters(_ encoded: ByteBuffer, _ format: RPCParameterFormat, as original: String) throws -> Bool {
    let text = switch format {
    case .json: String(buffer: encoded)
    case .bson: try RPCValue(bsonObject: encoded).jsonText()
    }
    return try sameJSON(text, original)
}

/// Validation off: encoding writes back what lenient decoding dropped.
let unvalidated = RPCCodingOptions(validate: false)

/// The four bodies a real SDL Core 8.2.0 sent (`shared/vectors/core82/`, see its README).
@Suite("Lenient decoding of what SDL Core 8.2.0 sends")
struct Core82Tests {
    static let registerAppInterface = "RegisterAppInterface.response.json"

    static func body(_ file: String) throws -> String {
        String(decoding: try SharedData.bytes("vectors/core82/\(file)"), as: UTF8.self)
    }

    /// The whole RPC payload Core sent: the 12-byte binary header, then the body.
    static func payload(_ file: String, functionID: UInt32, rpcType: UInt32, correlationID: UInt32) throws -> ByteBuffer {
        let body = try Self.body(file)
        var payload = ByteBuffer()
        payload.writeInteger(rpcType << 28 | functionID)
        payload.writeInteger(correlationID)
        payload.writeInteger(UInt32(body.utf8.count))
        payload.writeString(body)
        return payload
    }

    static let imageFieldViolations = (0..<10).map {
        "missingParameter displayCapabilities.imageFields[\($0)].imageTypeSupported dropped displayCapabilities.imageFields[\($0)]"
    }

    @Test("the RegisterAppInterface response: the 10 image fields without imageTypeSupported reported and kept", arguments: RPCParameterFormat.allCases)
    func registerAppInterfaceResponse(format: RPCParameterFormat) throws {
        let body = try Self.body(Self.registerAppInterface)
        let decoded = try RPCDecoded<SDLRegisterAppInterfaceResponse>(parameters: parameters(body, format), format: format)
        #expect(decoded.violations.map(summary) == Self.imageFieldViolations)
        #expect(decoded.violations.allSatisfy { $0.detail == "missing mandatory parameter" })

        let response = decoded.value
        #expect(response.success)
        #expect(response.resultCode == .success)
        let display = try #require(response.displayCapabilities)
        #expect(display.imageFields?.map(\.name) == [.locationImage, .alertIcon])
        #expect(display.imageFields?.map(\.imageTypeSupported) == [[.graphicPng], [.graphicPng]])
        #expect(display.textFields.count == 30)
        #expect(display.screenParams?.resolution.resolutionWidth == 800)

        // Each dropped field as Core sent it, at its index on the wire.
        guard case .object(let whole) = try RPCValue(jsonObject: body),
            case .object(let sentDisplay)? = whole["displayCapabilities"],
            case .array(let sentFields)? = sentDisplay["imageFields"]
        else {
            Issue.record("the vector has no displayCapabilities.imageFields array")
            return
        }
        let dropped = display.droppedParameters.elements(forKey: "imageFields")
        #expect(dropped.map(\.index) == Array(0..<10))
        #expect(dropped.map(\.value) == Array(sentFields[0..<10]))
        #expect(dropped.map(\.key) == Array(repeating: "imageFields", count: 10))
        #expect(display.droppedParameters.count == 10)
        #expect(dropped.map { summary($0.violation) } == (0..<10).map {
            "missingParameter imageFields[\($0)].imageTypeSupported dropped imageFields[\($0)]"
        })

        // Nothing is lost: re-encoded (validation off, as what is kept breaks the spec) in either
        // format, it is the JSON Core sent.
        for output in RPCParameterFormat.allCases {
            let encoded = try response.parameters(format: output, options: unvalidated)
            #expect(try sameParameters(encoded, output, as: body), "\(format) decoded, \(output) encoded")
        }
    }

    @Test("the strict policy refuses it with the first violation's path", arguments: RPCParameterFormat.allCases)
    func registerAppInterfaceStrictly(format: RPCParameterFormat) throws {
        let bytes = try parameters(Self.body(Self.registerAppInterface), format)
        for options in [RPCCodingOptions.default, RPCCodingOptions(validate: false)] {
            let error = thrownError { try SDLRegisterAppInterfaceResponse(parameters: bytes, format: format, options: options) }
            #expect(error?.code == .missingParameter)
            #expect(error?.pathString == "displayCapabilities.imageFields[0].imageTypeSupported")
            #expect(error?.description == "displayCapabilities.imageFields[0].imageTypeSupported: missing mandatory parameter")
        }
        // RPCDecoded under the strict policy throws the same.
        let error = thrownError { try RPCDecoded<SDLRegisterAppInterfaceResponse>(parameters: bytes, format: format, options: .default) }
        #expect(error?.pathString == "displayCapabilities.imageFields[0].imageTypeSupported")
    }

    @Test("the off policy decodes it as lenient does, reporting nothing", arguments: RPCParameterFormat.allCases)
    func registerAppInterfaceOff(format: RPCParameterFormat) throws {
        let bytes = try parameters(Self.body(Self.registerAppInterface), format)
        let off = try RPCDecoded<SDLRegisterAppInterfaceResponse>(
            parameters: bytes, format: format, options: RPCCodingOptions(receivePolicy: .off))
        let lenient = try RPCDecoded<SDLRegisterAppInterfaceResponse>(parameters: bytes, format: format)
        #expect(off.violations.isEmpty)
        #expect(off.value == lenient.value)
        #expect(off.value.displayCapabilities?.droppedParameters.count == 10)
    }

    @Test("as a whole payload, AnyRPCMessage lists the violations under the lenient policy")
    func registerAppInterfacePayload() throws {
        let payload = try Self.payload(Self.registerAppInterface, functionID: 1, rpcType: 1, correlationID: 1)
        let message = try AnyRPCMessage(payload: payload, options: .lenient)
        #expect(message.functionName == "RegisterAppInterface")
        #expect(message.rpcType == .response)
        #expect(message.violations.map(summary) == Self.imageFieldViolations)
        let strict = thrownError { try AnyRPCMessage(payload: payload) }
        #expect(strict?.pathString == "displayCapabilities.imageFields[0].imageTypeSupported")
        let off = try AnyRPCMessage(payload: payload, options: RPCCodingOptions(receivePolicy: .off))
        #expect(off.violations.isEmpty)
        #expect(off == message)

        // From a function name and JSON text too.
        let named = try AnyRPCMessage(
            functionName: "RegisterAppInterface", rpcType: .response, correlationID: 1,
            jsonParameters: Self.body(Self.registerAppInterface), options: .lenient)
        #expect(named.violations == message.violations)
        #expect(named == message)
    }

    @Test("the other three bodies conform: they decode strictly, and leniently with no violation", arguments: [
        ("GetSystemCapability.response.json", UInt32(48), UInt32(1), UInt32(5)),
        ("OnPermissionsChange.notification.json", 32776, 2, 0xFFFF_FFFF),
        ("OnHMIStatus.notification.json", 32768, 2, 0xFFFF_FFFF),
    ])
    func conformingBodies(file: String, functionID: UInt32, rpcType: UInt32, correlationID: UInt32) throws {
        let payload = try Self.payload(file, functionID: functionID, rpcType: rpcType, correlationID: correlationID)
        let strict = try AnyRPCMessage(payload: payload)
        let lenient = try AnyRPCMessage(payload: payload, options: .lenient)
        #expect(lenient.violations.isEmpty)
        #expect(lenient == strict)
        #expect(lenient.correlationID == correlationID)
        // Nothing lost in a round trip through either format.
        for format in RPCParameterFormat.allCases {
            let encoded = try lenient.message.parameters(format: format)
            #expect(try sameParameters(encoded, format, as: Self.body(file)), "\(file) through \(format)")
        }
    }

    @Test("the OnHMIStatus body decodes to its values")
    func onHMIStatus() throws {
        let decoded = try RPCDecoded<SDLOnHMIStatus>(jsonParameters: Self.body("OnHMIStatus.notification.json"))
        #expect(decoded.violations.isEmpty)
        #expect(decoded.value == SDLOnHMIStatus(
            hmiLevel: .none_, audioStreamingState: .notAudible, systemContext: .main, videoStreamingState: .notStreamable,
            windowID: 0))
    }
}

/// What lenient decoding keeps, drops and reports, in JSON and BSON alike.
@Suite("Lenient decoding: containment")
struct LenientContainmentTests {
    static func textField(_ name: String, _ members: String) -> String {
        #"{"name":"\#(name)","characterSet":"UTF_8","rows":1\#(members)}"#
    }

    /// DisplayCapabilities with the given members after its mandatory ones.
    static func display(textFields: [String]? = nil, _ members: String = "") -> String {
        let fields = textFields ?? [Self.textField("mainField1", #","width":500"#)]
        return #"{"displayType":"GEN3_8-INCH","textFields":[\#(fields.joined(separator: ","))],"#
            + #""mediaClockFormats":[],"graphicSupported":true\#(members)}"#
    }

    @Test("an array element that breaks the spec is dropped, by its index on the wire; a constraint violation stays", arguments: RPCParameterFormat.allCases)
    func arrayOfStructs(format: RPCParameterFormat) throws {
        let json = Self.display(textFields: [
            Self.textField("mainField1", #","width":500"#),
            Self.textField("mainField2", ""),
            Self.textField("mainField3", #","width":"wide""#),
            Self.textField("mainField4", #","width":4294967296"#),
            Self.textField("statusBar", #","width":501"#),
            Self.textField("mainField1", #","width":2.5"#),
        ])
        let decoded = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(json, format), format: format)
        #expect(decoded.violations.map(summary) == [
            "missingParameter textFields[1].width dropped textFields[1]",
            "typeMismatch textFields[2].width dropped textFields[2]",
            "numberOutOfRange textFields[3].width dropped textFields[3]",
            "valueOutOfRange textFields[4].width",
            "notAnInteger textFields[5].width dropped textFields[5]",
        ])
        #expect(decoded.violations[3].detail == "above maxvalue 500")
        let display = decoded.value
        #expect(display.textFields.map(\.name) == [.mainField1, .statusBar])
        #expect(display.textFields.map(\.width) == [500, 501])
        let dropped = display.droppedParameters.elements(forKey: "textFields")
        #expect(dropped.map(\.index) == [1, 2, 3, 5])
        guard case .object(let third) = dropped[dropped.startIndex + 2].value else {
            Issue.record("a dropped text field is not an object")
            return
        }
        #expect(third["width"] == .int64(4_294_967_296))
        #expect(try sameParameters(display.parameters(format: format, options: unvalidated), format, as: json))
    }

    @Test("a mandatory parameter missing deep inside drops the nearest optional part around it", arguments: RPCParameterFormat.allCases)
    func nestedOptionalStructs(format: RPCParameterFormat) throws {
        // screenParams (optional) > resolution (mandatory) > resolutionWidth (mandatory) missing:
        // screenParams goes.
        let missingWidth = Self.display(
            #","screenParams":{"resolution":{"resolutionHeight":350},"touchEventAvailable":{"pressAvailable":true,"multiTouchAvailable":false,"doublePressAvailable":false}}"#)
        let outer = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(missingWidth, format), format: format)
        #expect(outer.violations.map(summary) == ["missingParameter screenParams.resolution.resolutionWidth dropped screenParams"])
        #expect(outer.value.screenParams == nil)
        guard case .object(let screenParams)? = outer.value.droppedParameters.value(forKey: "screenParams") else {
            Issue.record("screenParams was not kept")
            return
        }
        #expect(screenParams.map(\.key) == ["resolution", "touchEventAvailable"])
        #expect(screenParams["resolution"] == .object(["resolutionHeight": .int32(350)]))

        // screenParams > touchEventAvailable (optional) > pressAvailable of the wrong type: only
        // touchEventAvailable goes.
        let wrongType = Self.display(
            #","screenParams":{"resolution":{"resolutionWidth":800,"resolutionHeight":350},"touchEventAvailable":{"pressAvailable":"yes","multiTouchAvailable":false,"doublePressAvailable":false}}"#)
        let inner = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(wrongType, format), format: format)
        #expect(inner.violations.map(summary) == [
            "typeMismatch screenParams.touchEventAvailable.pressAvailable dropped screenParams.touchEventAvailable"
        ])
        let kept = try #require(inner.value.screenParams)
        #expect(kept.resolution == SDLImageResolution(resolutionWidth: 800, resolutionHeight: 350))
        #expect(kept.touchEventAvailable == nil)
        #expect(kept.droppedParameters.value(forKey: "touchEventAvailable") == .object([
            "pressAvailable": .string("yes"), "multiTouchAvailable": .bool(false), "doublePressAvailable": .bool(false),
        ]))
        #expect(inner.value.droppedParameters.isEmpty)

        for (json, value) in [(missingWidth, outer.value), (wrongType, inner.value)] {
            #expect(try sameParameters(value.parameters(format: format, options: unvalidated), format, as: json))
        }
    }

    @Test("lengths, sizes and ranges a peer breaks are reported and the values kept", arguments: RPCParameterFormat.allCases)
    func constraintsKeepValues(format: RPCParameterFormat) throws {
        let long = String(repeating: "x", count: 101)
        let templates = ([long] + (1...100).map { "T\($0)" }).map { "\"\($0)\"" }.joined(separator: ",")
        let json = Self.display(#","templatesAvailable":[\#(templates)],"numCustomPresetsAvailable":500"#)
        let decoded = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(json, format), format: format)
        #expect(decoded.violations.map(summary) == [
            "sizeOutOfRange templatesAvailable",
            "lengthOutOfRange templatesAvailable[0]",
            "valueOutOfRange numCustomPresetsAvailable",
        ])
        #expect(decoded.violations.map(\.detail) == [
            "above maxsize 100 (101 elements)", "above maxlength 100 (101 characters)", "above maxvalue 100",
        ])
        #expect(decoded.violations.allSatisfy { !$0.isDropped })
        #expect(decoded.value.templatesAvailable?.count == 101)
        #expect(decoded.value.templatesAvailable?.first == long)
        #expect(decoded.value.numCustomPresetsAvailable == 500)
        #expect(decoded.value.droppedParameters.isEmpty)
        // Strictly, the first of them is thrown.
        let error = thrownError { try SDLDisplayCapabilities(parameters: parameters(json, format), format: format) }
        #expect(error?.code == .sizeOutOfRange)
        #expect(error?.pathString == "templatesAvailable")
    }

    @Test("a number the Swift type cannot hold drops its optional parameter, kept raw", arguments: RPCParameterFormat.allCases)
    func unsafeNumbers(format: RPCParameterFormat) throws {
        for (member, raw, code) in [
            ("4294967296", RPCValue.int64(4_294_967_296), RPCError.Code.numberOutOfRange),
            ("1.5", .double(1.5), .notAnInteger),
            (#""many""#, .string("many"), .typeMismatch),
            ("null", .null, .typeMismatch),
        ] {
            let json = Self.display(#","numCustomPresetsAvailable":\#(member)"#)
            let decoded = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(json, format), format: format)
            #expect(decoded.violations.map(summary) == ["\(code) numCustomPresetsAvailable dropped numCustomPresetsAvailable"])
            #expect(decoded.value.numCustomPresetsAvailable == nil)
            #expect(decoded.value.droppedParameters.value(forKey: "numCustomPresetsAvailable") == raw)
            #expect(try sameParameters(decoded.value.parameters(format: format, options: unvalidated), format, as: json))
        }
    }

    @Test("unknown enum values stay, as .unknown, in mandatory and optional positions and in arrays", arguments: RPCParameterFormat.allCases)
    func unknownEnumValues(format: RPCParameterFormat) throws {
        let json = #"{"hmiLevel":"HYPER","audioStreamingState":"AUDIBLE","systemContext":"MAIN","videoStreamingState":"WARP","windowID":1}"#
        let decoded = try RPCDecoded<SDLOnHMIStatus>(parameters: parameters(json, format), format: format)
        #expect(decoded.value.hmiLevel == .unknown("HYPER"))
        #expect(decoded.value.videoStreamingState == .unknown("WARP"))
        #expect(decoded.value.audioStreamingState == .audible)
        #expect(decoded.violations.map(summary) == ["unknownEnumValue hmiLevel", "unknownEnumValue videoStreamingState"])
        #expect(decoded.violations.map(\.detail) == [#"unknown HMILevel value "HYPER""#, #"unknown VideoStreamingState value "WARP""#])
        let strict = thrownError { try SDLOnHMIStatus(parameters: parameters(json, format), format: format) }
        #expect(strict?.code == .unknownEnumValue)
        #expect(strict?.pathString == "hmiLevel")

        // Next to other violations, which are still checked.
        let display = Self.display(
            textFields: [Self.textField("mainField1", #","width":500"#), Self.textField("mainField2", "")],
            #","numCustomPresetsAvailable":0"#
        ).replacingOccurrences(of: #""GEN3_8-INCH""#, with: #""HOLOGRAM""#)
            .replacingOccurrences(of: #""mediaClockFormats":[]"#, with: #""mediaClockFormats":["CLOCK1","CLOCK9"]"#)
        let mixed = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(display, format), format: format)
        #expect(mixed.violations.map(summary) == [
            "unknownEnumValue displayType",
            "missingParameter textFields[1].width dropped textFields[1]",
            "unknownEnumValue mediaClockFormats[1]",
            "valueOutOfRange numCustomPresetsAvailable",
        ])
        #expect(mixed.value.displayType == .unknown("HOLOGRAM"))
        #expect(mixed.value.mediaClockFormats == [.clock1, .unknown("CLOCK9")])
    }

    @Test("what no optional part contains still throws, leniently too", arguments: RPCParameterFormat.allCases)
    func uncontainable(format: RPCParameterFormat) throws {
        let cases: [(String, String, RPCError.Code, String)] = [
            ("a mandatory parameter of the message missing", #"{"resultCode":"SUCCESS"}"#, .missingParameter, "success"),
            ("a mandatory parameter of the message of the wrong type", #"{"success":"yes","resultCode":"SUCCESS"}"#, .typeMismatch, "success"),
            ("a repeated key inside a dropped part", #"{"success":true,"resultCode":"SUCCESS","vehicleType":{"make":1,"x":1,"x":2}}"#, .duplicateParameter, "vehicleType.x"),
            ("a known key repeated after its value was dropped", #"{"success":true,"resultCode":"SUCCESS","iconResumed":1,"iconResumed":true}"#, .duplicateParameter, "iconResumed"),
            ("an array key repeated after its elements were dropped", #"{"success":true,"resultCode":"SUCCESS","vrCapabilities":[1],"vrCapabilities":["TEXT"]}"#, .duplicateParameter, "vrCapabilities"),
        ]
        for (name, json, code, path) in cases {
            for policy in [RPCReceivePolicy.lenient, .off] {
                let error = thrownError {
                    try SDLRegisterAppInterfaceResponse(
                        parameters: parameters(json, format), format: format, options: RPCCodingOptions(receivePolicy: policy))
                }
                #expect(error?.code == code, "\(name), \(policy)")
                #expect(error?.pathString == path, "\(name), \(policy)")
            }
        }
        // Mandatory all the way up: serviceData is a mandatory struct of the message.
        let json = #"{"serviceData":{"serviceID":"weather-1","weatherServiceData":{}}}"#
        let error = thrownError { try SDLOnAppServiceData(parameters: parameters(json, format), format: format, options: .lenient) }
        #expect(error?.code == .missingParameter)
        #expect(error?.pathString == "serviceData.serviceType")
    }

    @Test("malformed JSON and excess nesting inside an optional part throw")
    func malformedInsideOptionalPart() throws {
        let truncated = #"{"success":true,"resultCode":"SUCCESS","vehicleType":{"make":1,"model":[}}"#
        let malformed = thrownError { try SDLRegisterAppInterfaceResponse(jsonParameters: truncated, options: .lenient) }
        #expect(malformed?.code == .malformedInput)
        #expect(malformed?.offset == 72)

        let deep = #"{"success":true,"resultCode":"SUCCESS","vehicleType":{"make":1,"x":{"y":{"z":{}}}}}"#
        var options = RPCCodingOptions.lenient
        options.maxNestingDepth = 4
        let tooDeep = thrownError { try SDLRegisterAppInterfaceResponse(jsonParameters: deep, options: options) }
        #expect(tooDeep?.code == .nestingTooDeep)
    }

    @Test("a BSON value no raw parameter can hold fails the decode, whatever the policy")
    func bsonValueWithoutRawForm() throws {
        var bytes = ByteBuffer()
        bytes.writeBSONDocument { document in
            document.appendBool("success", true)
            document.appendString("resultCode", "SUCCESS")
            document.appendDocument("vehicleType") { vehicle in
                vehicle.appendInt32("make", 1)
                vehicle.appendBinary("blob", bytes: [1, 2])
            }
        }
        for policy in [RPCReceivePolicy.strict, .lenient, .off] {
            let error = thrownError {
                try SDLRegisterAppInterfaceResponse(bsonParameters: bytes, options: RPCCodingOptions(receivePolicy: policy))
            }
            #expect(error?.code == .typeMismatch, "\(policy)")
            #expect(error?.pathString == (policy == .strict ? "vehicleType.make" : "vehicleType.blob"), "\(policy)")
        }
    }

    @Test("violations beyond maxViolations are not listed; every dropped part is kept")
    func maxViolations() throws {
        let fields = (0..<150).map { _ in Self.textField("mainField1", "") }
        let json = Self.display(textFields: [Self.textField("mainField1", #","width":1"#)] + fields)
        var options = RPCCodingOptions.lenient
        options.maxViolations = 20
        let decoded = try RPCDecoded<SDLDisplayCapabilities>(jsonParameters: json, options: options)
        #expect(decoded.violations.count == 20)
        #expect(decoded.violations.last.map(summary) == "missingParameter textFields[19].width dropped textFields[19]")
        #expect(decoded.value.droppedParameters.elements(forKey: "textFields").count == 150)
        #expect(decoded.value.textFields.count == 1)
        // 151 on the wire: above maxsize 100, reported first.
        let all = try RPCDecoded<SDLDisplayCapabilities>(jsonParameters: json, options: RPCCodingOptions(receivePolicy: .lenient, maxViolations: 1000))
        #expect(all.violations.count == 151)
        #expect(all.violations.first.map(summary) == "sizeOutOfRange textFields")
    }

    @Test("arrays arriving against key order keep their elements apart and in place")
    func arraysInReverseKeyOrder() throws {
        // imageFields sorts before textFields; the wire has textFields first.
        let imageFields = (0..<3).map { _ in #"{"name":"graphic"}"# }.joined(separator: ",")
        let json = Self.display(
            textFields: [Self.textField("mainField1", ""), Self.textField("mainField2", #","width":1"#), Self.textField("mainField3", "")],
            #","imageFields":[\#(imageFields),{"name":"appIcon","imageTypeSupported":["GRAPHIC_PNG"]}]"#)
        let decoded = try RPCDecoded<SDLDisplayCapabilities>(jsonParameters: json)
        let dropped = decoded.value.droppedParameters
        #expect(dropped.map { "\($0.key)[\($0.index ?? -1)]" } == [
            "imageFields[0]", "imageFields[1]", "imageFields[2]", "textFields[0]", "textFields[2]",
        ])
        #expect(decoded.violations.map(summary) == [
            "missingParameter textFields[0].width dropped textFields[0]",
            "missingParameter textFields[2].width dropped textFields[2]",
            "missingParameter imageFields[0].imageTypeSupported dropped imageFields[0]",
            "missingParameter imageFields[1].imageTypeSupported dropped imageFields[1]",
            "missingParameter imageFields[2].imageTypeSupported dropped imageFields[2]",
        ])
        #expect(try sameJSON(decoded.value.jsonParametersText(options: unvalidated), json))
    }
}

/// A leniently decoded message goes back out with everything it came with.
@Suite("Lenient decoding: round trips")
struct LenientRoundTripTests {
    static let message = LenientContainmentTests.display(
        textFields: [
            LenientContainmentTests.textField("mainField1", ""),
            LenientContainmentTests.textField("mainField2", #","width":1"#),
            LenientContainmentTests.textField("mainField3", #","width":"x""#),
        ],
        #","numCustomPresetsAvailable":1.5,"screenParams":{"resolution":{}},"templatesAvailable":[],"future":{"a":[1,2]}"#)

    @Test("decode, encode without validation, decode again: the same value and violations", arguments: RPCParameterFormat.allCases, RPCParameterFormat.allCases)
    func again(from input: RPCParameterFormat, through output: RPCParameterFormat) throws {
        let first = try RPCDecoded<SDLDisplayCapabilities>(parameters: parameters(Self.message, input), format: input)
        #expect(first.violations.map(summary) == [
            "missingParameter textFields[0].width dropped textFields[0]",
            "typeMismatch textFields[2].width dropped textFields[2]",
            "missingParameter screenParams.resolution.resolutionWidth dropped screenParams",
            "notAnInteger numCustomPresetsAvailable dropped numCustomPresetsAvailable",
        ])
        #expect(first.value.unknownParameters == ["future": .object(["a": .array([.int32(1), .int32(2)])])])
        let encoded = try first.value.parameters(format: output, options: unvalidated)
        #expect(try sameParameters(encoded, output, as: Self.message))
        let second = try RPCDecoded<SDLDisplayCapabilities>(parameters: encoded, format: output)
        #expect(second.value == first.value)
        #expect(second.violations.map(summary) == first.violations.map(summary))
    }

    @Test("encoding with validation refuses a value that still carries dropped parts, until it is repaired")
    func sendingStrictly() throws {
        var display = try RPCDecoded<SDLDisplayCapabilities>(jsonParameters: Self.message).value
        let refused = thrownError { try display.jsonParameters() }
        #expect(refused?.code == .missingParameter)
        #expect(refused?.pathString == "textFields[0].width")
        #expect(display.validationErrors().map(\.description) == [
            "textFields[0].width: missing mandatory parameter",
            "textFields[2].width: expected Integer, found string",
            "screenParams.resolution.resolutionWidth: missing mandatory parameter",
            "numCustomPresetsAvailable: 1.5 is not an integer",
        ])

        // Repaired: the typed property set wins over what was dropped for it; removed entries are gone.
        display.numCustomPresetsAvailable = 2
        display.screenParams = SDLScreenParams(resolution: SDLImageResolution(resolutionWidth: 800, resolutionHeight: 480))
        display.droppedParameters.removeAll(forKey: "textFields")
        display.templatesAvailable = nil
        let sent = try display.jsonParametersText()
        #expect(try sameJSON(sent, #"""
            {"displayType":"GEN3_8-INCH","textFields":[{"name":"mainField2","characterSet":"UTF_8","width":1,"rows":1}],
            "mediaClockFormats":[],"graphicSupported":true,"screenParams":{"resolution":{"resolutionWidth":800,"resolutionHeight":480}},
            "numCustomPresetsAvailable":2,"future":{"a":[1,2]}}
            """#))
        // What was dropped for the repaired properties stays in the store, unused.
        #expect(display.droppedParameters.value(forKey: "numCustomPresetsAvailable") == .double(1.5))
    }

    @Test("a typed array shrunk after decoding keeps the dropped elements, after the typed ones")
    func shrunkArray() throws {
        var display = try RPCDecoded<SDLDisplayCapabilities>(jsonParameters: LenientContainmentTests.display(textFields: [
            LenientContainmentTests.textField("mainField1", #","width":1"#),
            LenientContainmentTests.textField("mainField2", #","width":1"#),
            LenientContainmentTests.textField("mainField3", ""),
        ])).value
        display.textFields.removeAll()
        guard case .object(let parameters) = try RPCValue(jsonObject: display.jsonParametersText(options: unvalidated)),
            case .array(let fields)? = parameters["textFields"]
        else {
            Issue.record("no textFields array written")
            return
        }
        #expect(fields == [.object(["name": .string("mainField3"), "characterSet": .string("UTF_8"), "rows": .int32(1)])])
        // Reported where it was received.
        #expect(display.validationErrors().map(\.pathString) == ["textFields[2].width"])
    }
}

@Suite("INVALID_DATA answers")
struct InvalidDataResponseTests {
    @Test("a request a head unit cannot read strictly gets its function's response with INVALID_DATA")
    func registerAppInterface() throws {
        let request = #"{"syncMsgVersion":{"majorVersion":8,"minorVersion":0},"appName":"A","isMediaApplication":false,"languageDesired":"EN-US","hmiDisplayLanguageDesired":"EN-US"}"#
        let error = try #require(thrownError {
            try AnyRPCMessage(functionName: "RegisterAppInterface", rpcType: .request, jsonParameters: request)
        })
        #expect(error.pathString == "appID")
        let answer = try #require(AnyRPCMessage.invalidDataResponse(functionID: .registerAppInterface, correlationID: 9, error: error))
        #expect(answer.correlationID == 9)
        #expect(answer.rpcType == .response)
        let response = try #require(answer.message as? SDLRegisterAppInterfaceResponse)
        #expect(response == SDLRegisterAppInterfaceResponse(
            success: false, resultCode: .invalidData, info: "appID: missing mandatory parameter"))
        // It is valid as it is: a head unit sends strictly.
        #expect(try answer.message.jsonParametersText() == #"{"success":false,"resultCode":"INVALID_DATA","info":"appID: missing mandatory parameter"}"#)
    }

    @Test("info is cut to the spec's 1,000 characters; a function without a response gets none")
    func limits() throws {
        let long = RPCError(.lengthOutOfRange, path: [.key("menuName")], String(repeating: "é", count: 2000))
        let answer = try #require(AnyRPCMessage.invalidDataResponse(functionID: .addCommand, correlationID: 1, error: long))
        let response = try #require(answer.message as? SDLAddCommandResponse)
        #expect(response.info?.unicodeScalars.count == 1000)
        #expect(response.info?.hasPrefix("menuName: éé") == true)
        #expect(AnyRPCMessage.invalidDataResponse(functionID: .onHMIStatus, correlationID: 1, error: long) == nil)
        #expect(AnyRPCMessage.invalidDataResponse(functionID: FunctionID(rawValue: 0x7777), correlationID: 1, error: long) == nil)
    }
}
