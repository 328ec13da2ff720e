import NIOCore
import SDLProtocol
import SDLRPC
import SDLRPCGenerator
import Testing

/// The 35 messages of RPC_SCOPE.md (20 functions): request and response, or notification.
let scopeFunctions: [(name: String, id: UInt32)] = [
    ("PublishAppService", 52), ("GetAppServiceData", 53), ("PerformAppServiceInteraction", 55),
    ("UnpublishAppService", 56), ("OnAppServiceData", 32786), ("GetFile", 54), ("ButtonPress", 41),
    ("GetInteriorVehicleData", 43), ("SetInteriorVehicleData", 44), ("GetInteriorVehicleDataConsent", 62),
    ("ReleaseInteriorVehicleDataModule", 63), ("OnInteriorVehicleData", 32783), ("OnRCStatus", 32785),
    ("GetSystemCapability", 48), ("OnSystemCapabilityUpdated", 32787), ("SendLocation", 39),
    ("GetWayPoints", 45), ("SubscribeWayPoints", 46), ("UnsubscribeWayPoints", 47), ("OnWayPointChange", 32784),
]

@Suite("Round trips built from the spec")
struct RoundTripTests {
    @Test("the 35 scope messages, fully populated, round-trip to equal values")
    func scopeMessages() throws {
        let spec = try SharedData.spec()
        let functions = spec.functions.filter { function in scopeFunctions.contains(where: { $0.name == function.name }) }
        #expect(functions.count == 35)
        #expect(functions.filter { $0.messageType == .notification }.count == 5)
        var builder = ExampleBuilder(spec: spec)
        for function in functions {
            let id = try #require(scopeFunctions.first(where: { $0.name == function.name })?.id)
            #expect(FunctionID(name: function.name)?.rawValue == id)
            let input = builder.parameters(of: function)
            let text = try input.jsonText()
            let (message, json) = try roundTrip(functionName: function.name, rpcType: function.messageType.rpcType, parameters: text)
            #expect(message.functionID.rawValue == id)
            // Every parameter the builder set (all of them) comes back, with the same value.
            #expect(try RPCValue(jsonObject: json) == input, "\(function.name) \(function.messageType)")
        }
    }

    @Test("every message of the spec round-trips", arguments: [false, true])
    func wholeSpec(fullyPopulated: Bool) throws {
        let spec = try SharedData.spec()
        #expect(spec.functions.count == 152)
        #expect(RPCRegistry.allMessageTypes.count == 152)
        var builder = ExampleBuilder(spec: spec)
        if !fullyPopulated {
            // Only mandatory parameters, smallest arrays.
            builder.maxDepth = 0
            builder.valueBudget = 0
        } else {
            builder.valueBudget = 2_000
        }
        for function in spec.functions {
            let type = try #require(
                AnyRPCMessage.messageType(functionID: FunctionID(rawValue: UInt32(function.functionID)), rpcType: function.messageType.rpcType),
                "no generated type for \(function.name) \(function.messageType)")
            #expect(type.functionName == function.name)
            let input = builder.parameters(of: function)
            let (_, json) = try roundTrip(functionName: function.name, rpcType: function.messageType.rpcType, parameters: try input.jsonText())
            #expect(try RPCValue(jsonObject: json) == input, "\(function.name) \(function.messageType)")
        }
    }
}
