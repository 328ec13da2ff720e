import NIOCore
import SDLBSON

/// Reads a parameters object from one BSON document (protocol version 5 RPC payloads).
///
/// The document is validated as a whole by SDLBSON first (lengths, terminators, UTF-8, known
/// element types, nesting depth within `RPCCodingOptions.maxNestingDepth`); the reader then walks
/// the validated bytes in place through a pointer, as the JSON reader does, with no reference
/// counting per element. Integer parameters accept int32 and int64 (and a double holding an exact
/// integer up to ±2^53, as the JSON reader accepts `5.0`) when the value fits; Float parameters
/// accept doubles and integers.
public struct BSONParameterReader: RPCParameterReader {
    /// The validated document's bytes; valid while the reader is used (see
    /// `withBSONParameterReader`).
    let base: UnsafeRawPointer
    /// Where the next element of the innermost container starts.
    var position = 0
    /// The open containers, innermost last: the offset of the terminating NUL, and where reading
    /// resumes in the enclosing container after it.
    var containers: [(end: Int, resume: Int)] = []
    /// The current element, which the next read consumes (type 0 when there is none).
    var type: UInt8 = 0x03
    var keyStart = 0
    var keyCount = 0
    var valueStart = 0
    public private(set) var keyHash: UInt32 = 0

    /// A reader positioned before the top-level document of validated bytes.
    init(validated base: UnsafeRawPointer) {
        self.base = base
        self.containers.reserveCapacity(8)
    }

    @inline(__always)
    func int32(at offset: Int) -> Int32 {
        Int32(littleEndian: self.base.loadUnaligned(fromByteOffset: offset, as: Int32.self))
    }

    /// The offset of the element's first byte (its type), for error messages.
    var elementOffset: Int { self.valueStart == 0 ? 0 : self.keyStart - 1 }

    // MARK: Structure

    @inline(__always)
    private mutating func enter(_ expected: UInt8, _ name: String) throws(RPCError) {
        guard self.type == expected else { throw self.mismatch(expected: name) }
        let length = Int(self.int32(at: self.valueStart))
        // `position` is already past this value (see `next()`): that is where the parent resumes.
        self.containers.append((self.valueStart + length - 1, self.position))
        self.position = self.valueStart + 4
        self.type = 0
    }

    public mutating func beginObject() throws(RPCError) {
        try self.enter(0x03, "object")
    }

    public mutating func beginArray() throws(RPCError) {
        try self.enter(0x04, "array")
    }

    /// Moves to the next element of the innermost container; false (and leaves it) at its end.
    @inline(__always)
    private mutating func next() -> Bool {
        let container = self.containers[self.containers.count - 1]
        let start = self.position
        guard start < container.end else {
            self.containers.removeLast()
            self.position = container.resume
            self.type = 0
            return false
        }
        self.type = self.base.load(fromByteOffset: start, as: UInt8.self)
        self.keyStart = start + 1
        var end = self.keyStart
        while self.base.load(fromByteOffset: end, as: UInt8.self) != 0 { end += 1 }
        self.keyCount = end - self.keyStart
        self.valueStart = end + 1
        self.position = self.valueEnd()
        return true
    }

    /// The end of the current value (validated bytes: every length is consistent).
    private func valueEnd() -> Int {
        let at = self.valueStart
        switch self.type {
        case 0x10: return at + 4
        case 0x01, 0x09, 0x11, 0x12: return at + 8
        case 0x08: return at + 1
        case 0x02, 0x0D, 0x0E: return at + 4 + Int(self.int32(at: at))
        case 0x03, 0x04, 0x0F: return at + Int(self.int32(at: at))
        case 0x05: return at + 5 + Int(self.int32(at: at))
        case 0x07: return at + 12
        case 0x13: return at + 16
        case 0x0C: return at + 4 + Int(self.int32(at: at)) + 12
        case 0x0B:
            var i = at
            while self.base.load(fromByteOffset: i, as: UInt8.self) != 0 { i += 1 }
            i += 1
            while self.base.load(fromByteOffset: i, as: UInt8.self) != 0 { i += 1 }
            return i + 1
        default: return at  // undefined, null, min key, max key
        }
    }

