import NIOCore
import SDLBSON

/// Reads a parameters object from one BSON document (protocol version 5 RPC payloads).
///
/// The document is validated as a whole by SDLBSON first (lengths, terminators, UTF-8, known
/// element types, nesting depth within `RPCCodingOptions.maxNestingDepth`), so the walk itself only
/// checks types. Integer parameters accept int32 and int64 (and a double holding an exact integer,
/// as the JSON reader accepts `5.0`) when the value fits; Float parameters accept doubles and
/// integers.
public struct BSONParameterReader: RPCParameterReader {
    /// The open documents and arrays, innermost last.
    private var scopes: [BSONDocument.Iterator] = []
    /// The top-level document until `beginObject()` enters it; then the element of the current key
    /// or array item, which the next read consumes.
    private var pending: Pending
    public private(set) var keyHash: UInt32 = 0

    private enum Pending {
        case topLevel(BSONDocument)
        case element(BSONElement)
        case none
    }

    /// A reader over a validated document.
    init(document: BSONDocument) {
        self.pending = .topLevel(document)
        self.scopes.reserveCapacity(8)
    }

    private var element: BSONElement? {
        if case .element(let element) = self.pending { return element }
        return nil
    }

    // MARK: Structure

    public mutating func beginObject() throws(RPCError) {
        switch self.pending {
        case .topLevel(let document):
            self.scopes.append(document.makeIterator())
        case .element(let element):
            guard let document = element.documentValue else { throw Self.mismatch(element, expected: "object") }
            self.scopes.append(document.makeIterator())
        case .none:
            throw RPCError(.malformedInput, "no value to read")
        }
        self.pending = .none
    }

    public mutating func nextKey() throws(RPCError) -> Bool {
        guard let element = self.scopes[self.scopes.count - 1].next() else {
            self.scopes.removeLast()
            self.pending = .none
            return false
        }
        self.keyHash = element.withUnsafeKeyBytes { RPCKeyHash.hash($0.bindMemory(to: UInt8.self)) }
        self.pending = .element(element)
        return true
    }

    public func currentKeyEquals(_ name: StaticString) -> Bool {
        guard let element = self.element else { return false }
        return element.withUnsafeKeyBytes { key in
            guard key.count == name.utf8CodeUnitCount else { return false }
            let bytes = name.utf8Start
            for index in 0..<key.count where key[index] != bytes[index] {
                return false
            }
            return true
        }
    }

    public var currentKey: String { self.element?.key ?? "" }

    public mutating func beginArray() throws(RPCError) {
        guard let element = self.element else { throw RPCError(.malformedInput, "no value to read") }
        guard let array = element.arrayValue else { throw Self.mismatch(element, expected: "array") }
        self.scopes.append(array.makeIterator())
        self.pending = .none
    }

    public mutating func nextElement() throws(RPCError) -> Bool {
        guard let element = self.scopes[self.scopes.count - 1].next() else {
            self.scopes.removeLast()
            self.pending = .none
            return false
        }
        self.pending = .element(element)
        return true
    }

    // MARK: Scalars

    private mutating func take() throws(RPCError) -> BSONElement {
        guard let element = self.element else { throw RPCError(.malformedInput, "no value to read") }
        self.pending = .none
        return element
    }

    public mutating func readBool() throws(RPCError) -> Bool {
        let element = try self.take()
        guard let value = element.boolValue else { throw Self.mismatch(element, expected: "Boolean") }
        return value
    }

    public mutating func readInt32() throws(RPCError) -> Int32 {
        let element = try self.take()
        let value = try Self.integer(element)
        guard let narrow = Int32(exactly: value) else {
            throw RPCError(.numberOutOfRange, offset: element.offset, "\(value) does not fit a 32-bit Integer")
        }
        return narrow
    }

    public mutating func readInt64() throws(RPCError) -> Int64 {
        try Self.integer(try self.take())
    }

