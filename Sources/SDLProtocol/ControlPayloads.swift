import NIOCore
import SDLBSON

// Typed payloads of the control frames (protocol spec 5.4.1 §3.1.3), BSON documents since
// protocol version 5. Every field is optional, as the spec says. Integer fields are written with
// the spec's width (`mtu` int64, every other integer int32) and read from either width, since
// peers disagree. Keys this library does not know are kept in `otherFields` and written back
// after the known ones, so a payload from a newer peer round-trips.
//
// A key that appears twice in a payload (at any depth, arrays aside) is refused with
// `invalidControlPayload` at the offset of the second occurrence: the spec says nothing of
// repeated keys, SDL Core's BSON reader keeps the last and a first-match reader the first, so
// accepting them would let two stacks act on different values from the same bytes. Decoding is
// linear in the payload's size, however many unknown fields it carries.

/// StartService (0x01): what the app asks for. RPC service: `protocolVersion`; video service:
/// `height`, `width`, `videoProtocol`, `videoCodec`.
public struct StartServicePayload: Hashable, Sendable {
    /// The highest protocol version the app supports, "major.minor.patch" (RPC service).
    public var protocolVersion: String?
    /// Desired video height in pixels (video service).
    public var height: Int32?
    /// Desired video width in pixels (video service).
    public var width: Int32?
    /// Desired video protocol, e.g. "RAW", "RTP" (video service).
    public var videoProtocol: String?
    /// Desired video codec, e.g. "H264" (video service).
    public var videoCodec: String?
    /// Fields this library does not know, in wire order.
    public var otherFields: BSONOrderedDocument

    public init(protocolVersion: String? = nil, height: Int32? = nil, width: Int32? = nil, videoProtocol: String? = nil,
                videoCodec: String? = nil, otherFields: BSONOrderedDocument = BSONOrderedDocument()) {
        self.protocolVersion = protocolVersion
        self.height = height
        self.width = width
        self.videoProtocol = videoProtocol
        self.videoCodec = videoCodec
        self.otherFields = otherFields
    }

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON, a field of the
    /// wrong type or a key that appears twice, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        let reader = try ControlFieldReader(payload, frame: "StartService", limits: limits)
        try reader.read(into: &self) { (payload, field) throws(SDLProtocolError) -> Bool in
            if field.hasKey("protocolVersion") { try reader.assign(&payload.protocolVersion, reader.string(field), field) }
            else if field.hasKey("height") { try reader.assign(&payload.height, reader.int32(field), field) }
            else if field.hasKey("width") { try reader.assign(&payload.width, reader.int32(field), field) }
            else if field.hasKey("videoProtocol") { try reader.assign(&payload.videoProtocol, reader.string(field), field) }
            else if field.hasKey("videoCodec") { try reader.assign(&payload.videoCodec, reader.string(field), field) }
            else { return false }
            return true
        }
    }

    /// Appends the BSON payload to `buffer`; throws `invalidControlPayload` for unknown fields the
    /// reader would refuse or read otherwise (see ``ControlPayload/write(to:)``).
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        // The payload goes to the closure as a parameter: captured, it was copied per field.
        try writeControlDocument(self, to: &buffer) { payload, doc in
            if let value = payload.protocolVersion { doc.appendString("protocolVersion", value) }
            if let value = payload.height { doc.appendInt32("height", value) }
            if let value = payload.width { doc.appendInt32("width", value) }
            if let value = payload.videoProtocol { doc.appendString("videoProtocol", value) }
            if let value = payload.videoCodec { doc.appendString("videoCodec", value) }
        }
    }
}

