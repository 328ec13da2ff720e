import NIOCore
import SDLRPC
import Testing

/// The code of SDLRPC.docc's getting-started article, run.
@Suite struct DocumentationExampleTests {
    @Test func gettingStarted() throws {
        let request = SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true)
        let payload = try request.payload(correlationID: 1, format: .bson)
        let decoded = try AnyRPCMessage(payload: payload)
        #expect(decoded.functionName == "GetInteriorVehicleData")
        #expect(decoded.correlationID == 1)
        #expect((decoded.message as? SDLGetInteriorVehicleDataRequest)?.subscribe == true)

        let message = try AnyRPCMessage(
            functionName: "SetInteriorVehicleData", rpcType: .request,
            jsonParameters: #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":40}}}"#)
        #expect(try message.jsonParametersText() == #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":40}}}"#)
    }
}
