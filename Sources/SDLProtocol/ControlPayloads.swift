import NIOCore
import SDLBSON

// Typed payloads of the control frames (protocol spec 5.4.1 §3.1.3), BSON documents since
// protocol version 5. Every field is optional, as the spec says. Integer fields are written with
// the spec's width (`mtu` int64, every other integer int32) and read from either width, since
// peers disagree. Keys this library does not know are kept in `otherFields` and written back
// after the known ones, so a payload from a newer peer round-trips.

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

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON or a field of the
    /// wrong type, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        var reader = try ControlFieldReader(payload, frame: "StartService", limits: limits)
        while let element = reader.next() {
            if element.hasKey("protocolVersion") { self.protocolVersion = try reader.string(element) }
            else if element.hasKey("height") { self.height = try reader.int32(element) }
            else if element.hasKey("width") { self.width = try reader.int32(element) }
            else if element.hasKey("videoProtocol") { self.videoProtocol = try reader.string(element) }
            else if element.hasKey("videoCodec") { self.videoCodec = try reader.string(element) }
            else { self.otherFields.append(element.key, element.value) }
        }
    }

    /// Appends the BSON payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        try writeControlDocument(to: &buffer, otherFields: self.otherFields) { doc in
            if let value = self.protocolVersion { doc.appendString("protocolVersion", value) }
            if let value = self.height { doc.appendInt32("height", value) }
            if let value = self.width { doc.appendInt32("width", value) }
            if let value = self.videoProtocol { doc.appendString("videoProtocol", value) }
            if let value = self.videoCodec { doc.appendString("videoCodec", value) }
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

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON or a field of the
    /// wrong type, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        var reader = try ControlFieldReader(payload, frame: "StartServiceACK", limits: limits)
        while let element = reader.next() {
            if element.hasKey("protocolVersion") { self.protocolVersion = try reader.string(element) }
            else if element.hasKey("hashId") { self.hashID = try reader.int32(element) }
            else if element.hasKey("mtu") { self.mtu = try reader.int64(element) }
            else if element.hasKey("secondaryTransports") { self.secondaryTransports = try reader.strings(element) }
            else if element.hasKey("audioServiceTransports") { self.audioServiceTransports = try reader.int32s(element) }
            else if element.hasKey("videoServiceTransports") { self.videoServiceTransports = try reader.int32s(element) }
            else if element.hasKey("authToken") { self.authToken = try reader.string(element) }
            else if element.hasKey("make") { self.make = try reader.string(element) }
            else if element.hasKey("model") { self.model = try reader.string(element) }
            else if element.hasKey("modelYear") { self.modelYear = try reader.string(element) }
            else if element.hasKey("trim") { self.trim = try reader.string(element) }
            else if element.hasKey("systemSoftwareVersion") { self.systemSoftwareVersion = try reader.string(element) }
            else if element.hasKey("systemHardwareVersion") { self.systemHardwareVersion = try reader.string(element) }
            else if element.hasKey("height") { self.height = try reader.int32(element) }
            else if element.hasKey("width") { self.width = try reader.int32(element) }
            else if element.hasKey("videoProtocol") { self.videoProtocol = try reader.string(element) }
            else if element.hasKey("videoCodec") { self.videoCodec = try reader.string(element) }
            else { self.otherFields.append(element.key, element.value) }
        }
    }

    /// Appends the BSON payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        try writeControlDocument(to: &buffer, otherFields: self.otherFields) { doc in
            if let value = self.protocolVersion { doc.appendString("protocolVersion", value) }
            if let value = self.hashID { doc.appendInt32("hashId", value) }
            if let value = self.mtu { doc.appendInt64("mtu", value) }
            if let values = self.secondaryTransports {
                doc.appendArray("secondaryTransports") { array in for value in values { array.appendString(value) } }
            }
            if let values = self.audioServiceTransports {
                doc.appendArray("audioServiceTransports") { array in for value in values { array.appendInt32(value) } }
            }
            if let values = self.videoServiceTransports {
                doc.appendArray("videoServiceTransports") { array in for value in values { array.appendInt32(value) } }
            }
            if let value = self.authToken { doc.appendString("authToken", value) }
            if let value = self.make { doc.appendString("make", value) }
            if let value = self.model { doc.appendString("model", value) }
            if let value = self.modelYear { doc.appendString("modelYear", value) }
            if let value = self.trim { doc.appendString("trim", value) }
            if let value = self.systemSoftwareVersion { doc.appendString("systemSoftwareVersion", value) }
            if let value = self.systemHardwareVersion { doc.appendString("systemHardwareVersion", value) }
            if let value = self.height { doc.appendInt32("height", value) }
            if let value = self.width { doc.appendInt32("width", value) }
            if let value = self.videoProtocol { doc.appendString("videoProtocol", value) }
            if let value = self.videoCodec { doc.appendString("videoCodec", value) }
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

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON or a field of the
    /// wrong type, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        var reader = try ControlFieldReader(payload, frame: "ServiceNAK", limits: limits)
        while let element = reader.next() {
            if element.hasKey("rejectedParams") { self.rejectedParams = try reader.strings(element) }
            else if element.hasKey("reason") { self.reason = try reader.string(element) }
            else { self.otherFields.append(element.key, element.value) }
        }
    }

    /// Appends the BSON payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        try writeControlDocument(to: &buffer, otherFields: self.otherFields) { doc in
            if let values = self.rejectedParams {
                doc.appendArray("rejectedParams") { array in for value in values { array.appendString(value) } }
            }
            if let value = self.reason { doc.appendString("reason", value) }
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

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON or a field of the
    /// wrong type, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        var reader = try ControlFieldReader(payload, frame: "EndService", limits: limits)
        while let element = reader.next() {
            if element.hasKey("hashId") { self.hashID = try reader.int32(element) }
            else { self.otherFields.append(element.key, element.value) }
        }
    }

    /// Appends the BSON payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        try writeControlDocument(to: &buffer, otherFields: self.otherFields) { doc in
            if let value = self.hashID { doc.appendInt32("hashId", value) }
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

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON or a field of the
    /// wrong type, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        var reader = try ControlFieldReader(payload, frame: "RegisterSecondaryTransportNAK", limits: limits)
        while let element = reader.next() {
            if element.hasKey("reason") { self.reason = try reader.string(element) }
            else { self.otherFields.append(element.key, element.value) }
        }
    }

    /// Appends the BSON payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        try writeControlDocument(to: &buffer, otherFields: self.otherFields) { doc in
            if let value = self.reason { doc.appendString("reason", value) }
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

    /// Decodes a BSON payload; throws `invalidControlPayload` for malformed BSON or a field of the
    /// wrong type, naming the field and its offset.
    public init(bson payload: ByteBuffer, limits: BSONLimits = .default) throws(SDLProtocolError) {
        self.init()
        var reader = try ControlFieldReader(payload, frame: "TransportEventUpdate", limits: limits)
        while let element = reader.next() {
            if element.hasKey("tcpIpAddress") { self.tcpIPAddress = try reader.string(element) }
            else if element.hasKey("tcpPort") { self.tcpPort = try reader.int32(element) }
            else { self.otherFields.append(element.key, element.value) }
        }
    }

    /// Appends the BSON payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) throws(SDLProtocolError) {
        try writeControlDocument(to: &buffer, otherFields: self.otherFields) { doc in
            if let value = self.tcpIPAddress { doc.appendString("tcpIpAddress", value) }
            if let value = self.tcpPort { doc.appendInt32("tcpPort", value) }
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
    /// older header before the version is negotiated, still with a BSON payload).
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

    /// Appends the payload's bytes (nothing for `.none`).
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
        case .document(let document): buffer.writeImmutableBuffer(document.buffer)
        }
    }
}