    private static func integer(_ element: BSONElement) throws(RPCError) -> Int64 {
        if let value = element.integerValue { return value }
        if let double = element.doubleValue {
            guard double.isFinite, double.rounded(.towardZero) == double else {
                throw RPCError(.notAnInteger, offset: element.offset, "\(double) is not an integer")
            }
            guard double >= -9.223372036854775808e18, double < 9.223372036854775808e18 else {
                throw RPCError(.numberOutOfRange, offset: element.offset, "\(double) does not fit a 64-bit Integer")
            }
            return Int64(double)
        }
        throw Self.mismatch(element, expected: "Integer")
    }

    public mutating func readDouble() throws(RPCError) -> Double {
        let element = try self.take()
        if let value = element.doubleValue { return value }
        if let value = element.integerValue { return Double(value) }
        throw Self.mismatch(element, expected: "Float")
    }

    public mutating func readString() throws(RPCError) -> String {
        let element = try self.take()
        guard let value = element.stringValue else { throw Self.mismatch(element, expected: "String") }
        return value
    }

    public mutating func readUnknown() throws(RPCError) -> RPCValue {
        try Self.value(of: try self.take())
    }

    /// Any element as a value tree; BSON types that JSON-shaped RPC parameters cannot hold
    /// (binary, dates, ObjectIds, …) are a type mismatch.
    static func value(of element: BSONElement) throws(RPCError) -> RPCValue {
        switch element.type {
        case .double: return .double(element.doubleValue!)
        case .string: return .string(element.stringValue!)
        case .bool: return .bool(element.boolValue!)
        case .null: return .null
        case .int32: return .int32(element.int32Value!)
        case .int64: return .int64(element.int64Value!)
        case .document: return .object(try Self.object(element.documentValue!))
        case .array:
            var values: [RPCValue] = []
            for item in element.arrayValue! {
                do throws(RPCError) {
                    values.append(try Self.value(of: item))
                } catch {
                    throw error.prefixed(.index(values.count))
                }
            }
            return .array(values)
        default:
            throw Self.mismatch(element, expected: "a JSON-compatible value")
        }
    }

    static func object(_ document: BSONDocument) throws(RPCError) -> RPCObject {
        var object = RPCObject()
        for element in document {
            do throws(RPCError) {
                object.append(key: element.key, value: try Self.value(of: element))
            } catch {
                throw error.prefixed(.key(element.key))
            }
        }
        return object
    }

    private static func mismatch(_ element: BSONElement, expected: String) -> RPCError {
        RPCError(.typeMismatch, offset: element.offset, "expected \(expected), found BSON \(element.type)")
    }
}

/// Validates `buffer` as one BSON document within the options' nesting limit and runs `body` with
/// a reader positioned before its top-level object.
func withBSONParameterReader<T>(
    _ buffer: ByteBuffer, options: RPCCodingOptions,
    _ body: (inout BSONParameterReader) throws(RPCError) -> T
) throws(RPCError) -> T {
    let document = try validatedBSON(buffer, options: options)
    var reader = BSONParameterReader(document: document)
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
            try value.validate()
        }
        return value
    }

    public func _encodeBSONParameters(options: RPCCodingOptions) throws(RPCError) -> ByteBuffer {
        if options.validate {
            try self.validate()
        }
        var writer = BSONParameterWriter()
        self.encodeParameters(to: &writer)
        return try writer.finish()
    }
}

extension RPCValue {
    /// Reads any BSON document into a value tree, e.g. the parameters of an RPC whose function
    /// this spec does not define.
    public init(bsonObject: ByteBuffer, options: RPCCodingOptions = .default) throws(RPCError) {
        self = .object(try BSONParameterReader.object(try validatedBSON(bsonObject, options: options)))
    }

    /// This value (an object) as a BSON document.
    public func bsonDocument() throws(RPCError) -> ByteBuffer {
        guard case .object(let object) = self else {
            throw RPCError(.typeMismatch, "only an object can be a BSON document")
        }
        var writer = BSONParameterWriter()
        writer.encodeUnknown(object)
        return try writer.finish()
    }
}