/// StartServiceACK (0x02): what the head unit granted. RPC service: the negotiated version,
/// session hash, MTU, secondary-transport configuration, cloud auth token and vehicle type;
/// video service: the accepted video parameters; every service: `mtu`.
public struct StartServiceACKPayload: Hashable, Sendable {
    /// The negotiated protocol version, "major.minor.patch".
    public var protocolVersion: String?
    /// The session's hash id, to be sent back in EndService (int32).
    public var hashID: Int32?
    /// The MTU of the service (int64 on the wire).
    public var mtu: Int64?
    /// Transports the app may use as secondary transport, e.g. ["TCP_WIFI"].
    public var secondaryTransports: [String]?
    /// Transports audio may use, in order of preference: 1 = primary, 2 = secondary.
    public var audioServiceTransports: [Int32]?
    /// Transports video may use, in order of preference: 1 = primary, 2 = secondary.
    public var videoServiceTransports: [Int32]?
    /// Authentication token for cloud apps.
    public var authToken: String?
    public var make: String?
    public var model: String?
    public var modelYear: String?
    public var trim: String?
    public var systemSoftwareVersion: String?
    public var systemHardwareVersion: String?
    /// Accepted video height (video service).
    public var height: Int32?
    /// Accepted video width (video service).
    public var width: Int32?
    /// Accepted video protocol (video service).
    public var videoProtocol: String?
    /// Accepted video codec (video service).
    public var videoCodec: String?
    /// Fields this library does not know, in wire order.
    public var otherFields: BSONOrderedDocument

    public init(
        protocolVersion: String? = nil, hashID: Int32? = nil, mtu: Int64? = nil, secondaryTransports: [String]? = nil,
        audioServiceTransports: [Int32]? = nil, videoServiceTransports: [Int32]? = nil, authToken: String? = nil,
        make: String? = nil, model: String? = nil, modelYear: String? = nil, trim: String? = nil,
        systemSoftwareVersion: String? = nil, systemHardwareVersion: String? = nil, height: Int32? = nil,
        width: Int32? = nil, videoProtocol: String? = nil, videoCodec: String? = nil,
        otherFields: BSONOrderedDocument = BSONOrderedDocument()
    ) {
        self.protocolVersion = protocolVersion
        self.hashID = hashID
        self.mtu = mtu
        self.secondaryTransports = secondaryTransports
        self.audioServiceTransports = audioServiceTransports
        self.videoServiceTransports = videoServiceTransports
        self.authToken = authToken
        self.make = make
        self.model = model
        self.modelYear = modelYear
        self.trim = trim
        self.systemSoftwareVersion = systemSoftwareVersion
        self.systemHardwareVersion = systemHardwareVersion
        self.height = height
        self.width = width
        self.videoProtocol = videoProtocol
        self.videoCodec = videoCodec
        self.otherFields = otherFields
    }

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON, a field of the
    /// wrong type or a key that appears twice, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        let reader = try ControlFieldReader(payload, frame: "StartServiceACK", limits: limits)
        try reader.read(into: &self) { (payload, field) throws(SDLProtocolError) -> Bool in
            if field.hasKey("protocolVersion") { try reader.assign(&payload.protocolVersion, reader.string(field), field) }
            else if field.hasKey("hashId") { try reader.assign(&payload.hashID, reader.int32(field), field) }
            else if field.hasKey("mtu") { try reader.assign(&payload.mtu, reader.int64(field), field) }
            else if field.hasKey("secondaryTransports") { try reader.assign(&payload.secondaryTransports, reader.strings(field), field) }
            else if field.hasKey("audioServiceTransports") { try reader.assign(&payload.audioServiceTransports, reader.int32s(field), field) }
            else if field.hasKey("videoServiceTransports") { try reader.assign(&payload.videoServiceTransports, reader.int32s(field), field) }
            else if field.hasKey("authToken") { try reader.assign(&payload.authToken, reader.string(field), field) }
            else if field.hasKey("make") { try reader.assign(&payload.make, reader.string(field), field) }
            else if field.hasKey("model") { try reader.assign(&payload.model, reader.string(field), field) }
            else if field.hasKey("modelYear") { try reader.assign(&payload.modelYear, reader.string(field), field) }
            else if field.hasKey("trim") { try reader.assign(&payload.trim, reader.string(field), field) }
            else if field.hasKey("systemSoftwareVersion") { try reader.assign(&payload.systemSoftwareVersion, reader.string(field), field) }
            else if field.hasKey("systemHardwareVersion") { try reader.assign(&payload.systemHardwareVersion, reader.string(field), field) }
            else if field.hasKey("height") { try reader.assign(&payload.height, reader.int32(field), field) }
            else if field.hasKey("width") { try reader.assign(&payload.width, reader.int32(field), field) }
            else if field.hasKey("videoProtocol") { try reader.assign(&payload.videoProtocol, reader.string(field), field) }
            else if field.hasKey("videoCodec") { try reader.assign(&payload.videoCodec, reader.string(field), field) }
            else { return false }
            return true
        }
    }

    /// Appends the BSON payload to `buffer`; throws `invalidControlPayload` for unknown fields the
    /// reader would refuse or read otherwise (see ``ControlPayload/write(to:)``).
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        // The payload goes to the closure as a parameter: captured, it was copied per field.
        try writeControlDocument(self, to: &buffer) { payload, doc in
            if let value = payload.protocolVersion { doc.appendString("protocolVersion", value) }
            if let value = payload.hashID { doc.appendInt32("hashId", value) }
            if let value = payload.mtu { doc.appendInt64("mtu", value) }
            if let values = payload.secondaryTransports {
                doc.appendArray("secondaryTransports") { array in for value in values { array.appendString(value) } }
            }
            if let values = payload.audioServiceTransports {
                doc.appendArray("audioServiceTransports") { array in for value in values { array.appendInt32(value) } }
            }
            if let values = payload.videoServiceTransports {
                doc.appendArray("videoServiceTransports") { array in for value in values { array.appendInt32(value) } }
            }
            if let value = payload.authToken { doc.appendString("authToken", value) }
            if let value = payload.make { doc.appendString("make", value) }
            if let value = payload.model { doc.appendString("model", value) }
            if let value = payload.modelYear { doc.appendString("modelYear", value) }
            if let value = payload.trim { doc.appendString("trim", value) }
            if let value = payload.systemSoftwareVersion { doc.appendString("systemSoftwareVersion", value) }
            if let value = payload.systemHardwareVersion { doc.appendString("systemHardwareVersion", value) }
            if let value = payload.height { doc.appendInt32("height", value) }
            if let value = payload.width { doc.appendInt32("width", value) }
            if let value = payload.videoProtocol { doc.appendString("videoProtocol", value) }
            if let value = payload.videoCodec { doc.appendString("videoCodec", value) }
        }
    }
}

