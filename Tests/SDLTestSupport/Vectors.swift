import Testing

/// Typed models of the vector files in `../shared/vectors` (their README's "Entry schema"). The
/// files are decoded into these, so a vector of an unexpected shape fails the test naming the
/// vector and the field; fields a vector may leave out are optionals, never silent defaults.
public enum Vectors {
    /// `frame_headers.json`.
    public static func frameHeaders(sourceLocation: SourceLocation = #_sourceLocation) throws -> [FrameHeaderVector] {
        try SharedData.decode([FrameHeaderVector].self, from: "vectors/frame_headers.json", sourceLocation: sourceLocation)
    }

    /// `multiframe.json`.
    public static func multiframe(sourceLocation: SourceLocation = #_sourceLocation) throws -> [MultiframeVector] {
        try SharedData.decode([MultiframeVector].self, from: "vectors/multiframe.json", sourceLocation: sourceLocation)
    }

    /// `rpc_binary_headers.json`.
    public static func rpcBinaryHeaders(sourceLocation: SourceLocation = #_sourceLocation) throws -> [RPCBinaryHeaderVector] {
        try SharedData.decode([RPCBinaryHeaderVector].self, from: "vectors/rpc_binary_headers.json", sourceLocation: sourceLocation)
    }

    /// `control_payloads.json`.
    public static func controlPayloads(sourceLocation: SourceLocation = #_sourceLocation) throws -> [ControlPayloadVector] {
        try SharedData.decode([ControlPayloadVector].self, from: "vectors/control_payloads.json", sourceLocation: sourceLocation)
    }
}

/// The decoded fields of a frame header a vector gives; a test checks those present.
public struct FrameHeaderExpectation: Decodable, Sendable {
    /// The protocol version (the high nibble of byte 0).
    public var version: Int?
    /// The E bit (compression in version 1).
    public var encrypted: Bool?
    /// The frame type's name (`control`, `single`, `first`, `consecutive`, or `invalid…`).
    public var frameType: String?
    /// The frame type's value (the low 3 bits of byte 0).
    public var frameTypeValue: Int?
    /// The service type.
    public var serviceType: Int?
    /// The frame info byte.
    public var frameInfo: Int?
    /// The session id.
    public var sessionId: Int?
    /// The data size.
    public var dataSize: Int?
    /// The message id (versions 2 and up only).
    public var messageId: Int?
    /// 8 or 12.
    public var headerSize: Int?
    /// The payload's bytes, where the vector fixes them.
    public var payloadHex: String?
    /// A First frame's announced total size.
    public var totalSize: Int?
    /// A First frame's announced number of Consecutive frames.
    public var consecutiveFrameCount: Int?
    /// Header validation vectors: whether sdl_core's validator accepts the header.
    public var valid: Bool?
}

/// An entry of `frame_headers.json`.
public struct FrameHeaderVector: Decodable, Sendable {
    /// Unique in the file, prefixed by peer.
    public var id: String
    /// `frame_header`, `frame` or `header_validation`.
    public var kind: String
    /// The header's (or the whole frame's) bytes.
    public var hex: String
    /// The decoded header.
    public var expect: FrameHeaderExpectation
    /// The validator configuration a `header_validation` expectation depends on.
    public var config: Config?

    /// sdl_core's header validator settings.
    public struct Config: Decodable, Sendable {
        /// The highest protocol version the validator accepts.
        public var maxProtocolVersionSupported: Int?

        enum CodingKeys: String, CodingKey {
            case maxProtocolVersionSupported = "max_protocol_version_supported"
        }
    }
}