    public mutating func nextKey() throws(RPCError) -> Bool {
        guard self.next() else { return false }
        let count = self.keyCount
        if count == 0 {
            self.keyHash = 0
        } else {
            let key = self.base + self.keyStart
            self.keyHash = UInt32(truncatingIfNeeded: count) << 24
                | UInt32(key.load(as: UInt8.self)) << 16
                | UInt32(key.load(fromByteOffset: count / 2, as: UInt8.self)) << 8
                | UInt32(key.load(fromByteOffset: count - 1, as: UInt8.self))
        }
        return true
    }

    public mutating func nextElement() throws(RPCError) -> Bool {
        self.next()
    }

    public func currentKeyEquals(_ name: StaticString) -> Bool {
        let count = self.keyCount
        guard count == name.utf8CodeUnitCount else { return false }
        let key = self.base + self.keyStart
        let expected = name.utf8Start
        for index in 0..<count where key.load(fromByteOffset: index, as: UInt8.self) != expected[index] {
            return false
        }
        return true
    }

    public var currentKey: String {
        String(decoding: UnsafeRawBufferPointer(start: self.base + self.keyStart, count: self.keyCount), as: UTF8.self)
    }

    // MARK: Scalars

    public mutating func readBool() throws(RPCError) -> Bool {
        guard self.type == 0x08 else { throw self.mismatch(expected: "Boolean") }
        self.type = 0
        return self.base.load(fromByteOffset: self.valueStart, as: UInt8.self) != 0
    }

    public mutating func readInt32() throws(RPCError) -> Int32 {
        if self.type == 0x10 {
            self.type = 0
            return self.int32(at: self.valueStart)
        }
        let value = try self.readInt64()
        guard let narrow = Int32(exactly: value) else {
            throw RPCError(.numberOutOfRange, offset: self.elementOffset, "\(value) does not fit a 32-bit Integer")
        }
        return narrow
    }

    public mutating func readInt64() throws(RPCError) -> Int64 {
        let type = self.type
        self.type = 0
        switch type {
        case 0x10: return Int64(self.int32(at: self.valueStart))
        case 0x12: return Int64(littleEndian: self.base.loadUnaligned(fromByteOffset: self.valueStart, as: Int64.self))
        case 0x01:
            let double = self.double()
            guard double.isFinite, double.rounded(.towardZero) == double else {
                throw RPCError(.notAnInteger, offset: self.elementOffset, "\(double) is not an integer")
            }
            // The same bound as JSON's fraction and exponent forms, so that a value is accepted in
            // one format exactly when it is in the other.
            guard double.magnitude <= Double(JSONParameterReader.maxIntegralDoubleMagnitude) else {
                throw RPCError(.numberOutOfRange, offset: self.elementOffset, "\(double) is beyond 2^53 as a double")
            }
            return Int64(double)
        default:
            self.type = type
            throw self.mismatch(expected: "Integer")
        }
    }

    @inline(__always)
    private func double() -> Double {
        Double(bitPattern: UInt64(littleEndian: self.base.loadUnaligned(fromByteOffset: self.valueStart, as: UInt64.self)))
    }

    public mutating func readDouble() throws(RPCError) -> Double {
        let type = self.type
        self.type = 0
        switch type {
        case 0x01: return self.double()
        case 0x10: return Double(self.int32(at: self.valueStart))
        case 0x12: return Double(Int64(littleEndian: self.base.loadUnaligned(fromByteOffset: self.valueStart, as: Int64.self)))
        default:
            self.type = type
            throw self.mismatch(expected: "Float")
        }
    }

    public mutating func readString() throws(RPCError) -> String {
        guard self.type == 0x02 else { throw self.mismatch(expected: "String") }
        self.type = 0
        return self.string()
    }

    /// The current string value (validated UTF-8).
    private func string() -> String {
        let count = Int(self.int32(at: self.valueStart)) - 1
        return String(decoding: UnsafeRawBufferPointer(start: self.base + self.valueStart + 4, count: count), as: UTF8.self)
    }

    public mutating func readUnknown() throws(RPCError) -> RPCValue {
        switch self.type {
        case 0x01: return .double(try self.readDouble())
        case 0x02: return .string(try self.readString())
        case 0x08: return .bool(try self.readBool())
        case 0x0A:
            self.type = 0
            return .null
        case 0x10: return .int32(try self.readInt32())
        case 0x12: return .int64(try self.readInt64())
        case 0x03:
            try self.beginObject()
            var object = RPCObject()
            while try self.nextKey() {
                try self.decodeUnknown(into: &object)
            }
            try object.requireUniqueKeys()
            return .object(object)
        case 0x04:
            try self.beginArray()
            var values: [RPCValue] = []
            while try self.nextElement() {
                do throws(RPCError) {
                    values.append(try self.readUnknown())
                } catch {
                    throw error.prefixed(.index(values.count))
                }
            }
            return .array(values)
        default:
            throw self.mismatch(expected: "a JSON-compatible value")
        }
    }

