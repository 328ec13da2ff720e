// A small, strict JSON parser (RFC 8259) for Extended JSON input. The library imports no
// Foundation, so it carries its own. Strictness, because Extended JSON comes from untrusted
// peers and tools: no trailing commas, no comments, no leading zeros or '+', no bare control
// characters in strings, no lone surrogates in \u escapes, nothing after the top-level value,
// and nesting bounded by a limit checked before each recursion. Repeated member names are valid
// JSON (RFC 8259 §4 only says they SHOULD be unique), so they parse; each member keeps the
// offset of its name, for the readers that refuse them.

/// A parsed JSON value. Numbers keep their source text so that Extended JSON can decide between
/// int32, int64 and double exactly as the text says.
internal struct _JSONMember {
    var key: String
    var value: _JSONValue
    /// The UTF-8 offset of the name's opening quote in the text.
    var keyOffset: Int
}

internal indirect enum _JSONValue {
    case object([_JSONMember])
    case array([_JSONValue])
    case string(String)
    case number(String)
    case bool(Bool)
    case null
}

internal struct _JSONParser {
    private let bytes: [UInt8]
    private var position = 0
    private let maximumDepth: Int

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        // Extended JSON wrappers may add two JSON levels below the deepest BSON document.
        self.maximumDepth = min(maximumDepth, BSONLimits.nestingDepthCeiling + 2)
    }

    static func parse(_ bytes: [UInt8], maximumDepth: Int) throws(BSONError) -> _JSONValue {
        var parser = _JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        if let bad = bytes.withUnsafeBytes({ _firstInvalidUTF8($0, from: 0, to: $0.count) }) {
            throw BSONError(.invalidJSON, offset: bad, "JSON text is not valid UTF-8")
        }
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 1)
        parser.skipWhitespace()
        if parser.position != bytes.count {
            throw parser.error("unexpected text after the JSON value")
        }
        return value
    }

    private func error(_ detail: String) -> BSONError {
        BSONError(.invalidJSON, offset: self.position, detail)
    }

    private mutating func skipWhitespace() {
        while self.position < self.bytes.count {
            switch self.bytes[self.position] {
            case 0x20, 0x09, 0x0A, 0x0D: self.position += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(BSONError) -> _JSONValue {
        guard self.position < self.bytes.count else { throw self.error("unexpected end of JSON text") }
        switch self.bytes[self.position] {
        case UInt8(ascii: "{"):
            if depth > self.maximumDepth {
                throw BSONError(.nestingTooDeep, offset: self.position, "JSON nests deeper than the limit of \(self.maximumDepth)")
            }
            return try self.parseObject(depth: depth)
        case UInt8(ascii: "["):
            if depth > self.maximumDepth {
                throw BSONError(.nestingTooDeep, offset: self.position, "JSON nests deeper than the limit of \(self.maximumDepth)")
            }
            return try self.parseArray(depth: depth)
        case UInt8(ascii: "\""):
            return .string(try self.parseString())
        case UInt8(ascii: "t"):
            try self.expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try self.expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try self.expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try self.parseNumber())
        default:
            throw self.error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(BSONError) {
        let count = literal.utf8CodeUnitCount
        guard self.bytes.count - self.position >= count else { throw self.error("unexpected end of JSON text") }
        let matches = literal.withUTF8Buffer { lit in
            for i in 0..<count where lit[i] != self.bytes[self.position + i] { return false }
            return true
        }
        guard matches else { throw self.error("invalid literal") }
        self.position += count
    }

    private mutating func parseObject(depth: Int) throws(BSONError) -> _JSONValue {
        self.position += 1
        var members: [_JSONMember] = []
        self.skipWhitespace()
        if self.position < self.bytes.count, self.bytes[self.position] == UInt8(ascii: "}") {
            self.position += 1
            return .object(members)
        }
        while true {
            self.skipWhitespace()
            guard self.position < self.bytes.count, self.bytes[self.position] == UInt8(ascii: "\"") else {
                throw self.error("expected a string key")
            }
            let keyOffset = self.position
            let key = try self.parseString()
            self.skipWhitespace()
            guard self.position < self.bytes.count, self.bytes[self.position] == UInt8(ascii: ":") else {
                throw self.error("expected ':' after an object key")
            }
            self.position += 1
            self.skipWhitespace()
            let value = try self.parseValue(depth: depth + 1)
            members.append(_JSONMember(key: key, value: value, keyOffset: keyOffset))
            self.skipWhitespace()
            guard self.position < self.bytes.count else { throw self.error("unterminated object") }
            let c = self.bytes[self.position]
            self.position += 1
            if c == UInt8(ascii: "}") { return .object(members) }
            if c != UInt8(ascii: ",") {
                self.position -= 1
                throw self.error("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(BSONError) -> _JSONValue {
        self.position += 1
        var items: [_JSONValue] = []
        self.skipWhitespace()
        if self.position < self.bytes.count, self.bytes[self.position] == UInt8(ascii: "]") {
            self.position += 1
            return .array(items)
        }
        while true {
            self.skipWhitespace()
            items.append(try self.parseValue(depth: depth + 1))
            self.skipWhitespace()
            guard self.position < self.bytes.count else { throw self.error("unterminated array") }
            let c = self.bytes[self.position]
            self.position += 1
            if c == UInt8(ascii: "]") { return .array(items) }
            if c != UInt8(ascii: ",") {
                self.position -= 1
                throw self.error("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func parseHex4() throws(BSONError) -> UInt32 {
        guard self.bytes.count - self.position >= 4 else { throw self.error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = hexValue(self.bytes[self.position]) else { throw self.error("invalid \\u escape") }
            value = value << 4 | UInt32(digit)
            self.position += 1
        }
        return value
    }

    private mutating func parseString() throws(BSONError) -> String {
        self.position += 1
        var out: [UInt8] = []
        let start = self.position
        // Fast path: no escapes.
        while self.position < self.bytes.count {
            let c = self.bytes[self.position]
            if c == UInt8(ascii: "\"") {
                let s = String(decoding: self.bytes[start..<self.position], as: UTF8.self)
                self.position += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw self.error("unescaped control character in a string") }
            self.position += 1
        }
        out.append(contentsOf: self.bytes[start..<self.position])
        while self.position < self.bytes.count {
            let c = self.bytes[self.position]
            switch c {
            case UInt8(ascii: "\""):
                self.position += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                self.position += 1
                guard self.position < self.bytes.count else { throw self.error("unterminated string") }
                let e = self.bytes[self.position]
                self.position += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try self.parseHex4()
                    if scalar >= 0xD800 && scalar <= 0xDBFF {
                        guard self.bytes.count - self.position >= 6,
                            self.bytes[self.position] == UInt8(ascii: "\\"),
                            self.bytes[self.position + 1] == UInt8(ascii: "u")
                        else { throw self.error("high surrogate without a low surrogate") }
                        self.position += 2
                        let low = try self.parseHex4()
                        guard low >= 0xDC00 && low <= 0xDFFF else { throw self.error("invalid low surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                        throw self.error("lone low surrogate")
                    }
                    out.append(contentsOf: Array(String(Unicode.Scalar(scalar)!).utf8))
                default:
                    throw self.error("invalid escape")
                }
            default:
                if c < 0x20 { throw self.error("unescaped control character in a string") }
                out.append(c)
                self.position += 1
            }
        }
        throw self.error("unterminated string")
    }

    private mutating func parseNumber() throws(BSONError) -> String {
        let start = self.position
        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
        if self.bytes[self.position] == UInt8(ascii: "-") { self.position += 1 }
        guard self.position < self.bytes.count, isDigit(self.bytes[self.position]) else {
            throw self.error("invalid number")
        }
        if self.bytes[self.position] == UInt8(ascii: "0") {
            self.position += 1
            if self.position < self.bytes.count, isDigit(self.bytes[self.position]) {
                throw self.error("leading zero in a number")
            }
        } else {
            while self.position < self.bytes.count, isDigit(self.bytes[self.position]) { self.position += 1 }
        }
        if self.position < self.bytes.count, self.bytes[self.position] == UInt8(ascii: ".") {
            self.position += 1
            guard self.position < self.bytes.count, isDigit(self.bytes[self.position]) else {
                throw self.error("digits expected after the decimal point")
            }
            while self.position < self.bytes.count, isDigit(self.bytes[self.position]) { self.position += 1 }
        }
        if self.position < self.bytes.count,
            self.bytes[self.position] == UInt8(ascii: "e") || self.bytes[self.position] == UInt8(ascii: "E")
        {
            self.position += 1
            if self.position < self.bytes.count,
                self.bytes[self.position] == UInt8(ascii: "+") || self.bytes[self.position] == UInt8(ascii: "-")
            {
                self.position += 1
            }
            guard self.position < self.bytes.count, isDigit(self.bytes[self.position]) else {
                throw self.error("digits expected in the exponent")
            }
            while self.position < self.bytes.count, isDigit(self.bytes[self.position]) { self.position += 1 }
        }
        return String(decoding: self.bytes[start..<self.position], as: UTF8.self)
    }
}
