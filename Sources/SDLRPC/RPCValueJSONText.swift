extension RPCValue {
    /// Parses JSON text whose top-level value may be of any kind (RFC 8259 §2), not only an
    /// object: for JSON documents that are not RPC parameters, such as a test tool's input file.
    ///
    /// The reader is the one `init(jsonObject:options:)` uses, with the same strictness: the RFC
    /// 8259 grammar and nothing more, UTF-8, a repeated key in any object refused as
    /// `duplicateParameter` with its path, nesting bounded by `options.maxNestingDepth` (the
    /// top-level value being level 1). Numbers are kept as they are written where a value can hold
    /// them: a number without fraction or exponent is `int32` when it fits, else `int64` when it
    /// fits; every other number is the correctly rounded `double`, and `numberOutOfRange` when
    /// that is infinite.
    public init(jsonText: String, options: RPCCodingOptions = .default) throws(RPCError) {
        var text = jsonText
        let result: Result<RPCValue, RPCError> = text.withUTF8 { bytes in
            var reader = JSONParameterReader(bytes: bytes, maxDepth: options.maxNestingDepth)
            do throws(RPCError) {
                let value = try reader.readUnknown()
                try reader.finish()
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }
}
