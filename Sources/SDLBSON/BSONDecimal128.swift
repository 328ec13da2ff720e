/// An IEEE 754-2008 128-bit decimal floating point number in the binary integer decimal (BID)
/// encoding, as BSON stores it (bsonspec.org type 0x13).
///
/// Conversion to and from strings follows the BSON Decimal128 specification (MongoDB
/// specifications, `bson-decimal128/decimal128.md`): parsing is exact (a string that would need
/// rounding is an error, as the spec asks), exponents are clamped only where that is exact, and
/// printing uses the spec's plain/scientific rule.
public struct BSONDecimal128: Hashable, Sendable, CustomStringConvertible {
    /// The high 64 bits (sign, combination field, top of the coefficient).
    public var high: UInt64
    /// The low 64 bits of the coefficient.
    public var low: UInt64

    /// Wraps the two 64-bit halves, as read from the wire (low half first, little-endian).
    @inlinable
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    static let exponentBias = 6176
    static let maximumExponent = 6111
    static let minimumExponent = -6176
    static let maximumDigits = 34

    /// Parses a decimal string: `[+|-]` then digits with an optional point and an optional
    /// `e|E[+|-]digits` exponent, or `Inf`, `Infinity`, `NaN` in any case.
    ///
    /// - Throws: ``BSONError/Code/invalidDecimal128`` for anything else, and for values that
    ///   cannot be stored exactly (more than 34 significant digits, exponent out of range).
    public init(_ string: String) throws(BSONError) {
        var text = Array(string.utf8)
        var negative = false
        var i = 0
        if let first = text.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            i = 1
        }
        func fail(_ why: String) -> BSONError {
            BSONError(.invalidDecimal128, offset: nil, "\"\(string)\" is not a Decimal128 value: \(why)")
        }
        let rest = String(decoding: text[i...], as: UTF8.self).lowercased()
        if rest == "inf" || rest == "infinity" {
            self.init(high: (negative ? 1 << 63 : 0) | 0x7800_0000_0000_0000, low: 0)
            return
        }
        if rest == "nan" {
            self.init(high: 0x7C00_0000_0000_0000, low: 0)
            return
        }
        var digits: [UInt8] = []
        var sawDigit = false
        var sawPoint = false
        var fractionDigits = 0
        while i < text.count {
            let c = text[i]
            if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                sawDigit = true
                if sawPoint { fractionDigits += 1 }
                if !(digits.isEmpty && c == UInt8(ascii: "0")) { digits.append(c &- UInt8(ascii: "0")) }
            } else if c == UInt8(ascii: ".") {
                if sawPoint { throw fail("two decimal points") }
                sawPoint = true
            } else {
                break
            }
            i += 1
        }
        if !sawDigit { throw fail("no digits") }
        var exponent = 0
        if i < text.count {
            guard text[i] == UInt8(ascii: "e") || text[i] == UInt8(ascii: "E") else { throw fail("unexpected character") }
            i += 1
            var exponentNegative = false
            if i < text.count, text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-") {
                exponentNegative = text[i] == UInt8(ascii: "-")
                i += 1
            }
            var sawExponentDigit = false
            while i < text.count, text[i] >= UInt8(ascii: "0") && text[i] <= UInt8(ascii: "9") {
                // Saturate: any exponent this large is out of range whatever the digits.
                if exponent < 100_000_000 { exponent = exponent * 10 + Int(text[i] - UInt8(ascii: "0")) }
                sawExponentDigit = true
                i += 1
            }
            if !sawExponentDigit || i != text.count { throw fail("malformed exponent") }
            if exponentNegative { exponent = -exponent }
        }
        text = []
        exponent -= fractionDigits

        // Drop trailing zeros only where needed to fit, so that precision ("1.0" vs "1") survives.
        while digits.count > Self.maximumDigits, digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if digits.count > Self.maximumDigits { throw fail("more than 34 significant digits") }
        if digits.isEmpty {
            exponent = min(max(exponent, Self.minimumExponent), Self.maximumExponent)
        } else {
            while exponent > Self.maximumExponent, digits.count < Self.maximumDigits {
                digits.append(0)
                exponent -= 1
            }
            while exponent < Self.minimumExponent, digits.last == 0 {
                digits.removeLast()
                exponent += 1
            }
            if exponent > Self.maximumExponent { throw fail("exponent too large") }
            if exponent < Self.minimumExponent { throw fail("exponent too small to be exact") }
        }
        var hi: UInt64 = 0
        var lo: UInt64 = 0
        for d in digits {
            let (loHigh, loLow) = lo.multipliedFullWidth(by: 10)
            hi = hi &* 10 &+ loHigh
            let (sum, carry) = loLow.addingReportingOverflow(UInt64(d))
            lo = sum
            if carry { hi &+= 1 }
        }
        let biased = UInt64(exponent + Self.exponentBias)
        self.init(high: (negative ? 1 << 63 : 0) | biased << 49 | hi, low: lo)
    }

    /// Whether the coefficient is out of range (above 10^34 − 1, or the 11-prefixed form of a
    /// finite value), which the spec reads as zero.
    var hasNonCanonicalCoefficient: Bool {
        if self.isNaN || self.isInfinite { return false }
        if (self.high >> 61) & 0x3 == 0x3 { return true }
        let hi = self.high & 0x1_FFFF_FFFF_FFFF
        return hi > 0x1_ED09_BEAD_87C0 || (hi == 0x1_ED09_BEAD_87C0 && self.low >= 0x378D_8E64_0000_0000)
    }

    /// Whether the sign bit is set.
    public var isNegative: Bool { self.high >> 63 == 1 }
    /// Whether the value is a NaN (quiet or signalling).
    public var isNaN: Bool { (self.high >> 58) & 0x1F == 0x1F }
    /// Whether the value is ±Infinity.
    public var isInfinite: Bool { (self.high >> 58) & 0x1F == 0x1E }

    /// The spec's string form: `NaN`, `[-]Infinity`, plain notation when the exponent is ≤ 0 and
    /// the adjusted exponent ≥ −6, scientific (`1.5E+3`) otherwise. Non-canonical coefficients
    /// (above 10^34 − 1) read as zero, as the spec says.
    public var description: String {
        if self.isNaN { return "NaN" }
        if self.isInfinite { return self.isNegative ? "-Infinity" : "Infinity" }
        var exponent: Int
        var hi: UInt64
        var lo = self.low
        if (self.high >> 61) & 0x3 == 0x3 {
            // 11-prefixed combination field: the implied coefficient exceeds 10^34 - 1.
            exponent = Int((self.high >> 47) & 0x3FFF) - Self.exponentBias
            hi = 0
            lo = 0
        } else {
            exponent = Int((self.high >> 49) & 0x3FFF) - Self.exponentBias
            hi = self.high & 0x1_FFFF_FFFF_FFFF
            // 10^34 = 0x1ED09BEAD87C0378D8E6400000000
            if hi > 0x1_ED09_BEAD_87C0 || (hi == 0x1_ED09_BEAD_87C0 && lo >= 0x378D_8E64_0000_0000) {
                hi = 0
                lo = 0
            }
        }
        var reversed: [UInt8] = []
        repeat {
            let (qHigh, rHigh) = hi.quotientAndRemainder(dividingBy: 10)
            let (qLow, r) = UInt64(10).dividingFullWidth((rHigh, lo))
            hi = qHigh
            lo = qLow
            reversed.append(UInt8(r) + UInt8(ascii: "0"))
        } while hi != 0 || lo != 0
        let digits = Array(reversed.reversed())
        let adjusted = exponent + digits.count - 1
        var out = self.isNegative ? "-" : ""
        if exponent <= 0 && adjusted >= -6 {
            if exponent == 0 {
                out += String(decoding: digits, as: UTF8.self)
            } else {
                let point = -exponent
                if digits.count > point {
                    out += String(decoding: digits[..<(digits.count - point)], as: UTF8.self)
                    out += "."
                    out += String(decoding: digits[(digits.count - point)...], as: UTF8.self)
                } else {
                    out += "0."
                    out += String(repeating: "0", count: point - digits.count)
                    out += String(decoding: digits, as: UTF8.self)
                }
            }
        } else {
            out += String(decoding: digits[..<1], as: UTF8.self)
            if digits.count > 1 {
                out += "."
                out += String(decoding: digits[1...], as: UTF8.self)
            }
            out += adjusted >= 0 ? "E+" : "E-"
            out += String(abs(adjusted))
        }
        return out
    }
}
