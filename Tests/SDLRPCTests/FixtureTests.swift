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

    /// An entry of `MANIFEST.json`: the file, and the quirks the tests below rely on.
    struct ManifestEntry: Decodable {
        var file: String
        var responseNameLacksSuffix: Bool?
        var correlationIdMismatch: [Int]?
    }

    /// A fixture: the protocol-v1 envelope of a request and of its response.
    struct Fixture: Decodable {
        var request: Envelope
        var response: Envelope

        struct Envelope: Decodable {
            var name: String
            var correlationID: Int
            var parameters: JSONValue?
        }
    }

    static func manifest() throws -> [ManifestEntry] {
        try SharedData.decode([ManifestEntry].self, from: "vectors/rpc_json/MANIFEST.json")
    }

    @Test("the manifest lists exactly these 14 fixtures")
    func manifest() throws {
        #expect(Set(try Self.manifest().map(\.file)) == Set(Self.files.map { $0 + ".json" }))
    }

    @Test("fixture decodes, validates and re-encodes to the same JSON value", arguments: files)
    func fixture(name: String) throws {
        let fixture = try SharedData.decode(Fixture.self, from: "vectors/rpc_json/\(name).json")
        let quirks = try #require(try Self.manifest().first(where: { $0.file == "\(name).json" }), "\(name) is not in the manifest")

        for (envelopeKey, rpcType) in [("request", RPCType.request), ("response", RPCType.response)] {
            // Quirk: the fixtures use the protocol-v1 envelope {"request"|"response": {"name",
            // "correlationID", "parameters"}}; on the wire only `parameters` is JSON, function and
            // correlation id travel in the binary header. The function is picked by the envelope key
            // and the file name, because of the next quirk.
            let envelope = rpcType == .request ? fixture.request : fixture.response
            // Quirk (not in the manifest): six responses and two requests have no "parameters" at
            // all; that is an empty parameters object.
            #expect((envelope.parameters == nil) == Self.withoutParameters.contains("\(name) \(envelopeKey)"))
            var parameters = envelope.parameters ?? .object([:])
            guard case .object = parameters else {
                Issue.record("\(name) \(envelopeKey): parameters are not an object")
                continue
            }
            // Quirk (MANIFEST responseNameLacksSuffix): two responses are named without "Response".
            if rpcType == .response, quirks.responseNameLacksSuffix == true {
                #expect(envelope.name == name)
            } else {
                #expect(envelope.name == name + (rpcType == .response ? "Response" : ""))
            }
            // Quirk (MANIFEST correlationIdMismatch): request and response ids differ in 11 files; the
            // ids are not part of the parameters, so they only show up here.
            let ids = [fixture.request.correlationID, fixture.response.correlationID]
            if let mismatch = quirks.correlationIdMismatch {
                #expect(ids == mismatch)
            } else {
                #expect(ids[0] == ids[1])
            }
            // Quirk (not in the manifest): PublishAppService gives `serviceIcon` as the string "test",
            // but the spec's AppServiceManifest.serviceIcon is an Image struct. The decoder must say so,
            // naming the path; the test then uses the Image the string stands for.
            if name == "PublishAppService" {
                let text = try parameters.text
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
                let text = try parameters.text
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
                let bare = try parameters.text
                let error = try #require(throws: RPCError.self) {
                    try AnyRPCMessage(functionName: name, rpcType: .response, jsonParameters: bare)
                }
                #expect(error.code == .missingParameter)
                #expect(["success: missing mandatory parameter", "resultCode: missing mandatory parameter"].contains(error.description))
                parameters["success"] = .bool(true)
                parameters["resultCode"] = .string("SUCCESS")
            }

            let text = try parameters.text
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

    static func renaming(_ oldKey: String, to newKey: String, in parameters: JSONValue) -> JSONValue {
        parameters.mappingMembers { key, value in (key == oldKey ? newKey : key, value) }
    }

    /// The fixture's `serviceIcon` strings as the Image structs they stand for.
    static func replacingServiceIcon(in parameters: JSONValue) -> JSONValue {
        parameters.mappingMembers { key, value in
            guard key == "serviceIcon", case .string = value else { return (key, value) }
            return (key, .object(["value": value, "imageType": .string("DYNAMIC")]))
        }
    }

    @Test("typed values of the SetInteriorVehicleData fixture")
    func typedValues() throws {
        let fixture = try SharedData.decode(Fixture.self, from: "vectors/rpc_json/SetInteriorVehicleData.json")
        let parameters = try #require(fixture.request.parameters, "the request has parameters")
        let request = try SDLSetInteriorVehicleDataRequest(jsonParameters: try parameters.text)
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
