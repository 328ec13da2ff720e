import Foundation
import NIOCore
import SDLTestSupport
import Testing

@testable import SDLBSON

/// Runs MongoDB's BSON corpus (../shared/bson-corpus) against the reader, the value tree, the
/// writer and Extended JSON, following the corpus README's rules:
/// valid: cB → native → cB; cB → cEJ; cB → rEJ; cEJ → native → cEJ and → cB (unless lossy);
/// rEJ → native → rEJ; dB → cB and → cEJ; dEJ → cEJ and → cB (unless lossy).
/// decodeErrors: the reader rejects with a BSONError. parseErrors: Extended JSON (or, for
/// decimal128 files, the Decimal128 string parser) rejects with a BSONError.
@Suite struct CorpusTests {
    /// Checks allowed not to pass, each with its reason, keyed "file: description: check". Every
    /// entry must be hit (the skip count is exact) and a check not listed must pass.
    static let knownFailures: [String: String] = {
        // The corpus's converted_* fields are for drivers that turn deprecated types into
        // their replacements; SDLBSON keeps every type as it is on the wire.
        func converted(_ what: String) -> String {
            "converted form turns \(what); SDLBSON keeps deprecated types as they are"
        }
        let cases: [(file: String, description: String, reason: String)] = [
            ("dbpointer.json", "DBpointer", converted("the DBPointer into a DBRef document")),
            ("dbpointer.json", "DBpointer with opposite key order", converted("the DBPointer into a DBRef document")),
            ("dbpointer.json", "With two-byte UTF-8", converted("the DBPointer into a DBRef document")),
            ("multi-type-deprecated.json", "All BSON types", converted("DBPointer, symbol and undefined into DBRef, string and null")),
            ("symbol.json", "Empty string", converted("the symbol into a string")),
            ("symbol.json", "Single character", converted("the symbol into a string")),
            ("symbol.json", "Multi-character", converted("the symbol into a string")),
            ("symbol.json", "two-byte UTF-8 (\u{E9})", converted("the symbol into a string")),
            ("symbol.json", "three-byte UTF-8 (\u{2606})", converted("the symbol into a string")),
            ("symbol.json", "Embedded nulls", converted("the symbol into a string")),
            ("undefined.json", "Undefined", converted("undefined into null")),
        ]
        var entries: [String: String] = [:]
        for entry in cases {
            for field in ["converted_bson", "converted_extjson"] {
                entries["\(entry.file): \(entry.description): \(field)"] = entry.reason
            }
        }
        return entries
    }()

    struct Tally {
        var passed = 0
        /// The ids of the known failures met, with their reasons.
        var skipped: [(id: String, reason: String)] = []
        var failed = 0
    }

    @Test func corpusIsPresent() throws {
        let files = try SharedData.bsonCorpus()
        #expect(files.count == 31, "\(files.map(\.name))")
    }

    @Test func wholeCorpus() throws {
        var tally = Tally()
        for (name, file) in try SharedData.bsonCorpus() {
            Self.run(file: name, root: file, tally: &tally)
        }
        print("BSON corpus: \(tally.passed) passed, \(tally.failed) failed, \(tally.skipped.count) skipped (known failures)")
        #expect(tally.passed > 2000)
        // Exactly the listed checks were skipped, each once.
        #expect(tally.skipped.count == Self.knownFailures.count)
        #expect(Set(tally.skipped.map(\.id)) == Set(Self.knownFailures.keys))
    }

