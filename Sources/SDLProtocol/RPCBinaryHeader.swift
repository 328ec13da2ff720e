import NIOCore

/// The RPC type nibble of the RPC binary header (protocol spec 5.4.1 §5.1.1).
public struct RPCType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8

    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let request = RPCType(rawValue: 0x0)
    public static let response = RPCType(rawValue: 0x1)
    public static let notification = RPCType(rawValue: 0x2)
    /// SDL Core's `kErrorResponse` (0x3): a response reporting a failure, with the parameters of
    /// that function's response.
    public static let erroneousResponse = RPCType(rawValue: 0x3)

    /// The name used by the `sdl` tool: request, response, notification, erroneousResponse or
    /// unknown(N).
    public var description: String {
        switch self.rawValue {
        case 0: return "request"
        case 1: return "response"
        case 2: return "notification"
        case 3: return "erroneousResponse"
        default: return "unknown(\(self.rawValue))"
        }
    }
}

/// The 12-byte binary header in front of every RPC of protocol versions 2–5 (protocol spec 5.4.1 §5.1).
///
/// ```
///  byte 0             1 ... 3            4 ... 7            8 ... 11
/// +----------+-------------------+------------------+------------------+
/// | RPC type | function id       | correlation id   | JSON size        |
/// |  4 bits  | 28 bits, BE       | 32 bits, BE      | 32 bits, BE      |
/// +----------+-------------------+------------------+------------------+
/// ```
///
/// The JSON size bytes of parameters follow (JSON, or a BSON document in protocol version 5), then
/// any bulk data up to the end of the payload.
public struct RPCBinaryHeader: Hashable, Sendable {
    /// The header's size on the wire.
    public static let size = 12
    /// The largest function id: 28 bits.
    public static let maxFunctionID: UInt32 = 0x0FFF_FFFF

    /// Request, response or notification (4 bits).
    public var rpcType: RPCType
    /// The function id (28 bits), e.g. 0x8012 for OnAppServiceData.
    public var functionID: UInt32
    /// Pairs a response with its request; notifications carry any value (Core sends 0xFFFFFFFF).
    public var correlationID: UInt32
    /// The size of the parameters that follow the header.
    public var jsonSize: UInt32

    @inlinable
    public init(rpcType: RPCType, functionID: UInt32, correlationID: UInt32, jsonSize: UInt32) {
        self.rpcType = rpcType
        self.functionID = functionID
        self.correlationID = correlationID
        self.jsonSize = jsonSize
    }

    /// Reads the 12 header bytes at the reader index, consuming them. It checks only that 12
    /// bytes are there; `RPCPayload` also checks the JSON size against what follows.
    @inlinable
    public static func read(from buffer: inout ByteBuffer) throws(SDLProtocolError) -> RPCBinaryHeader {
        guard let (word0, correlation, jsonSize) = buffer.readMultipleIntegers(
            endianness: .big, as: (UInt32, UInt32, UInt32).self)
        else {
            throw SDLProtocolError(
                .truncatedHeader, offset: 0,
                "RPC binary header needs 12 bytes, \(buffer.readableBytes) available")
        }
        return RPCBinaryHeader(
            rpcType: RPCType(rawValue: UInt8(word0 >> 28)),
            functionID: word0 & Self.maxFunctionID,
            correlationID: correlation,
            jsonSize: jsonSize)
    }

    /// Writes the 12 header bytes. Throws when the RPC type or the function id do not fit their
    /// 4 and 28 bits.
    @inlinable
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        guard self.rpcType.rawValue <= 0x0F else {
            throw SDLProtocolError(.fieldOutOfRange, "RPC type \(self.rpcType.rawValue) does not fit 4 bits")
        }
        guard self.functionID <= Self.maxFunctionID else {
            throw SDLProtocolError(.fieldOutOfRange, "function id \(self.functionID) does not fit 28 bits")
        }
        buffer.writeMultipleIntegers(
            UInt32(self.rpcType.rawValue) << 28 | self.functionID, self.correlationID, self.jsonSize,
            endianness: .big)
    }
}

/// An RPC payload of protocol versions 2–5 split into its parts: binary header, parameters
/// (JSON text, or BSON in version 5) and bulk data (protocol spec 5.4.1 §5.1). The parts are
/// slices of the payload, not copies.
public struct RPCPayload: Hashable, Sendable {
    /// The 12-byte binary header.
    public var header: RPCBinaryHeader
    /// The parameters: `header.jsonSize` bytes.
    public var parameters: ByteBuffer
    /// The bytes after the parameters; empty when the RPC carries none.
    public var bulkData: ByteBuffer

    /// Creates a payload; `header.jsonSize` is set from `parameters` when written.
    public init(header: RPCBinaryHeader, parameters: ByteBuffer, bulkData: ByteBuffer = ByteBuffer()) {
        self.header = header
        self.parameters = parameters
        self.bulkData = bulkData
    }

    /// Splits a whole RPC payload. Throws `truncatedHeader` when fewer than 12 bytes are readable
    /// and `jsonSizeExceedsPayload` when the header declares more parameter bytes than follow.
    @inlinable
    public init(parsing payload: ByteBuffer) throws(SDLProtocolError) {
        var buffer = payload
        let header = try RPCBinaryHeader.read(from: &buffer)
        guard header.jsonSize <= buffer.readableBytes else {
            throw SDLProtocolError(
                .jsonSizeExceedsPayload, offset: 8,
                "JSON size \(header.jsonSize) exceeds the \(buffer.readableBytes) bytes after the RPC binary header")
        }
        self.header = header
        self.parameters = buffer.readSlice(length: Int(header.jsonSize))!
        self.bulkData = buffer
    }

    /// Writes header, parameters and bulk data; the header's JSON size is the parameters' size.
    @inlinable
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        var header = self.header
        guard let size = UInt32(exactly: self.parameters.readableBytes) else {
            throw SDLProtocolError(.fieldOutOfRange, "parameters of \(self.parameters.readableBytes) bytes")
        }
        header.jsonSize = size
        buffer.reserveCapacity(minimumWritableBytes: RPCBinaryHeader.size + self.parameters.readableBytes + self.bulkData.readableBytes)
        try header.write(to: &buffer)
        buffer.writeImmutableBuffer(self.parameters)
        buffer.writeImmutableBuffer(self.bulkData)
    }
}
