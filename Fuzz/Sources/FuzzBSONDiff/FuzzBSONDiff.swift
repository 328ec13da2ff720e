import CLibBSONFuzz
import FuzzSupport
import NIOCore
import SDLBSON

// SDLBSON against libbson 1.23 (the reference implementation) over arbitrary bytes.
// Invariants:
// - accept/reject agree: libbson accepts a document (bson_validate with UTF-8 checks, NUL
//   allowed in strings as bsonspec.org allows, a full walk, well-formed JSON out) exactly when
//   `BSONDocument(validating:)` does, except where SDLBSON is stricter by design: the checks
//   libbson 1.23 skips (a code-with-scope's code-string NUL and scope terminator, UTF-8 in regex
//   options; the error must sit at that very byte, located by libbson's own reading of the
//   document), and the documented nesting limit (`BSONLimits`, depth 100);
// - canonical Extended JSON agrees: both texts read as the same JSON values (doubles by value),
//   except for the values libbson prints differently from the spec (regex options other than
//   ilmsux or repeated, a NUL in a DBPointer namespace or in code-with-scope code, a decimal128
//   coefficient field in [10^34, 2^113)): those are replaced by null on both sides and the rest
//   is compared;
// - we never accept what libbson rejects.

/// UTF-8 checked wherever libbson checks it; NUL allowed inside strings (bsonspec.org allows it).
let flags = BSON_VALIDATE_UTF8.rawValue | BSON_VALIDATE_UTF8_ALLOW_NULL.rawValue

/// libbson's canonical Extended JSON of `bytes` as a tree, nil when libbson does not accept them.
func libbsonJSON(_ bytes: UnsafeRawBufferPointer) -> JSONTree? {
    // libbson wants a pointer even for no bytes.
    let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
    guard let text = sdl_fuzz_bson_canonical_json(base.assumingMemoryBound(to: UInt8.self), bytes.count, flags) else { return nil }
    defer { sdl_fuzz_bson_free(text) }
    // libbson 1.23 prints `"key" : ,` for an element it cannot read and still returns the text.
    return JSONTree(parsing: String(cString: text))
}

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    let theirs = libbsonJSON(bytes)
    let document: BSONDocument
    do {
        document = try BSONDocument(validating: ByteBuffer(bytes: bytes))
    } catch {
        if let theirs {
            precondition(
                isBlindSpot(error, bytes) || (error.code == .nestingTooDeep && theirs.depth >= BSONLimits.default.maximumNestingDepth),
                "we reject (\(error)), libbson accepts: \(hex(bytes))")
        }
        return
    }
    guard let theirs else { preconditionFailure("we accept, libbson rejects: \(hex(bytes))") }
    let (cleaned, departs) = nullingDepartures(.document(BSONOrderedDocument(document)))
    guard departs, case .document(let comparable) = cleaned else {
        compare(document.canonicalExtendedJSON, theirs, bytes)
        return
    }
    // Both read the document with the departing values nulled (our bytes: libbson reads them).
    guard let encoded = try? comparable.encoded() else { preconditionFailure("a validated tree does not encode") }
    let nulled = encoded.bytes
    guard let theirsNulled = nulled.withUnsafeBytes({ libbsonJSON($0) }) else {
        preconditionFailure("libbson rejects our encoding of \(hex(bytes)) with values nulled")
    }
    compare(encoded.canonicalExtendedJSON, theirsNulled, bytes)
}

func compare(_ ours: String, _ theirs: JSONTree, _ bytes: UnsafeRawBufferPointer) {
    guard let tree = JSONTree(parsing: ours) else { preconditionFailure("our Extended JSON is not JSON: \(ours)") }
    precondition(tree.normalized() == theirs.normalized(), "Extended JSON differs for \(hex(bytes)): ours \(ours)")
}

/// Whether the error sits on a byte libbson does not check, as libbson reads the document.
func isBlindSpot(_ error: BSONError, _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let offset = error.offset, let base = bytes.baseAddress else { return false }
    var spots = [sdl_fuzz_blind_spot](repeating: sdl_fuzz_blind_spot(), count: 256)
    let count = min(256, sdl_fuzz_bson_blind_spots(base.assumingMemoryBound(to: UInt8.self), bytes.count, &spots, 256))
    return spots[..<count].contains { spot in
        switch (Int(spot.kind), error.code) {
        case (Int(SDL_FUZZ_CODE_STRING_END), .invalidStringLength), (Int(SDL_FUZZ_SCOPE_END), .invalidDocumentTerminator):
            return offset == spot.start
        case (Int(SDL_FUZZ_REGEX_OPTIONS), .invalidUTF8):
            return offset >= spot.start && offset < spot.end
        default:
            return false
        }
    }
}

/// Whether libbson 1.23 prints this value otherwise than the spec's canonical Extended JSON.
func libbsonDeparts(_ value: BSONValue) -> Bool {
    switch value {
    case .regularExpression(let regex):
        // libbson prints only the letters ilmsux, each once, in that order.
        let options = Array(regex.options.utf8)
        return options.contains { !"ilmsux".utf8.contains($0) } || Set(options).count != options.count
    case .dbPointer(let pointer):
        return pointer.ref.utf8.contains(0)
    case .javascriptWithScope(let code):
        return code.code.utf8.contains(0)
    case .decimal128(let decimal):
        // A coefficient field from 10^34 up, not in the 11-prefixed form: the spec reads it as
        // zero, libbson prints its digits.
        let tenTo34 = (high: UInt64(0x1_ED09_BEAD_87C0), low: UInt64(0x378D_8E64_0000_0000))
        let coefficientHigh = decimal.high & 0x1_FFFF_FFFF_FFFF
        return (decimal.high >> 61) & 3 != 3 && decimal.high & 0x7800_0000_0000_0000 != 0x7800_0000_0000_0000
            && (coefficientHigh, decimal.low) >= tenTo34
    default:
        return false
    }
}

/// `value` with every value libbson prints otherwise (itself, or one at any depth inside it)
/// replaced by null, and whether there was one.
func nullingDepartures(_ value: BSONValue) -> (BSONValue, Bool) {
    if libbsonDeparts(value) { return (.null, true) }
    var departs = false
    func clean(_ document: BSONOrderedDocument) -> BSONOrderedDocument {
        BSONOrderedDocument(fields: document.fields.map { field in
            let (cleaned, found) = nullingDepartures(field.value)
            departs = departs || found
            return BSONOrderedDocument.Field(key: field.key, value: cleaned)
        })
    }
    switch value {
    case .document(let document):
        return (.document(clean(document)), departs)
    case .array(let items):
        let cleaned = clean(BSONOrderedDocument(fields: items.map { BSONOrderedDocument.Field(key: "", value: $0) }))
        return (.array(cleaned.fields.map(\.value)), departs)
    case .javascriptWithScope(let code):
        return (.javascriptWithScope(BSONCodeWithScope(code: code.code, scope: clean(code.scope))), departs)
    default:
        return (value, false)
    }
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

extension JSONTree {
    /// How deep arrays and objects nest (1 for a flat object).
    var depth: Int {
        switch self {
        case .object(let members): return 1 + (members.map(\.1.depth).max() ?? 0)
        case .array(let items): return 1 + (items.map(\.depth).max() ?? 0)
        default: return 0
        }
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