    /// Random corruptions of every corpus Extended JSON text: the parser either rejects with a
    /// BSONError or yields a document whose canonical Extended JSON parses back to the same bytes.
    @Test func mutatedExtendedJSONRoundTripsOrIsRejected() throws {
        let texts = try SharedData.bsonCorpus().flatMap { $0.file.valid ?? [] }.flatMap { test in
            [test.canonicalExtJSON] + [test.relaxedExtJSON, test.degenerateExtJSON].compactMap { $0 }
        }
        #expect(texts.count > 900)
        let alphabet = Array("{}[]\":,\\0123456789abcdefxyzE.+-$ \u{e9}".unicodeScalars)
        var rng = SplitMix64(seed: 2026)
        var accepted = 0
        var rejected = 0
        for round in 0..<20_000 {
            var scalars = Array(texts[Int(rng.next() % UInt64(texts.count))].unicodeScalars)
            for _ in 0...(rng.next() % 3) {
                let at = Int(rng.next() % UInt64(scalars.count))
                switch rng.next() % 3 {
                case 0: scalars[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: scalars.remove(at: at)
                default: scalars.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                }
                if scalars.isEmpty { break }
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            do {
                let document = try BSONDocument(extendedJSON: text)
                let again = try BSONDocument(extendedJSON: document.canonicalExtendedJSON)
                #expect(again.bytes == document.bytes, "round \(round): \(text)")
                let relaxed = try BSONDocument(extendedJSON: document.relaxedExtendedJSON)
                #expect(relaxed.canonicalExtendedJSON.count > 1, "round \(round)")
                accepted += 1
            } catch {
                rejected += 1
            }
        }
        print("mutated Extended JSON: \(accepted) accepted and round-tripped, \(rejected) rejected")
        #expect(accepted > 1_000)
        #expect(rejected > 1_000)
    }

    static func check(
        _ tally: inout Tally,
        _ id: String,
        _ condition: Bool,
        _ message: @autoclosure () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        if let reason = knownFailures[id] {
            // Listed: counted as skipped whatever the outcome; the exact count catches a check
            // that starts passing (its entry should then go).
            tally.skipped.append((id, reason))
        } else if condition {
            tally.passed += 1
        } else {
            tally.failed += 1
            Issue.record("\(id): \(message())", sourceLocation: sourceLocation)
        }
    }

    /// A document as the reader gives it, with what is computed from its bytes: what must not
    /// depend on where those bytes sit in a buffer's storage.
    struct Reading: Equatable {
        var document: BSONDocument
        var canonical: String
        var relaxed: String
    }

    /// Reads `bytes` in every buffer layout, expecting the same document and Extended JSON, or the
    /// same error (code, offset from the reader index, detail), in each; returns the plain read.
    static func read(_ bytes: [UInt8], _ id: String, sourceLocation: SourceLocation = #_sourceLocation) -> ReadResult<Reading> {
        readInEveryLayout(bytes, "\(id)", sourceLocation: sourceLocation) { buffer in
            ReadResult {
                let document = try BSONDocument(validating: buffer)
                return Reading(document: document, canonical: document.canonicalExtendedJSON, relaxed: document.relaxedExtendedJSON)
            }
        }
    }

    static func run(file: String, root: BSONCorpusFile, tally: inout Tally) {
        let isDecimal = root.bsonType == "0x13"
        for test in root.valid ?? [] {
            let id = "\(file): \(test.description)"
            let lossy = test.lossy ?? false
            let cB = [UInt8](hex: test.canonicalBSON)
            let cEJ = normalizeJSON(test.canonicalExtJSON)
            let rEJ = test.relaxedExtJSON.map { normalizeJSON($0) }
            for (key, value) in [("converted_bson", test.convertedBSON), ("converted_extjson", test.convertedExtJSON)] where value != nil {
                // Not run (see knownFailures); an unlisted converted case fails here.
                check(&tally, "\(id): \(key)", false, "\(key) is not run and the case is not a known failure")
            }

            let read = Self.read(cB, id)
            guard let document = read.value?.document else {
                check(&tally, "\(id): decode cB", false, "canonical_bson rejected: \(read)")
                continue
            }
            // cB -> native tree -> cB
            let tree = BSONOrderedDocument(document)
            let reencoded = (try? tree.encoded().bytes) ?? []
            check(&tally, "\(id): cB->native->cB", reencoded == cB, "re-encoded \(reencoded.hex) != \(cB.hex)")
            // cB -> cEJ, rEJ
            let canonical = document.canonicalExtendedJSON
            check(&tally, "\(id): cB->cEJ", normalizeJSON(canonical) == cEJ, "got \(canonical), want \(cEJ)")
            if let rEJ {
                let relaxed = document.relaxedExtendedJSON
                check(&tally, "\(id): cB->rEJ", normalizeJSON(relaxed) == rEJ, "got \(relaxed), want \(rEJ)")
            }
            // cEJ -> native -> cEJ, cB
            do {
                let parsed = try BSONDocument(extendedJSON: test.canonicalExtJSON)
                check(
                    &tally,
                    "\(id): cEJ->cEJ",
                    normalizeJSON(parsed.canonicalExtendedJSON) == cEJ,
                    "got \(parsed.canonicalExtendedJSON), want \(cEJ)"
                )
                if !lossy {
                    check(&tally, "\(id): cEJ->cB", parsed.bytes == cB, "got \(parsed.bytes.hex), want \(cB.hex)")
                }
            } catch {
                check(&tally, "\(id): parse cEJ", false, "canonical_extjson rejected: \(error)")
            }
            // rEJ -> native -> rEJ
            if let rEJText = test.relaxedExtJSON, let rEJ {
                do {
                    let parsed = try BSONDocument(extendedJSON: rEJText)
                    check(
                        &tally,
                        "\(id): rEJ->rEJ",
                        normalizeJSON(parsed.relaxedExtendedJSON) == rEJ,
                        "got \(parsed.relaxedExtendedJSON), want \(rEJ)"
                    )
                } catch {
                    check(&tally, "\(id): parse rEJ", false, "relaxed_extjson rejected: \(error)")
                }
            }
            // dB -> cB, cEJ
            if let dBHex = test.degenerateBSON {
                let read = Self.read([UInt8](hex: dBHex), "\(id): dB")
                if let degenerate = read.value?.document {
                    let reencoded = (try? BSONOrderedDocument(degenerate).encoded().bytes) ?? []
                    check(&tally, "\(id): dB->cB", reencoded == cB, "got \(reencoded.hex), want \(cB.hex)")
                    let dbJSON = degenerate.canonicalExtendedJSON
                    check(&tally, "\(id): dB->cEJ", normalizeJSON(dbJSON) == cEJ, "got \(dbJSON), want \(cEJ)")
                } else {
                    check(&tally, "\(id): decode dB", false, "degenerate_bson rejected: \(read)")
                }
            }
            // dEJ -> cEJ, cB
            if let dEJ = test.degenerateExtJSON {
                do {
                    let parsed = try BSONDocument(extendedJSON: dEJ)
                    check(
                        &tally,
                        "\(id): dEJ->cEJ",
                        normalizeJSON(parsed.canonicalExtendedJSON) == cEJ,
                        "got \(parsed.canonicalExtendedJSON), want \(cEJ)"
                    )
                    if !lossy {
                        check(&tally, "\(id): dEJ->cB", parsed.bytes == cB, "got \(parsed.bytes.hex), want \(cB.hex)")
                    }
                } catch {
                    check(&tally, "\(id): parse dEJ", false, "degenerate_extjson \(dEJ) rejected: \(error)")
                }
            }
        }
        for test in root.decodeErrors ?? [] {
            let id = "\(file): \(test.description): decodeError"
            let input = [UInt8](hex: test.bson)
            // The same error, at the same offset from the reader index, in every layout.
            switch Self.read(input, id) {
            case .value(let accepted):
                check(&tally, id, false, "accepted: \(accepted.canonical)")
            case .error(let error, let fields):
                // The offset points at a byte of the input.
                let offset = (error as? BSONError)?.offset
                let offsetInBounds = offset.map { $0 >= 0 && $0 < input.count } ?? false
                check(&tally, id, offsetInBounds, "not a BSONError with an offset in the input: \(fields)")
            }
        }
        for test in root.parseErrors ?? [] {
            let description = test.description
            let input = test.string
            if isDecimal {
                do {
                    let value = try BSONDecimal128(input)
                    check(&tally, "\(file): \(description): parseError", false, "\"\(input)\" parsed as \(value)")
                } catch {
                    check(&tally, "\(file): \(description): parseError", error.code == .invalidDecimal128, "wrong code \(error)")
                }
                // The same string inside Extended JSON.
                let json = "{\"d\": {\"$numberDecimal\": \"\(input.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))\"}}"
                check(
                    &tally,
                    "\(file): \(description): parseError in $numberDecimal",
                    (try? BSONDocument(extendedJSON: json)) == nil,
                    "\(json) accepted"
                )
            } else {
                do {
                    let accepted = try BSONDocument(extendedJSON: input)
                    check(&tally, "\(file): \(description): parseError", false, "accepted as \(accepted.canonicalExtendedJSON)")
                } catch {
                    check(&tally, "\(file): \(description): parseError", true, "")
                }
            }
        }
    }
}
