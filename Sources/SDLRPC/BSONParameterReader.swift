import NIOCore
import SDLBSON

/// Reads a parameters object from one BSON document (protocol version 5 RPC payloads).
///
/// The document is validated as a whole by SDLBSON first (lengths, terminators, UTF-8, known
/// element types, nesting depth within `RPCCodingOptions.maxNestingDepth`); the reader then walks
/// the validated bytes in place with SDLBSON's `_BSONCursor`, as the JSON reader walks its text,
/// with no reference counting per element. Integer parameters accept int32 and int64 (and a double
/// holding an exact integer up to ±2^53, as the JSON reader accepts `5.0`) when the value fits;
/// Float parameters accept doubles and integers.
struct BSONParameterReader: RPCParameterReader {
    /// Stands on the current element, which the next read consumes (`hasElement` false once read).
    var cursor: _BSONCursor

    /// A reader standing on `document` itself; `beginObject()` enters it.
    init(_ document: BSONDocument) {
        self.cursor = _BSONCursor(document)
    }

    static var _keepsNonconformingParts: Bool { false }

    var _mark: _BSONCursor._Mark { self.cursor._mark }

    mutating func _rewind(to mark: _BSONCursor._Mark) {
        self.cursor._rewind(to: mark)
    }

    // MARK: Structure

    @inline(__always)
    private mutating func enter(_ expected: BSONType, _ name: String) throws(RPCError) {
        guard self.type == expected else { throw self.mismatch(expected: name) }
        self.cursor.enter()
    }

    mutating func beginObject() throws(RPCError) {
        try self.enter(.document, "object")
    }

    mutating func beginArray() throws(RPCError) {
        try self.enter(.array, "array")
    }

    mutating func nextKey() throws(RPCError) -> Bool {
        self.cursor.next()
    }

    mutating func nextElement() throws(RPCError) -> Bool {
        self.cursor.next()
    }

    var keyHash: UInt32 { self.cursor.keyHash }

    func currentKeyEquals(_ name: StaticString) -> Bool {
        self.cursor.keyEquals(name)
    }

    var currentKey: String { self.cursor.key }

    // MARK: Scalars

    /// The type of the current element if it was not read yet, else type byte 0 (the cursor
    /// stands on nothing once `clear()`ed).
    @inline(__always)
    private var type: BSONType { self.cursor.type }

    mutating func readBool() throws(RPCError) -> Bool {
        guard self.type == .bool else { throw self.mismatch(expected: "Boolean") }
        self.cursor.clear()
        return self.cursor.bool
    }

    mutating func readInt32() throws(RPCError) -> Int32 {
        if self.type == .int32 {
            self.cursor.clear()
            return self.cursor.int32
        }
        let value = try self.readInt64()
        guard let narrow = Int32(exactly: value) else {
            throw RPCError(.numberOutOfRange, offset: self.cursor.offset, "\(value) does not fit a 32-bit Integer")
        }
        return narrow
    }

    mutating func readInt64() throws(RPCError) -> Int64 {
        switch self.type {
        case .int32:
            self.cursor.clear()
            return Int64(self.cursor.int32)
        case .int64:
            self.cursor.clear()
            return self.cursor.int64
        case .double:
            self.cursor.clear()
            let double = self.cursor.double
            guard double.isFinite, double.rounded(.towardZero) == double else {
                throw RPCError(.notAnInteger, offset: self.cursor.offset, "\(double) is not an integer")
            }
            // The same bound as JSON's fraction and exponent forms, so that a value is accepted in
            // one format exactly when it is in the other.
            guard double.magnitude <= Double(JSONParameterReader.maxIntegralDoubleMagnitude) else {
                throw RPCError(.numberOutOfRange, offset: self.cursor.offset, "\(double) is beyond 2^53 as a double")
            }
            return Int64(double)
        default:
            throw self.mismatch(expected: "Integer")
        }
    }

    mutating func readDouble() throws(RPCError) -> Double {
        switch self.type {
        case .double:
            self.cursor.clear()
            return self.cursor.double
        case .int32:
            self.cursor.clear()
            return Double(self.cursor.int32)
        case .int64:
            self.cursor.clear()
            return Double(self.cursor.int64)
        default:
            throw self.mismatch(expected: "Float")
        }
    }

    mutating func readString() throws(RPCError) -> String {
        guard self.type == .string else { throw self.mismatch(expected: "String") }
        self.cursor.clear()
        return self.cursor.string
    }

    /// An enum's wire name matched in the document, without building a String unless unknown.
    mutating func readEnumeration<E: RPCEnum>(
        _ match: (_ hash: UInt32, _ equals: (StaticString) -> Bool) -> E?
    ) throws(RPCError) -> E {
        guard self.type == .string else { throw self.mismatch(expected: "String") }
        self.cursor.clear()
        let cursor = self.cursor
        if let found = match(cursor.stringHash, { cursor.stringEquals($0) }) {
            return found
        }
        return E(wireName: cursor.string)
    }

    mutating func readUnknown() throws(RPCError) -> RPCValue {
        switch self.type {
        case .double: return .double(try self.readDouble())
        case .string: return .string(try self.readString())
        case .bool: return .bool(try self.readBool())
        case .null:
            self.cursor.clear()
            return .null
        case .int32: return .int32(try self.readInt32())
        case .int64: return .int64(try self.readInt64())
        case .document:
            try self.beginObject()
            var object = RPCObject()
            while try self.nextKey() {
                try self.decodeUnknown(into: &object)
            }
            try object.requireUniqueKeys()
            return .object(object)
        case .array:
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
        RPCError(.typeMismatch, offset: self.cursor.offset, "expected \(expected), found BSON \(self.type)")
    }
}

/// Validates `buffer` as one BSON document within the options' nesting limit and runs `body` with
/// a reader inside its top-level object.
func withBSONParameterReader<T>(
    _ buffer: ByteBuffer, options: RPCCodingOptions,
    _ body: (inout BSONParameterReader) throws(RPCError) -> T
) throws(RPCError) -> T {
    var reader = BSONParameterReader(try validatedBSON(buffer, options: options))
    try reader.beginObject()
    return try body(&reader)
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
    /// Decodes a value from a BSON parameters document (protocol version 5) under
    /// `options.receivePolicy`, as `init(jsonParameters:options:)` decodes JSON.
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
            try Self.read(from: &reader, options: options)
        }
        try value.checkDecoded(options)
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
