import NIOCore
import SDLBSON

/// Writes a parameters object as compact JSON (RFC 8259) into a `ByteBuffer`.
///
/// Strings escape `"`, `\` and the control characters below U+0020 (`\n`, `\t`… or `\u00XX`) and
/// keep every other character as UTF-8. Integers are written as JSON integers; Floats in their
/// shortest form that reads back to the same Double, with a `.0` on integral values (`100.0`).
/// JSON has no NaN or infinity: such a Float is recorded as `nonFiniteNumber` and reported by
/// `finish()`.
struct JSONParameterWriter: RPCParameterWriter {
    var buffer: JSONOutput
    var needsComma = false
    var firstError: RPCError?

    /// Starts the top-level object at the end of `buffer`.
    init(buffer: consuming ByteBuffer = ByteBuffer()) {
        self.buffer = JSONOutput(taking: buffer)
        self.buffer.writeInteger(UInt8(ascii: "{"))
    }

    /// A writer for one bare value (`RPCValue.jsonText()`).
    init(valueOnly: Void) {
        self.buffer = JSONOutput(taking: ByteBuffer())
    }

    /// Returns the buffer of a `valueOnly` writer.
    mutating func finishValue() throws(RPCError) -> ByteBuffer {
        let buffer = self.buffer.finish()
        if let firstError = self.firstError {
            throw firstError
        }
        return buffer
    }

    /// Closes the top-level object and returns the buffer; throws if a value could not be written.
    mutating func finish() throws(RPCError) -> ByteBuffer {
        self.buffer.writeInteger(UInt8(ascii: "}"))
        return try self.finishValue()
    }

    // MARK: Emitting

