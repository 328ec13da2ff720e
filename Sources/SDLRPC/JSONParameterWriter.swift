import NIOCore

/// Writes a parameters object as compact JSON (RFC 8259) into a `ByteBuffer`.
///
/// Strings escape `"`, `\` and the control characters below U+0020 (`\n`, `\t`… or `\u00XX`) and
/// keep every other character as UTF-8. Integers are written as JSON integers; Floats in their
/// shortest form that reads back to the same Double, with a `.0` on integral values (`100.0`).
/// JSON has no NaN or infinity: such a Float is recorded as `nonFiniteNumber` and reported by
/// `finish()`.
public struct JSONParameterWriter: RPCParameterWriter {
    @usableFromInline
    var buffer: ByteBuffer
    @usableFromInline
    var needsComma = false
    @usableFromInline
    var firstError: RPCError?

    /// Starts the top-level object at the end of `buffer`.
    public init(buffer: ByteBuffer = ByteBuffer()) {
        self.buffer = buffer
        self.buffer.writeInteger(UInt8(ascii: "{"))
    }

    /// A writer for one bare value (`RPCValue.jsonText()`).
    init(valueOnly: Void) {
        self.buffer = ByteBuffer()
    }

    /// Returns the buffer of a `valueOnly` writer.
    mutating func finishValue() throws(RPCError) -> ByteBuffer {
        if let firstError = self.firstError {
            throw firstError
        }
        return self.buffer
    }

    /// Closes the top-level object and returns the buffer; throws if a value could not be written.
    public mutating func finish() throws(RPCError) -> ByteBuffer {
        self.buffer.writeInteger(UInt8(ascii: "}"))
        if let firstError = self.firstError {
            throw firstError
        }
        return self.buffer
    }

    // MARK: Keys

