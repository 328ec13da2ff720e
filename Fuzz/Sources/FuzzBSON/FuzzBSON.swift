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
//   reader);
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
            precondition(!keysRepeat, "Extended JSON with a repeated name parsed: \(canonical)")
            precondition(reparsed.canonicalExtendedJSON == canonical, "Extended JSON is not stable")
        } catch {
            precondition(keysRepeat && error.code == .duplicateKey, "canonical Extended JSON does not parse: \(canonical): \(error)")
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

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