    /// Writes the separator, `"key":` (outside arrays) and then what `body` puts at the pointer it
    /// gets, at most `maxValueBytes`: one capacity check per value.
    @inline(__always)
    mutating func emit(_ key: RPCKey, maxValueBytes: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        let comma = self.needsComma
        self.needsComma = true
        let name = key.name
        let keyBytes = key.isElement ? 0 : name.utf8CodeUnitCount + 3
        self.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 + keyBytes + maxValueBytes) { raw in
            let target = raw.baseAddress!.bindMemory(to: UInt8.self, capacity: raw.count)
            var count = 0
            if comma {
                target[0] = UInt8(ascii: ",")
                count = 1
            }
            if keyBytes > 0 {
                target[count] = UInt8(ascii: "\"")
                Self.copyName(name.utf8Start, to: target + count + 1, count: keyBytes - 3)
                target[count + keyBytes - 2] = UInt8(ascii: "\"")
                target[count + keyBytes - 1] = UInt8(ascii: ":")
                count += keyBytes
            }
            return count + body(target + count)
        }
    }

    /// Copies a parameter name (a few to a few dozen bytes) with word loads and stores, the last
    /// word overlapping the one before, instead of a call to `memcpy`, which cost more than the
    /// copy for names this short.
    @inline(__always)
    static func copyName(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(target)
        if count >= 8 {
            var offset = 0
            while offset &+ 8 < count {
                to.storeBytes(of: from.loadUnaligned(fromByteOffset: offset, as: UInt64.self), toByteOffset: offset, as: UInt64.self)
                offset &+= 8
            }
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self), toByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 {
            to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self), toByteOffset: count &- 4, as: UInt32.self)
        } else {
            for offset in 0..<count {
                target[offset] = source[offset]
            }
        }
    }

    mutating func writeDynamicKey(_ key: String) {
        if self.needsComma {
            self.buffer.writeInteger(UInt8(ascii: ","))
        }
        self.needsComma = true
        self.writeQuoted(key)
        self.buffer.writeInteger(UInt8(ascii: ":"))
    }

    // MARK: Values

    mutating func writeBool(_ value: Bool, forKey key: RPCKey) {
        self.emit(key, maxValueBytes: 5) { target in Self.putBool(value, at: target) }
    }

    mutating func writeInt32(_ value: Int32, forKey key: RPCKey) {
        self.emit(key, maxValueBytes: 20) { target in Self.putDecimal(Int64(value), at: target) }
    }

    mutating func writeInt64(_ value: Int64, forKey key: RPCKey) {
        self.emit(key, maxValueBytes: 20) { target in Self.putDecimal(value, at: target) }
    }

    mutating func writeDouble(_ value: Double, forKey key: RPCKey) {
        if value.isFinite, value.magnitude < 1e15 {
            self.emit(key, maxValueBytes: 32) { target in Self.putDouble(value, at: target) }
        } else {
            self.emit(key, maxValueBytes: 0) { _ in 0 }
            self.writeNumber(value)
        }
    }

    mutating func writeString(_ value: String, forKey key: RPCKey) {
        var value = value
        value.withUTF8 { bytes in
            self.emit(key, maxValueBytes: Self.quotedSize(bytes)) { target in Self.putQuoted(bytes, at: target) }
        }
    }

    mutating func beginObject(forKey key: RPCKey) {
        self.emit(key, maxValueBytes: 1) { target in
            target[0] = UInt8(ascii: "{")
            return 1
        }
        self.needsComma = false
    }

    mutating func endObject() {
        self.buffer.writeInteger(UInt8(ascii: "}"))
        self.needsComma = true
    }

    mutating func beginArray(forKey key: RPCKey) {
        self.emit(key, maxValueBytes: 1) { target in
            target[0] = UInt8(ascii: "[")
            return 1
        }
        self.needsComma = false
    }

    mutating func endArray() {
        self.buffer.writeInteger(UInt8(ascii: "]"))
        self.needsComma = true
    }

    mutating func writeUnknown(_ value: RPCValue, forKey key: String) {
        self.writeDynamicKey(key)
        self.writeValue(value)
    }

    mutating func writeUnknownElement(_ value: RPCValue) {
        if self.needsComma {
            self.buffer.writeInteger(UInt8(ascii: ","))
        }
        self.writeValue(value)
    }

    /// Writes any value in the current position (after a key, or as an array element).
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

    /// Writes a Double at the current position (an unknown value, or the slow path).
    mutating func writeNumber(_ value: Double) {
        guard value.isFinite else {
            if self.firstError == nil {
                self.firstError = RPCError(.nonFiniteNumber, "\(value) cannot be written as JSON")
            }
            self.buffer.writeStaticString("null")
            return
        }
        if value.magnitude < 1e15 {
            self.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 32) { raw in
                Self.putDouble(value, at: raw.baseAddress!.bindMemory(to: UInt8.self, capacity: raw.count))
            }
            return
        }
        // Swift's description is the shortest digit string that reads back to the same Double, in
        // a syntax JSON accepts (`1e+16`, `1.7976931348623157e+308`).
        self.buffer.writeString(value.description)
    }

    mutating func writeDecimal(_ value: Int64) {
        self.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 20) { raw in
            Self.putDecimal(value, at: raw.baseAddress!.bindMemory(to: UInt8.self, capacity: raw.count))
        }
    }

    /// Writes a quoted, escaped string.
    mutating func writeQuoted(_ string: String) {
        var string = string
        string.withUTF8 { bytes in
            self.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.quotedSize(bytes)) { raw in
                Self.putQuoted(bytes, at: raw.baseAddress!.bindMemory(to: UInt8.self, capacity: raw.count))
            }
        }
    }

    static func putBool(_ value: Bool, at target: UnsafeMutablePointer<UInt8>) -> Int {
        let text: StaticString = value ? "true" : "false"
        target.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        return text.utf8CodeUnitCount
    }

    /// Writes a signed decimal integer; at most 20 bytes.
    static func putDecimal(_ value: Int64, at target: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 0
        if value < 0 {
            target[0] = UInt8(ascii: "-")
            count = 1
        }
        return count + self.putDigits(value.magnitude, minimumDigits: 1, at: target + count)
    }

    /// Writes the decimal digits of `value`, zero-padded to `minimumDigits`.
    static func putDigits(_ value: UInt64, minimumDigits: Int, at target: UnsafeMutablePointer<UInt8>) -> Int {
        var digits = 1
        var limit: UInt64 = 10
        while digits < 20, value >= limit {
            digits += 1
            limit = limit &* 10
        }
        digits = max(digits, minimumDigits)
        var rest = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            target[index] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
            rest /= 10
        }
        return digits
    }

    static let powersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]
    static let integerPowersOfTen: [UInt64] = [1, 10, 100, 1000, 10000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000]

    /// Writes a finite Double below 1e15 in magnitude, at most 32 bytes: the fewest fraction digits
    /// (up to 9) that read back to the same Double, `N.0` for integral values; else Swift's
    /// shortest round-trip description.
    static func putDouble(_ value: Double, at target: UnsafeMutablePointer<UInt8>) -> Int {
        let magnitude = value.magnitude
        for exponent in 0..<self.powersOfTen.count {
            let scale = self.powersOfTen[exponent]
            let product = magnitude * scale
            guard product < 9_007_199_254_740_992 else { break }
            // Below 2^53 the rounded value is an exact integer, and `scaled / scale` is the one
            // correctly rounded division a parser performs on these digits: equality means the
            // digits read back to this very Double.
            let scaled = Double(UInt64(product + 0.5))
            if scaled / scale == magnitude {
                var count = 0
                if value.sign == .minus {
                    target[0] = UInt8(ascii: "-")
                    count = 1
                }
                let digits = UInt64(scaled)
                let divisor = self.integerPowersOfTen[exponent]
                count += self.putDigits(digits / divisor, minimumDigits: 1, at: target + count)
                target[count] = UInt8(ascii: ".")
                count += 1
                count += self.putDigits(digits % divisor, minimumDigits: max(exponent, 1), at: target + count)
                return count
            }
        }
        let text = value.description
        var count = 0
        for byte in text.utf8 {
            target[count] = byte
            count += 1
        }
        return count
    }

    /// The most bytes `putQuoted` writes for these bytes: quotes, and 6 per byte that needs escaping.
    static func quotedSize(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var escapes = 0
        for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            escapes += 1
        }
        return bytes.count + 2 + escapes * 5
    }

    /// Writes a quoted string: escapes `"`, `\\` and control characters, copies runs of other bytes.
    static func putQuoted(_ bytes: UnsafeBufferPointer<UInt8>, at target: UnsafeMutablePointer<UInt8>) -> Int {
        target[0] = UInt8(ascii: "\"")
        var count = 1
        var start = 0
        var index = 0
        let hex: StaticString = "0123456789abcdef"
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if index > start {
                (target + count).update(from: bytes.baseAddress! + start, count: index - start)
                count += index - start
            }
            target[count] = UInt8(ascii: "\\")
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): target[count + 1] = byte; count += 2
            case 0x0A: target[count + 1] = UInt8(ascii: "n"); count += 2
            case 0x0D: target[count + 1] = UInt8(ascii: "r"); count += 2
            case 0x09: target[count + 1] = UInt8(ascii: "t"); count += 2
            case 0x08: target[count + 1] = UInt8(ascii: "b"); count += 2
            case 0x0C: target[count + 1] = UInt8(ascii: "f"); count += 2
            default:
                target[count + 1] = UInt8(ascii: "u")
                target[count + 2] = UInt8(ascii: "0")
                target[count + 3] = UInt8(ascii: "0")
                target[count + 4] = hex.utf8Start[Int(byte >> 4)]
                target[count + 5] = hex.utf8Start[Int(byte & 0x0F)]
                count += 6
            }
            index += 1
            start = index
        }
        if index > start {
            (target + count).update(from: bytes.baseAddress! + start, count: index - start)
            count += index - start
        }
        target[count] = UInt8(ascii: "\"")
        return count + 1
    }
}

