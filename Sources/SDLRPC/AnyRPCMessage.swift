import NIOCore
import SDLProtocol

extension RPCParameterFormat {
    /// The parameters section of an RPC payload as this format's bytes: an empty section (binary
    /// header JSON size 0, which SDL Core and sdl_java_suite send for an RPC without parameters)
    /// stands for an empty object, `{}` or the 5-byte empty BSON document.
    func parametersSection(_ parameters: ByteBuffer) -> ByteBuffer {
        guard parameters.readableBytes == 0 else { return parameters }
        return self == .bson ? ByteBuffer(bytes: [5, 0, 0, 0, 0]) : ByteBuffer(string: "{}")
    }
}

extension RPCStruct {
    /// Decodes the parameters section of an RPC payload in the given format, under
    /// `options.receivePolicy`: strictly (the default) it validates unless `options.validate` is
    /// false; leniently it keeps what does not conform in `droppedParameters` (``RPCDecoded``
    /// lists the violations too). An empty section is an empty object (binary header JSON size
    /// 0), so a message without mandatory parameters decodes from it and one with them throws
    /// `missingParameter`.
    public init(parameters: ByteBuffer, format: RPCParameterFormat, options: RPCCodingOptions = .default) throws(RPCError) {
        let parameters = format.parametersSection(parameters)
        switch format {
        case .json:
            self = try Self(jsonParameters: parameters, options: options)
        case .bson:
            self = try Self(bsonParameters: parameters, options: options)
        }
    }

    /// Encodes the parameters in the given format; validates first unless `options.validate` is false.
    public func parameters(format: RPCParameterFormat, options: RPCCodingOptions = .default) throws(RPCError) -> ByteBuffer {
        switch format {
        case .json:
            return try self.jsonParameters(options: options)
        case .bson:
            return try self.bsonParameters(options: options)
        }
    }
}

extension RPCValue {
    /// Parses the parameters section of an RPC payload in the given format into a value tree; an
    /// empty section (binary header JSON size 0) is an empty object.
    public init(parameters: ByteBuffer, format: RPCParameterFormat, options: RPCCodingOptions = .default) throws(RPCError) {
        let parameters = format.parametersSection(parameters)
        switch format {
        case .json:
            self = try RPCValue(jsonObject: parameters, options: options)
        case .bson:
            self = try RPCValue(bsonObject: parameters, options: options)
        }
    }
}

extension RPCMessage {
    /// The whole RPC payload of protocol versions 2–5: the 12-byte binary header (this message's
    /// RPC type and function id, `correlationID`, the parameters' size), the parameters, then
    /// `bulkData` (protocol spec 5.4.1 §5.1).
    public func payload(
        correlationID: UInt32, bulkData: ByteBuffer = ByteBuffer(), format: RPCParameterFormat = .json,
        options: RPCCodingOptions = .default
    ) throws(RPCError) -> ByteBuffer {
        let parameters = try self.parameters(format: format, options: options)
        return try makePayload(
            rpcType: Self.rpcType, functionID: Self.functionID, correlationID: correlationID,
            parameters: parameters, bulkData: bulkData)
    }
}

func makePayload(
    rpcType: RPCType, functionID: FunctionID, correlationID: UInt32, parameters: ByteBuffer, bulkData: ByteBuffer
) throws(RPCError) -> ByteBuffer {
    let header = RPCBinaryHeader(
        rpcType: rpcType, functionID: functionID.rawValue, correlationID: correlationID, jsonSize: 0)
    var buffer = ByteBuffer()
    do throws(SDLProtocolError) {
        try RPCPayload(header: header, parameters: parameters, bulkData: bulkData).write(to: &buffer)
    } catch {
        throw RPCError(.invalidPayload, error.description)
    }
    return buffer
}

