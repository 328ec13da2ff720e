import NIOCore

/// Runs `body` with a reader positioned inside the top-level object of `buffer`'s readable bytes,
/// and checks that nothing but whitespace follows the object.
func withJSONParameterReader<T>(
    _ buffer: ByteBuffer, options: RPCCodingOptions,
    _ body: (inout JSONParameterReader) throws(RPCError) -> T
) throws(RPCError) -> T {
    // The value comes straight back through the closure, not wrapped in a `Result`: a decoded
    // message can be kilobytes of inline optionals, and every wrapping and unwrapping copied it.
    do {
        return try buffer.withUnsafeReadableBytes { raw in
            try readJSON(raw.bindMemory(to: UInt8.self), options: options, body)
        }
    } catch {
        throw error as! RPCError
    }
}

/// The same over a string's UTF-8.
func withJSONParameterReader<T>(
    _ text: String, options: RPCCodingOptions,
    _ body: (inout JSONParameterReader) throws(RPCError) -> T
) throws(RPCError) -> T {
    var text = text
    do {
        return try text.withUTF8 { bytes in
            try readJSON(bytes, options: options, body)
        }
    } catch {
        throw error as! RPCError
    }
}

private func readJSON<T>(
    _ bytes: UnsafeBufferPointer<UInt8>, options: RPCCodingOptions,
    _ body: (inout JSONParameterReader) throws(RPCError) -> T
) throws(RPCError) -> T {
    var reader = JSONParameterReader(bytes: bytes, maxDepth: options.maxNestingDepth)
    try reader.beginObject()
    let value = try body(&reader)
    try reader.finish()
    return value
}

extension RPCStruct {
    /// Decodes a value from a JSON parameters object (the bytes between an RPC binary header and the
    /// bulk data) under `options.receivePolicy`: strictly (the default) validating it unless
    /// `options.validate` is false, leniently keeping what does not conform in `droppedParameters`
    /// (``RPCDecoded`` lists the violations too).
    public init(jsonParameters: ByteBuffer, options: RPCCodingOptions = .default) throws(RPCError) {
        self = try Self._decodeJSONParameters(jsonParameters, options: options)
    }

    /// Decodes a value from JSON parameters text.
    public init(jsonParameters: String, options: RPCCodingOptions = .default) throws(RPCError) {
        self = try Self._decodeJSONParameters(ByteBuffer(string: jsonParameters), options: options)
    }

    /// This value as a compact JSON parameters object; validates it first unless
    /// `options.validate` is false.
    public func jsonParameters(options: RPCCodingOptions = .default) throws(RPCError) -> ByteBuffer {
        try self._encodeJSONParameters(options: options)
    }

    /// This value as compact JSON parameters text.
    public func jsonParametersText(options: RPCCodingOptions = .default) throws(RPCError) -> String {
        String(buffer: try self._encodeJSONParameters(options: options))
    }
}

extension RPCValue {
    /// Parses any JSON object (RFC 8259) into a value tree, e.g. the parameters of an RPC whose
    /// function this spec does not define. Applies the same strictness and depth limit as the typed
    /// decoders.
    public init(jsonObject: ByteBuffer, options: RPCCodingOptions = .default) throws(RPCError) {
        self = try withJSONParameterReader(jsonObject, options: options) { (reader) throws(RPCError) in
            try Self.readMembers(&reader)
        }
    }

    /// Parses any JSON object text into a value tree.
    public init(jsonObject: String, options: RPCCodingOptions = .default) throws(RPCError) {
        self = try withJSONParameterReader(jsonObject, options: options) { (reader) throws(RPCError) in
            try Self.readMembers(&reader)
        }
    }

    /// Throws the first repeated key or excess nesting of this tree, with its path.
    func checkEncodable(_ options: RPCCodingOptions) throws(RPCError) {
        var validator = RPCValidator(limit: 1, maxNestingDepth: options.maxNestingDepth, checksConstraints: false)
        validator.value(self)
        if let first = validator.errors.first {
            throw first
        }
    }

    private static func readMembers(_ reader: inout JSONParameterReader) throws(RPCError) -> RPCValue {
        var object = RPCObject()
        while try reader.nextKey() {
            try reader.decodeUnknown(into: &object)
        }
        try object.requireUniqueKeys()
        return .object(object)
    }

    /// This value as compact JSON text. Non-finite doubles, which JSON cannot carry, are an error,
    /// and so is what `init(jsonObject:options:)` would refuse: a repeated key in any object,
    /// nesting deeper than `options.maxNestingDepth` (the value itself being level 1).
    public func jsonText(options: RPCCodingOptions = .default) throws(RPCError) -> String {
        try self.checkEncodable(options)
        var writer = JSONParameterWriter(valueOnly: ())
        writer.writeValue(self)
        return String(buffer: try writer.finishValue())
    }
}
