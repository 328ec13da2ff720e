import Testing

@testable import SDLRPC

/// Every JSON number is read as RFC 8259 and IEEE 754 define it, or refused with a typed error:
/// Floats are the correctly rounded Double of the decimal value (Swift's `Double(String)` is the
/// oracle), Integers are exact integers within range, judged on the digits.
@Suite("JSON numbers")
struct NumberTests {
    /// What a read gave: a value, or the name of the error code.
    enum Outcome<Value: Equatable>: Equatable, CustomStringConvertible {
        case value(Value)
        case refused(String)

        var description: String {
            switch self {
            case .value(let value): "\(value)"
            case .refused(let code): "refused: \(code)"
            }
        }
    }

    /// Reads `text` as the value of the only member of an object, with `read`.
    static func read<Value>(_ text: String, _ read: (inout JSONParameterReader) throws(RPCError) -> Value) -> Outcome<Value> {
        do {
            let value = try withJSONParameterReader(#"{"x":"# + text + "}", options: .default) { (reader) throws(RPCError) in
                _ = try reader.nextKey()
                let value = try read(&reader)
                _ = try reader.nextKey()
                return value
            }
            return .value(value)
        } catch {
            return .refused(error.code.name)
        }
    }

    static func integer(_ text: String) -> Outcome<Int64> { read(text) { (reader) throws(RPCError) in try reader.readInt64() } }
    static func int32(_ text: String) -> Outcome<Int32> { read(text) { (reader) throws(RPCError) in try reader.readInt32() } }

    /// The bit pattern, so that -0.0 and 0.0 differ.
    static func float(_ text: String) -> Outcome<UInt64> {
        read(text) { (reader) throws(RPCError) in try reader.readDouble().bitPattern }
    }

    /// An unknown parameter's value: integers as int32/int64, other numbers as doubles (by bits).
    static func unknown(_ text: String) -> Outcome<String> {
        read(text) { (reader) throws(RPCError) in
            switch try reader.readUnknown() {
            case .int32(let value): "int32 \(value)"
            case .int64(let value): "int64 \(value)"
            case .double(let value): "double \(value.bitPattern)"
            case let other: "\(other)"
            }
        }
    }

    static func zeros(_ count: Int) -> String { String(repeating: "0", count: count) }

    // MARK: Exponents that cancel

    @Test("a long mantissa and a huge exponent that cancel are read by their real value")
    func cancellingExponents() {
        // Issue 9: the exponent used to saturate at 100,000 while scanning, so the first read as
        // the Integer 1000000000 (its real value is 1e-900000) and the second as the Float 1.0
        // (its real value is 1e900005).
        let tiny = "1" + Self.zeros(100_009) + "e-1000009"
        let huge = "0." + Self.zeros(99_999) + "1e1000005"
        #expect(Self.integer(tiny) == .refused("notAnInteger"))
        #expect(Self.float(tiny) == .value(0.0.bitPattern))
        #expect(Self.integer(huge) == .refused("numberOutOfRange"))
        #expect(Self.float(huge) == .refused("numberOutOfRange"))
        #expect(Self.unknown(huge) == .refused("numberOutOfRange"))

        // The forms the issue names, and their neighbours.
        for text in ["1000000000e-900000", "1e-900000", "0.0000001e-900000", "1e-99999999999999999999999"] {
            #expect(Self.integer(text) == .refused("notAnInteger"), "\(text)")
            #expect(Self.float(text) == .value(0.0.bitPattern), "\(text)")
            #expect(Self.float("-" + text) == .value((-0.0).bitPattern), "-\(text)")
        }
        for text in ["1e900005", "0.0000001e900005", "1e99999999999999999999999", "-1e400", "1" + Self.zeros(400)] {
            #expect(Self.float(text) == .refused("numberOutOfRange"), "\(text)")
            #expect(Self.integer(text) == .refused("numberOutOfRange"), "\(text)")
        }
        // Exact cancellation at every distance from the point gives back the plain value.
        for shift in [1, 22, 23, 308, 309, 399, 400, 401, 1_000, 100_000, 1_000_000] {
            let down = "15" + Self.zeros(shift) + "e-\(shift)"
            let up = "0." + Self.zeros(shift) + "15e\(shift + 2)"
            #expect(Self.integer(down) == .value(15), "15 + \(shift) zeros")
            #expect(Self.integer(up) == .value(15), "0.(\(shift) zeros)15")
            #expect(Self.float(down) == .value(15.0.bitPattern), "15 + \(shift) zeros")
            #expect(Self.float(up) == .value(15.0.bitPattern), "0.(\(shift) zeros)15")
            // One step short: 1.5, which is no Integer.
            #expect(Self.integer("15" + Self.zeros(shift) + "e-\(shift + 1)") == .refused("notAnInteger"), "\(shift)")
            #expect(Self.float("0." + Self.zeros(shift) + "15e\(shift + 1)") == .value(1.5.bitPattern), "\(shift)")
        }
        // Exponents with leading zeros, and a zero mantissa under any exponent.
        #expect(Self.integer("15e00000000000000000000000001") == .value(150))
        #expect(Self.integer("0.0e99999999999999999999999") == .value(0))
        #expect(Self.float("-0.0e99999999999999999999999") == .value((-0.0).bitPattern))
        #expect(Self.float("0e-99999999999999999999999") == .value(0.0.bitPattern))
    }