/// An entry of `multiframe.json`: fragmentation, reassembly, First-frame robustness, stream-parser
/// and MTU vectors. Which fields are present depends on `kind`.
public struct MultiframeVector: Decodable, Sendable {
    /// Unique in the file, prefixed by peer.
    public var id: String
    /// `multiframe_disassembly`, `multiframe_reassembly`, `multiframe_sequence`,
    /// `multiframe_robustness`, `psm_stream`, `psm_stream_portions`, `psm_transition` or `mtu_table`.
    public var kind: String
    /// Which peer's parser the stream expectations come from (`java_sdlpsm`,
    /// `core_incoming_data_handler`).
    public var profile: String?
    /// The bytes, where the vector has fixed ones.
    public var hex: String?
    /// The inputs of fragmentation and reassembly vectors.
    public var params: Params?
    /// What the peer expects.
    public var expect: Expectation
    /// The frame a robustness vector sends after its First frame.
    public var followedBy: FollowingFrame?

    /// The inputs of fragmentation and reassembly vectors.
    public struct Params: Decodable, Sendable {
        /// The message payload's length.
        public var payloadLength: Int?
        /// The literal start of the message payload (the rest is a pattern).
        public var payloadPrefixHex: String?
        /// The protocol version.
        public var version: Int?
        /// The service type.
        public var serviceType: Int?
        /// The session id.
        public var sessionId: Int?
        /// The message id.
        public var messageId: Int?
        /// sdl_ios's MTU: a whole-frame size.
        public var mtu: Int?
        /// sdl_core's payload size per frame.
        public var framePayloadSize: Int?
    }

    /// One expected frame. Stream vectors give the header fields directly (`header`);
    /// fragmentation vectors give the header bytes, the payload's place and a nested `expect`.
    public struct Frame: Decodable, Sendable {
        /// The header fields given at the entry's top level.
        public var header: FrameHeaderExpectation
        /// The header fields given under `expect`.
        public var expect: FrameHeaderExpectation?
        /// The header's bytes.
        public var headerHex: String?
        /// The whole frame's bytes.
        public var hex: String?
        /// The frame's index in the sequence.
        public var index: Int?
        /// The frame's payload bytes.
        public var payloadHex: String?
        /// Where the frame's payload starts in the message payload.
        public var payloadOffset: Int?
        /// The frame's payload length.
        public var payloadLength: Int?

        enum CodingKeys: String, CodingKey {
            case expect, headerHex, hex, index, payloadHex, payloadOffset, payloadLength
        }

        /// Decodes the entry's own fields and, from the same object, its header fields.
        public init(from decoder: any Decoder) throws {
            self.header = try FrameHeaderExpectation(from: decoder)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.expect = try container.decodeIfPresent(FrameHeaderExpectation.self, forKey: .expect)
            self.headerHex = try container.decodeIfPresent(String.self, forKey: .headerHex)
            self.hex = try container.decodeIfPresent(String.self, forKey: .hex)
            self.index = try container.decodeIfPresent(Int.self, forKey: .index)
            self.payloadHex = try container.decodeIfPresent(String.self, forKey: .payloadHex)
            self.payloadOffset = try container.decodeIfPresent(Int.self, forKey: .payloadOffset)
            self.payloadLength = try container.decodeIfPresent(Int.self, forKey: .payloadLength)
        }
    }

    /// What the peer expects; which fields are present depends on the kind.
    public struct Expectation: Decodable, Sendable {
        /// The frames produced or delivered.
        public var frames: [Frame]?
        /// The number of frames.
        public var frameCount: Int?
        /// The number of transport writes (sdl_ios).
        public var transportWrites: Int?
        /// The reassembled message.
        public var assembled: Assembled?
        /// The reassembled payload's length (sequence vectors).
        public var assembledPayloadLength: Int?
        /// sdl_core's count of malformed runs.
        public var malformedCount: Int?
        /// The number of errors the Java PSM reports.
        public var errors: Int?
        /// The byte at which the Java PSM reports an error.
        public var errorAtByteIndex: Int?
        /// The frames the Java PSM delivers after resynchronising.
        public var framesAfterResync: Int?
        /// The byte whose arrival completes the frame (sdl_core).
        public var frameCompletesAtByteIndex: Int?
        /// The Java PSM's state after the last byte, when a frame is incomplete.
        public var stateAfterLastByte: String?
        /// The appended portions of a `psm_stream_portions` vector.
        public var portions: [Portion]?
        /// A `psm_transition`'s state before its byte.
        public var fromState: String?
        /// A `psm_transition`'s state after its byte.
        public var toState: String?
        /// A `psm_transition`'s completed payload length.
        public var payloadLength: Int?
        /// A `psm_transition`'s completed payload bytes.
        public var payloadHex: String?
        /// An MTU table: the payload size per protocol version, a number or a peer's rule.
        public var payloadSizeByVersion: [String: NumberOrRule]?
        /// sdl_ios's MTU example.
        public var example: MTUExample?
        /// sdl_core's v3+ frame data limit.
        public var maximumFrameDataV3Size: Int?

