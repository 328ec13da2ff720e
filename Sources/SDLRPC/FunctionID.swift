import SDLProtocol

/// A function id of the RPC binary header (28 bits), e.g. 52 for PublishAppService. An open set:
/// ids the spec does not define are kept as they are. The spec's ids are generated as static
/// members (`FunctionID.publishAppService`), with `init?(name:)` and `name` to map spec names.
public struct FunctionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The spec name when the spec defines the id, else the number.
    public var description: String { self.name ?? String(self.rawValue) }
}

/// A generated request, response or notification of the spec: its parameters, plus the function
/// id and RPC type that the binary header carries.
public protocol RPCMessage: RPCStruct {
    /// The function id of this message's function.
    static var functionID: FunctionID { get }
    /// Request, response or notification.
    static var rpcType: RPCType { get }
}

extension RPCMessage {
    /// The spec name of this message's function, e.g. "PublishAppService".
    public static var functionName: String { Self.functionID.name ?? String(Self.functionID.rawValue) }

    /// Equality with a message of any type.
    public func isEqual(to other: any RPCMessage) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

/// A response of the spec: every one carries `success`, `resultCode` and `info` (MOBILE_API.xml
/// gives them to each response, GenericResponse included). The generator makes every response
/// type conform, so a caller reads the outcome of any response without knowing its function.
public protocol RPCResponse: RPCMessage {
    /// Whether the request succeeded.
    var success: Bool { get }
    /// The result of the request.
    var resultCode: SDLResult { get }
    /// A human-readable explanation, if the head unit gave one.
    var info: String? { get }
    /// A response with `success` false, `resultCode` and `info`, and no other parameter: the
    /// spec makes every other parameter of a response optional.
    init(failure resultCode: SDLResult, info: String?)
}

extension RPCRegistry {
    /// A response of `functionID` with `success` false (GenericResponse for a function the spec
    /// does not define, or defines without a response), `info` cut to the spec's 1,000 characters;
    /// an empty `info` is left out. The one way the package builds a failure response.
    public static func failureResponse(functionID: FunctionID, resultCode: SDLResult, info: String?) -> any RPCResponse {
        let info = info.flatMap { $0.isEmpty ? nil : String(String.UnicodeScalarView($0.unicodeScalars.prefix(1000))) }
        guard let type = Self.messageType(functionID: functionID, rpcType: .response) as? any RPCResponse.Type else {
            return SDLGenericResponse(failure: resultCode, info: info)
        }
        return type.init(failure: resultCode, info: info)
    }
}
