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
