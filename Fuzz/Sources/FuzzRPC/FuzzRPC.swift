import FuzzSupport
import NIOCore
import SDLRPC

// RPC payloads over arbitrary bytes: binary header, JSON or BSON parameters, generated types.
// Invariants:
// - a payload that decodes (validated or not, under any receive policy) re-encodes as JSON and as
//   BSON (unless a key holds a NUL, which BSON cannot carry: then a typed error), and both decode
//   back (under the same policy) to a message with the same JSON text and, leniently, the same
//   violations;
// - the receive policies agree: lenient and off decode the same inputs to the same message; a
//   lenient decode without violations is a strict one; what strict decoding refuses, a lenient
//   decode that succeeds reports (code and path);
// - JSON text and BSON documents as generic values round-trip;
// - bytes that are a JSON number read as Swift's `Double(String)` reads them (correctly rounded),
//   or as that very integer, or are refused as out of range exactly when that Double is infinite;
// - anything else is a typed error (a crash, hang or trap is a finding).

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    let buffer = ByteBuffer(bytes: bytes)
    let unvalidated = RPCCodingOptions(validate: false)
    let off = RPCCodingOptions(receivePolicy: .off)
    // Each way of decoding, and how its re-encoding is decoded again: a message decoded with
    // validation may still not validate after a round trip through another format (a Float that
    // only BSON can carry, NaN), and what lenient decoding dropped only decodes leniently again.
    for (options, againOptions) in [(RPCCodingOptions.default, unvalidated), (unvalidated, unvalidated), (.lenient, .lenient), (off, off)] {
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
            let again: AnyRPCMessage
            do {
                again = try AnyRPCMessage(payload: payload, format: format, options: againOptions)
            } catch {
                preconditionFailure("a re-encoded \(format) payload does not decode (\(options.receivePolicy)): \(error)")
            }
            precondition((try? again.jsonParametersText(options: unvalidated)) == json, "\(format) round trip")
            precondition(again.violations.map(\.summary) == message.violations.map(\.summary), "\(format) round trip violations")
        }
    }
    checkPolicies(buffer)
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

/// The receive policies against each other, on one payload.
func checkPolicies(_ buffer: ByteBuffer) {
    let strict = Result { () throws(RPCError) in try AnyRPCMessage(payload: buffer) }
    let lenient = Result { () throws(RPCError) in try AnyRPCMessage(payload: buffer, options: .lenient) }
    let off = Result { () throws(RPCError) in try AnyRPCMessage(payload: buffer, options: RPCCodingOptions(receivePolicy: .off)) }
    switch (lenient, off) {
    case (.success(let lenient), .success(let off)):
        precondition(lenient == off && off.violations.isEmpty, "off decodes as lenient does, without reports")
    case (.failure, .failure):
        break
    default:
        preconditionFailure("lenient and off disagree on whether the payload decodes")
    }
    switch (strict, lenient) {
    case (.success(let strict), .success(let lenient)):
        precondition(lenient == strict && lenient.violations.isEmpty, "a strict decode is a lenient one without violations")
    case (.failure(let error), .success(let lenient)):
        precondition(!lenient.violations.isEmpty, "a lenient decode without violations of a payload strict decoding refuses: \(error)")
        if lenient.violations.count < RPCCodingOptions.lenient.maxViolations {
            precondition(
                lenient.violations.contains { $0.code == error.code && $0.path == error.path },
                "strict decoding refuses \(error), which lenient decoding does not report")
        }
    case (.success, .failure(let error)):
        preconditionFailure("lenient decoding refuses what strict decoding reads: \(error)")
    case (.failure, .failure):
        break
    }
}

extension RPCViolation {
    /// What a violation says apart from its detail text, which names the format.
    var summary: String { "\(self.code) \(self.path) \(String(describing: self.droppedPath))" }
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