/// An RPC message of any function and type, with what the binary header and the bulk data carry:
/// what a decoder of RPC payloads returns, and what tools build from a function name and JSON text.
///
/// An erroneous response (RPC type 0x3, SDL Core's `kErrorResponse`) carries the parameters of its
/// function's response: `message` is that response type and `isErroneousResponse` is true, so that
/// the RPC type survives a re-encoding.
///
/// ```swift
/// let message = try AnyRPCMessage(payload: bytes)
/// if let publish = message.message as? SDLPublishAppServiceRequest { … }
/// ```
public struct AnyRPCMessage: Sendable, Equatable, CustomStringConvertible {
    /// The typed message; its type gives the function id and RPC type.
    public var message: any RPCMessage
    /// Pairs a response with its request; notifications carry any value.
    public var correlationID: UInt32
    /// The bytes after the parameters (e.g. a PutFile's file); empty when none.
    public var bulkData: ByteBuffer
    /// Whether the binary header says `erroneousResponse` rather than `response`; only a response
    /// `message` can be one (`payload` refuses others).
    public var isErroneousResponse: Bool
    /// What lenient decoding (``RPCReceivePolicy/lenient``) found wrong with the message, in
    /// parameter order; empty otherwise, and for messages built in code. Not compared by `==`:
    /// it describes how the message arrived, not the message.
    public var violations: [RPCViolation] = []

    public init(
        _ message: any RPCMessage, correlationID: UInt32, bulkData: ByteBuffer = ByteBuffer(), isErroneousResponse: Bool = false
    ) {
        self.message = message
        self.correlationID = correlationID
        self.bulkData = bulkData
        self.isErroneousResponse = isErroneousResponse
    }

    /// The function id of the message's function.
    public var functionID: FunctionID { type(of: self.message).functionID }
    /// Request, response, notification, or erroneousResponse.
    public var rpcType: RPCType { self.isErroneousResponse ? .erroneousResponse : type(of: self.message).rpcType }
    /// The spec name of the message's function, e.g. "PublishAppService".
    public var functionName: String { type(of: self.message).functionName }

    public static func == (lhs: AnyRPCMessage, rhs: AnyRPCMessage) -> Bool {
        lhs.correlationID == rhs.correlationID && lhs.bulkData == rhs.bulkData
            && lhs.isErroneousResponse == rhs.isErroneousResponse && lhs.message.isEqual(to: rhs.message)
    }

    public var description: String {
        let parameters = (try? self.message.jsonParametersText(options: RPCCodingOptions(validate: false))) ?? "?"
        return "\(self.functionName) \(self.rpcType) #\(self.correlationID) \(parameters)"
    }

    /// The generated type of a function's message of the given RPC type (the response type for
    /// `erroneousResponse`); nil when the spec has none.
    public static func messageType(functionID: FunctionID, rpcType: RPCType) -> (any RPCMessage.Type)? {
        RPCRegistry.messageType(functionID: functionID, rpcType: rpcType == .erroneousResponse ? .response : rpcType)
    }

    /// Decodes a whole RPC payload (protocol spec 5.4.1 §5.1): the binary header picks the
    /// generated type, the parameters are decoded under `options.receivePolicy` (strictly by
    /// default, validated unless `options.validate` is false; leniently with `violations`
    /// listed), the rest is bulk data. `format` nil tells JSON from BSON by the bytes. A JSON size
    /// of 0 means no parameters: they decode as an empty object.
    public init(payload: ByteBuffer, format: RPCParameterFormat? = nil, options: RPCCodingOptions = .default) throws(RPCError) {
        let parsed: RPCPayload
        do throws(SDLProtocolError) {
            parsed = try RPCPayload(parsing: payload)
        } catch {
            throw RPCError(.invalidPayload, offset: error.offset, error.detail)
        }
        let functionID = FunctionID(rawValue: parsed.header.functionID)
        guard let type = Self.messageType(functionID: functionID, rpcType: parsed.header.rpcType) else {
            throw RPCError(.unknownFunction, "no \(parsed.header.rpcType) of function \(functionID) in the spec")
        }
        let format = format ?? RPCParameterFormat.detect(parsed.parameters.readableBytesView)
        self.message = try type.init(parameters: parsed.parameters, format: format, options: options)
        self.violations = self.message.violations(options: options)
        self.correlationID = parsed.header.correlationID
        self.bulkData = parsed.bulkData
        self.isErroneousResponse = parsed.header.rpcType == .erroneousResponse
    }