    /// Writes the separator and, outside arrays, `"key":`, with one capacity check.
    @inlinable
    mutating func writeKey(_ key: RPCKey) {
        let comma = self.needsComma
        self.needsComma = true
        if key.isElement {
            if comma {
                self.buffer.writeInteger(UInt8(ascii: ","))
            }
            return
        }
        let name = key.name
        let length = name.utf8CodeUnitCount
        self.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length + 4) { target in
            var offset = 0
            if comma {
                target[0] = UInt8(ascii: ",")
                offset = 1
            }
            target[offset] = UInt8(ascii: "\"")
            UnsafeMutableRawBufferPointer(rebasing: target[(offset + 1)...])
                .copyMemory(from: UnsafeRawBufferPointer(start: name.utf8Start, count: length))
            target[offset + 1 + length] = UInt8(ascii: "\"")
            target[offset + 2 + length] = UInt8(ascii: ":")
            return offset + 3 + length
        }
    }

    @usableFromInline
    mutating func writeDynamicKey(_ key: String) {
        if self.needsComma {
            self.buffer.writeInteger(UInt8(ascii: ","))
        }
        self.needsComma = true
        self.writeQuoted(key)
        self.buffer.writeInteger(UInt8(ascii: ":"))
    }

    // MARK: Values

    @inlinable
    public mutating func writeBool(_ value: Bool, forKey key: RPCKey) {
        self.writeKey(key)
        if value {
            self.buffer.writeStaticString("true")
        } else {
            self.buffer.writeStaticString("false")
        }
    }

    @inlinable
    public mutating func writeInt32(_ value: Int32, forKey key: RPCKey) {
        self.writeKey(key)
        self.writeDecimal(Int64(value))
    }

    @inlinable
    public mutating func writeInt64(_ value: Int64, forKey key: RPCKey) {
        self.writeKey(key)
        self.writeDecimal(value)
    }

    @inlinable
    public mutating func writeDouble(_ value: Double, forKey key: RPCKey) {
        self.writeKey(key)
        self.writeNumber(value)
    }

    @inlinable
    public mutating func writeString(_ value: String, forKey key: RPCKey) {
        self.writeKey(key)
        self.writeQuoted(value)
    }

    @inlinable
    public mutating func beginObject(forKey key: RPCKey) {
        self.writeKey(key)
        self.buffer.writeInteger(UInt8(ascii: "{"))
        self.needsComma = false
    }

    @inlinable
    public mutating func endObject() {
        self.buffer.writeInteger(UInt8(ascii: "}"))
        self.needsComma = true
    }

    @inlinable
    public mutating func beginArray(forKey key: RPCKey) {
        self.writeKey(key)
        self.buffer.writeInteger(UInt8(ascii: "["))
        self.needsComma = false
    }

    @inlinable
    public mutating func endArray() {
        self.buffer.writeInteger(UInt8(ascii: "]"))
        self.needsComma = true
    }

    public mutating func writeUnknown(_ value: RPCValue, forKey key: String) {
        self.writeDynamicKey(key)
        self.writeValue(value)
    }

    /// Writes any value in the current position (after a key, or as an array element).
    @usableFromInline
    mutating func writeValue(_ value: RPCValue) {
        switch value {
        case .null:
            self.buffer.writeStaticString("null")
        case .bool(let bool):
            if bool {
                self.buffer.writeStaticString("true")
            } else {
                self.buffer.writeStaticString("false")
            }
        case .int32(let int):
            self.writeDecimal(Int64(int))
        case .int64(let int):
            self.writeDecimal(int)
        case .double(let double):
            self.writeNumber(double)
        case .string(let string):
            self.writeQuoted(string)
        case .array(let elements):
            self.buffer.writeInteger(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 {
                    self.buffer.writeInteger(UInt8(ascii: ","))
                }
                self.writeValue(element)
            }
            self.buffer.writeInteger(UInt8(ascii: "]"))
        case .object(let object):
            self.buffer.writeInteger(UInt8(ascii: "{"))
            self.needsComma = false
            for entry in object.entries {
                self.writeDynamicKey(entry.key)
                self.writeValue(entry.value)
            }
            self.buffer.writeInteger(UInt8(ascii: "}"))
        }
        self.needsComma = true
    }

    // MARK: Primitives

    /// Writes a signed decimal integer.
    @inlinable
    mutating func writeDecimal(_ value: Int64) {
        self.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 20) { target in
            var magnitude = value.magnitude
            // Digits are produced backwards into the tail of a 20-byte window, then moved to the front.
            var end = 20
            repeat {
                end -= 1
                target[end] = UInt8(truncatingIfNeeded: magnitude % 10) &+ UInt8(ascii: "0")
                magnitude /= 10
            } while magnitude != 0
            if value < 0 {
                end -= 1
                target[end] = UInt8(ascii: "-")
            }
            let count = 20 - end
            if end > 0 {
                for index in 0..<count {
                    target[index] = target[end + index]
                }
            }
            return count
        }
    }

    /// Writes a Double in its shortest round-trip form; integral values as `N.0`.
    @inlinable
    mutating func writeNumber(_ value: Double) {
        guard value.isFinite else {
            if self.firstError == nil {
                self.firstError = RPCError(.nonFiniteNumber, "\(value) cannot be written as JSON")
            }
            self.buffer.writeStaticString("null")
            return
        }
        if value.rounded(.towardZero) == value, value.magnitude < 1e15 {
            if value == 0, value.sign == .minus {
                self.buffer.writeStaticString("-0.0")
                return
            }
            self.writeDecimal(Int64(value))
            self.buffer.writeStaticString(".0")
            return
        }
        // Swift's description is the shortest digit string that reads back to the same Double, in
        // a syntax JSON accepts (`0.1`, `1e-07`, `1.7976931348623157e+308`).
        self.buffer.writeString(value.description)
    }

    /// Writes a quoted, escaped string.
    @usableFromInline
    mutating func writeQuoted(_ string: String) {
        var string = string
        string.withUTF8 { bytes in
            self.buffer.writeInteger(UInt8(ascii: "\""))
            var start = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                    continue
                }
                if index > start {
                    self.buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                }
                self.writeEscape(byte)
                start = index + 1
            }
            if bytes.count > start {
                self.buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[start..<bytes.count]))
            }
            self.buffer.writeInteger(UInt8(ascii: "\""))
        }
    }

    @usableFromInline
    mutating func writeEscape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): self.buffer.writeStaticString("\\\"")
        case UInt8(ascii: "\\"): self.buffer.writeStaticString("\\\\")
        case 0x0A: self.buffer.writeStaticString("\\n")
        case 0x0D: self.buffer.writeStaticString("\\r")
        case 0x09: self.buffer.writeStaticString("\\t")
        case 0x08: self.buffer.writeStaticString("\\b")
        case 0x0C: self.buffer.writeStaticString("\\f")
        default:
            let hex: StaticString = "0123456789abcdef"
            self.buffer.writeStaticString("\\u00")
            self.buffer.writeInteger(hex.utf8Start[Int(byte >> 4)])
            self.buffer.writeInteger(hex.utf8Start[Int(byte & 0x0F)])
        }
    }
}
