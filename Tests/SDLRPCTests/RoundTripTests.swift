import NIOCore
import SDLProtocol
import SDLRPC
import SDLRPCGenerator
import SDLTestSupport
import Testing

/// The 35 messages (20 functions) the package proves first: app services, remote control, system
/// capabilities and the navigation pass-through; request and response, or notification.
let scopeFunctions: [(name: String, id: UInt32)] = [
    ("PublishAppService", 52), ("GetAppServiceData", 53), ("PerformAppServiceInteraction", 55),
    ("UnpublishAppService", 56), ("OnAppServiceData", 32786), ("GetFile", 54), ("ButtonPress", 41),
    ("GetInteriorVehicleData", 43), ("SetInteriorVehicleData", 44), ("GetInteriorVehicleDataConsent", 62),
    ("ReleaseInteriorVehicleDataModule", 63), ("OnInteriorVehicleData", 32783), ("OnRCStatus", 32785),
    ("GetSystemCapability", 48), ("OnSystemCapabilityUpdated", 32787), ("SendLocation", 39),
    ("GetWayPoints", 45), ("SubscribeWayPoints", 46), ("UnsubscribeWayPoints", 47), ("OnWayPointChange", 32784),
]

/// The 35 scope messages as "Name request|response|notification", the test cases' arguments.
let scopeMessages: [String] = scopeFunctions.flatMap { function in
    function.id >= 0x8000 ? ["\(function.name) notification"] : ["\(function.name) request", "\(function.name) response"]
}

/// The spec, parsed once for all test cases (nil when it cannot be read: `SharedData.spec()` then
/// says why).
enum ParsedSpec {
    static let spec: Spec? = try? SharedData.spec()

    static func get(sourceLocation: SourceLocation = #_sourceLocation) throws -> Spec {
        if let spec = Self.spec { return spec }
        return try SharedData.spec(sourceLocation: sourceLocation)
    }

    static func function(_ message: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> SpecFunction {
        let spec = try Self.get(sourceLocation: sourceLocation)
        return try #require(
            spec.functions.first(where: { "\($0.name) \($0.messageType)" == message }), "no \(message) in the spec",
            sourceLocation: sourceLocation)
    }
}

@Suite("Round trips built from the spec")
struct RoundTripTests {
    @Test("The first scope has 35 messages of 20 functions, 5 of them notifications")
    func scopeList() throws {
        let spec = try ParsedSpec.get()
        #expect(scopeMessages.count == 35)
        #expect(scopeMessages.filter { $0.hasSuffix(" notification") }.count == 5)
        for message in scopeMessages {
            #expect(spec.functions.contains(where: { "\($0.name) \($0.messageType)" == message }), "\(message)")
        }
        for function in scopeFunctions {
            #expect(FunctionID(name: function.name)?.rawValue == function.id)
        }
    }

    @Test(
        "each scope message, fully populated and with every array at maxsize and every string at maxlength, round-trips through JSON and BSON",
        arguments: scopeMessages)
    func scopeMessage(_ message: String) throws {
        let spec = try ParsedSpec.get()
        let function = try ParsedSpec.function(message)
        let builder = ExampleBuilder(spec: spec)
        var report = FullnessReport(spec: spec)
        for (index, instance) in builder.instances(of: function).enumerated() {
            let text = try instance.value.jsonText()
            let (decoded, json) = try roundTrip(functionName: function.name, rpcType: function.messageType.rpcType, parameters: text)
            #expect(decoded.functionID.rawValue == UInt32(function.functionID))
            // Every parameter the builder set comes back, with the same value.
            #expect(try RPCValue(jsonObject: json) == instance.value, "\(message), \(instance.label)")
            report.walk(instance.value, of: function)
            if index == 0 {
                // The full instance: every optional param is set, but for the recursion cut.
                #expect(report.unsetOptionals.isEmpty, "\(message): optional params left unset: \(report.unsetOptionals)")
            }
        }
        #expect(report.mismatches.isEmpty, "\(message): \(report.mismatches)")
        for line in report.limitsNotReached(builder.reachable(function)) {
            Issue.record("\(message): \(line)")
        }
    }