    private func mismatch(expected: String) -> RPCError {
        let found = "\(BSONType(rawValue: self.type))"
        return RPCError(.typeMismatch, offset: self.elementOffset, "expected \(expected), found BSON \(found)")
    }
}

/// Validates `buffer` as one BSON document within the options' nesting limit and runs `body` with
/// a reader inside its top-level object.
func withBSONParameterReader<T>(
    _ buffer: ByteBuffer, options: RPCCodingOptions,
    _ body: (inout BSONParameterReader) throws(RPCError) -> T
) throws(RPCError) -> T {
    let document = try validatedBSON(buffer, options: options)
    let bytes = document.buffer
    let result: Result<T, RPCError> = bytes.withUnsafeReadableBytes { raw in
        var reader = BSONParameterReader(validated: raw.baseAddress!)
        do throws(RPCError) {
            try reader.beginObject()
            return .success(try body(&reader))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}

func validatedBSON(_ buffer: ByteBuffer, options: RPCCodingOptions) throws(RPCError) -> BSONDocument {
    var limits = BSONLimits.default
    limits.maximumNestingDepth = options.maxNestingDepth
    do {
        return try BSONDocument(validating: buffer, limits: limits)
    } catch {
        let code: RPCError.Code = error.code == .nestingTooDeep ? .nestingTooDeep : (error.code == .invalidUTF8 ? .invalidUTF8 : .malformedInput)
        throw RPCError(code, offset: error.offset, "invalid BSON: \(error.detail)")
    }
}

extension RPCStruct {
    /// Decodes a value from a BSON parameters document (protocol version 5), validating it unless
    /// `options.validate` is false.
    public init(bsonParameters: ByteBuffer, options: RPCCodingOptions = .default) throws(RPCError) {
        self = try Self._decodeBSONParameters(bsonParameters, options: options)
    }

    /// This value as a BSON parameters document; validates it first unless `options.validate` is
    /// false.
    public func bsonParameters(options: RPCCodingOptions = .default) throws(RPCError) -> ByteBuffer {
        try self._encodeBSONParameters(options: options)
    }

    public static func _decodeBSONParameters(_ bytes: ByteBuffer, options: RPCCodingOptions) throws(RPCError) -> Self {
        let value = try withBSONParameterReader(bytes, options: options) { (reader) throws(RPCError) in
            try Self(parametersFrom: &reader)
        }
        if options.validate {
            try value.check(options)
        }
        return value
    }

    public func _encodeBSONParameters(options: RPCCodingOptions) throws(RPCError) -> ByteBuffer {
        try self.check(options)
        var writer = BSONParameterWriter()
        self.encodeParameters(to: &writer)
        return try writer.finish()
    }
}

extension RPCValue {
    /// Reads any BSON document into a value tree, e.g. the parameters of an RPC whose function
    /// this spec does not define. BSON types JSON-shaped parameters cannot hold (binary, dates,
    /// ObjectIds, …) are a type mismatch.
    public init(bsonObject: ByteBuffer, options: RPCCodingOptions = .default) throws(RPCError) {
        self = try withBSONParameterReader(bsonObject, options: options) { (reader) throws(RPCError) in
            var object = RPCObject()
            while try reader.nextKey() {
                try reader.decodeUnknown(into: &object)
            }
            try object.requireUniqueKeys()
            return .object(object)
        }
    }

    /// This value (an object) as a BSON document. Refuses what `init(bsonObject:options:)` would:
    /// a repeated key in any object, nesting deeper than `options.maxNestingDepth`.
    public func bsonDocument(options: RPCCodingOptions = .default) throws(RPCError) -> ByteBuffer {
        guard case .object(let object) = self else {
            throw RPCError(.typeMismatch, "only an object can be a BSON document")
        }
        try self.checkEncodable(options)
        var writer = BSONParameterWriter()
        writer.encodeUnknown(object)
        return try writer.finish()
    }
}
