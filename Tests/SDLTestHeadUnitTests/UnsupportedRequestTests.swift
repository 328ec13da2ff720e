import NIOCore
import SDLProtocol
import SDLRPC
import SDLRPCGenerator
import SDLTestHeadUnit
import SDLTestSupport
import Testing

@Suite("Requests the head unit does not implement")
struct UnsupportedRequestTests {
    let app = AppHandle(1)

    /// The requests the head unit answers itself at 8.0 with remote control on.
    static let implemented: Set<String> = [
        "RegisterAppInterface", "UnregisterAppInterface", "SetGlobalProperties", "GetSystemCapability", "ButtonPress",
        "GetInteriorVehicleData", "SetInteriorVehicleData", "GetInteriorVehicleDataConsent",
        "ReleaseInteriorVehicleDataModule", "PublishAppService", "UnpublishAppService", "GetAppServiceData",
        "PerformAppServiceInteraction",
    ]

    @Test("every request of the spec is answered with one response of its function; the unimplemented ones with UNSUPPORTED_REQUEST")
    func everyRequestIsAnswered() throws {
        let spec = try SpecParser.parse(SharedData.bytes("rpc_spec/MOBILE_API.xml"))
        let builder = MandatoryParameters(spec: spec)
        let requests = spec.functions.filter { $0.messageType == .request }
        #expect(requests.count == 63)
        var unsupported: [String] = []
        for function in requests {
            var harness = Harness()
            harness.register(self.app, name: "Remote", types: [.remoteControl])
            let message = try AnyRPCMessage(
                functionName: function.name, rpcType: .request, correlationID: 77,
                jsonParameters: try builder.parameters(of: function).jsonText())
            let outputs = harness.headUnit.received(message, from: self.app, now: harness.now)
            checkSent(outputs)
            let responses = outputs.sent.filter { $0.message.rpcType == .response }
            try #require(responses.count == 1, "\(function.name): \(outputs.sends)")
            let response = responses[0]
            #expect(response.app == self.app && response.message.correlationID == 77, "\(function.name)")
            #expect(response.message.functionName == function.name)
            if !Self.implemented.contains(function.name) {
                unsupported.append(function.name)
                expectFailure(outputs, to: self.app, function: function.name, correlationID: 77, .unsupportedRequest)
            } else {
                #expect(Self.result(response.message) != SDLResult.unsupportedRequest.wireName, "\(function.name)")
            }
        }
        #expect(unsupported.count == 50)
        #expect(unsupported.contains("Show") && unsupported.contains("SendLocation") && unsupported.contains("AddCommand"))
    }

    @Test("the response carries the function's name in info and reads back as that function's response")
    func responseShape() throws {
        var harness = Harness()
        harness.register(self.app, name: "Weather")
        let outputs = harness.send(SDLShowRequest(mainField1: "Hello"), from: self.app, correlationID: 12)
        #expect(outputs.sends == ["app1 <- Show response #12"])
        let response = try outputs.only(SDLShowResponse.self, to: self.app)
        #expect(
            response
                == SDLShowResponse(
                    success: false, resultCode: .unsupportedRequest,
                    info: "Show is not supported by this head unit (RPC 8.0.0)"))
        let payload = try outputs.sent[0].message.payload()
        let decoded = try AnyRPCMessage(payload: payload)
        #expect(decoded.rpcType == .response && decoded.functionID == .show && decoded.correlationID == 12)
    }

    @Test("functions newer than the head unit's version are UNSUPPORTED_REQUEST", arguments: [
        (RPCVersion.v4_5, "PublishAppService"), (RPCVersion.v5_0, "GetAppServiceData"),
        (RPCVersion.v5_1, "UnpublishAppService"), (RPCVersion.v5_1, "ReleaseInteriorVehicleDataModule"),
        (RPCVersion.v5_0, "GetInteriorVehicleDataConsent"),
    ])
    func newerFunctions(version: RPCVersion, function: String) throws {
        var harness = Harness { $0.rpcVersion = version }
        harness.register(self.app, name: "Remote", types: [.remoteControl])
        let spec = try SpecParser.parse(SharedData.bytes("rpc_spec/MOBILE_API.xml"))
        let specFunction = try #require(spec.functions.first { $0.name == function && $0.messageType == .request })
        let message = try AnyRPCMessage(
            functionName: function, rpcType: .request, correlationID: 5,
            jsonParameters: try MandatoryParameters(spec: spec).parameters(of: specFunction).jsonText())
        let outputs = harness.headUnit.received(message, from: self.app, now: harness.now)
        expectFailure(outputs, to: self.app, function: function, correlationID: 5, .unsupportedRequest)
    }

    @Test("remote control off: the RC requests are UNSUPPORTED_REQUEST")
    func remoteControlOff() {
        var harness = Harness { $0.remoteControl = false }
        harness.register(self.app, name: "Remote", types: [.remoteControl])
        let outputs = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: self.app, correlationID: 3)
        expectFailure(outputs, to: self.app, function: "GetInteriorVehicleData", correlationID: 3, .unsupportedRequest)
        let capability = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl), from: self.app, correlationID: 4)
        expectFailure(capability, to: self.app, function: "GetSystemCapability", correlationID: 4, .dataNotAvailable)
    }

    @Test("an undecodable request is answered: INVALID_DATA of its function, or a GenericResponse for an unknown function")
    func undecodable() throws {
        var harness = Harness()
        harness.register(self.app, name: "Weather")
        let error = RPCError(.missingParameter, path: [.key("moduleType")], "missing")
        let invalid = harness.headUnit.receivedUndecodable(
            functionID: .getInteriorVehicleData, rpcType: .request, correlationID: 8, error: error, from: self.app,
            now: harness.now)
        expectFailure(invalid, to: self.app, function: "GetInteriorVehicleData", correlationID: 8, .invalidData)
        let unknown = harness.headUnit.receivedUndecodable(
            functionID: FunctionID(rawValue: 0x7FF), rpcType: .request, correlationID: 9,
            error: RPCError(.unknownFunction, "no function"), from: self.app, now: harness.now)
        expectFailure(unknown, to: self.app, function: "GenericResponse", correlationID: 9, .unsupportedRequest)
        let notification = harness.headUnit.receivedUndecodable(
            functionID: .onAppServiceData, rpcType: .notification, correlationID: 0, error: error, from: self.app,
            now: harness.now)
        #expect(notification.sends.isEmpty)
    }

    static func result(_ message: AnyRPCMessage) -> String? {
        guard let text = try? message.message.jsonParametersText(), case .object(let object)? = try? RPCValue(jsonObject: text),
            case .string(let code)? = object["resultCode"]
        else { return nil }
        return code
    }
}