/// StartServiceNAK (0x03) and EndServiceNAK (0x06): why a request was refused.
public struct ServiceNAKPayload: Hashable, Sendable {
    /// The names of the request's parameters that caused the refusal, e.g. ["videoCodec"].
    public var rejectedParams: [String]?
    /// A human-readable reason.
    public var reason: String?
    /// Fields this library does not know, in wire order.
    public var otherFields: BSONOrderedDocument

    public init(rejectedParams: [String]? = nil, reason: String? = nil, otherFields: BSONOrderedDocument = BSONOrderedDocument()) {
        self.rejectedParams = rejectedParams
        self.reason = reason
        self.otherFields = otherFields
    }

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON, a field of the
    /// wrong type or a key that appears twice, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        let reader = try ControlFieldReader(payload, frame: "ServiceNAK", limits: limits)
        try reader.read(into: &self) { (payload, field) throws(SDLProtocolError) -> Bool in
            if field.hasKey("rejectedParams") { try reader.assign(&payload.rejectedParams, reader.strings(field), field) }
            else if field.hasKey("reason") { try reader.assign(&payload.reason, reader.string(field), field) }
            else { return false }
            return true
        }
    }

    /// Appends the BSON payload to `buffer`; throws `invalidControlPayload` for unknown fields the
    /// reader would refuse or read otherwise (see ``ControlPayload/write(to:)``).
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        // The payload goes to the closure as a parameter: captured, it was copied per field.
        try writeControlDocument(self, to: &buffer) { payload, doc in
            if let values = payload.rejectedParams {
                doc.appendArray("rejectedParams") { array in for value in values { array.appendString(value) } }
            }
            if let value = payload.reason { doc.appendString("reason", value) }
        }
    }
}

/// EndService (0x04): the session's hash id from StartServiceACK, so the head unit knows the
/// request comes from the session's owner.
public struct EndServicePayload: Hashable, Sendable {
    public var hashID: Int32?
    /// Fields this library does not know, in wire order.
    public var otherFields: BSONOrderedDocument

