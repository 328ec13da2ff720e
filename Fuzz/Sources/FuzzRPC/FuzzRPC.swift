import FuzzSupport
import NIOCore
import SDLRPC

// RPC payloads over arbitrary bytes: binary header, JSON or BSON parameters, generated types.
// Invariants:
// - a payload that decodes (validated or not) re-encodes as JSON and as BSON (unless a key holds
//   a NUL, which BSON cannot carry: then a typed error), and both decode back to a message with
//   the same JSON text;
// - JSON text and BSON documents as generic values round-trip;
// - bytes that are a JSON number read as Swift's `Double(String)` reads them (correctly rounded),
//   or as that very integer, or are refused as out of range exactly when that Double is infinite;
// - anything else is a typed error (a crash, hang or trap is a finding).

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    let buffer = ByteBuffer(bytes: bytes)
    for options in [RPCCodingOptions.default, RPCCodingOptions(validate: false)] {
        guard let message = try? AnyRPCMessage(payload: buffer, options: options) else { continue }
        guard let json = try? message.jsonParametersText(options: RPCCodingOptions(validate: false)) else {
            // Only a non-finite Float cannot be written as JSON.
            continue
        }
        for format in [RPCParameterFormat.json, .bson] {
            let payload: ByteBuffer
            do {
                payload = try message.payload(format: format, options: RPCCodingOptions(validate: false))
            } catch where format == .bson && error.code == .invalidPayload && json.contains("\\u0000") {
                // An unknown parameter whose key holds a NUL (JSON can carry it, BSON cannot): a
                // typed error, not a finding.
                continue
            } catch {
                preconditionFailure("a decoded message does not encode as \(format): \(error)")
            }
            guard let again = try? AnyRPCMessage(payload: payload, format: format, options: RPCCodingOptions(validate: false)) else {
                preconditionFailure("a re-encoded \(format) payload does not decode")
            }
            precondition((try? again.jsonParametersText(options: RPCCodingOptions(validate: false))) == json, "\(format) round trip")
        }
    }
    // The bytes as parameters alone: JSON text, and a BSON document.
    if let value = try? RPCValue(jsonObject: buffer), let text = try? value.jsonText() {
        precondition((try? RPCValue(jsonObject: text)) == value, "JSON value round trip")
        // BSON cannot carry a key with a NUL byte (JSON can): that is a typed error, not a finding.
        if let document = try? value.bsonDocument() {
            precondition((try? RPCValue(bsonObject: document)) == value || value.containsNaN, "JSON value through BSON")
        }
    }
    if let value = try? RPCValue(bsonObject: buffer), let document = try? value.bsonDocument() {
        precondition((try? RPCValue(bsonObject: document)) == value || value.containsNaN, "BSON value round trip")
    }
    checkNumber(bytes)
}

/// Reads the bytes, when they hold nothing but number characters, as the value of a parameter.
func checkNumber(_ bytes: UnsafeRawBufferPointer) {
    let numberBytes = Set("0123456789+-.eE".utf8)
    guard !bytes.isEmpty, bytes.allSatisfy({ numberBytes.contains($0) }) else { return }
    let text = String(decoding: bytes, as: UTF8.self)
    let value: RPCValue
    do {
        value = try RPCValue(jsonObject: #"{"x":"# + text + "}")
    } catch {
        // The reader refuses the first number that is out of range, even when more bytes follow
        // that make the whole no number ("11E311E3"); Swift's parser only reads whole numbers.
        if error.code == .numberOutOfRange, let double = Double(text) {
            precondition(double.isInfinite, "\(text) refused as out of range")
        }
        return
    }
    switch value {
    case .object(let object) where object.count == 1:
        switch object[0].value {
        case .double(let double): precondition(Double(text)?.bitPattern == double.bitPattern, "\(text) read as \(double)")
        case .int32(let int): precondition(Int64(text) == Int64(int), "\(text) read as \(int)")
        case .int64(let int): precondition(Int64(text) == int, "\(text) read as \(int)")
        default: preconditionFailure("\(text) read as \(object[0].value)")
        }
    default:
        preconditionFailure("\(text) read as \(value)")
    }
}

extension RPCValue {
    /// NaN is not equal to itself, so trees holding one are compared by other means.
    var containsNaN: Bool {
        switch self {
        case .double(let value): return value.isNaN
        case .array(let values): return values.contains { $0.containsNaN }
        case .object(let object): return object.entries.contains { $0.value.containsNaN }
        default: return false
        }
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
