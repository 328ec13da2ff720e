import Foundation
import NIOCore
import SDLProtocol
import SDLRPC
import Testing

/// The 14 sdl_java_suite JSON fixtures of `shared/vectors/rpc_json/`, request and response each:
/// decode, validate, re-encode, compare as JSON values.
@Suite("RPC JSON fixtures")
struct FixtureTests {
    static let files = [
        "PublishAppService", "UnpublishAppService", "GetAppServiceData", "PerformAppServiceInteraction",
        "GetSystemCapability", "SendLocation", "GetWayPoints", "SubscribeWayPoints", "UnsubscribeWayPoints",
        "ButtonPress", "GetInteriorVehicleData", "SetInteriorVehicleData", "GetInteriorVehicleDataConsent",
        "ReleaseInteriorVehicleDataModule",
    ]

    @Test("the manifest lists exactly these 14 fixtures")
    func manifest() throws {
        let manifest = try #require(try SharedData.json("vectors/rpc_json/MANIFEST.json") as? [[String: Any]])
        #expect(Set(manifest.compactMap { $0["file"] as? String }) == Set(Self.files.map { $0 + ".json" }))
    }

    @Test("fixture decodes, validates and re-encodes to the same JSON value", arguments: files)
    func fixture(name: String) throws {
        let root = try #require(try SharedData.json("vectors/rpc_json/\(name).json") as? [String: Any])
        let manifest = try #require(try SharedData.json("vectors/rpc_json/MANIFEST.json") as? [[String: Any]])
        let quirks = try #require(manifest.first(where: { $0["file"] as? String == "\(name).json" }))

        for (envelopeKey, rpcType) in [("request", RPCType.request), ("response", RPCType.response)] {
            // Quirk: the fixtures use the protocol-v1 envelope {"request"|"response": {"name",
            // "correlationID", "parameters"}}; on the wire only `parameters` is JSON, function and
            // correlation id travel in the binary header. The function is picked by the envelope key
            // and the file name, because of the next quirk.
            let envelope = try #require(root[envelopeKey] as? [String: Any], "\(name): no \(envelopeKey)")
            // Quirk (not in the manifest): six responses and two requests have no "parameters" at
            // all; that is an empty parameters object.
            var parameters = envelope["parameters"] as? [String: Any] ?? [:]
            #expect((envelope["parameters"] == nil) == Self.withoutParameters.contains("\(name) \(envelopeKey)"))
            // Quirk (MANIFEST responseNameLacksSuffix): two responses are named without "Response".
            let envelopeName = try #require(envelope["name"] as? String)
            if rpcType == .response, quirks["responseNameLacksSuffix"] as? Bool == true {
                #expect(envelopeName == name)
            } else {
                #expect(envelopeName == name + (rpcType == .response ? "Response" : ""))
            }
            // Quirk (MANIFEST correlationIdMismatch): request and response ids differ in 11 files; the
            // ids are not part of the parameters, so they only show up here.
            let requestID = (root["request"] as? [String: Any])?["correlationID"] as? Int
            let responseID = (root["response"] as? [String: Any])?["correlationID"] as? Int
            if let mismatch = quirks["correlationIdMismatch"] as? [Int] {
                #expect([requestID, responseID] == mismatch.map { Optional($0) })
            } else {
                #expect(requestID == responseID)
            }
            // Quirk (not in the manifest): PublishAppService gives `serviceIcon` as the string "test",
            // but the spec's AppServiceManifest.serviceIcon is an Image struct. The decoder must say so,
            // naming the path; the test then uses the Image the string stands for.
            if name == "PublishAppService" {
                let text = try jsonText(parameters)
                let path = rpcType == .request
                    ? "appServiceManifest.serviceIcon" : "appServiceRecord.serviceManifest.serviceIcon"
                let error = try #require(throws: RPCError.self) {
                    try AnyRPCMessage(functionName: name, rpcType: rpcType, jsonParameters: text)
                }
                #expect(error.code == .typeMismatch)
                #expect(error.pathString == path)
                #expect(error.detail == "expected object, found string")
                parameters = Self.replacingServiceIcon(in: parameters)
            }

            // Quirk (not in the manifest): two fixtures spell a mandatory key the way an older
            // sdl_java_suite did (`serviceId`, `appServiceId` for the spec's `serviceID`). The decoder
            // reports the missing key by its path and keeps the unknown one; the test then renames it.
            if let (path, oldKey) = Self.misspelled[name + " " + envelopeKey] {
                let text = try jsonText(parameters)
                let error = try #require(throws: RPCError.self) {
                    try AnyRPCMessage(functionName: name, rpcType: rpcType, jsonParameters: text)
                }
                #expect(error.code == .missingParameter)
                #expect(error.description == "\(path): missing mandatory parameter")
                parameters = Self.renaming(oldKey, to: "serviceID", in: parameters)
            }

