import NIOCore
import Testing

@testable import SDLRPC

/// What the generator does for speed must not show: structs stored out of line behave as values,
/// and enums decoded by matching their names where the reader holds them decode as by name.
@Suite struct GeneratedLayoutTests {
    static func climate(fanSpeed: Int32) -> SDLModuleData {
        SDLModuleData(
            moduleType: .climate, moduleId: "front",
            climateControlData: SDLClimateControlData(
                fanSpeed: fanSpeed, currentTemperature: SDLTemperature(unit: .celsius, value: 21.5), acEnable: true))
    }

    static func radio(frequency: Int32) -> SDLRadioControlData {
        SDLRadioControlData(frequencyInteger: frequency, frequencyFraction: 5, band: .fm, hdRadioEnable: true, availableHdChannels: [1, 2])
    }

    /// A large struct (`SDLRadioControlData`, `SDLWeatherServiceData`, `SDLNavigationServiceData`)
    /// is one reference plus its extra parameters' reference: a copy is a reference copy, counted
    /// by the layout and by the storage's identity, and a change to a copy leaves the original as
    /// it was. `SDLModuleData`, which holds radio data, stays inline and within the generator's
    /// limit, so that climate or seat data decode with no allocation for it.
    @Test func aLargeStructCopiesOneReference() {
        #expect(MemoryLayout<SDLRadioControlData>.size == 2 * MemoryLayout<AnyObject>.size)
        #expect(MemoryLayout<SDLWeatherServiceData>.size == 2 * MemoryLayout<AnyObject>.size)
        #expect(MemoryLayout<SDLNavigationServiceData>.size == 2 * MemoryLayout<AnyObject>.size)
        #expect(MemoryLayout<SDLModuleData>.size <= 600)
        let original = Self.radio(frequency: 101)
        var copy = original
        #expect(copy._storage === original._storage)
        copy.frequencyInteger = 99
        #expect(copy._storage !== original._storage)
        #expect(original.frequencyInteger == 101)
        #expect(copy.frequencyInteger == 99)
        #expect(copy.band == .fm && copy.availableHdChannels == [1, 2])
        copy.availableHdChannels = nil
        #expect(copy.availableHdChannels == nil && copy.frequencyInteger == 99 && original.availableHdChannels == [1, 2])
        // Inside an inline struct, changed through it.
        var module = SDLModuleData(moduleType: .radio, radioControlData: original)
        #expect(module.radioControlData?._storage === original._storage)
        module.radioControlData?.frequencyInteger = 88
        #expect(module.radioControlData?.frequencyInteger == 88 && original.frequencyInteger == 101)
    }

    /// Equality and hashing by value, as a stored struct's synthesized ones: separately built
    /// equal values are equal and hash alike, whatever their storage; unknown parameters count.
    @Test func outOfLineStructsCompareByValue() throws {
        let a = Self.radio(frequency: 101)
        let b = Self.radio(frequency: 101)
        #expect(a._storage !== b._storage)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(a != Self.radio(frequency: 102))
        var extra = a
        extra.unknownParameters = ["x": .int32(1)]
        #expect(extra._storage === a._storage)
        #expect(extra != a)
        // Decoded values equal built ones, through both wire formats, alone and inside ModuleData.
        #expect(try SDLRadioControlData(jsonParameters: a.jsonParameters()) == a)
        #expect(try SDLRadioControlData(bsonParameters: a.bsonParameters()) == a)
        let module = SDLModuleData(moduleType: .radio, moduleId: "front", radioControlData: a)
        #expect(try SDLModuleData(jsonParameters: module.jsonParameters()) == module)
        #expect(try SDLModuleData(bsonParameters: module.bsonParameters()) == module)
        let climate = Self.climate(fanSpeed: 40)
        #expect(try SDLModuleData(jsonParameters: climate.jsonParameters()) == climate)
        #expect(try SDLModuleData(bsonParameters: climate.bsonParameters()) == climate)
    }

    /// Every known name of an enum decodes to its case from JSON and BSON, matched by hash and
    /// bytes; a name sharing a known name's hash, a name spelt with escapes and an unknown name
    /// decode as `init(wireName:)` says.
    @Test func enumsDecodeByName() throws {
        for result in SDLResult.knownCases {
            let response = SDLGetInteriorVehicleDataResponse(resultCode: result, success: true)
            #expect(try SDLGetInteriorVehicleDataResponse(jsonParameters: response.jsonParameters()).resultCode == result)
            #expect(try SDLGetInteriorVehicleDataResponse(bsonParameters: response.bsonParameters()).resultCode == result)
        }
        for language in SDLLanguage.knownCases {
            let text = #"{"language":"\#(language.wireName)","hmiDisplayLanguage":"EN-US"}"#
            #expect(try SDLOnLanguageChange(jsonParameters: text).language == language, "\(text)")
        }
        // Unknown values are kept, not refused, without validation.
        let unvalidated = RPCCodingOptions(validate: false)
        func decoded(_ json: String) throws -> SDLResult {
            try SDLGetInteriorVehicleDataResponse(jsonParameters: #"{"resultCode":\#(json),"success":true}"#, options: unvalidated).resultCode
        }
        // "SUCCESS": 7 bytes, first "S", middle "C", last "S"; so is "SAACAAS".
        #expect(RPCKeyHash.hash(Array("SAACAAS".utf8)) == RPCKeyHash.hash(Array("SUCCESS".utf8)))
        #expect(try decoded(#""SAACAAS""#) == .unknown("SAACAAS"))
        #expect(try decoded(#""SUCC\u0045SS""#) == .success)
        #expect(try decoded(#""WARP""#) == .unknown("WARP"))
        #expect(try decoded(#""""#) == .unknown(""))
        #expect(try decoded(#""SUCCESSÉ""#) == .unknown("SUCCESSÉ"))
        #expect(throws: RPCError.self) { try decoded("1") }
        #expect(throws: RPCError.self) { try decoded(#""SUCC"#) }
        // BSON: the same names where the document holds them.
        for name in ["SAACAAS", "", "WARP"] {
            let document = try SDLGetInteriorVehicleDataResponse(resultCode: .unknown(name), success: true).bsonParameters(options: unvalidated)
            #expect(try SDLGetInteriorVehicleDataResponse(bsonParameters: document, options: unvalidated).resultCode == .unknown(name))
        }
    }
}
