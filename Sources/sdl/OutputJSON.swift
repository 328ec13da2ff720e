import Foundation

/// A JSON value with ordered object keys, for the tool's output lines (ARCHITECTURE.md §5 fixes the
/// key order of each event).
enum OutputJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([OutputJSON])
    case object([(String, OutputJSON)])
    /// JSON text produced elsewhere (Extended JSON of a BSON payload), written as is.
    case raw(String)

    static func == (lhs: OutputJSON, rhs: OutputJSON) -> Bool {
        lhs.text == rhs.text
    }

    /// The compact JSON text.
    var text: String {
        var out = ""
        self.write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            if value.isFinite {
                out += value == value.rounded() && abs(value) < 1e15 ? String(format: "%.1f", value) : "\(value)"
            } else {
                out += "null"
            }
        case .string(let value): OutputJSON.writeString(value, to: &out)
        case .raw(let text): out += text
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                OutputJSON.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension Collection<UInt8> {
    /// Lowercase hex, two digits per byte.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(self.count * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Parses hex text; whitespace is ignored. Nil for odd length or a non-hex character.
func parseHex(_ text: some StringProtocol) -> [UInt8]? {
    var bytes: [UInt8] = []
    var high: UInt8? = nil
    for character in text.utf8 {
        let nibble: UInt8
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
        case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): continue
        default: return nil
        }
        if let value = high {
            bytes.append(value << 4 | nibble)
            high = nil
        } else {
            high = nibble
        }
    }
    return high == nil ? bytes : nil
}