    // MARK: Boundaries

    @Test("Integer boundaries: 64-bit plain integers, ±2^53 in fraction and exponent forms")
    func integerBoundaries() {
        let cases: [(String, Outcome<Int64>)] = [
            ("9223372036854775807", .value(.max)), ("-9223372036854775808", .value(.min)),
            ("9223372036854775808", .refused("numberOutOfRange")), ("-9223372036854775809", .refused("numberOutOfRange")),
            ("18446744073709551616", .refused("numberOutOfRange")), ("00", .refused("malformedInput")),
            ("123456789012345678", .value(123_456_789_012_345_678)), ("12345678901234567", .value(12_345_678_901_234_567)),
            ("9007199254740992.0", .value(9_007_199_254_740_992)), ("-9007199254740992e0", .value(-9_007_199_254_740_992)),
            ("9007199254740993.0", .refused("numberOutOfRange")), ("9.007199254740993e15", .refused("numberOutOfRange")),
            ("0.9007199254740992e16", .value(9_007_199_254_740_992)), ("90071992547409920e-1", .value(9_007_199_254_740_992)),
            ("90071992547409920000000e-7", .value(9_007_199_254_740_992)),
            ("9007199254740992.00000000000000000000001", .refused("notAnInteger")),
            ("-0", .value(0)), ("-0.0", .value(0)), ("0.000000000000000000000e-5", .value(0)),
            ("1.00000000000000000000", .value(1)), ("10000000000000000000000000e-25", .value(1)),
            ("0.00000000000000000000001e23", .value(1)), ("0.00000000000000000000001e22", .refused("notAnInteger")),
        ]
        for (text, expected) in cases {
            #expect(Self.integer(text) == expected, "\(text)")
        }
        #expect(Self.int32("2147483647") == .value(.max))
        #expect(Self.int32("-2147483648.0") == .value(.min))
        #expect(Self.int32("2147483648") == .refused("numberOutOfRange"))
        #expect(Self.int32("2.147483648e9") == .refused("numberOutOfRange"))
    }

    @Test("Float boundaries: the largest finite values, infinity refused, subnormals, -0")
    func floatBoundaries() {
        let cases: [(String, Outcome<UInt64>)] = [
            ("1.7976931348623157e308", .value(Double.greatestFiniteMagnitude.bitPattern)),
            // Rounds down to the largest finite Double; the next one rounds to infinity.
            ("1.7976931348623158e308", .value(Double.greatestFiniteMagnitude.bitPattern)),
            ("1.7976931348623159e308", .refused("numberOutOfRange")),
            ("-1.7976931348623159e308", .refused("numberOutOfRange")),
            ("4.9406564584124654e-324", .value(Double.leastNonzeroMagnitude.bitPattern)),
            ("2.4703282292062328e-324", .value(Double.leastNonzeroMagnitude.bitPattern)),
            ("2.2250738585072011e-308", .value(0x000F_FFFF_FFFF_FFFF)),
            ("2.2250738585072014e-308", .value(Double.leastNormalMagnitude.bitPattern)),
            ("-0", .value((-0.0).bitPattern)), ("-0.0e-5", .value((-0.0).bitPattern)), ("0", .value(0)),
            ("9007199254740993", .value(9_007_199_254_740_992.0.bitPattern)),
            ("9007199254740993.000000000000000000000000001", .value(9_007_199_254_740_994.0.bitPattern)),
            ("0.1", .value(0.1.bitPattern)), ("100000000000000000000000", .value(1e23.bitPattern)),
            ("0." + Self.zeros(100) + "1", .value(1e-101.bitPattern)),
        ]
        for (text, expected) in cases {
            #expect(Self.float(text) == expected, "\(text)")
            if case .value(let bits) = expected, text.contains(where: { $0 == "." || $0 == "e" }) {
                #expect(Self.unknown(text) == .value("double \(bits)"), "\(text)")
            }
        }
    }