    public init(hashID: Int32? = nil, otherFields: BSONOrderedDocument = BSONOrderedDocument()) {
        self.hashID = hashID
        self.otherFields = otherFields
    }

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON, a field of the
    /// wrong type or a key that appears twice, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        let reader = try ControlFieldReader(payload, frame: "EndService", limits: limits)
        try reader.read(into: &self) { (payload, field) throws(SDLProtocolError) -> Bool in
            if field.hasKey("hashId") { try reader.assign(&payload.hashID, reader.int32(field), field) }
            else { return false }
            return true
        }
    }

    /// Appends the BSON payload to `buffer`; throws `invalidControlPayload` for unknown fields the
    /// reader would refuse or read otherwise (see ``ControlPayload/write(to:)``).
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        // The payload goes to the closure as a parameter: captured, it was copied per field.
        try writeControlDocument(self, to: &buffer) { payload, doc in
            if let value = payload.hashID { doc.appendInt32("hashId", value) }
        }
    }
}

/// RegisterSecondaryTransportNAK (0x09): why the secondary transport was refused.
public struct RegisterSecondaryTransportNAKPayload: Hashable, Sendable {
    public var reason: String?
    /// Fields this library does not know, in wire order.
    public var otherFields: BSONOrderedDocument

    public init(reason: String? = nil, otherFields: BSONOrderedDocument = BSONOrderedDocument()) {
        self.reason = reason
        self.otherFields = otherFields
    }

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON, a field of the
    /// wrong type or a key that appears twice, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        let reader = try ControlFieldReader(payload, frame: "RegisterSecondaryTransportNAK", limits: limits)
        try reader.read(into: &self) { (payload, field) throws(SDLProtocolError) -> Bool in
            if field.hasKey("reason") { try reader.assign(&payload.reason, reader.string(field), field) }
            else { return false }
            return true
        }
    }

    /// Appends the BSON payload to `buffer`; throws `invalidControlPayload` for unknown fields the
    /// reader would refuse or read otherwise (see ``ControlPayload/write(to:)``).
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        // The payload goes to the closure as a parameter: captured, it was copied per field.
        try writeControlDocument(self, to: &buffer) { payload, doc in
            if let value = payload.reason { doc.appendString("reason", value) }
        }
    }
}

/// TransportEventUpdate (0xFD): where the secondary TCP transport can be reached. SDL Core sends
/// an empty `tcpIpAddress` and no `tcpPort` when TCP is not available.
public struct TransportEventUpdatePayload: Hashable, Sendable {
    public var tcpIPAddress: String?
    public var tcpPort: Int32?
    /// Fields this library does not know, in wire order.
    public var otherFields: BSONOrderedDocument

    public init(tcpIPAddress: String? = nil, tcpPort: Int32? = nil, otherFields: BSONOrderedDocument = BSONOrderedDocument()) {
        self.tcpIPAddress = tcpIPAddress
        self.tcpPort = tcpPort
        self.otherFields = otherFields
    }

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON, a field of the
    /// wrong type or a key that appears twice, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        let reader = try ControlFieldReader(payload, frame: "TransportEventUpdate", limits: limits)
        try reader.read(into: &self) { (payload, field) throws(SDLProtocolError) -> Bool in
            if field.hasKey("tcpIpAddress") { try reader.assign(&payload.tcpIPAddress, reader.string(field), field) }
            else if field.hasKey("tcpPort") { try reader.assign(&payload.tcpPort, reader.int32(field), field) }
            else { return false }
            return true
        }
    }

    /// Appends the BSON payload to `buffer`; throws `invalidControlPayload` for unknown fields the
    /// reader would refuse or read otherwise (see ``ControlPayload/write(to:)``).
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        // The payload goes to the closure as a parameter: captured, it was copied per field.
        try writeControlDocument(self, to: &buffer) { payload, doc in
            if let value = payload.tcpIPAddress { doc.appendString("tcpIpAddress", value) }
            if let value = payload.tcpPort { doc.appendInt32("tcpPort", value) }
        }
    }
}

/// The hash id payload of StartServiceACK and EndService before protocol version 5: the 32-bit
/// hash id, big-endian, and nothing else (protocol spec 5.4.1 §3.1.3.2).
public enum RawHashID {
    /// Reads the 4-byte payload. Throws `invalidControlPayload` for any other length (sdl_core
    /// treats a shorter one as a wrong hash and ignores bytes after the fourth; we refuse both).
    public static func read(_ payload: ByteBuffer) throws(SDLProtocolError) -> UInt32 {
        guard payload.readableBytes == 4, let value = payload.getInteger(at: payload.readerIndex, endianness: .big, as: UInt32.self) else {
            throw SDLProtocolError(
                .invalidControlPayload, offset: 0, "a pre-v5 hash id payload is 4 bytes, not \(payload.readableBytes)")
        }
        return value
    }