        enum CodingKeys: String, CodingKey {
            case frames, frameCount, transportWrites, assembled, assembledPayloadLength, malformedCount, errors
            case errorAtByteIndex, framesAfterResync, frameCompletesAtByteIndex, stateAfterLastByte, portions
            case fromState, toState, payloadLength, payloadHex, payloadSizeByVersion, example
            case maximumFrameDataV3Size = "MAXIMUM_FRAME_DATA_V3_SIZE"
        }
    }

    /// A reassembled message.
    public struct Assembled: Decodable, Sendable {
        /// Its payload's length.
        public var payloadLength: Int
    }

    /// One appended portion of a stream and what draining after it gives.
    public struct Portion: Decodable, Sendable {
        /// The portion's bytes.
        public var hex: String
        /// The frames delivered after it.
        public var frames: [Frame]
        /// The malformed runs reported after it.
        public var malformedCount: Int
    }

    /// The frame a robustness vector sends after its First frame.
    public struct FollowingFrame: Decodable, Sendable {
        /// Its header's bytes.
        public var headerHex: String
        /// Its payload's bytes.
        public var payloadHex: String
        /// Its header's fields.
        public var expect: FrameHeaderExpectation
    }

    /// sdl_ios's example of a StartServiceACK's MTU.
    public struct MTUExample: Decodable, Sendable {
        /// The MTU in the ACK.
        public var ackMtu: Int
    }

    /// A size given as a number, or as a peer's rule in words.
    public enum NumberOrRule: Decodable, Sendable, Equatable {
        /// A size.
        case number(Int)
        /// A rule, e.g. `max(MaximumPayloadSize, 1488)`.
        case rule(String)

        /// Decodes a JSON number or string.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) {
                self = .number(number)
            } else {
                self = .rule(try container.decode(String.self))
            }
        }
    }
}

/// An entry of `rpc_binary_headers.json`: an RPC binary header, a whole RPC payload or a
/// security query.
public struct RPCBinaryHeaderVector: Decodable, Sendable {
    /// Unique in the file, prefixed by peer.
    public var id: String
    /// `rpc_binary_header`, `rpc_payload` or `security_query`.
    public var kind: String
    /// The bytes.
    public var hex: String
    /// The decoded fields.
    public var expect: Expectation

    /// The decoded fields; which are present depends on the kind.
    public struct Expectation: Decodable, Sendable {
        /// The RPC type (4 bits).
        public var rpcType: Int?
        /// The function id (28 bits).
        public var functionId: Int?
        /// The correlation id.
        public var correlationId: Int?
        /// The JSON size, in the RPC and the security-query header.
        public var jsonSize: Int?
        /// The JSON, as a value.
        public var json: JSONValue?
        /// The JSON, as exact text.
        public var jsonText: String?
        /// The bulk (binary) data after the JSON.
        public var bulkHex: String?
        /// False for input that must be refused.
        public var valid: Bool?
        /// The security query type.
        public var queryType: Int?
        /// The security query type's name.
        public var queryTypeName: String?
        /// The security query id.
        public var queryId: Int?
        /// The security query id's name.
        public var queryIdName: String?
        /// The security query sequence number.
        public var sequenceNumber: Int?
    }
}

