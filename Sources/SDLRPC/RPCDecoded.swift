import NIOCore

/// A decoded struct or message with the violations decoding found in it: what
/// ``RPCReceivePolicy/lenient`` decoding returns.
///
/// ```swift
/// let decoded = try RPCDecoded<SDLRegisterAppInterfaceResponse>(parameters: bytes, format: .json)
/// let response = decoded.value        // what conforms, typed
/// decoded.violations                  // each with its path, code and detail
/// response.displayCapabilities?.droppedParameters   // the dropped image fields, as received
/// ```
///
/// Under the strict policy the first violation is thrown instead, and under the off policy none
/// is looked for: `violations` is empty for both.
public struct RPCDecoded<Value: RPCStruct>: Sendable {
    /// The typed value: everything that conforms, the dropped parts kept raw in the
    /// `droppedParameters` of the structs that held them.
    public var value: Value
    /// Every violation, in parameter order, at most `RPCCodingOptions.maxViolations`.
    public var violations: [RPCViolation]

    /// Decodes the parameters section of an RPC payload under `options.receivePolicy` (lenient
    /// unless told otherwise). Throws what no policy can read past: malformed JSON or BSON,
    /// nesting beyond `options.maxNestingDepth`, a repeated key, a mandatory parameter of the
    /// value itself missing or unreadable; and, strictly, the first violation.
    public init(parameters: ByteBuffer, format: RPCParameterFormat, options: RPCCodingOptions = .lenient) throws(RPCError) {
        self.value = try Value(parameters: parameters, format: format, options: options)
        self.violations = self.value.violations(options: options)
    }

    /// Decodes JSON parameters text, as `init(parameters:format:options:)` does.
    public init(jsonParameters: String, options: RPCCodingOptions = .lenient) throws(RPCError) {
        try self.init(parameters: ByteBuffer(string: jsonParameters), format: .json, options: options)
    }
}
