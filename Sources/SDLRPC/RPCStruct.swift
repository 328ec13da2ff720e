import NIOCore

/// A generated struct or message of the spec: a parameters object.
///
/// Generated types implement the four requirements without defaults; the `_…JSON…` and `_…BSON…`
/// requirements have default implementations and must not be implemented. They exist so that a
/// call through the protocol (`any RPCMessage`, or a generic function of another module) reaches
/// code specialised for this type and for the format's reader and writer, not the unspecialised
/// generic code.
public protocol RPCStruct: RPCParameterValue {
    /// Reads the members of an object the reader has already entered, up to and including its end.
    /// Throws `missingParameter` for an absent mandatory parameter; does not check constraints.
    init<Reader: RPCParameterReader>(parametersFrom reader: inout Reader) throws(RPCError)
    /// Writes the parameters (known ones in spec order, then unknown ones) into the current object.
    func encodeParameters<Writer: RPCParameterWriter>(to writer: inout Writer)
    /// Checks every spec constraint of this value and of the structs it contains.
    func validate(into validator: inout RPCValidator)
    /// Parameters the spec does not define, kept from decoding and re-encoded after the known ones.
    var unknownParameters: RPCObject { get set }
    /// Parts of this struct that lenient decoding kept out of the typed properties, as received;
    /// re-encoded in place and reported by validation. Empty unless decoded leniently. Settable on
    /// the generated types that have optional or array parameters (the others cannot drop
    /// anything: theirs is always empty).
    var droppedParameters: RPCDroppedParameters { get }

    /// Implementation detail (specialised entry point); use `init(jsonParameters:)`.
    static func _decodeJSONParameters(_ bytes: ByteBuffer, options: RPCCodingOptions) throws(RPCError) -> Self
    /// Implementation detail (specialised entry point); use `jsonParameters()`.
    func _encodeJSONParameters(options: RPCCodingOptions) throws(RPCError) -> ByteBuffer
    /// Implementation detail (specialised entry point); use `init(bsonParameters:)`.
    static func _decodeBSONParameters(_ bytes: ByteBuffer, options: RPCCodingOptions) throws(RPCError) -> Self
    /// Implementation detail (specialised entry point); use `bsonParameters()`.
    func _encodeBSONParameters(options: RPCCodingOptions) throws(RPCError) -> ByteBuffer
}

extension RPCStruct {
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        try reader.beginObject()
        try self.init(parametersFrom: &reader)
    }

    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.beginObject(forKey: key)
        self.encodeParameters(to: &writer)
        writer.endObject()
    }

    public static func _decodeJSONParameters(_ bytes: ByteBuffer, options: RPCCodingOptions) throws(RPCError) -> Self {
        let value = try withJSONParameterReader(bytes, options: options) { (reader) throws(RPCError) in
            try Self.read(from: &reader, options: options)
        }
        try value.checkDecoded(options)
        return value
    }

    public func _encodeJSONParameters(options: RPCCodingOptions) throws(RPCError) -> ByteBuffer {
        try self.check(options)
        var writer = JSONParameterWriter()
        self.encodeParameters(to: &writer)
        return try writer.finish()
    }

    /// Checks every spec constraint (ranges, lengths, sizes, enum values) and throws the first
    /// violation, its path naming the parameter, e.g. `climateControlData.fanSpeed: above maxvalue 100`.
    /// Also refuses what would not decode: nesting deeper than the default `maxNestingDepth`,
    /// repeated keys and spec parameter names among `unknownParameters`.
    public func validate() throws(RPCError) {
        try self.check(.default)
    }

    /// What strict decoding runs after reading a value: the spec's constraints, when
    /// `options.validate` says so. Lenient decoding reports them instead
    /// (`violations(options:)`), and the off policy does not look.
    @inline(__always)
    func checkDecoded(_ options: RPCCodingOptions) throws(RPCError) {
        if options.validate && !options.receivePolicy.keepsNonconformingParts {
            try self.check(options)
        }
    }

    /// Every violation of this value that lenient decoding reports, at most
    /// `options.maxViolations`: the spec's constraints and the parts it dropped. Empty under the
    /// strict policy (which has thrown the first one) and the off policy.
    func violations(options: RPCCodingOptions) -> [RPCViolation] {
        guard options.receivePolicy == .lenient else { return [] }
        var validator = RPCValidator(limit: options.maxViolations, maxNestingDepth: options.maxNestingDepth, checksConstraints: true)
        self.validate(into: &validator)
        return validator.violations
    }

    /// What decoding (with `options.validate`) and every encoding run: with `validate` the spec's
    /// constraints and the checks below; without it, only what keeps the output readable by our
    /// own decoder with the same options (nesting within `maxNestingDepth`, unique keys, unknown
    /// parameters not named like spec parameters), which is cheap and keeps an encoder from
    /// writing bytes that peers would read in different ways.
    func check(_ options: RPCCodingOptions) throws(RPCError) {
        var validator = RPCValidator(limit: 1, maxNestingDepth: options.maxNestingDepth, checksConstraints: options.validate)
        self.validate(into: &validator)
        if let first = validator.errors.first {
            throw first
        }
    }

    /// Every spec violation, in parameter order, at most `limit` of them.
    public func validationErrors(limit: Int = 100) -> [RPCError] {
        var validator = RPCValidator(limit: limit)
        self.validate(into: &validator)
        return validator.errors
    }
}
