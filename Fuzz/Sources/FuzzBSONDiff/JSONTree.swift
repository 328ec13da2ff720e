/// A JSON text read strictly (RFC 8259), kept as written: object members in order and repeats
/// kept, numbers as their text, strings with their escapes resolved. Two Extended JSON texts that
/// print the same values differently (whitespace, escapes, digits of a double) read as equal
/// trees once `normalized()` reads every `$numberDouble` by value.
indirect enum JSONTree: Equatable {
    case object([(String, JSONTree)])
    case array([JSONTree])
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    /// A `$numberDouble` read by value (NaN payloads and signs of NaN are not printed).
    case double(UInt64)

    static func == (lhs: JSONTree, rhs: JSONTree) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.null, .null): return true
        case (.double(let a), .double(let b)): return a == b
        default: return false
        }
    }

    /// Reads `text`; nil unless it is one well-formed JSON value (nested at most 1,000 deep).
    init?(parsing text: String) {
        var reader = Reader(bytes: Array(text.utf8))
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipWhitespace()
        guard reader.position == reader.bytes.count else { return nil }
        self = value
    }

    /// The tree with every `{"$numberDouble": "…"}` read as a double's bits (every NaN alike).
    func normalized() -> JSONTree {
        switch self {
        case .object(let members):
            if members.count == 1, members[0].0 == "$numberDouble", case .string(let text) = members[0].1,
                let value = Self.double(text)
            {
                return .double(value.isNaN ? Double.nan.bitPattern : value.bitPattern)
            }
            return .object(members.map { ($0.0, $0.1.normalized()) })
        case .array(let items): return .array(items.map { $0.normalized() })
        default: return self
        }
    }

    private static func double(_ text: String) -> Double? {
        switch text {
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        case "NaN": return .nan
        default: return Double(text)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        mutating func skipWhitespace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func take(_ literal: String) -> Bool {
            let utf8 = Array(literal.utf8)
            guard bytes.count - position >= utf8.count, Array(bytes[position..<position + utf8.count]) == utf8 else { return false }
            position += utf8.count
            return true
        }

        mutating func value(depth: Int) -> JSONTree? {
            guard depth < 1000 else { return nil }
            skipWhitespace()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map { .string($0) }
            case UInt8(ascii: "t"): return take("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return take("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return take("null") ? .null : nil
            default: return number()
            }
        }

        mutating func object(depth: Int) -> JSONTree? {
            position += 1
            var members: [(String, JSONTree)] = []
            skipWhitespace()
            if take("}") { return .object(members) }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard take(":"), let value = value(depth: depth + 1) else { return nil }
                members.append((key, value))
                skipWhitespace()
                if take("}") { return .object(members) }
                guard take(",") else { return nil }
            }
        }

        mutating func array(depth: Int) -> JSONTree? {
            position += 1
            var items: [JSONTree] = []
            skipWhitespace()
            if take("]") { return .array(items) }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipWhitespace()
                if take("]") { return .array(items) }
                guard take(",") else { return nil }
            }
        }

        /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() -> JSONTree? {
            let start = position
            func digits() -> Int {
                let from = position
                while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 { position += 1 }
                return position - from
            }
            _ = take("-")
            guard position < bytes.count else { return nil }
            if bytes[position] == 0x30 {
                position += 1
            } else if digits() == 0 {
                return nil
            }
            if take("."), digits() == 0 { return nil }
            if take("e") || take("E") {
                _ = take("+") || take("-")
                if digits() == 0 { return nil }
            }
            return .number(String(decoding: bytes[start..<position], as: UTF8.self))
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - position >= 4 else { return nil }
            var value: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
                value = value << 4 | UInt32(digit)
            }
            position += 4
            return value
        }

        mutating func string() -> String? {
            position += 1
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            // Only well-formed UTF-8 may pass: a repaired byte would hide a difference.
            func flush() -> Bool {
                guard let text = String(validating: run, as: UTF8.self) else { return false }
                scalars.append(contentsOf: text.unicodeScalars)
                run.removeAll()
                return true
            }
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return flush() ? String(scalars) : nil
                case 0x00...0x1F:
                    return nil
                case UInt8(ascii: "\\"):
                    guard flush(), position < bytes.count else { return nil }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                    case UInt8(ascii: "b"): scalars.append("\u{8}")
                    case UInt8(ascii: "f"): scalars.append("\u{C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(code) {
                            guard take("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        scalars.append(scalar)
                    default:
                        return nil
                    }
                default:
                    run.append(byte)
                }
            }
            return nil
        }
    }
}