    /// Appends the 4-byte payload.
    public static func write(_ hashID: UInt32, to buffer: inout ByteBuffer) {
        buffer.writeInteger(hashID, endianness: .big)
    }
}

/// The payload of any control frame, interpreted by frame info, service and protocol version.
public enum ControlPayload: Hashable, Sendable {
    /// No payload.
    case none
    case startService(StartServicePayload)
    case startServiceACK(StartServiceACKPayload)
    case startServiceNAK(ServiceNAKPayload)
    case endService(EndServicePayload)
    case endServiceNAK(ServiceNAKPayload)
    case registerSecondaryTransportNAK(RegisterSecondaryTransportNAKPayload)
    case transportEventUpdate(TransportEventUpdatePayload)
    /// The raw 4-byte hash id of a StartServiceACK or EndService before protocol version 5.
    case hashID(UInt32)
    /// A BSON document on a control frame for which the spec defines no fields; kept as is.
    case document(BSONDocument)

    /// Interprets a control frame's payload.
    ///
    /// Before protocol version 5, StartServiceACK and EndService carry the raw 4-byte hash id;
    /// every other non-empty control payload is a BSON document (StartService may arrive with an
    /// older header before the version is negotiated, still with a BSON payload). A document in
    /// which a key repeats is refused (`invalidControlPayload` at the repeat), `.document`
    /// payloads included, so that every control payload reads the same whichever API reads it.
    public init(
        frameInfo: ControlFrameInfo, version: ProtocolVersion, payload: ByteBuffer, limits: BSONLimits = .default
    ) throws(SDLProtocolError) {
        if payload.readableBytes == 0 {
            self = .none
            return
        }
        switch frameInfo {
        case .startServiceACK where version < .v5, .endService where version < .v5:
            self = .hashID(try RawHashID.read(payload))
        case .startService: self = .startService(try StartServicePayload(bson: payload, limits: limits))
        case .startServiceACK: self = .startServiceACK(try StartServiceACKPayload(bson: payload, limits: limits))
        case .startServiceNAK: self = .startServiceNAK(try ServiceNAKPayload(bson: payload, limits: limits))
        case .endService: self = .endService(try EndServicePayload(bson: payload, limits: limits))
        case .endServiceNAK: self = .endServiceNAK(try ServiceNAKPayload(bson: payload, limits: limits))
        case .registerSecondaryTransportNAK:
            self = .registerSecondaryTransportNAK(try RegisterSecondaryTransportNAKPayload(bson: payload, limits: limits))
        case .transportEventUpdate: self = .transportEventUpdate(try TransportEventUpdatePayload(bson: payload, limits: limits))
        default: self = .document(try ControlFieldReader.validate(payload, frame: frameInfo.name ?? "control frame", limits: limits))
        }
    }

    /// Appends the payload's bytes (nothing for `.none`). Throws `invalidControlPayload` for what
    /// the reader would refuse or read otherwise: unknown fields that repeat a key, take a known
    /// field's key or hold a key BSON cannot carry, and a `.document` in which a key repeats.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        switch self {
        case .none: break
        case .startService(let payload): try payload.write(to: &buffer)
        case .startServiceACK(let payload): try payload.write(to: &buffer)
        case .startServiceNAK(let payload), .endServiceNAK(let payload): try payload.write(to: &buffer)
        case .endService(let payload): try payload.write(to: &buffer)
        case .registerSecondaryTransportNAK(let payload): try payload.write(to: &buffer)
        case .transportEventUpdate(let payload): try payload.write(to: &buffer)
        case .hashID(let value): RawHashID.write(value, to: &buffer)
        case .document(let document):
            // The reader refuses a key twice in any control payload; so does the writer.
            do {
                try document.checkKeysAreUnique()
            } catch {
                throw SDLProtocolError(.invalidControlPayload, "a control payload cannot be written: \(error.detail)")
            }
            buffer.writeImmutableBuffer(document.buffer)
        }
    }
}

/// A typed control payload: its known fields, plus the ones this library does not know.
protocol ControlPayloadFields {
    var otherFields: BSONOrderedDocument { get set }
    /// The keys the decoder reads into typed fields: no unknown field may take one.
    static var knownKeys: [String] { get }
}

