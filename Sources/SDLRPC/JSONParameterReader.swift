import SDLBSON

/// Reads a parameters object from JSON text (RFC 8259), strictly, in one pass and without building
/// a tree: generated code pulls keys and typed values in order.
///
/// Accepted: any whitespace between tokens (SDL Core pretty-prints with tabs, `" : "` and a final
/// newline), every escape including surrogate pairs, numbers with fractions and exponents.
/// Rejected with a typed error and the byte offset: bytes that are not JSON, a byte order mark,
/// control characters in strings, invalid UTF-8, escapes of lone surrogates (`"\uD800"` alone
/// names no Unicode scalar and no Swift `String` can hold it), trailing bytes after the object,
/// nesting deeper than `maxNestingDepth`. A key repeated in one object is `duplicateParameter`
/// (checked by the code that builds the object: generated decoders and `readUnknown`).
///
/// Numbers: an Integer parameter accepts a JSON number whose value is an exact integer in range,
/// so `5`, `5.0` and `5e0` all read as 5, while `5.5` (and `150e-2`, judged on the digits) is
/// `notAnInteger`; fraction and exponent forms are limited to ±2^53 (as BSON doubles are, see
/// `maxIntegralDoubleMagnitude`). A Float parameter accepts
/// any JSON number (`5` reads as 5.0) whose value is finite as a Double (`1e400` is
/// `numberOutOfRange`). Numbers of any length are scanned without allocating per digit.
struct JSONParameterReader: RPCParameterReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index: Int = 0
    var depth: Int = 0
    let maxDepth: Int
    /// True right after `{` or `[`: the next member needs no comma.
    var atFirstMember = false
    var keyStart = 0
    var keyCount = 0
    /// The key, when it had escapes and its bytes differ from the input's.
    var escapedKey: String?
    private(set) var keyHash: UInt32 = 0

    /// A reader over `bytes`, which must stay valid while it is used; callers get one from
    /// `withJSONParameterReader(_:options:_:)` or the message APIs.
    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    static var _keepsNonconformingParts: Bool { false }

    /// Where a value starts: its byte offset and the nesting depth there.
    struct _Mark {
        var index: Int
        var depth: Int
    }

    var _mark: _Mark { _Mark(index: self.index, depth: self.depth) }

    mutating func _rewind(to mark: _Mark) {
        self.index = mark.index
        self.depth = mark.depth
        // A value is marked after its key or its array's comma: no comma is due before it.
        self.atFirstMember = false
    }

    // MARK: Structure

    mutating func beginObject() throws(RPCError) {
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: "{") else {
            throw self.mismatch(expected: "object")
        }
        try self.enter()
    }

    mutating func nextKey() throws(RPCError) -> Bool {
        // Compact JSON (what this package and most peers write): `"key":` right after `{` or a
        // `,`, the key plain ASCII. Anything else, whitespace included, goes the general way
        // from the same position.
        if let base = self.bytes.baseAddress {
            let count = self.bytes.count
            var quote = self.index
            if !self.atFirstMember && quote < count && base[quote] == UInt8(ascii: ",") {
                quote &+= 1
            }
            if quote < count && base[quote] == UInt8(ascii: "\"") && (quote != self.index) != self.atFirstMember {
                let start = quote &+ 1
                let end = self.skipPlainStringBytes(from: start)
                if end &+ 1 < count && base[end] == UInt8(ascii: "\"") && base[end &+ 1] == UInt8(ascii: ":") {
                    self.atFirstMember = false
                    self.keyStart = start
                    self.keyCount = end &- start
                    if self.escapedKey != nil {
                        self.escapedKey = nil
                    }
                    self.keyHash = _BSONKeyHash.hash(UnsafeRawBufferPointer(start: base + start, count: end &- start))
                    self.index = end &+ 2
                    return true
                }
            }
        }
        return try self.nextKeyInGeneral()
    }

    /// `nextKey()` for any JSON: whitespace, escapes, errors.
    private mutating func nextKeyInGeneral() throws(RPCError) -> Bool {
        self.skipWhitespace()
        guard let byte = self.peek() else {
            throw self.malformed("unterminated object")
        }
        if byte == UInt8(ascii: "}") {
            self.leave()
            return false
        }
        if self.atFirstMember {
            self.atFirstMember = false
        } else {
            guard byte == UInt8(ascii: ",") else {
                throw self.malformed("expected ',' or '}' in object, found \(self.describeByte())")
            }
            self.index += 1
            self.skipWhitespace()
        }
        guard self.peek() == UInt8(ascii: "\"") else {
            throw self.malformed("expected a quoted key, found \(self.describeByte())")
        }
        try self.scanKey()
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: ":") else {
            throw self.malformed("expected ':' after key, found \(self.describeByte())")
        }
        self.index += 1
        return true
    }

    func currentKeyEquals(_ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        if let escapedKey = self.escapedKey {
            return escapedKey.utf8.elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: count))
        }
        guard count == self.keyCount else { return false }
        return Self.equal(self.bytes.baseAddress! + self.keyStart, name.utf8Start, count)
    }

    var currentKey: String {
        if let escapedKey = self.escapedKey {
            return escapedKey
        }
        // Key bytes were validated as UTF-8 when scanned.
        return String(decoding: self.slice(self.keyStart, self.keyStart + self.keyCount), as: UTF8.self)
    }

    mutating func beginArray() throws(RPCError) {
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: "[") else {
            throw self.mismatch(expected: "array")
        }
        try self.enter()
    }

    mutating func nextElement() throws(RPCError) -> Bool {
        self.skipWhitespace()
        guard let byte = self.peek() else {
            throw self.malformed("unterminated array")
        }
        if byte == UInt8(ascii: "]") {
            self.leave()
            return false
        }
        if self.atFirstMember {
            self.atFirstMember = false
        } else {
            guard byte == UInt8(ascii: ",") else {
                throw self.malformed("expected ',' or ']' in array, found \(self.describeByte())")
            }
            self.index += 1
        }
        return true
    }

    /// Checks that only whitespace follows the top-level value.
    mutating func finish() throws(RPCError) {
        self.skipWhitespace()
        if self.index < self.bytes.count {
            throw self.malformed("unexpected \(self.describeByte()) after the top-level value")
        }
    }

    private mutating func enter() throws(RPCError) {
        guard self.depth < self.maxDepth else {
            throw RPCError(.nestingTooDeep, offset: self.index, "nesting deeper than \(self.maxDepth) levels")
        }
        self.depth += 1
        self.index += 1
        self.atFirstMember = true
    }

    private mutating func leave() {
        self.index += 1
        self.depth -= 1
        // The enclosing container has just had a member: the next one needs a comma.
        self.atFirstMember = false
    }

    // MARK: Scalars

    mutating func readBool() throws(RPCError) -> Bool {
        self.skipWhitespace()
        // The literals compared as words where the input holds them (`expectLiteral` below
        // reports a bad one).
        if self.bytes.count &- self.index >= 5, let base = self.bytes.baseAddress {
            let word = UInt32(littleEndian: UnsafeRawPointer(base + self.index).loadUnaligned(as: UInt32.self))
            if word == Self.trueWord {
                self.index &+= 4
                return true
            }
            if word == Self.falsWord && base[self.index &+ 4] == UInt8(ascii: "e") {
                self.index &+= 5
                return false
            }
        }
        switch self.peek() {
        case UInt8(ascii: "t"):
            try self.expectLiteral("true")
            return true
        case UInt8(ascii: "f"):
            try self.expectLiteral("false")
            return false
        default:
            throw self.mismatch(expected: "Boolean")
        }
    }

    mutating func readInt32() throws(RPCError) -> Int32 {
        let start = self.index
        let value = try self.readInt64()
        guard let narrow = Int32(exactly: value) else {
            throw RPCError(.numberOutOfRange, offset: start, "\(value) does not fit a 32-bit Integer")
        }
        return narrow
    }

    mutating func readInt64() throws(RPCError) -> Int64 {
        self.skipWhitespace()
        guard let byte = self.peek(), byte == UInt8(ascii: "-") || Self.isDigit(byte) else {
            throw self.mismatch(expected: "Integer")
        }
        if let value = self.scanSmallInteger() {
            return value
        }
        let number = try self.scanNumber()
        if number.isPlainInteger {
            if let value = number.int64 {
                return value
            }
            throw RPCError(.numberOutOfRange, offset: number.start, "\(self.text(of: number)) does not fit a 64-bit Integer")
        }
        // A fraction or exponent: accepted when the decimal value is an exact integer (`5.0`,
        // `1e3`, `0e-2`; `150e-2` is not), judged on the digits, not on a rounded Double.
        guard self.isExactInteger(number) else {
            throw RPCError(.notAnInteger, offset: number.start, "\(self.text(of: number)) is not an integer")
        }
        guard let value = Self.integerValue(of: number) else {
            throw RPCError(
                .numberOutOfRange, offset: number.start,
                "\(self.text(of: number)) is beyond 2^53 in fraction or exponent form")
        }
        return value
    }

    /// The largest magnitude an Integer parameter may have in fraction or exponent form (and, in
    /// BSON, as a double): 2^53. Senders write such forms when their numbers are doubles (JavaScript,
    /// `JSONSerialization`), and up to 2^53 every integer is a double; beyond it a double stands
    /// for several integers, so the value the sender meant is not known. Plain integers (`123`)
    /// are exact at any width and are not limited by this.
    static let maxIntegralDoubleMagnitude: UInt64 = 1 << 53

    /// The value of a number `isExactInteger` accepted, computed from its digits (no Double
    /// rounding, so `9007199254740993.0` is not read as 2^53); nil beyond ±2^53.
    private static func integerValue(of number: Number) -> Int64? {
        // No significant digit: the value is zero whatever the exponent (`0.000`, `-0e5`).
        guard number.digitCount > 0 else { return 0 }
        // The integer has `digitCount + scale` digits, the first one non-zero; 2^53 has 16.
        let integerDigits = number.digitCount + number.scale
        guard integerDigits <= 16 else { return nil }
        // `mantissa` holds the first `kept` digits; the digits dropped after them and the ones the
        // negative scale removes are all zeros (the number is an exact integer), so scaling by the
        // difference is exact and stays below 10^16.
        let kept = min(number.digitCount, 19)
        var magnitude = number.mantissa
        if integerDigits >= kept {
            for _ in 0..<(integerDigits - kept) { magnitude *= 10 }
        } else {
            for _ in 0..<(kept - integerDigits) { magnitude /= 10 }
        }
        guard magnitude <= Self.maxIntegralDoubleMagnitude else { return nil }
        return number.negative ? -Int64(magnitude) : Int64(magnitude)
    }

    mutating func readDouble() throws(RPCError) -> Double {
        self.skipWhitespace()
        if let value = self.scanShortDecimal() {
            return value
        }
        guard let byte = self.peek(), byte == UInt8(ascii: "-") || Self.isDigit(byte) else {
            throw self.mismatch(expected: "Float")
        }
        let number = try self.scanNumber()
        let double = self.double(of: number)
        guard double.isFinite else {
            throw RPCError(.numberOutOfRange, offset: number.start, "\(self.text(of: number)) is too large for a Float")
        }
        return double
    }

    mutating func readString() throws(RPCError) -> String {
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: "\"") else {
            throw self.mismatch(expected: "String")
        }
        return try self.scanString()
    }

    /// An enum's wire name matched in the text: plain ASCII names (all the spec's) are hashed and
    /// compared where they lie; anything else (escapes, other UTF-8, an unknown name) is read as
    /// a String.
    mutating func readEnumeration<E: RPCEnum>(
        _ match: (_ hash: UInt32, _ equals: (StaticString) -> Bool) -> E?
    ) throws(RPCError) -> E {
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: "\"") else {
            throw self.mismatch(expected: "String")
        }
        let start = self.index &+ 1
        let end = self.skipPlainStringBytes(from: start)
        if end < self.bytes.count, self.bytes[end] == UInt8(ascii: "\""), let base = self.bytes.baseAddress {
            let count = end &- start
            let found = match(RPCKeyHash.hash(self.slice(start, end))) { name in
                name.utf8CodeUnitCount == count && Self.equal(base + start, name.utf8Start, count)
            }
            if let found {
                self.index = end &+ 1
                return found
            }
        }
        return E(wireName: try self.scanString())
    }

    mutating func readUnknown() throws(RPCError) -> RPCValue {
        self.skipWhitespace()
        guard let byte = self.peek() else {
            throw self.malformed("expected a value, found the end of the input")
        }
        switch byte {
        case UInt8(ascii: "\""):
            return .string(try self.scanString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return .bool(try self.readBool())
        case UInt8(ascii: "n"):
            try self.expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let number = try self.scanNumber()
            if number.isPlainInteger, let int = number.int64 {
                if let int32 = Int32(exactly: int) {
                    return .int32(int32)
                }
                return .int64(int)
            }
            let double = self.double(of: number)
            guard double.isFinite else {
                throw RPCError(.numberOutOfRange, offset: number.start, "\(self.text(of: number)) is too large for a Double")
            }
            return .double(double)
        case UInt8(ascii: "["):
            try self.enter()
            var elements: [RPCValue] = []
            while try self.nextElement() {
                do throws(RPCError) {
                    elements.append(try self.readUnknown())
                } catch {
                    throw error.prefixed(.index(elements.count))
                }
            }
            return .array(elements)
        case UInt8(ascii: "{"):
            try self.enter()
            var object = RPCObject()
            while try self.nextKey() {
                try self.decodeUnknown(into: &object)
            }
            try object.requireUniqueKeys()
            return .object(object)
        default:
            throw self.malformed("expected a value, found \(self.describeByte())")
        }
    }

    // MARK: Lexing

    private func slice(_ start: Int, _ end: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: self.bytes[start..<end])
    }

    @inline(__always)
    private static func equal(_ lhs: UnsafePointer<UInt8>, _ rhs: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        _bsonBytesEqual(UnsafeRawPointer(lhs), UnsafeRawPointer(rhs), count)
    }

    private func peek() -> UInt8? {
        self.index < self.bytes.count ? self.bytes[self.index] : nil
    }

    private mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D:
                self.index += 1
            default:
                return
            }
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(RPCError) {
        let count = literal.utf8CodeUnitCount
        guard self.bytes.count - self.index >= count,
              Self.equal(self.bytes.baseAddress! + self.index, literal.utf8Start, count)
        else {
            throw self.malformed("invalid literal, expected \(literal)")
        }
        self.index += count
    }

    /// "true" and "fals" as little-endian words.
    private static let trueWord: UInt32 = 0x6575_7274
    private static let falsWord: UInt32 = 0x736C_6166

    /// Byte classes inside strings: `.` plain ASCII, `q` quote, `b` backslash, `c` control
    /// character, `u` a byte of a multi-byte UTF-8 sequence. A literal, so no lazy initialisation.
    private static let stringByteClasses: StaticString = """
        cccccccccccccccccccccccccccccccc..q.............................\
        ............................b...................................\
        uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu\
        uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu
        """

    /// Skips plain ASCII string bytes from `start`; returns where the first other byte is. Eight
    /// bytes at a time, the first special one found from the word's mask, then one at a time
    /// for the last few.
    @inline(__always)
    private func skipPlainStringBytes(from start: Int) -> Int {
        var index = start
        let count = self.bytes.count
        if let base = self.bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index &+ 8 <= count {
                let special = Self.specialBytes(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                if special != 0 {
                    return index &+ special.trailingZeroBitCount &>> 3
                }
                index &+= 8
            }
        }
        let classes = Self.stringByteClasses.utf8Start
        while index < count, classes[Int(self.bytes[index])] == UInt8(ascii: ".") {
            index += 1
        }
        return index
    }

    /// The high bit of each of the eight bytes (the first in memory lowest) that is a quote, a
    /// backslash, a control character or non-ASCII, by the classic "has a zero byte" and "has a
    /// byte less than n" bit tricks. A borrow can flag a plain byte only after a flagged one, so
    /// the lowest flag is exact: the first special byte.
    @inline(__always)
    private static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & highBits
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let quote = (quotes &- ones) & ~quotes & highBits
        let backslash = (backslashes &- ones) & ~backslashes & highBits
        return control | quote | backslash | (word & highBits)
    }

    /// Scans a key and hashes it; keys with escapes are decoded into `escapedKey`.
    private mutating func scanKey() throws(RPCError) {
        self.index += 1
        let start = self.index
        var ascii = true
        while true {
            self.index = self.skipPlainStringBytes(from: self.index)
            guard self.index < self.bytes.count else {
                throw self.malformed("unterminated string")
            }
            let byte = self.bytes[self.index]
            if byte == UInt8(ascii: "\"") {
                if !ascii {
                    try self.validateUTF8(from: start, to: self.index)
                }
                self.keyStart = start
                self.keyCount = self.index - start
                if self.escapedKey != nil {
                    self.escapedKey = nil
                }
                self.keyHash = _BSONKeyHash.hash(UnsafeRawBufferPointer(self.slice(start, self.index)))
                self.index += 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                self.index = start - 1
                var key = try self.scanString()
                self.keyHash = key.withUTF8 { RPCKeyHash.hash($0) }
                self.escapedKey = key
                return
            }
            if byte < 0x20 {
                throw self.malformed("control character 0x\(String(byte, radix: 16)) in a string")
            }
            ascii = false
            self.index += 1
        }
    }

    /// Scans a string at `"`; the fast path copies the bytes once when there is no escape.
    private mutating func scanString() throws(RPCError) -> String {
        let quote = self.index
        self.index += 1
        let start = self.index
        var ascii = true
        while true {
            self.index = self.skipPlainStringBytes(from: self.index)
            guard self.index < self.bytes.count else {
                throw RPCError(.malformedInput, offset: quote, "unterminated string")
            }
            let byte = self.bytes[self.index]
            if byte == UInt8(ascii: "\"") {
                let range = self.slice(start, self.index)
                self.index += 1
                if ascii {
                    return String(decoding: range, as: UTF8.self)
                }
                guard let string = String(validating: range, as: UTF8.self) else {
                    throw RPCError(.invalidUTF8, offset: quote, "string is not valid UTF-8")
                }
                return string
            }
            if byte == UInt8(ascii: "\\") {
                return try self.scanEscapedString(quote: quote, start: start)
            }
            if byte < 0x20 {
                throw self.malformed("control character 0x\(String(byte, radix: 16)) in a string")
            }
            ascii = false
            self.index += 1
        }
    }

    /// The slow path: decodes escapes into a byte array, validated as UTF-8 at the end.
    private mutating func scanEscapedString(quote: Int, start: Int) throws(RPCError) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(self.index - start + 16)
        decoded.append(contentsOf: self.slice(start, self.index))
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            switch byte {
            case UInt8(ascii: "\""):
                self.index += 1
                guard let string = String(validating: decoded, as: UTF8.self) else {
                    throw RPCError(.invalidUTF8, offset: quote, "string is not valid UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                try self.scanEscape(into: &decoded)
            case 0..<0x20:
                throw self.malformed("control character 0x\(String(byte, radix: 16)) in a string")
            default:
                decoded.append(byte)
                self.index += 1
            }
        }
        throw RPCError(.malformedInput, offset: quote, "unterminated string")
    }

    private mutating func scanEscape(into decoded: inout [UInt8]) throws(RPCError) {
        let escapeStart = self.index
        self.index += 1
        guard let byte = self.peek() else {
            throw self.malformed("unterminated escape")
        }
        self.index += 1
        switch byte {
        case UInt8(ascii: "\""): decoded.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): decoded.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): decoded.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try self.scanHex4()
            var scalarValue = UInt32(unit)
            if (0xD800...0xDBFF).contains(unit) {
                guard self.bytes.count - self.index >= 6,
                      self.bytes[self.index] == UInt8(ascii: "\\"),
                      self.bytes[self.index + 1] == UInt8(ascii: "u")
                else {
                    throw RPCError(.malformedInput, offset: escapeStart, "lone high surrogate escape")
                }
                self.index += 2
                let low = try self.scanHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw RPCError(.malformedInput, offset: escapeStart, "high surrogate escape not followed by a low surrogate")
                }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(unit) {
                throw RPCError(.malformedInput, offset: escapeStart, "lone low surrogate escape")
            }
            // Not a surrogate, or a valid pair: always a scalar.
            decoded.append(contentsOf: UTF8.encode(Unicode.Scalar(scalarValue)!)!)
        default:
            throw RPCError(.malformedInput, offset: escapeStart, "invalid escape \\\(Character(Unicode.Scalar(byte)))")
        }
    }

    private mutating func scanHex4() throws(RPCError) -> UInt16 {
        guard self.bytes.count - self.index >= 4 else {
            throw self.malformed("truncated \\u escape")
        }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw self.malformed("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            self.index += 1
        }
        return value
    }

    private func validateUTF8(from start: Int, to end: Int) throws(RPCError) {
        if String(validating: self.slice(start, end), as: UTF8.self) == nil {
            throw RPCError(.invalidUTF8, offset: start - 1, "string is not valid UTF-8")
        }
    }

    /// A scanned number: its text range and what the digits gave. Its value is `±D × 10^scale`,
    /// where `D` is the integer the `digitCount` significant digits spell.
    private struct Number {
        var start: Int
        var end: Int
        var negative: Bool
        /// The first 19 significant digits as an integer (all of them when there are at most 19,
        /// so no overflow).
        var mantissa: UInt64
        /// Digits from the first non-zero one on; 0 when the number is zero.
        var digitCount: Int
        var hasFraction: Bool
        var hasExponent: Bool
        /// Where the decimal point sits relative to the last digit. Exact whenever the value's
        /// decimal position `digitCount + scale` (its first significant digit is at 10^(position
        /// − 1)) lies within ±`positionLimit`; beyond that it is pinned just past the limit on the
        /// same side (see `scanExponent`).
        var scale: Int

        var isPlainInteger: Bool { !self.hasFraction && !self.hasExponent }

        var int64: Int64? {
            guard self.digitCount <= 19 else { return nil }
            if self.negative {
                if self.mantissa <= UInt64(Int64.max) { return -Int64(self.mantissa) }
                if self.mantissa == UInt64(Int64.max) + 1 { return Int64.min }
                return nil
            }
            return Int64(exactly: self.mantissa)
        }
    }

    /// Beyond this decimal position a non-zero number's exact position no longer matters: above
    /// 10^400 every Double is infinite and every Integer out of range, below 10^-400 every Double
    /// rounds to zero and no Integer is exact (the smallest subnormal is about 4.9e-324).
    static let positionLimit = 400

    /// The fast path for the common case: an optional minus and 1 to 18 digits without a leading
    /// zero, not followed by a fraction or exponent. Consumes it and returns its value, or
    /// consumes nothing and returns nil (the full scanner then decides).
    private mutating func scanSmallInteger() -> Int64? {
        var index = self.index
        let negative = self.bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let first = index
        var value: Int64 = 0
        while index < self.bytes.count, index - first < 18 {
            let digit = self.bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value &* 10 &+ Int64(digit)
            index += 1
        }
        let digits = index - first
        guard digits > 0, digits < 18, !(digits > 1 && self.bytes[first] == UInt8(ascii: "0")) else { return nil }
        if index < self.bytes.count {
            switch self.bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        self.index = index
        return negative ? -value : value
    }

    /// A number of at most 15 digits without an exponent (`21.5`, `-3`, `0.05`), read in one
    /// pass: its digits as an integer below 10^15, hence exactly a Double, divided by an exact
    /// power of ten, one correctly rounded operation (Clinger's fast path, as `double(of:)`).
    /// Nil, having read nothing, for anything else (longer, an exponent, a leading zero, no
    /// digit after the point, not a number), which `scanNumber` then reads or refuses.
    private mutating func scanShortDecimal() -> Double? {
        guard let base = self.bytes.baseAddress else { return nil }
        let count = self.bytes.count
        var index = self.index
        let negative = index < count && base[index] == UInt8(ascii: "-")
        if negative { index &+= 1 }
        let integerStart = index
        var mantissa: UInt64 = 0
        while index < count && index &- integerStart < 16 {
            let digit = base[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            mantissa = mantissa &* 10 &+ UInt64(digit)
            index &+= 1
        }
        let integerDigits = index &- integerStart
        guard integerDigits > 0, integerDigits == 1 || base[integerStart] != UInt8(ascii: "0") else { return nil }
        var fractionDigits = 0
        if index < count && base[index] == UInt8(ascii: ".") {
            index &+= 1
            let fractionStart = index
            while index < count && index &- fractionStart < 16 {
                let digit = base[index] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                mantissa = mantissa &* 10 &+ UInt64(digit)
                index &+= 1
            }
            fractionDigits = index &- fractionStart
            guard fractionDigits > 0 else { return nil }
        }
        guard integerDigits &+ fractionDigits <= 15 else { return nil }
        if index < count {
            switch base[index] {
            case UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "0")...UInt8(ascii: "9"): return nil
            default: break
            }
        }
        self.index = index
        var value = Double(mantissa)
        if fractionDigits > 0 {
            value /= Self.powersOfTen[fractionDigits]
        }
        return negative ? -value : value
    }

    /// Scans a number per the RFC 8259 grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func scanNumber() throws(RPCError) -> Number {
        let start = self.index
        var number = Number(
            start: start, end: start, negative: false, mantissa: 0, digitCount: 0, hasFraction: false,
            hasExponent: false, scale: 0)
        if self.peek() == UInt8(ascii: "-") {
            number.negative = true
            self.index += 1
        }
        guard let first = self.peek(), Self.isDigit(first) else {
            throw self.malformed("invalid number")
        }
        if first == UInt8(ascii: "0") {
            self.index += 1
            if let next = self.peek(), Self.isDigit(next) {
                throw RPCError(.malformedInput, offset: start, "number with a leading zero")
            }
        } else {
            self.scanDigits(into: &number, fraction: false)
        }
        var fractionDigits = 0
        if self.peek() == UInt8(ascii: ".") {
            self.index += 1
            guard let next = self.peek(), Self.isDigit(next) else {
                throw RPCError(.malformedInput, offset: start, "number without digits after the decimal point")
            }
            number.hasFraction = true
            let fractionStart = self.index
            self.scanDigits(into: &number, fraction: true)
            fractionDigits = self.index - fractionStart
        }
        number.scale = -fractionDigits
        if let byte = self.peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            self.index += 1
            try self.scanExponent(into: &number, fractionDigits: fractionDigits, start: start)
        }
        number.end = self.index
        return number
    }

    /// Scans the exponent after `e` and sets `number.scale`. The exponent is exact while the
    /// decimal position it gives stays within ±`positionLimit`. Past that, further digits can only
    /// move the position further out, so the scan stops accumulating and pins the position just
    /// past the limit; for a positive exponent only once it also exceeds the fraction's length,
    /// so that the pinned scale is, like the real one, not negative (the number is integral).
    /// The pinned value then leads every reader to the verdict the real one would (infinite,
    /// zero, out of range, not an integer), and keeps a huge exponent away from the fast paths
    /// that trust the scale.
    private mutating func scanExponent(into number: inout Number, fractionDigits: Int, start: Int) throws(RPCError) {
        var negative = false
        if let sign = self.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            self.index += 1
        }
        guard let next = self.peek(), Self.isDigit(next) else {
            throw RPCError(.malformedInput, offset: start, "number without exponent digits")
        }
        number.hasExponent = true
        let limit = Self.positionLimit
        // The position without the exponent, and the largest exponent that keeps the position
        // (and, when positive, the scale's sign) where it is exactly known.
        let position = number.digitCount - fractionDigits
        let largest = negative ? limit + position : max(limit - position, fractionDigits)
        var exponent = 0
        var pinned = false
        while let byte = self.peek(), Self.isDigit(byte) {
            if !pinned {
                let (tens, overflow) = exponent.multipliedReportingOverflow(by: 10)
                let (sum, carry) = tens.addingReportingOverflow(Int(byte &- UInt8(ascii: "0")))
                if overflow || carry || sum > largest {
                    pinned = true
                } else {
                    exponent = sum
                }
            }
            self.index += 1
        }
        if !pinned {
            number.scale = (negative ? -exponent : exponent) - fractionDigits
        } else if negative {
            number.scale = -limit - 1 - number.digitCount
        } else {
            number.scale = max(limit + 1 - number.digitCount, 0)
        }
    }

    private mutating func scanDigits(into number: inout Number, fraction: Bool) {
        while let byte = self.peek(), Self.isDigit(byte) {
            // Leading zeros of a fraction do not count as significant digits.
            if number.digitCount > 0 || byte != UInt8(ascii: "0") || !fraction {
                number.digitCount += 1
            }
            if number.digitCount <= 19 {
                number.mantissa = number.mantissa &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            }
            self.index += 1
        }
    }

    /// Whether a number with a fraction or exponent denotes an integer: its digits end in at least
    /// as many zeros as the decimal scale takes away.
    private func isExactInteger(_ number: Number) -> Bool {
        // All digits zero (`0e-2`, `0.0e-3`): zero, however far the scale moves the point.
        if number.digitCount == 0 { return true }
        let scale = number.scale
        if scale >= 0 { return true }
        var end = number.end
        if number.hasExponent {
            while end > number.start, self.bytes[end - 1] != UInt8(ascii: "e"), self.bytes[end - 1] != UInt8(ascii: "E") {
                end -= 1
            }
            end -= 1
        }
        var zeros = 0
        var index = end - 1
        while index >= number.start, zeros < -scale {
            let byte = self.bytes[index]
            if byte == UInt8(ascii: "0") {
                zeros += 1
            } else if byte != UInt8(ascii: ".") {
                break
            }
            index -= 1
        }
        return zeros >= -scale
    }

    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// The Double a scanned number denotes, correctly rounded.
    private func double(of number: Number) -> Double {
        // Exact fast path (Clinger): a mantissa below 2^53 times a power of ten up to 10^22 is one
        // correctly rounded IEEE operation.
        let scale = number.scale
        if number.digitCount <= 15, (-22...22).contains(scale) {
            var value = Double(number.mantissa)
            if scale >= 0 {
                value *= Self.powersOfTen[scale]
            } else {
                value /= Self.powersOfTen[-scale]
            }
            return number.negative ? -value : value
        }
        // The standard library's parser is correctly rounded; the text is known to be valid JSON,
        // which is a subset of what it accepts.
        return Double(self.text(of: number)) ?? .nan
    }

    private func text(of number: Number) -> String {
        String(decoding: self.slice(number.start, number.end), as: UTF8.self)
    }

    // MARK: Errors

    private func malformed(_ detail: String) -> RPCError {
        RPCError(.malformedInput, offset: self.index, detail)
    }

    private func describeByte() -> String {
        guard let byte = self.peek() else { return "the end of the input" }
        if byte >= 0x21 && byte < 0x7F {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        return "byte 0x\(String(byte, radix: 16))"
    }

    /// A type mismatch at a value position: names what was expected and what is there.
    private func mismatch(expected: String) -> RPCError {
        let found: String
        switch self.peek() ?? 0 {
        case UInt8(ascii: "\""): found = "string"
        case UInt8(ascii: "{"): found = "object"
        case UInt8(ascii: "["): found = "array"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): found = "Boolean"
        case UInt8(ascii: "n"): found = "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): found = "number"
        default:
            return self.malformed("expected a value, found \(self.describeByte())")
        }
        return RPCError(.typeMismatch, offset: self.index, "expected \(expected), found \(found)")
    }
}
