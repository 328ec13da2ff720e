import NIOCore
import Testing

extension Array where Element == UInt8 {
    /// The bytes `hex` spells: two digits a byte, either case. ASCII spaces and newlines between
    /// digits are ignored, so that literals can be grouped (`"0d000000 02 6100 …"`). Any other
    /// character, or an odd number of digits, fails the calling test naming the text (and the
    /// bytes before the fault are returned).
    public init(hex: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for character in hex.utf8 {
            if character == UInt8(ascii: " ") || character == UInt8(ascii: "\n") { continue }
            guard let nibble = Self.nibble(character) else {
                Issue.record("not hex: \(hex)", sourceLocation: sourceLocation)
                self = bytes
                return
            }
            if let pending = high {
                bytes.append(pending << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        if high != nil {
            Issue.record("odd number of hex digits: \(hex)", sourceLocation: sourceLocation)
        }
        self = bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hex, two digits a byte, no separators (the vectors' spelling).
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(self.underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension ByteBuffer {
    /// A buffer of the bytes `hex` spells (see `[UInt8](hex:)`).
    public init(hex: String, sourceLocation: SourceLocation = #_sourceLocation) {
        self.init(bytes: [UInt8](hex: hex, sourceLocation: sourceLocation))
    }

    /// The readable bytes.
    public var bytes: [UInt8] { Array(self.readableBytesView) }

    /// The readable bytes in lowercase hex.
    public var hex: String { self.readableBytesView.hex }
}

/// Lowercase hex with one space between bytes ("50 07 02 01"): frame-level comparisons whose
/// failures show the header's bytes apart.
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}