    @Test("ties at the ends of the Double range round to even: to infinity above, to zero below")
    func ties() {
        // 2^1024 - 2^970 lies halfway between the largest Double, whose significand is odd, and
        // 2^1024: it rounds to 2^1024, which is infinite; anything below it is the largest Double.
        let halfwayToInfinity = Self.decimal(Self.subtract(Self.powerOfTwo(1024), Self.powerOfTwo(970)))
        #expect(Self.float(halfwayToInfinity) == .refused("numberOutOfRange"))
        #expect(Self.float(halfwayToInfinity + ".0000000000000000000000001") == .refused("numberOutOfRange"))
        let belowHalfway = Self.decimal(Self.subtract(Self.subtract(Self.powerOfTwo(1024), Self.powerOfTwo(970)), [1]))
        #expect(Self.float(belowHalfway + ".9999999999999999999999999") == .value(Double.greatestFiniteMagnitude.bitPattern))
        // 2^-1075 = 5^1075 × 10^-1075 lies halfway between 0 and the smallest subnormal: it rounds
        // to 0; anything above it to the smallest subnormal.
        var fivePower: [UInt8] = [1]
        for _ in 0..<1075 { fivePower = Self.multiply(fivePower, by: 5) }
        let halfwayToZero = Self.decimal(fivePower)
        #expect(Self.float(halfwayToZero + "e-1075") == .value(0.0.bitPattern))
        #expect(Self.float("-" + halfwayToZero + "e-1075") == .value((-0.0).bitPattern))
        #expect(Self.float(halfwayToZero + "000000000000000000001e-1096") == .value(Double.leastNonzeroMagnitude.bitPattern))
        #expect(Self.integer(halfwayToZero + "e-1075") == .refused("notAnInteger"))
    }

    /// Decimal digits, least significant first, for the exact values of the tie tests.
    static func multiply(_ digits: [UInt8], by factor: UInt8) -> [UInt8] {
        var result: [UInt8] = []
        var carry = 0
        for digit in digits {
            let product = Int(digit) * Int(factor) + carry
            result.append(UInt8(product % 10))
            carry = product / 10
        }
        while carry > 0 {
            result.append(UInt8(carry % 10))
            carry /= 10
        }
        return result
    }

    static func powerOfTwo(_ exponent: Int) -> [UInt8] {
        var digits: [UInt8] = [1]
        for _ in 0..<exponent { digits = Self.multiply(digits, by: 2) }
        return digits
    }