/// Walks a control payload's fields with typed reads that name the field in their errors.
struct ControlFieldReader {
    let frame: String
    private var iterator: BSONDocument.Iterator

    init(_ payload: ByteBuffer, frame: String, limits: BSONLimits) throws(SDLProtocolError) {
        self.frame = frame
        self.iterator = try Self.validate(payload, frame: frame, limits: limits).makeIterator()
    }

    static func validate(_ payload: ByteBuffer, frame: String, limits: BSONLimits) throws(SDLProtocolError) -> BSONDocument {
        do {
            return try BSONDocument(validating: payload, limits: limits)
        } catch {
            throw SDLProtocolError(.invalidControlPayload, offset: error.offset, "\(frame) payload is not valid BSON: \(error.detail)")
        }
    }

    mutating func next() -> BSONElement? { self.iterator.next() }

    private func mismatch(_ element: BSONElement, _ expected: String) -> SDLProtocolError {
        SDLProtocolError(
            .invalidControlPayload, offset: element.offset,
            "\(self.frame) field \(element.key) must be \(expected), not \(element.type)")
    }

    func string(_ element: BSONElement) throws(SDLProtocolError) -> String {
        guard let value = element.stringValue else { throw self.mismatch(element, "a string") }
        return value
    }

    /// An int32 field; an int64 is accepted when its value fits.
    func int32(_ element: BSONElement) throws(SDLProtocolError) -> Int32 {
        guard let value = element.integerValue.flatMap(Int32.init(exactly:)) else {
            throw self.mismatch(element, "an int32 (or an int64 within the int32 range)")
        }
        return value
    }

    /// An int64 field; an int32 is accepted.
    func int64(_ element: BSONElement) throws(SDLProtocolError) -> Int64 {
        guard let value = element.integerValue else { throw self.mismatch(element, "an int64 or int32") }
        return value
    }

    func strings(_ element: BSONElement) throws(SDLProtocolError) -> [String] {
        guard let array = element.arrayValue else { throw self.mismatch(element, "an array of strings") }
        var values: [String] = []
        for item in array {
            guard let value = item.stringValue else { throw self.mismatch(item, "a string (in \(element.key))") }
            values.append(value)
        }
        return values
    }

    func int32s(_ element: BSONElement) throws(SDLProtocolError) -> [Int32] {
        guard let array = element.arrayValue else { throw self.mismatch(element, "an array of int32") }
        var values: [Int32] = []
        for item in array {
            guard let value = item.integerValue.flatMap(Int32.init(exactly:)) else {
                throw self.mismatch(item, "an int32 (in \(element.key))")
            }
            values.append(value)
        }
        return values
    }
}

/// Writes a control payload: the known fields, then the unknown ones kept from a decode.
private func writeControlDocument(
    to buffer: inout ByteBuffer, otherFields: BSONOrderedDocument, _ body: (inout BSONDocumentWriter) -> Void
) throws(SDLProtocolError) {
    if !otherFields.isEmpty {
        // Fields built by hand may hold keys BSON cannot represent (a NUL byte), at any depth;
        // the tree encoder checks them all and throws where the writer would stop the program.
        do {
            _ = try otherFields.encoded()
        } catch {
            throw SDLProtocolError(.invalidControlPayload, "unknown fields cannot be written: \(error.detail)")
        }
    }
    buffer.writeBSONDocument { doc in
        body(&doc)
        for field in otherFields {
            doc.append(field.key, field.value)
        }
    }
}
