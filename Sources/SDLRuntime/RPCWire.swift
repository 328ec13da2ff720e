import NIOCore
import SDLProtocol
import SDLRPC

/// RPC payloads in and out of the runtimes (protocol spec 5.4.1 §5.1: binary header, parameters,
/// bulk data).
enum RPCWire {
    /// The payload of a message we send, validated strictly by `options` (our own messages are
    /// always checked: ARCHITECTURE.md, D-rpc-reading).
    static func payload(
        _ message: any RPCMessage, correlationID: UInt32, bulkData: ByteBuffer, format: RPCParameterFormat,
        options: RPCCodingOptions
    ) throws(SDLConnectionError) -> ByteBuffer {
        do {
            return try message.payload(correlationID: correlationID, bulkData: bulkData, format: format, options: options)
        } catch {
            throw SDLConnectionError(.invalidMessage, "\(type(of: message).functionName): \(error)")
        }
    }

    /// The payload of a notification we send; throws ``SDLConnectionError/Code/invalidMessage``
    /// for a message of another RPC type or one that breaks the spec.
    static func notificationPayload(
        _ message: any RPCMessage, correlationID: UInt32, format: RPCParameterFormat, options: RPCCodingOptions
    ) throws(SDLConnectionError) -> ByteBuffer {
        let messageType = type(of: message)
        guard messageType.rpcType == .notification else {
            throw SDLConnectionError(.invalidMessage, "\(messageType.functionName) \(messageType.rpcType) is not a notification")
        }
        return try Self.payload(message, correlationID: correlationID, bulkData: ByteBuffer(), format: format, options: options)
    }

    /// The payload of a response we send to a request of `functionID`; throws
    /// ``SDLConnectionError/Code/invalidMessage`` for a message that is not a response of that
    /// function or breaks the spec.
    static func responsePayload(
        _ response: any RPCMessage, answering functionID: FunctionID, correlationID: UInt32, format: RPCParameterFormat,
        options: RPCCodingOptions
    ) throws(SDLConnectionError) -> ByteBuffer {
        let responseType = type(of: response)
        guard responseType.rpcType == .response, responseType.functionID == functionID else {
            throw SDLConnectionError(.invalidMessage, "\(responseType.functionName) \(responseType.rpcType) does not answer \(functionID)")
        }
        return try Self.payload(response, correlationID: correlationID, bulkData: ByteBuffer(), format: format, options: options)
    }

    /// A response to any function id, known to the spec or not, with `success` false: what SDL Core
    /// answers to a request it cannot serve (UNSUPPORTED_REQUEST for an unknown function,
    /// INVALID_DATA for parameters that break the spec: ARCHITECTURE.md, D-real-peers). `info` is
    /// cut to the spec's 1,000 characters.
    static func failureResponse(functionID: UInt32, correlationID: UInt32, resultCode: SDLResult, info: String?) -> ByteBuffer {
        var parameters: RPCObject = ["success": .bool(false), "resultCode": .string(resultCode.wireName)]
        if let info, !info.isEmpty {
            parameters.append(key: "info", value: .string(String(String.UnicodeScalarView(info.unicodeScalars.prefix(1000)))))
        }
        // Three scalar parameters: writing them cannot fail.
        let text = try! RPCValue.object(parameters).jsonText()
        var buffer = ByteBuffer()
        try! RPCPayload(
            header: RPCBinaryHeader(rpcType: .response, functionID: functionID, correlationID: correlationID, jsonSize: 0),
            parameters: ByteBuffer(string: text)
        ).write(to: &buffer)
        return buffer
    }
}
