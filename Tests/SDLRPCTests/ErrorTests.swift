import SDLRPC
import Testing

@Suite("RPCError")
struct ErrorTests {
    @Test("codes keep their stable names; errors are equal and hash alike by code alone")
    func equalityByCode() {
        let codes: [RPCError.Code] = [
            .malformedInput, .invalidUTF8, .nestingTooDeep, .typeMismatch, .notAnInteger, .numberOutOfRange,
            .missingParameter, .duplicateParameter, .unknownParameterNamedLikeKnown, .valueOutOfRange,
            .lengthOutOfRange, .sizeOutOfRange, .unknownEnumValue, .nonFiniteNumber, .unknownFunction, .invalidPayload,
        ]
        #expect(codes.map(\.name) == [
            "malformedInput", "invalidUTF8", "nestingTooDeep", "typeMismatch", "notAnInteger", "numberOutOfRange",
            "missingParameter", "duplicateParameter", "unknownParameterNamedLikeKnown", "valueOutOfRange",
            "lengthOutOfRange", "sizeOutOfRange", "unknownEnumValue", "nonFiniteNumber", "unknownFunction", "invalidPayload",
        ])
        #expect(codes.map(\.description) == codes.map(\.name))
        #expect(Set(codes).count == codes.count)

        let first = RPCError(.valueOutOfRange, path: [.key("climateControlData"), .key("fanSpeed")], "above maxvalue 100")
        let second = RPCError(.valueOutOfRange, offset: 7, "below minvalue 0")
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(first != RPCError(.lengthOutOfRange, path: first.path, first.detail))
        #expect(Set([first, second]).count == 1)
        // The other properties stay readable, and the description shows them.
        #expect(first.pathString == "climateControlData.fanSpeed")
        #expect(first.description == "climateControlData.fanSpeed: above maxvalue 100")
        #expect(second.offset == 7)
        #expect(second.description == "below minvalue 0 (at byte 7)")
        #expect(first.prefixed(.index(2)).pathString == "[2].climateControlData.fanSpeed")
    }
}