/// The writer's output: a write cursor into the pinned storage of the `ByteBuffer` being written
/// (SDLBSON's `_BSONBytes`, as its BSON writers use), so a value costs one capacity check and its
/// stores, with no uniqueness or exclusivity check per write and no copy at the end.
///
/// `position` is the buffer index where the next byte goes and `limit` the storage's capacity.
/// Copyable only because the parameter writer must be; it lives in that writer, which generated
/// code takes `inout`, so one output at a time writes through the pin.
struct JSONOutput {
    /// Nil only while the storage is regrown.
    private var bytes: _BSONBytes?
    private var position: Int
    private var limit: Int

    /// Room reserved up front: the parameters of most RPCs fit, so they never regrow.
    static let initialCapacity = 1024

    /// Takes `buffer` over, appending at its writer index.
    init(taking buffer: consuming ByteBuffer) {
        if buffer.writableBytes < Self.initialCapacity {
            buffer.reserveCapacity(minimumWritableBytes: Self.initialCapacity)
        }
        self.position = buffer.writerIndex
        let bytes = _BSONBytes(writable: consume buffer)
        self.limit = bytes.capacity
        self.bytes = bytes
    }

    /// Lets `body` write at most `maxBytes` at the end; it returns how many it wrote.
    @inline(__always)
    mutating func writeWithUnsafeMutableBytes(minimumWritableBytes maxBytes: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) {
        if _slowPath(self.limit &- self.position < maxBytes) {
            self.grow(maxBytes)
        }
        let start = self.bytes.unsafelyUnwrapped.address(self.position)
        self.position &+= body(UnsafeMutableRawBufferPointer(start: start, count: maxBytes))
    }

    @inline(never)
    private mutating func grow(_ count: Int) {
        var buffer = self.finish()
        // At least double, so a long output costs O(log n) reallocations.
        buffer.reserveCapacity(minimumWritableBytes: Swift.max(count, buffer.capacity))
        let bytes = _BSONBytes(writable: consume buffer)
        self.limit = bytes.capacity
        self.bytes = bytes
    }

    mutating func writeInteger(_ byte: UInt8) {
        self.writeWithUnsafeMutableBytes(minimumWritableBytes: 1) { raw in
            raw[0] = byte
            return 1
        }
    }

    mutating func writeStaticString(_ text: StaticString) {
        self.writeWithUnsafeMutableBytes(minimumWritableBytes: text.utf8CodeUnitCount) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
            return text.utf8CodeUnitCount
        }
    }

    mutating func writeString(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            self.writeWithUnsafeMutableBytes(minimumWritableBytes: bytes.count) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(bytes))
                return bytes.count
            }
        }
    }

    /// The buffer back, its writer index past the output; ends the output.
    mutating func finish() -> ByteBuffer {
        var buffer = self.bytes.take().unsafelyUnwrapped.unpin()
        buffer.moveWriterIndex(to: self.position)
        return buffer
    }
}