    /// `lhs - rhs`, for `lhs >= rhs`.
    static func subtract(_ lhs: [UInt8], _ rhs: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var borrow = 0
        for (index, digit) in lhs.enumerated() {
            var difference = Int(digit) - borrow - (index < rhs.count ? Int(rhs[index]) : 0)
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 10 }
            result.append(UInt8(difference))
        }
        while result.count > 1, result.last == 0 { result.removeLast() }
        return result
    }

    static func decimal(_ digits: [UInt8]) -> String {
        String(digits.reversed().map { Character(String($0)) })
    }

    // MARK: Property test

    /// xorshift64*: a seeded generator, so that every run tests the same numbers.
    struct Generator {
        var state: UInt64

        mutating func next() -> UInt64 {
            self.state ^= self.state >> 12
            self.state ^= self.state << 25
            self.state ^= self.state >> 27
            return self.state &* 0x2545_F491_4F6C_DD1D
        }

        mutating func below(_ bound: Int) -> Int { Int(self.next() % UInt64(bound)) }

        mutating func digits(_ count: Int, zeros: Bool) -> String {
            String((0..<count).map { _ in zeros && self.below(3) == 0 ? "0" : Character(String(self.below(10))) })
        }

        /// A number in the JSON grammar, drawn so that boundaries and cancellations come up often.
        mutating func number() -> String {
            var text = self.below(2) == 0 ? "" : "-"
            switch self.below(4) {
            case 0:
                // A random Double's own shortest text, perhaps with digits added.
                let double = Double(bitPattern: self.next() & 0x7FFF_FFFF_FFFF_FFFF)
                let shortest = double.isFinite ? "\(double)" : "1e308"
                return text + shortest + (shortest.contains("e") ? "" : self.digits(self.below(3), zeros: true))
            case 1:
                // Zeros that an exponent cancels, in front of or behind the digits.
                // Now and then a run of a million: exponents of seven digits and more.
                let run = self.below(500) == 0 ? 1_000_010 : [1, 20, 300, 330, 400, 2_000][self.below(6)]
                let digits = "1" + self.digits(self.below(20), zeros: true)
                let offset = self.below(41) - 20
                if self.below(2) == 0 {
                    return text + digits + String(repeating: "0", count: run) + "e\(-(run + offset))"
                }
                return text + "0." + String(repeating: "0", count: run) + digits + "e\(run + offset)"
            default:
                let integer = self.below(4) == 0 ? "0" : "\(self.below(9) + 1)" + self.digits(self.below(24), zeros: true)
                text += integer
                if self.below(2) == 0 {
                    text += "." + self.digits(self.below(30) + 1, zeros: true)
                }
                if self.below(2) == 0 {
                    text += ["e", "E", "e+", "e-", "E-"][self.below(5)]
                    let exponents = [
                        String(self.below(25)), String(self.below(400)), String(300 + self.below(40)),
                        String(self.below(2_000_000)), "0000" + String(self.below(30)), self.digits(25, zeros: false) + "1",
                    ]
                    text += exponents[self.below(exponents.count)]
                }
                return text
            }
        }
    }

    /// An independent reference for Integer reads: the decimal value worked out on the digit text.
    static func expectedInteger(_ text: String) -> Outcome<Int64> {
        var bytes = Array(text.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        let exponentMark = bytes.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") })
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        if exponentMark == nil && point == nil {
            return Int64(text).map { .value($0) } ?? .refused("numberOutOfRange")
        }
        var exponent = 0
        if let exponentMark {
            var exponentText = bytes[(exponentMark + 1)...]
            let negativeExponent = exponentText.first == UInt8(ascii: "-")
            if negativeExponent || exponentText.first == UInt8(ascii: "+") { exponentText = exponentText.dropFirst() }
            exponentText = exponentText.drop(while: { $0 == UInt8(ascii: "0") })
            // Far beyond the digits of any generated number: only the side matters.
            exponent = exponentText.count > 12 ? 1_000_000_000_000 : Int(String(decoding: exponentText, as: UTF8.self)) ?? 0
            if negativeExponent { exponent = -exponent }
        }
        let mantissa = bytes[..<(exponentMark ?? bytes.endIndex)]
        let integerCount = (point ?? mantissa.endIndex) - mantissa.startIndex
        let allDigits = mantissa.filter { $0 != UInt8(ascii: ".") }
        guard let first = allDigits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return .value(0) }
        let significant = allDigits[first...]
        // The decimal point sits `position` digits into the significant digits.
        let position = integerCount + exponent - first
        guard position >= 1, significant.dropFirst(min(position, significant.count)).allSatisfy({ $0 == UInt8(ascii: "0") }) else {
            return .refused("notAnInteger")
        }
        guard position <= 16 else { return .refused("numberOutOfRange") }
        let integerText = String(decoding: significant.prefix(position), as: UTF8.self)
            + String(repeating: "0", count: max(0, position - significant.count))
        let magnitude = Int64(integerText)!
        guard magnitude <= 1 << 53 else { return .refused("numberOutOfRange") }
        return .value(negative ? -magnitude : magnitude)
    }

    @Test("10,000 seeded numbers read as Double(String) and the digit-text reference say")
    func seededNumbers() {
        var generator = Generator(state: 0x5DEE_CE66_D1CE_B00C)
        var failures = 0
        for _ in 0..<10_000 where failures < 10 {
            let text = generator.number()
            let double = Double(text)!
            let expectedFloat: Outcome<UInt64> = double.isFinite ? .value(double.bitPattern) : .refused("numberOutOfRange")
            let expectedInteger = Self.expectedInteger(text)
            let float = Self.float(text)
            let integer = Self.integer(text)
            #expect(float == expectedFloat, "Float \(text.prefix(200))")
            #expect(integer == expectedInteger, "Integer \(text.prefix(200))")
            if float != expectedFloat || integer != expectedInteger { failures += 1 }
        }
    }
}