extension StartServicePayload: ControlPayloadFields {
    static let knownKeys = ["protocolVersion", "height", "width", "videoProtocol", "videoCodec"]
}

extension StartServiceACKPayload: ControlPayloadFields {
    static let knownKeys = [
        "protocolVersion", "hashId", "mtu", "secondaryTransports", "audioServiceTransports", "videoServiceTransports",
        "authToken", "make", "model", "modelYear", "trim", "systemSoftwareVersion", "systemHardwareVersion", "height",
        "width", "videoProtocol", "videoCodec",
    ]
}

extension ServiceNAKPayload: ControlPayloadFields {
    static let knownKeys = ["rejectedParams", "reason"]
}

extension EndServicePayload: ControlPayloadFields {
    static let knownKeys = ["hashId"]
}

extension RegisterSecondaryTransportNAKPayload: ControlPayloadFields {
    static let knownKeys = ["reason"]
}

extension TransportEventUpdatePayload: ControlPayloadFields {
    static let knownKeys = ["tcpIpAddress", "tcpPort"]
}

/// Reads a control payload's fields through borrowed views (no reference counting, no key
/// strings), with typed reads that name the field in their errors.
struct ControlFieldReader {
    let frame: String
    let document: BSONDocument

    /// Validates the payload; the repeated-key check is `read`'s (see there).
    init(_ payload: ByteBuffer, frame: String, limits: BSONLimits) throws(SDLProtocolError) {
        self.frame = frame
        self.document = try Self.validate(payload, frame: frame, limits: limits, rejectingDuplicateKeys: false)
    }

    /// The payload as a validated document; with `rejectingDuplicateKeys`, one in which no key
    /// repeats (at any depth, arrays aside).
    static func validate(
        _ payload: ByteBuffer, frame: String, limits: BSONLimits, rejectingDuplicateKeys: Bool = true
    ) throws(SDLProtocolError) -> BSONDocument {
        do {
            return try BSONDocument(validating: payload, limits: limits, rejectingDuplicateKeys: rejectingDuplicateKeys)
        } catch {
            throw Self.error(error, frame: frame)
        }
    }

    private static func error(_ error: BSONError, frame: String) -> SDLProtocolError {
        if error.code == .duplicateKey {
            return SDLProtocolError(.invalidControlPayload, offset: error.offset, "\(frame) payload: \(error.detail)")
        }
        return SDLProtocolError(.invalidControlPayload, offset: error.offset, "\(frame) payload is not valid BSON: \(error.detail)")
    }

    /// Stores a known field's value, refusing a second occurrence of the field: with the check of
    /// the unknown fields in `read`, that refuses every repeated key of a payload, and the usual
    /// payload, all known fields, pays one comparison per field for it.
    @inline(__always)
    func assign<Value>(_ slot: inout Value?, _ value: Value, _ field: borrowing BSONElementView) throws(SDLProtocolError) {
        if slot != nil {
            throw SDLProtocolError(
                .invalidControlPayload, offset: field.offset,
                "\(self.frame) payload: key \"\(field.key)\" appears more than once in one document")
        }
        slot = value
    }

    /// Lends each field to `match` with the payload being decoded (passed through, not
    /// captured: a captured payload was copied twice per decode). `match` reads the fields it
    /// knows (through ``assign(_:_:_:)``, which refuses a known field twice) and returns false for
    /// the others, which end up in `payload.otherFields`, in wire order, as a tree kept for the
    /// round trip (a second, owning pass that payloads without unknown fields never make). Unknown
    /// fields may repeat each other or nest documents, so a payload that has any is checked for
    /// repeated keys as a whole first.
    ///
    /// Returns how many elements the two passes stepped over, at most twice the element count:
    /// the merge walks the document once, in step with the unknown fields' offsets.
    @discardableResult
    func read<Payload: ControlPayloadFields>(
        into payload: inout Payload,
        _ match: (inout Payload, borrowing BSONElementView) throws(SDLProtocolError) -> Bool
    ) throws(SDLProtocolError) -> Int {
        var unknown: [Int] = []
        var steps = 0
        try self.document.forEachElement { (field) throws(SDLProtocolError) in
            if try !match(&payload, field) { unknown.append(field.offset) }
            steps &+= 1
        }
        guard !unknown.isEmpty else { return steps }
        do {
            try self.document.checkKeysAreUnique()
        } catch {
            throw Self.error(error, frame: self.frame)
        }
        payload.otherFields.fields.reserveCapacity(payload.otherFields.count + unknown.count)
        var elements = self.document.makeIterator()
        for offset in unknown {
            // Every offset is that of an element still ahead: the walk never goes back.
            var element = elements.next().unsafelyUnwrapped
            steps &+= 1
            while element.offset != offset {
                element = elements.next().unsafelyUnwrapped
                steps &+= 1
            }
            payload.otherFields.append(element.key, element.value)
        }
        return steps
    }