            // Quirk: no response carries the mandatory `success` and `resultCode`; without them the
            // decoder must refuse the response (naming the first one in spec order), so the test
            // adds them before the round trip.
            if rpcType == .response {
                let bare = try jsonText(parameters)
                let error = try #require(throws: RPCError.self) {
                    try AnyRPCMessage(functionName: name, rpcType: .response, jsonParameters: bare)
                }
                #expect(error.code == .missingParameter)
                #expect(["success: missing mandatory parameter", "resultCode: missing mandatory parameter"].contains(error.description))
                parameters["success"] = true
                parameters["resultCode"] = "SUCCESS"
            }

            let text = try jsonText(parameters)
            let (message, reencoded) = try roundTrip(functionName: name, rpcType: rpcType, parameters: text)
            #expect(message.functionName == name)
            #expect(message.rpcType == rpcType)
            try message.message.validate()
            #expect(try sameJSON(reencoded, text), "\(name) \(envelopeKey): \(reencoded) != \(text)")
        }
    }

    static let withoutParameters: Set<String> = [
        "ButtonPress response", "ReleaseInteriorVehicleDataModule response", "SendLocation response",
        "SubscribeWayPoints request", "SubscribeWayPoints response", "UnpublishAppService response",
        "UnsubscribeWayPoints request", "UnsubscribeWayPoints response",
    ]

    static let misspelled: [String: (path: String, key: String)] = [
        "GetAppServiceData response": ("serviceData.serviceID", "serviceId"),
        "PerformAppServiceInteraction request": ("serviceID", "appServiceId"),
    ]

    static func renaming(_ oldKey: String, to newKey: String, in parameters: [String: Any]) -> [String: Any] {
        var result: [String: Any] = [:]
        for (key, value) in parameters {
            let value = (value as? [String: Any]).map { renaming(oldKey, to: newKey, in: $0) } ?? value
            result[key == oldKey ? newKey : key] = value
        }
        return result
    }

    static func replacingServiceIcon(in parameters: [String: Any]) -> [String: Any] {
        var result: [String: Any] = [:]
        for (key, value) in parameters {
            if key == "serviceIcon", let file = value as? String {
                result[key] = ["value": file, "imageType": "DYNAMIC"]
            } else if let object = value as? [String: Any] {
                result[key] = replacingServiceIcon(in: object)
            } else {
                result[key] = value
            }
        }
        return result
    }

    @Test("typed values of the SetInteriorVehicleData fixture")
    func typedValues() throws {
        let root = try #require(try SharedData.json("vectors/rpc_json/SetInteriorVehicleData.json") as? [String: Any])
        let parameters = try #require((root["request"] as? [String: Any])?["parameters"])
        let request = try SDLSetInteriorVehicleDataRequest(jsonParameters: try jsonText(parameters))
        #expect(request.moduleData.moduleType == .climate)
        let climate = try #require(request.moduleData.climateControlData)
        #expect(climate.fanSpeed == 100)
        #expect(climate.currentTemperature == SDLTemperature(unit: .celsius, value: 100))
        #expect(climate.ventilationMode == .both)
        #expect(climate.defrostZone == .all)
        #expect(climate.acEnable == true)
        #expect(climate.unknownParameters.isEmpty)
    }
}
