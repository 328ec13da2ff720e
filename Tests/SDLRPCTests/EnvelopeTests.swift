import NIOCore
import SDLProtocol
import SDLRPC
import Testing

@Suite("Message envelope: binary header, parameters, bulk data")
struct EnvelopeTests {
    @Test("a typed message becomes header + JSON + bulk data, and back")
    func typedPayload() throws {
        let request = SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ["A0A"])
        let bulk = ByteBuffer(bytes: [1, 2, 3])
        let payload = try request.payload(correlationID: 0x0102_0304, bulkData: bulk)
        let json = #"{"moduleType":"CLIMATE","moduleIds":["A0A"]}"#
        // rpcType 0 | function id 62 (0x3E), correlation id, JSON size, JSON, bulk.
        let expected = "0000003e" + "01020304" + String(format: "%08x", json.utf8.count)
            + json.utf8.map { String(format: "%02x", $0) }.joined() + "010203"
        #expect(payload.hexString == expected)

        let decoded = try AnyRPCMessage(payload: payload)
        #expect(decoded.functionID == .getInteriorVehicleDataConsent)
        #expect(decoded.functionName == "GetInteriorVehicleDataConsent")
        #expect(decoded.rpcType == .request)
        #expect(decoded.correlationID == 0x0102_0304)
        #expect(decoded.bulkData == bulk)
        #expect(decoded.message as? SDLGetInteriorVehicleDataConsentRequest == request)
        #expect(decoded == AnyRPCMessage(request, correlationID: 0x0102_0304, bulkData: bulk))
        #expect(try decoded.payload() == payload)
    }

    @Test("notifications and responses pick their own generated types")
    func rpcTypes() throws {
        let notification = SDLOnAppServiceData(serviceData: SDLAppServiceData(serviceType: "MEDIA", serviceID: "m1"))
        let payload = try notification.payload(correlationID: 0xFFFF_FFFF)
        #expect(payload.getInteger(at: 0, as: UInt32.self) == 0x2000_8012)
        let decoded = try AnyRPCMessage(payload: payload)
        #expect(decoded.message is SDLOnAppServiceData)
        #expect(decoded.rpcType == .notification)

        let response = SDLButtonPressResponse(resultCode: .timedOut, success: false)
        let back = try AnyRPCMessage(payload: try response.payload(correlationID: 5))
        #expect(back.message as? SDLButtonPressResponse == response)
        #expect(back.functionID.rawValue == 41)
    }

    @Test("an erroneous response (RPC type 3) decodes as its function's response and keeps its type")
    func erroneousResponse() throws {
        let json = #"{"resultCode":"INVALID_DATA","info":"bad JSON","success":false}"#
        var payload = ByteBuffer()
        try RPCPayload(
            header: RPCBinaryHeader(rpcType: .erroneousResponse, functionID: 41, correlationID: 77, jsonSize: 0),
            parameters: ByteBuffer(string: json)
        ).write(to: &payload)
        #expect(payload.getInteger(at: 0, as: UInt32.self) == 0x3000_0029)
        let decoded = try AnyRPCMessage(payload: payload)
        let response = try #require(decoded.message as? SDLButtonPressResponse)
        #expect(response == SDLButtonPressResponse(resultCode: .invalidData, info: "bad JSON", success: false))
        #expect(decoded.isErroneousResponse)
        #expect(decoded.rpcType == .erroneousResponse)
        #expect(decoded.rpcType.description == "erroneousResponse")
        #expect(decoded.correlationID == 77)
        #expect(decoded != AnyRPCMessage(response, correlationID: 77))
        // Re-encoding keeps the type, in both formats.
        #expect(try decoded.payload() == payload)
        let bson = try decoded.payload(format: .bson)
        #expect(bson.getInteger(at: 0, as: UInt32.self) == 0x3000_0029)
        #expect(try AnyRPCMessage(payload: bson) == decoded)
        // The dynamic API and the type lookup map it to the response type.
        #expect(AnyRPCMessage.messageType(functionID: .buttonPress, rpcType: .erroneousResponse) == SDLButtonPressResponse.self)
        let built = try AnyRPCMessage(functionName: "ButtonPress", rpcType: .erroneousResponse, correlationID: 77, jsonParameters: json)
        #expect(built == decoded)
        // A response's mandatory parameters are still required.
        var empty = ByteBuffer()
        try RPCPayload(
            header: RPCBinaryHeader(rpcType: .erroneousResponse, functionID: 41, correlationID: 1, jsonSize: 0),
            parameters: ByteBuffer()
        ).write(to: &empty)
        expectError(RPCError(.missingParameter, path: [.key("resultCode")], "missing mandatory parameter")) {
            try AnyRPCMessage(payload: empty)
        }
        // Only a response can be sent as an erroneous response.
        let notResponse = AnyRPCMessage(SDLButtonPressRequest(moduleType: .climate, buttonName: .acMax, buttonPressMode: .short), correlationID: 1, isErroneousResponse: true)
        let error = try #require(throws: RPCError.self) { try notResponse.payload() }
        #expect(error.code == .invalidPayload)
        #expect(error.detail == "an erroneous response must carry a response, not a request")
    }

    @Test("the GetVehicleData request vector of sdl_java_suite decodes")
    func javaVector() throws {
        let payload = try SharedData.headerVectorPayload("java-samplerpc-getvehicledata-request")
        let message = try AnyRPCMessage(payload: payload)
        #expect(message.correlationID == 630)
        let request = try #require(message.message as? SDLGetVehicleDataRequest)
        #expect(request.airbagStatus == true)
        #expect(request.beltStatus == true)
        #expect(request.speed == nil)
    }

    @Test("malformed payloads of the vectors are typed errors", arguments: [
        ("java-samplerpc-corrupt-jsonsize", "invalidPayload"),
        ("java-bfh-corrupt-0x99", "invalidPayload"),
        ("core-payload-json-no-data", "malformedInput"),
        ("ios-testpayloadheader-400", "invalidPayload"),
    ])
    func malformedVectors(id: String, code: String) throws {
        let payload = try SharedData.headerVectorPayload(id)
        let error = try #require(throws: RPCError.self) { try AnyRPCMessage(payload: payload) }
        #expect(error.code.name == code, "\(id): \(error)")
    }

    @Test("a payload without parameters (JSON size 0) has an empty parameters object, in either format", arguments: [
        nil, RPCParameterFormat.json, .bson,
    ])
    func headerOnly(format: RPCParameterFormat?) throws {
        func payload(_ id: String) throws -> ByteBuffer {
            try SharedData.headerVectorPayload(id)
        }
        // SDL Core's header-only UnregisterAppInterface request: no mandatory parameters.
        let unregister = try AnyRPCMessage(payload: payload("core-payload-header-only"), format: format)
        #expect(unregister.message as? SDLUnregisterAppInterfaceRequest == SDLUnregisterAppInterfaceRequest())
        #expect(unregister.functionID.rawValue == 2)
        #expect(unregister.correlationID == 1)
        #expect(unregister.bulkData.readableBytes == 0)
        // sdl_java_suite's dummy OnHMIStatus: the parameters are empty, so its mandatory ones are missing.
        let error = try #require(throws: RPCError.self) { try AnyRPCMessage(payload: payload("java-bfh-dummy-onhmistatus"), format: format) }
        expectIdentical(error, RPCError(.missingParameter, path: [.key("hmiLevel")], "missing mandatory parameter"))
        // Bytes after a JSON size of 0 are bulk data; the parameters are still empty.
        var withBulk = try payload("core-payload-header-only")
        withBulk.writeBytes([0xCA, 0xFE])
        let bulk = try AnyRPCMessage(payload: withBulk, format: format)
        #expect(bulk.message is SDLUnregisterAppInterfaceRequest)
        #expect(Array(bulk.bulkData.readableBytesView) == [0xCA, 0xFE])
        // The generic value reader agrees.
        #expect(try RPCValue(parameters: ByteBuffer(), format: format ?? .json) == .object([:]))
    }

    @Test("the iOS DeleteCommand vector carries the v1 envelope, not parameters")
    func iosVector() throws {
        let payload = try SharedData.headerVectorPayload("ios-rpcpayload-deletecommand-response-bulk")
        // {"response":{...}} as parameters: DeleteCommand response's mandatory params are missing.
        let error = try #require(throws: RPCError.self) { try AnyRPCMessage(payload: payload) }
        #expect(error.code == .missingParameter)
        // The parameters still parse as JSON, and the bulk data is there.
        let parsed = try RPCPayload(parsing: payload)
        #expect(String(buffer: parsed.bulkData) == "PrimitiveString")
        let value = try RPCValue(jsonObject: parsed.parameters)
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object.map(\.key) == ["response"])
    }

    @Test("function names, ids and unknown functions")
    func functionIDs() throws {
        #expect(FunctionID(name: "PublishAppService") == .publishAppService)
        #expect(FunctionID.publishAppService.rawValue == 52)
        #expect(FunctionID.onAppServiceData.rawValue == 0x8012)
        #expect(FunctionID(rawValue: 32786).name == "OnAppServiceData")
        #expect(FunctionID(rawValue: 0x7FFF).name == nil)
        #expect(FunctionID(rawValue: 0x7FFF).description == "32767")
        #expect(FunctionID(name: "SyncPData")?.rawValue == 65537)
        #expect(FunctionID(name: "publishAppService") == nil)
        // A function id with no message type: a typed error, and the parameters still parse.
        var payload = ByteBuffer()
        try RPCPayload(header: RPCBinaryHeader(rpcType: .request, functionID: 0x7FFF, correlationID: 1, jsonSize: 0), parameters: ByteBuffer(string: "{}")).write(to: &payload)
        expectError(RPCError(.unknownFunction, "no request of function 32767 in the spec")) { try AnyRPCMessage(payload: payload) }
        // OnHMIStatus exists only as a notification.
        #expect(AnyRPCMessage.messageType(functionID: .onHMIStatus, rpcType: .request) == nil)
        #expect(AnyRPCMessage.messageType(functionID: .onHMIStatus, rpcType: .notification) == SDLOnHMIStatus.self)
    }

    @Test("the dynamic API: name + type + JSON text → validated message → payload → JSON text")
    func dynamicAPI() throws {
        let message = try AnyRPCMessage(
            functionName: "SetInteriorVehicleData", rpcType: .request, correlationID: 9,
            jsonParameters: #"{ "moduleData" : { "moduleType" : "RADIO", "radioControlData" : { "frequencyInteger" : 101, "band" : "FM" } } }"#)
        #expect(message.functionID.rawValue == 44)
        let payload = try message.payload()
        let back = try AnyRPCMessage(payload: payload, format: .json)
        #expect(back == message)
        #expect(try back.jsonParametersText() == #"{"moduleData":{"moduleType":"RADIO","radioControlData":{"frequencyInteger":101,"band":"FM"}}}"#)

        let invalid = try #require(throws: RPCError.self) {
            try AnyRPCMessage(functionName: "SetInteriorVehicleData", rpcType: .request,
                              jsonParameters: #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":101}}}"#)
        }
        #expect(invalid.description == "moduleData.climateControlData.fanSpeed: above maxvalue 100")
        expectError(RPCError(.unknownFunction, #"no function named "Teleport" in the spec"#)) {
            try AnyRPCMessage(functionName: "Teleport", rpcType: .request, jsonParameters: "{}")
        }
        #expect(throws: RPCError.self) {
            try AnyRPCMessage(functionName: "OnRCStatus", rpcType: .response, jsonParameters: "{}")
        }
    }

    @Test("format detection; BSON payloads decode without being told the format")
    func formats() throws {
        #expect(RPCParameterFormat.detect(Array("{}".utf8)) == .json)
        #expect(RPCParameterFormat.detect([5, 0, 0, 0, 0]) == .bson)
        #expect(RPCParameterFormat.detect([0x7B, 0, 0, 0, 0x7D]) == .json)
        let request = SDLSubscribeWayPointsRequest()
        let payload = try request.payload(correlationID: 1, format: .bson)
        #expect(Array(payload.readableBytesView) == [0x00, 0x00, 0x00, 0x2E, 0, 0, 0, 1, 0, 0, 0, 5, 5, 0, 0, 0, 0])
        let decoded = try AnyRPCMessage(payload: payload)
        #expect(decoded.message as? SDLSubscribeWayPointsRequest == request)
        // The formats are closed: protocol spec 5.4.1 knows these two.
        #expect(RPCParameterFormat.allCases == [.json, .bson])
        #expect(RPCParameterFormat(rawValue: "xml") == nil)
        #expect(RPCParameterFormat.allCases.map(\.description) == ["json", "bson"])
    }
}
