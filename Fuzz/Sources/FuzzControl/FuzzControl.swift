import FuzzSupport
import NIOCore
import SDLBSON
import SDLProtocol

// Control frame payloads (protocol spec 5.4.1 §3.1.3), both ways. Invariants:
// - bytes: every control frame info (known and unknown) at versions 4 and 5 decodes to a typed
//   value or throws `invalidControlPayload`; a decoded value writes without error, and what it
//   writes decodes to an equal value (by bytes where a NaN makes the value unequal to itself)
//   and writes the same bytes again; a document kept as is and a raw hash id write back the very
//   bytes they came from; decoding under a tighter nesting limit gives the same value or refuses;
// - values: a payload built from the input (known fields and unknown ones, whose keys may
//   collide with known keys, repeat, hold a NUL, or nest) either refuses to write with
//   `invalidControlPayload` or writes bytes that decode to an equal value: the writer never
//   sends what the reader would refuse or read differently.

/// Every frame info the spec defines, and one it does not.
let frameInfos = (0...9).map { ControlFrameInfo(rawValue: UInt8($0)) }
    + [.transportEventUpdate, .serviceDataACK, .heartbeatACK, ControlFrameInfo(rawValue: 0x42)]

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    guard let selector = bytes.first else { return }
    let rest = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
    if selector & 0x80 == 0 {
        checkBytes(ByteBuffer(bytes: rest), info: frameInfos[Int(selector) % frameInfos.count], version: selector & 0x40 == 0 ? .v5 : .v4)
    } else {
        var input = FuzzInput(rest)
        checkValue(makePayload(kind: Int(selector & 0x7F), &input))
    }
}

func checkBytes(_ payload: ByteBuffer, info: ControlFrameInfo, version: ProtocolVersion) {
    let decoded: ControlPayload
    do {
        decoded = try ControlPayload(frameInfo: info, version: version, payload: payload)
    } catch {
        precondition(error.code == .invalidControlPayload, "\(info) \(version): \(error)")
        return
    }
    let written = roundTrip(decoded, info: info, version: version)
    switch decoded {
    case .document, .hashID: precondition(written == payload, "\(info) \(version): kept bytes written differently")
    case .none: precondition(payload.readableBytes == 0)
    default: break
    }
    let shallow = BSONLimits(maximumNestingDepth: 2)
    if let tight = try? ControlPayload(frameInfo: info, version: version, payload: payload, limits: shallow), !decoded.holdsNaN {
        precondition(tight == decoded, "\(info) \(version): a tighter limit reads another value")
    }
}

/// Writes a payload, decodes what it wrote and writes that again; returns the first bytes.
@discardableResult
func roundTrip(_ value: ControlPayload, info: ControlFrameInfo, version: ProtocolVersion) -> ByteBuffer {
    var written = ByteBuffer()
    do {
        try value.write(to: &written)
    } catch {
        preconditionFailure("\(info) \(version): a decoded payload does not write: \(error)")
    }
    let again: ControlPayload
    do {
        again = try ControlPayload(frameInfo: info, version: version, payload: written)
    } catch {
        preconditionFailure("\(info) \(version): written payload does not decode: \(error)")
    }
    // NaN among the unknown fields makes a value unequal to itself: then the bytes decide.
    if !value.holdsNaN { precondition(again == value, "\(info) \(version): \(value) came back as \(again)") }
    var rewritten = ByteBuffer()
    try? again.write(to: &rewritten)
    precondition(rewritten == written, "\(info) \(version): payload bytes are not a fixed point")
    return written
}

func checkValue(_ made: (ControlPayload, ControlFrameInfo)) {
    let (value, info) = made
    var written = ByteBuffer()
    do {
        try value.write(to: &written)
    } catch {
        precondition(error.code == .invalidControlPayload, "\(info): \(error)")
        return
    }
    let decoded: ControlPayload
    do {
        decoded = try ControlPayload(frameInfo: info, version: .v5, payload: written)
    } catch {
        preconditionFailure("\(info): the writer sent what the reader refuses: \(error) for \(value)")
    }
    if !value.holdsNaN {
        // An empty payload reads as `.none`, whatever typed value wrote it (none of its fields set).
        precondition(decoded == value || (decoded == .none && written.readableBytes == 0), "\(info): \(value) read back as \(decoded)")
    }
    roundTrip(decoded, info: info, version: .v5)
}

extension ControlPayload {
    /// Whether a NaN sits among the unknown fields (`value == value` cannot tell: arrays that
    /// share storage compare equal without comparing their elements).
    var holdsNaN: Bool {
        switch self {
        case .startService(let payload): return payload.otherFields.holdsNaN
        case .startServiceACK(let payload): return payload.otherFields.holdsNaN
        case .startServiceNAK(let payload), .endServiceNAK(let payload): return payload.otherFields.holdsNaN
        case .endService(let payload): return payload.otherFields.holdsNaN
        case .registerSecondaryTransportNAK(let payload): return payload.otherFields.holdsNaN
        case .transportEventUpdate(let payload): return payload.otherFields.holdsNaN
        case .document(let document): return BSONOrderedDocument(document).holdsNaN
        case .none, .hashID: return false
        }
    }
}

extension BSONOrderedDocument {
    var holdsNaN: Bool { self.fields.contains { $0.value.holdsNaN } }
}

