import FuzzSupport
import NIOCore
import SDLBSON
import SDLProtocol

// BSON reader, Extended JSON and control payloads over arbitrary bytes. Invariants:
// - a document that validates re-encodes from its value tree to a stable encoding with the same
//   Extended JSON;
// - its canonical Extended JSON parses back to a document with the same Extended JSON, unless a
//   key repeats in one of its documents: then validation refusing repeats, the Extended JSON
//   reader and the control payloads all refuse it with `duplicateKey` (one policy, whichever
//   reader); or unless a document value has a type wrapper's key (`{"a": {"$oid": …, "b": 1}}`):
//   Extended JSON has no escape for it, and the spec reads such an object as the wrapper, so it
//   reads back as another type or is refused with `invalidExtendedJSON`;
// - a control payload that decodes writes a payload that decodes and writes the same bytes;
// - anything else is a typed error (a crash, hang or trap is a finding).

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    let buffer = ByteBuffer(bytes: bytes)
    if let document = try? BSONDocument(validating: buffer) {
        // Re-encoding normalises array keys to "0", "1", …; after that it is a fixed point.
        let tree = BSONOrderedDocument(document)
        guard let encoded = try? tree.encoded() else { preconditionFailure("a validated tree does not encode") }
        guard let again = try? BSONOrderedDocument(BSONDocument(validating: encoded.buffer)).encoded() else {
            preconditionFailure("re-encoded tree does not validate")
        }
        precondition(again.bytes == encoded.bytes, "tree encoding is not stable")
        if encoded.count == document.count { precondition(encoded.canonicalExtendedJSON == document.canonicalExtendedJSON) }
        let canonical = document.canonicalExtendedJSON
        let wrapperLike = holdsWrapperLikeDocument(tree)
        let keysRepeat: Bool
        do {
            _ = try BSONDocument(validating: buffer, rejectingDuplicateKeys: true)
            keysRepeat = false
        } catch {
            precondition(error.code == .duplicateKey, "a valid document refused for \(error)")
            keysRepeat = true
        }
        do {
            let reparsed = try BSONDocument(extendedJSON: canonical)
            precondition(!keysRepeat || wrapperLike, "Extended JSON with a repeated name parsed: \(canonical)")
            precondition(wrapperLike || reparsed.canonicalExtendedJSON == canonical, "Extended JSON is not stable")
        } catch {
            precondition(
                (keysRepeat && error.code == .duplicateKey) || (wrapperLike && error.code == .invalidExtendedJSON),
                "canonical Extended JSON does not parse: \(canonical): \(error)")
        }
        if keysRepeat {
            for info in [ControlFrameInfo.startService, .startServiceACK, .heartbeat] {
                precondition((try? ControlPayload(frameInfo: info, version: .v5, payload: buffer)) == nil, "a repeated key in a control payload")
            }
        }
        _ = document.relaxedExtendedJSON
    }
    // The same bytes as Extended JSON text.
    if let text = String(validating: bytes, as: UTF8.self), let document = try? BSONDocument(extendedJSON: text) {
        let canonical = document.canonicalExtendedJSON
        precondition((try? BSONDocument(extendedJSON: canonical))?.canonicalExtendedJSON == canonical)
    }
    for info in [ControlFrameInfo.startService, .startServiceACK, .startServiceNAK, .endService, .registerSecondaryTransportNAK,
                 .transportEventUpdate] {
        guard let payload = try? ControlPayload(frameInfo: info, version: .v5, payload: buffer) else { continue }
        var written = ByteBuffer()
        guard (try? payload.write(to: &written)) != nil else { preconditionFailure("a decoded payload does not write") }
        // Compared as bytes: a NaN among the unknown fields is not equal to itself as a value.
        guard let again = try? ControlPayload(frameInfo: info, version: .v5, payload: written) else {
            preconditionFailure("a written control payload does not decode")
        }
        var rewritten = ByteBuffer()
        try? again.write(to: &rewritten)
        precondition(rewritten == written, "control payload round trip")
    }
}

/// The keys that make an Extended JSON object a type wrapper (Extended JSON v2), as SDLBSON reads them.
let wrapperKeys: Set<String> = [
    "$oid", "$symbol", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal", "$binary", "$uuid", "$code",
    "$scope", "$timestamp", "$regularExpression", "$dbPointer", "$date", "$minKey", "$maxKey", "$undefined",
]

/// Whether a document value at any depth has a wrapper's key. The top level and a code's scope
/// are read back as documents whatever their keys, so only values count.
func holdsWrapperLikeDocument(_ document: BSONOrderedDocument) -> Bool {
    document.fields.contains { isWrapperLike($0.value) }
}

func isWrapperLike(_ value: BSONValue) -> Bool {
    switch value {
    case .document(let document):
        return document.fields.contains { wrapperKeys.contains($0.key) } || holdsWrapperLikeDocument(document)
    case .array(let items):
        return items.contains(where: isWrapperLike)
    case .javascriptWithScope(let code):
        return holdsWrapperLikeDocument(code.scope)
    default:
        return false
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