    @Test("the fullness checker finds an unset optional param and an array short of its maxsize")
    func checkerCanFail() throws {
        let spec = try ParsedSpec.get()
        let function = try ParsedSpec.function("GetSystemCapability response")
        let builder = ExampleBuilder(spec: spec)
        let reachable = builder.reachable(function)
        #expect(reachable.arrays[ParamID(owner: "SystemCapability", name: "displayCapabilities")] == 1000)
        #expect(reachable.arrays[ParamID(owner: "WindowCapability", name: "textFields")] == 100)
        #expect(reachable.arrays[ParamID(owner: "VideoStreamingCapability", name: "additionalVideoStreamingCapabilities")] == 100)
        #expect(reachable.strings[ParamID(owner: "Image", name: "value")] == 65535)

        // The full instance alone: no optional unset, but the long arrays and strings are not there.
        let full = builder.parameters(of: function, shape: .full(arrayCount: 2))
        var report = FullnessReport(spec: spec)
        report.walk(full, of: function)
        #expect(report.unsetOptionals.isEmpty)
        let missing = report.limitsNotReached(reachable)
        #expect(missing.contains("array SystemCapability.displayCapabilities never reached maxsize 1000 (largest: 2)"))
        #expect(missing.contains("string Image.value never reached maxlength 65535 (longest: 500)"))
        // Exactly the limits beyond the full instance's 2 elements and 500 scalars are missing.
        #expect(missing.count == reachable.arrays.values.filter { $0 > 2 }.count + reachable.strings.values.filter { $0 > 500 }.count)
        #expect(missing.count == 22)

        // One optional param removed deep inside: named with its path.
        guard case .object(var top) = full, case .object(var capability)? = top["systemCapability"],
              case .object(var video)? = capability["videoStreamingCapability"] else {
            Issue.record("unexpected shape")
            return
        }
        video["preferredResolution"] = nil
        capability["videoStreamingCapability"] = .object(video)
        top["systemCapability"] = .object(capability)
        var partial = FullnessReport(spec: spec)
        partial.walk(.object(top), of: function)
        #expect(partial.unsetOptionals == ["systemCapability.videoStreamingCapability.preferredResolution"])

        // The recursion is cut one repetition down, and only there.
        guard case .array(let additional)? = video["additionalVideoStreamingCapabilities"], case .object(let first)? = additional.first else {
            Issue.record("additionalVideoStreamingCapabilities not built")
            return
        }
        #expect(additional.count == 2)
        #expect(first["additionalVideoStreamingCapabilities"] == nil)
        #expect(first["preferredResolution"] != nil && first["supportedFormats"] != nil)
    }

    @Test("every message of the spec round-trips, with mandatory params only and fully populated", arguments: [false, true])
    func wholeSpec(fullyPopulated: Bool) throws {
        let spec = try ParsedSpec.get()
        #expect(spec.functions.count == 152)
        #expect(RPCRegistry.allMessageTypes.count == 152)
        let builder = ExampleBuilder(spec: spec)
        for function in spec.functions {
            let type = try #require(
                AnyRPCMessage.messageType(functionID: FunctionID(rawValue: UInt32(function.functionID)), rpcType: function.messageType.rpcType),
                "no generated type for \(function.name) \(function.messageType)")
            #expect(type.functionName == function.name)
            let input = builder.parameters(of: function, shape: fullyPopulated ? .full(arrayCount: 2) : .minimal)
            let (_, json) = try roundTrip(functionName: function.name, rpcType: function.messageType.rpcType, parameters: try input.jsonText())
            #expect(try RPCValue(jsonObject: json) == input, "\(function.name) \(function.messageType)")
        }
    }
}