extension BSONValue {
    var holdsNaN: Bool {
        switch self {
        case .double(let value): return value.isNaN
        case .document(let document): return document.holdsNaN
        case .array(let items): return items.contains { $0.holdsNaN }
        case .javascriptWithScope(let code): return code.scope.holdsNaN
        default: return false
        }
    }
}

// MARK: - Payload values from the input

/// Keys for unknown fields: the known keys of every payload (so that they collide), a repeated
/// one, the empty key, one with a NUL and a dotted one.
let fieldKeys = [
    "protocolVersion", "hashId", "mtu", "height", "width", "videoProtocol", "videoCodec", "secondaryTransports",
    "audioServiceTransports", "videoServiceTransports", "authToken", "make", "model", "modelYear", "trim",
    "systemSoftwareVersion", "systemHardwareVersion", "rejectedParams", "reason", "tcpIpAddress", "tcpPort",
    "x", "x", "", "a\u{0}b", "a.b", "$ref",
]

func makeValue(_ input: inout FuzzInput, depth: Int) -> BSONValue {
    switch input.int(in: 0...(depth < 3 ? 9 : 7)) {
    case 0: return .int32(input.integer())
    case 1: return .int64(input.integer())
    case 2: return .double(Double(bitPattern: input.integer()))
    case 3: return .string(input.string(maxLength: 12))
    case 4: return .bool(input.bool())
    case 5: return .null
    case 6: return .binary(BSONBinary(subtype: BSONBinary.Subtype(rawValue: input.byte()), bytes: Array(input.bytes(input.int(in: 0...8)).readableBytesView)))
    case 7: return .datetime(BSONDateTime(millisecondsSinceEpoch: input.integer()))
    case 8: return .document(makeDocument(&input, depth: depth + 1))
    default: return .array((0..<input.int(in: 0...3)).map { _ in makeValue(&input, depth: depth + 1) })
    }
}

func makeDocument(_ input: inout FuzzInput, depth: Int) -> BSONOrderedDocument {
    var document = BSONOrderedDocument()
    for _ in 0..<input.int(in: 0...(depth == 0 ? 4 : 3)) {
        document.append(input.pick(fieldKeys), makeValue(&input, depth: depth))
    }
    return document
}

extension FuzzInput {
    mutating func optional<T>(_ make: (inout FuzzInput) -> T) -> T? {
        self.int(in: 0...2) == 0 ? nil : make(&self)
    }

    mutating func text() -> String? { self.optional { $0.string(maxLength: 10) } }
    mutating func int32() -> Int32? { self.optional { $0.integer() } }
    mutating func strings() -> [String]? { self.optional { input in (0..<input.int(in: 0...3)).map { _ in input.string(maxLength: 8) } } }
    mutating func int32s() -> [Int32]? { self.optional { input in (0..<input.int(in: 0...3)).map { _ in input.integer() } } }
}

/// A typed payload of one of the kinds, with fields from the input.
func makePayload(kind: Int, _ input: inout FuzzInput) -> (ControlPayload, ControlFrameInfo) {
    switch kind % 8 {
    case 0:
        let payload = StartServicePayload(
            protocolVersion: input.text(), height: input.int32(), width: input.int32(), videoProtocol: input.text(),
            videoCodec: input.text(), otherFields: makeDocument(&input, depth: 0))
        return (.startService(payload), .startService)
    case 1:
        let payload = StartServiceACKPayload(
            protocolVersion: input.text(), hashID: input.int32(), mtu: input.optional { $0.integer() },
            secondaryTransports: input.strings(), audioServiceTransports: input.int32s(), videoServiceTransports: input.int32s(),
            authToken: input.text(), make: input.text(), model: input.text(), modelYear: input.text(), trim: input.text(),
            systemSoftwareVersion: input.text(), systemHardwareVersion: input.text(), height: input.int32(), width: input.int32(),
            videoProtocol: input.text(), videoCodec: input.text(), otherFields: makeDocument(&input, depth: 0))
        return (.startServiceACK(payload), .startServiceACK)
    case 2:
        let payload = ServiceNAKPayload(rejectedParams: input.strings(), reason: input.text(), otherFields: makeDocument(&input, depth: 0))
        return input.bool() ? (.startServiceNAK(payload), .startServiceNAK) : (.endServiceNAK(payload), .endServiceNAK)
    case 3:
        return (.endService(EndServicePayload(hashID: input.int32(), otherFields: makeDocument(&input, depth: 0))), .endService)
    case 4:
        let payload = RegisterSecondaryTransportNAKPayload(reason: input.text(), otherFields: makeDocument(&input, depth: 0))
        return (.registerSecondaryTransportNAK(payload), .registerSecondaryTransportNAK)
    case 5:
        let payload = TransportEventUpdatePayload(tcpIPAddress: input.text(), tcpPort: input.int32(), otherFields: makeDocument(&input, depth: 0))
        return (.transportEventUpdate(payload), .transportEventUpdate)
    case 6:
        // A document on a frame whose payload the spec does not define: kept as is.
        let document = (try? makeDocument(&input, depth: 0).encoded()) ?? BSONDocument()
        return (.document(document), input.pick([.heartbeat, .endServiceACK, .registerSecondaryTransport, .registerSecondaryTransportACK]))
    default:
        return (.none, input.pick(frameInfos))
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
