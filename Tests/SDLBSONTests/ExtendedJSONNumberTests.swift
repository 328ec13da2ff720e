import Testing

@testable import SDLBSON

/// Numbers in Extended JSON text: the JSON parser keeps each number's text, and the relaxed rules
/// turn it into int32, int64 or a correctly rounded double (Swift's `Double(String)`), or refuse
/// it. Nothing saturates or rounds on the way, whatever the length of the digits or exponent.
@Suite("Extended JSON numbers")
struct ExtendedJSONNumberTests {
    enum Outcome: Equatable {
        case int32(Int32)
        case int64(Int64)
        /// By bit pattern, so that -0.0 and 0.0 differ.
        case double(UInt64)
        case refused(BSONError.Code)
    }

    static func relaxed(_ text: String) -> Outcome {
        read(#"{"x": "# + text + "}")
    }

    static func numberDouble(_ text: String) -> Outcome {
        read(#"{"x": {"$numberDouble": ""# + text + #""}}"#)
    }

    static func read(_ json: String) -> Outcome {
        do {
            let document = try BSONDocument(extendedJSON: json)
            guard let element = document["x"] else { return .refused(.invalidExtendedJSON) }
            if let value = element.int32Value { return .int32(value) }
            if let value = element.int64Value { return .int64(value) }
            if let value = element.doubleValue { return .double(value.bitPattern) }
            return .refused(.invalidExtendedJSON)
        } catch {
            return .refused(error.code)
        }
    }

    static func zeros(_ count: Int) -> String { String(repeating: "0", count: count) }

    @Test("exponents that cancel a long run of zeros give the real value")
    func cancellingExponents() {
        let tiny = "1" + Self.zeros(100_009) + "e-1000009"
        let huge = "0." + Self.zeros(99_999) + "1e1000005"
        #expect(Self.relaxed(tiny) == .double(0.0.bitPattern))
        #expect(Self.relaxed("-" + tiny) == .double((-0.0).bitPattern))
        #expect(Self.relaxed(huge) == .refused(.invalidExtendedJSON))
        #expect(Self.numberDouble(huge) == .refused(.invalidExtendedJSON))
        for shift in [1, 22, 23, 308, 309, 400, 100_000, 1_000_000] {
            #expect(Self.relaxed("15" + Self.zeros(shift) + "e-\(shift)") == .double(15.0.bitPattern), "\(shift)")
            #expect(Self.relaxed("0." + Self.zeros(shift) + "15e\(shift + 1)") == .double(1.5.bitPattern), "\(shift)")
            #expect(Self.numberDouble("0." + Self.zeros(shift) + "15e\(shift + 1)") == .double(1.5.bitPattern), "\(shift)")
        }
        for text in ["1e-900000", "1000000000e-900000", "1e-99999999999999999999999", "0.0e99999999999999999999999"] {
            #expect(Self.relaxed(text) == .double(0.0.bitPattern), "\(text)")
        }
        for text in ["1e900005", "0.0000001e900005", "1e99999999999999999999999", "1.7976931348623159e308"] {
            #expect(Self.relaxed(text) == .refused(.invalidExtendedJSON), "\(text)")
            #expect(Self.relaxed("-" + text) == .refused(.invalidExtendedJSON), "-\(text)")
        }
    }

    @Test("integers keep their width; boundaries, subnormals and -0 are exact")
    func boundaries() {
        let cases: [(String, Outcome)] = [
            ("2147483647", .int32(.max)), ("-2147483648", .int32(.min)), ("2147483648", .int64(2_147_483_648)),
            ("9223372036854775807", .int64(.max)), ("-9223372036854775808", .int64(.min)),
            // Beyond int64 a plain integer is a double, correctly rounded.
            ("9223372036854775808", .double(9_223_372_036_854_775_808.0.bitPattern)),
            ("18446744073709551615", .double(18_446_744_073_709_551_615.0.bitPattern)),
            ("9007199254740993.0", .double(9_007_199_254_740_992.0.bitPattern)),
            ("9007199254740993.000000000000000000000001", .double(9_007_199_254_740_994.0.bitPattern)),
            ("-0", .int32(0)), ("-0.0", .double((-0.0).bitPattern)), ("-0e-5", .double((-0.0).bitPattern)),
            ("1.7976931348623158e308", .double(Double.greatestFiniteMagnitude.bitPattern)),
            ("4.9406564584124654e-324", .double(Double.leastNonzeroMagnitude.bitPattern)),
            ("2.4703282292062328e-324", .double(Double.leastNonzeroMagnitude.bitPattern)),
            ("2.4703282292062327e-324", .double(0.0.bitPattern)),
            ("2.2250738585072014e-308", .double(Double.leastNormalMagnitude.bitPattern)),
            ("0.1", .double(0.1.bitPattern)), ("1E2", .double(100.0.bitPattern)), ("1e+2", .double(100.0.bitPattern)),
            ("01", .refused(.invalidJSON)), ("1.", .refused(.invalidJSON)), (".5", .refused(.invalidJSON)),
            ("1e", .refused(.invalidJSON)), ("+1", .refused(.invalidJSON)), ("-", .refused(.invalidJSON)),
            ("1e+-2", .refused(.invalidJSON)), ("0x10", .refused(.invalidJSON)),
        ]
        for (text, expected) in cases {
            #expect(Self.relaxed(text) == expected, "\(text)")
        }
        #expect(Self.numberDouble("1e400") == .refused(.invalidExtendedJSON))
        #expect(Self.numberDouble("-0.0") == .double((-0.0).bitPattern))
        #expect(Self.numberDouble("2.4703282292062328e-324") == .double(Double.leastNonzeroMagnitude.bitPattern))
    }
}