    private func mismatch(_ field: borrowing BSONElementView, _ expected: String) -> SDLProtocolError {
        SDLProtocolError(
            .invalidControlPayload, offset: field.offset,
            "\(self.frame) field \(field.key) must be \(expected), not \(field.type)")
    }

    func string(_ field: borrowing BSONElementView) throws(SDLProtocolError) -> String {
        guard let value = field.stringValue else { throw self.mismatch(field, "a string") }
        return value
    }

    /// An int32 field; an int64 is accepted when its value fits.
    func int32(_ field: borrowing BSONElementView) throws(SDLProtocolError) -> Int32 {
        guard let value = field.integerValue.flatMap(Int32.init(exactly:)) else {
            throw self.mismatch(field, "an int32 (or an int64 within the int32 range)")
        }
        return value
    }

    /// An int64 field; an int32 is accepted.
    func int64(_ field: borrowing BSONElementView) throws(SDLProtocolError) -> Int64 {
        guard let value = field.integerValue else { throw self.mismatch(field, "an int64 or int32") }
        return value
    }

    func strings(_ field: borrowing BSONElementView) throws(SDLProtocolError) -> [String] {
        guard field.type == .array else { throw self.mismatch(field, "an array of strings") }
        var values: [String] = []
        values.reserveCapacity(4)  // transport lists are short: one allocation, no regrowth
        let offset = field.offset
        try field.forEachElement { (item) throws(SDLProtocolError) in
            guard let value = item.stringValue else { throw self.mismatch(item, "a string (in \(self.key(at: offset)))") }
            values.append(value)
        }
        return values
    }

    func int32s(_ field: borrowing BSONElementView) throws(SDLProtocolError) -> [Int32] {
        guard field.type == .array else { throw self.mismatch(field, "an array of int32") }
        var values: [Int32] = []
        values.reserveCapacity(4)
        let offset = field.offset
        try field.forEachElement { (item) throws(SDLProtocolError) in
            guard let value = item.integerValue.flatMap(Int32.init(exactly:)) else {
                throw self.mismatch(item, "an int32 (in \(self.key(at: offset)))")
            }
            values.append(value)
        }
        return values
    }

    /// The key of the element at `offset` (error messages only: the hot path makes no key strings).
    private func key(at offset: Int) -> String {
        let bytes = self.document.buffer.readableBytesView.dropFirst(offset + 1)
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}

/// Writes a control payload: the known fields, then the unknown ones kept from a decode.
private func writeControlDocument<Payload: ControlPayloadFields>(
    _ payload: Payload, to buffer: inout ByteBuffer, _ body: (borrowing Payload, inout BSONDocumentWriter) -> Void
) throws(SDLProtocolError) {
    let otherFields = payload.otherFields
    if !otherFields.isEmpty {
        // Fields built by hand may hold what the reader refuses or reads otherwise: a key BSON
        // cannot represent (a NUL byte, at any depth: the tree encoder throws where the writer
        // would stop the program), a key twice (at any depth), or the key of a known field
        // (read into that field, or refused as its repeat). We never send what we would refuse.
        do {
            try otherFields.encoded().checkKeysAreUnique()
        } catch {
            throw SDLProtocolError(.invalidControlPayload, "unknown fields cannot be written: \(error.detail)")
        }
        if let field = otherFields.first(where: { Payload.knownKeys.contains($0.key) }) {
            throw SDLProtocolError(
                .invalidControlPayload, "unknown fields cannot be written: \"\(field.key)\" is a known field; set its property instead")
        }
    }
    buffer.writeBSONDocument { doc in
        body(payload, &doc)
        for field in otherFields {
            doc.append(field.key, field.value)
        }
    }
}