/// An entry of `control_payloads.json`: a BSON control payload or document, a little-endian
/// primitive, or a pre-v5 raw hash id.
public struct ControlPayloadVector: Decodable, Sendable {
    /// Unique in the file, prefixed by peer.
    public var id: String
    /// `bson_control_payload`, `bson_document`, `bson_le_int32|int64|double` or `raw_hash_id`.
    public var kind: String
    /// The bytes.
    public var hex: String
    /// The control frame the payload belongs to, in words with its value: `StartServiceACK (0x02) …`.
    public var frameInfo: String?
    /// The decoded content.
    public var expect: Expectation
    /// For `bson_le_*` vectors: the primitive's value, typed by the kind.
    public var primitive: BSONFieldExpectation?

    /// The decoded content; which fields are present depends on the kind.
    public struct Expectation: Decodable, Sendable {
        /// A document's fields by key.
        public var fields: [String: BSONFieldExpectation]?
        /// A document's keys in wire order.
        public var keyOrder: [String]?
        /// False for input that must be refused.
        public var valid: Bool?
        /// A raw hash id (null where the payload has none that is valid).
        public var hashId: Int?
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, hex, frameInfo, expect
    }

    enum PrimitiveKeys: String, CodingKey {
        case value
    }

    /// Decodes the entry, and the value of a `bson_le_*` entry as its kind's type.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decode(String.self, forKey: .id)
        self.kind = try container.decode(String.self, forKey: .kind)
        self.hex = try container.decode(String.self, forKey: .hex)
        self.frameInfo = try container.decodeIfPresent(String.self, forKey: .frameInfo)
        self.expect = try container.decode(Expectation.self, forKey: .expect)
        let expect = try container.nestedContainer(keyedBy: PrimitiveKeys.self, forKey: .expect)
        switch self.kind {
        case "bson_le_int32": self.primitive = .int32(try expect.decode(Int32.self, forKey: .value))
        case "bson_le_int64": self.primitive = .int64(try expect.decode(Int64.self, forKey: .value))
        case "bson_le_double": self.primitive = .double(try expect.decode(Double.self, forKey: .value))
        default: self.primitive = nil
        }
    }
}

/// A typed BSON value a vector expects: `{"type": "int32", "value": 7}`, `{"type": "array",
/// "items": […]}`, `{"type": "document", "fields": {…}, "keyOrder": […]}`. The value is decoded as
/// the type says, so an int32 out of range or a string where a number belongs fails the decoding.
public indirect enum BSONFieldExpectation: Decodable, Sendable {
    /// An int32 element.
    case int32(Int32)
    /// An int64 element.
    case int64(Int64)
    /// A double element.
    case double(Double)
    /// A string element.
    case string(String)
    /// A boolean element.
    case bool(Bool)
    /// An array of these items.
    case array([BSONFieldExpectation])
    /// An embedded document with these fields, its keys in this wire order.
    case document(fields: [String: BSONFieldExpectation], keyOrder: [String])

    enum CodingKeys: String, CodingKey {
        case type, value, items, fields, keyOrder
    }

    /// Decodes the value as the entry's `type` says.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "int32": self = .int32(try container.decode(Int32.self, forKey: .value))
        case "int64": self = .int64(try container.decode(Int64.self, forKey: .value))
        case "double": self = .double(try container.decode(Double.self, forKey: .value))
        case "string": self = .string(try container.decode(String.self, forKey: .value))
        case "bool": self = .bool(try container.decode(Bool.self, forKey: .value))
        case "array": self = .array(try container.decode([BSONFieldExpectation].self, forKey: .items))
        case "document":
            self = .document(
                fields: try container.decode([String: BSONFieldExpectation].self, forKey: .fields),
                keyOrder: try container.decode([String].self, forKey: .keyOrder))
        default:
            throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown BSON type \(type)")
        }
    }

    /// The type's name as the vectors spell it.
    public var typeName: String {
        switch self {
        case .int32: "int32"
        case .int64: "int64"
        case .double: "double"
        case .string: "string"
        case .bool: "bool"
        case .array: "array"
        case .document: "document"
        }
    }
}
