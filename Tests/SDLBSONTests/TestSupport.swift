import Foundation
import NIOCore
import Testing

@testable import SDLBSON

/// Normalises JSON text for comparison: insignificant whitespace dropped, strings re-escaped
/// one way (the library's: short escapes for \b\f\n\r\t, \u00xx for other controls, raw UTF-8
/// otherwise), and the text of `$numberDouble` strings replaced by the double's bit pattern when
/// `doublesByValue` (libbson prints doubles with %.20g, not shortest round-trip). Everything else
/// – key order, number text, structure – must match exactly.
func normalizeJSON(_ text: String, doublesByValue: Bool = false) -> String {
    let b = Array(text.utf8)
    var out: [UInt8] = []
    var i = 0
    var lastString: String?
    while i < b.count {
        let c = b[i]
        if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D {
            i += 1
            continue
        }
        if c != UInt8(ascii: "\"") {
            out.append(c)
            if c != UInt8(ascii: ":") { lastString = nil }
            i += 1
            continue
        }
        i += 1
        var raw: [UInt8] = []
        while i < b.count && b[i] != UInt8(ascii: "\"") {
            if b[i] == UInt8(ascii: "\\") {
                let e = b[i + 1]
                i += 2
                switch e {
                case UInt8(ascii: "b"): raw.append(8)
                case UInt8(ascii: "f"): raw.append(12)
                case UInt8(ascii: "n"): raw.append(10)
                case UInt8(ascii: "r"): raw.append(13)
                case UInt8(ascii: "t"): raw.append(9)
                case UInt8(ascii: "u"):
                    var v = UInt32(String(decoding: b[i..<i + 4], as: UTF8.self), radix: 16)!
                    i += 4
                    if v >= 0xD800 && v < 0xDC00 {
                        let low = UInt32(String(decoding: b[i + 2..<i + 6], as: UTF8.self), radix: 16)!
                        i += 6
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                    }
                    raw.append(contentsOf: Array(String(Unicode.Scalar(v)!).utf8))
                default: raw.append(e)
                }
            } else {
                raw.append(b[i])
                i += 1
            }
        }
        i += 1
        var string = String(decoding: raw, as: UTF8.self)
        if doublesByValue, lastString == "$numberDouble", let d = Double(string), d.isFinite {
            string = "bits:" + String(d.bitPattern, radix: 16)
        }
        out.append(UInt8(ascii: "\""))
        for r in Array(string.utf8) {
            switch r {
            case 0x22: out.append(contentsOf: Array("\\\"".utf8))
            case 0x5C: out.append(contentsOf: Array("\\\\".utf8))
            case 0x08: out.append(contentsOf: Array("\\b".utf8))
            case 0x0C: out.append(contentsOf: Array("\\f".utf8))
            case 0x0A: out.append(contentsOf: Array("\\n".utf8))
            case 0x0D: out.append(contentsOf: Array("\\r".utf8))
            case 0x09: out.append(contentsOf: Array("\\t".utf8))
            case 0..<0x20: out.append(contentsOf: Array(String(format: "\\u%04x", r).utf8))
            default: out.append(r)
            }
        }
        out.append(UInt8(ascii: "\""))
        lastString = string
    }
    return String(decoding: out, as: UTF8.self)
}
