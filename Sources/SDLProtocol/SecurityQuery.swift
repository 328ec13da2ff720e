import NIOCore

/// The query type byte of a security query (protocol spec 5.4.1 §5.3).
public struct SecurityQueryType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8

    /// A query type from its byte; any value is kept.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A query that expects a response.
    public static let request = SecurityQueryType(rawValue: 0x00)
    /// The answer to a request.
    public static let response = SecurityQueryType(rawValue: 0x10)
    /// A query that expects no answer.
    public static let notification = SecurityQueryType(rawValue: 0x20)
    /// The value peers use for an invalid query type.
    public static let invalid = SecurityQueryType(rawValue: 0xFF)

    /// The spec's name (REQUEST, RESPONSE, NOTIFICATION, INVALID) or the value in hex.
    public var description: String {
        switch self.rawValue {
        case 0x00: return "REQUEST"
        case 0x10: return "RESPONSE"
        case 0x20: return "NOTIFICATION"
        case 0xFF: return "INVALID"
        default: return "0x" + hexByte(self.rawValue)
        }
    }
}

/// The 24-bit query id of a security query (protocol spec 5.4.1 §5.3).
public struct SecurityQueryID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The 24-bit value (a larger one is refused when the header is written).
    public var rawValue: UInt32

    /// A query id from its value; any value is kept.
    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The query carries TLS handshake data.
    public static let sendHandshakeData = SecurityQueryID(rawValue: 0x000001)
    /// The query reports an internal error of the security layer.
    public static let sendInternalError = SecurityQueryID(rawValue: 0x000002)
    /// The value peers use for an invalid query id.
    public static let invalid = SecurityQueryID(rawValue: 0xFFFFFF)

    /// The spec's name (SEND_HANDSHAKE_DATA, SEND_INTERNAL_ERROR, INVALID_QUERY_ID) or the number.
    public var description: String {
        switch self.rawValue {
        case 1: return "SEND_HANDSHAKE_DATA"
        case 2: return "SEND_INTERNAL_ERROR"
        case 0xFFFFFF: return "INVALID_QUERY_ID"
        default: return String(self.rawValue)
        }
    }
}

/// The 12-byte header of a security query, carried on the control service with the encryption
/// handshake (protocol spec 5.4.1 §5.3).
///
/// ```
///  byte 0        1 ... 3          4 ... 7             8 ... 11
/// +------------+----------------+-------------------+------------------+
/// | query type | query id       | sequence number   | JSON size        |
/// |  8 bits    | 24 bits, BE    | 32 bits, BE       | 32 bits, BE      |
/// +------------+----------------+-------------------+------------------+
/// ```
public struct SecurityQueryHeader: Hashable, Sendable {
    /// The header's size on the wire.
    public static let size = 12
    /// The largest query id: 24 bits.
    public static let maxQueryID: UInt32 = 0x00FF_FFFF

    /// The query type.
    public var queryType: SecurityQueryType
    /// The query id (24 bits).
    public var queryID: SecurityQueryID
    /// The sequence number, which pairs a response with its request.
    public var sequenceNumber: UInt32
    /// The number of JSON bytes after the header; the rest of the payload is binary data.
    public var jsonSize: UInt32

    /// Creates a header.
    @inlinable
    public init(queryType: SecurityQueryType, queryID: SecurityQueryID, sequenceNumber: UInt32, jsonSize: UInt32) {
        self.queryType = queryType
        self.queryID = queryID
        self.sequenceNumber = sequenceNumber
        self.jsonSize = jsonSize
    }

    /// Reads the 12 header bytes, consuming them; throws `truncatedHeader` when fewer are readable.
    @inlinable
    public static func read(from buffer: inout ByteBuffer) throws(SDLProtocolError) -> SecurityQueryHeader {
        guard let (word0, sequence, jsonSize) = buffer.readMultipleIntegers(
            endianness: .big, as: (UInt32, UInt32, UInt32).self)
        else {
            throw SDLProtocolError(
                .truncatedHeader, offset: 0,
                "security query header needs 12 bytes, \(buffer.readableBytes) available")
        }
        return SecurityQueryHeader(
            queryType: SecurityQueryType(rawValue: UInt8(word0 >> 24)),
            queryID: SecurityQueryID(rawValue: word0 & Self.maxQueryID),
            sequenceNumber: sequence,
            jsonSize: jsonSize)
    }

    /// Writes the 12 header bytes; throws when the query id does not fit 24 bits.
    @inlinable
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        guard self.queryID.rawValue <= Self.maxQueryID else {
            throw SDLProtocolError(.fieldOutOfRange, "query id \(self.queryID.rawValue) does not fit 24 bits")
        }
        buffer.writeMultipleIntegers(
            UInt32(self.queryType.rawValue) << 24 | self.queryID.rawValue, self.sequenceNumber, self.jsonSize,
            endianness: .big)
    }
}

/// A security query split into header, JSON and binary (handshake) data; slices, not copies.
public struct SecurityQuery: Hashable, Sendable {
    /// The 12-byte header.
    public var header: SecurityQueryHeader
    /// The JSON part: `header.jsonSize` bytes.
    public var json: ByteBuffer
    /// The binary part (handshake data), everything after the JSON.
    public var binaryData: ByteBuffer

    /// Creates a query from its parts (`header.jsonSize` is set when the query is written).
    public init(header: SecurityQueryHeader, json: ByteBuffer, binaryData: ByteBuffer = ByteBuffer()) {
        self.header = header
        self.json = json
        self.binaryData = binaryData
    }

    /// Splits a whole security query payload. Throws `truncatedHeader` or `jsonSizeExceedsPayload`.
    public init(parsing payload: ByteBuffer) throws(SDLProtocolError) {
        var buffer = payload
        let header = try SecurityQueryHeader.read(from: &buffer)
        guard header.jsonSize <= buffer.readableBytes else {
            throw SDLProtocolError(
                .jsonSizeExceedsPayload, offset: 8,
                "JSON size \(header.jsonSize) exceeds the \(buffer.readableBytes) bytes after the security query header")
        }
        self.header = header
        self.json = buffer.readSlice(length: Int(header.jsonSize))!
        self.binaryData = buffer
    }

    /// Writes header, JSON and binary data; the header's JSON size is the JSON's size.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        var header = self.header
        guard let size = UInt32(exactly: self.json.readableBytes) else {
            throw SDLProtocolError(.fieldOutOfRange, "JSON of \(self.json.readableBytes) bytes")
        }
        header.jsonSize = size
        try header.write(to: &buffer)
        buffer.writeImmutableBuffer(self.json)
        buffer.writeImmutableBuffer(self.binaryData)
    }
}