    /// Builds a message from a function name, an RPC type and JSON parameters text (what the `sdl
    /// rpc encode` command gets), decoded under `options.receivePolicy` as
    /// `init(payload:format:options:)` decodes.
    public init(
        functionName: String, rpcType: RPCType, correlationID: UInt32 = 0, jsonParameters: String,
        bulkData: ByteBuffer = ByteBuffer(), options: RPCCodingOptions = .default
    ) throws(RPCError) {
        guard let functionID = FunctionID(name: functionName) else {
            throw RPCError(.unknownFunction, "no function named \"\(functionName)\" in the spec")
        }
        try self.init(
            functionID: functionID, rpcType: rpcType, correlationID: correlationID, jsonParameters: jsonParameters,
            bulkData: bulkData, options: options)
    }

    /// Builds a message from a function id, an RPC type and JSON parameters text.
    public init(
        functionID: FunctionID, rpcType: RPCType, correlationID: UInt32 = 0, jsonParameters: String,
        bulkData: ByteBuffer = ByteBuffer(), options: RPCCodingOptions = .default
    ) throws(RPCError) {
        guard let type = Self.messageType(functionID: functionID, rpcType: rpcType) else {
            throw RPCError(.unknownFunction, "no \(rpcType) of function \(functionID) in the spec")
        }
        self.message = try type.init(jsonParameters: jsonParameters, options: options)
        self.violations = self.message.violations(options: options)
        self.correlationID = correlationID
        self.bulkData = bulkData
        self.isErroneousResponse = rpcType == .erroneousResponse
    }

    /// The answer to a request that could not be read: its function's response with `success`
    /// false, `resultCode` INVALID_DATA and the error as `info` (its first 1,000 characters, the
    /// spec's `maxlength`), as SDL Core answers a request whose parameters break the spec. What a
    /// head unit, which reads requests with the ``RPCReceivePolicy/strict`` policy, sends back;
    /// `functionID` and `correlationID` come from the request's binary header
    /// (`RPCPayload(parsing:)`), which a parameter error leaves readable. Nil when the function
    /// has no response in the spec (an unknown function id gets UNSUPPORTED_REQUEST instead).
    public static func invalidDataResponse(functionID: FunctionID, correlationID: UInt32, error: RPCError) -> AnyRPCMessage? {
        guard let type = Self.messageType(functionID: functionID, rpcType: .response) else { return nil }
        var info = String(String.UnicodeScalarView(error.description.unicodeScalars.prefix(1000)))
        if info.isEmpty {
            info = "invalid data"
        }
        let parameters = RPCValue.object([
            "success": .bool(false), "resultCode": .string(SDLResult.invalidData.wireName), "info": .string(info),
        ])
        // Every response of the spec has these three parameters and no other mandatory one.
        guard let text = try? parameters.jsonText(), let message = try? type.init(jsonParameters: text) else {
            return nil
        }
        return AnyRPCMessage(message, correlationID: correlationID)
    }

    /// The whole RPC payload: binary header (with this message's `rpcType`), parameters in
    /// `format`, bulk data.
    public func payload(format: RPCParameterFormat = .json, options: RPCCodingOptions = .default) throws(RPCError) -> ByteBuffer {
        let messageType = type(of: self.message)
        if self.isErroneousResponse && messageType.rpcType != .response {
            throw RPCError(.invalidPayload, "an erroneous response must carry a response, not a \(messageType.rpcType)")
        }
        return try makePayload(
            rpcType: self.rpcType, functionID: messageType.functionID, correlationID: self.correlationID,
            parameters: try self.message.parameters(format: format, options: options), bulkData: self.bulkData)
    }

    /// The parameters as compact JSON text.
    public func jsonParametersText(options: RPCCodingOptions = .default) throws(RPCError) -> String {
        try self.message.jsonParametersText(options: options)
    }
}
