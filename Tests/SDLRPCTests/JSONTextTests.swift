import SDLRPC
import Testing

/// `RPCValue(jsonText:)`: any top-level value, read by the same strict reader as JSON objects.
@Suite struct JSONTextTests {
    @Test func anyTopLevelValue() throws {
        #expect(try RPCValue(jsonText: " [1, 2.5, \"x\", null] ") == .array([.int32(1), .double(2.5), .string("x"), .null]))
        #expect(try RPCValue(jsonText: "9223372036854775807") == .int64(.max))
        #expect(try RPCValue(jsonText: "1.0") == .double(1))
        #expect(try RPCValue(jsonText: "\"\\u00e9\"") == .string("é"))
        #expect(try RPCValue(jsonText: #"{"b":1,"a":2}"#) == .object(["b": .int32(1), "a": .int32(2)]))
        // The order of keys is kept: the object above is not the same value as this one.
        #expect(try RPCValue(jsonText: #"{"b":1,"a":2}"#) != .object(["a": .int32(2), "b": .int32(1)]))
    }

    @Test("refusals carry code, path, offset and detail", arguments: [
        ("[1] x", RPCError.Code.malformedInput, "", 4, "unexpected 'x' after the top-level value"),
        ("", .malformedInput, "", 0, "expected a value, found the end of the input"),
        (#"[{"a":[{"k":1,"k":2}]}]"#, .duplicateParameter, "[0].a[0].k", nil, "parameter appears more than once"),
        ("[1e400]", .numberOutOfRange, "[0]", 1, "1e400 is too large for a Double"),
        ("[[[1]]]", .nestingTooDeep, "[0][0]", 2, "nesting deeper than 2 levels"),
    ] as [(String, RPCError.Code, String, Int?, String)])
    func refusals(text: String, code: RPCError.Code, path: String, offset: Int?, detail: String) {
        do {
            let value = try RPCValue(jsonText: text, options: RPCCodingOptions(maxNestingDepth: text == "[[[1]]]" ? 2 : 32))
            Issue.record("\(text) read as \(value)")
        } catch {
            #expect(error.code == code)
            #expect(error.pathString == path)
            #expect(error.offset == offset)
            #expect(error.detail == detail)
        }
    }
}
