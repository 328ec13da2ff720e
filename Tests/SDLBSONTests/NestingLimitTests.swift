import NIOCore
import SDLTestSupport
import Testing

@testable import SDLBSON

/// `BSONLimits.maximumNestingDepth` is clamped to `BSONLimits.nestingDepthCeiling` by every
/// recursive reader, so no configuration lets a nesting bomb run a thread out of stack.
@Suite struct NestingLimitTests {
    static let unlimited = BSONLimits(maximumNestingDepth: .max)

    /// `{"a": {"a": …}}`, a recursive Codable type.
    final class Nest: Codable {
        var a: Nest?
        init(a: Nest?) { self.a = a }

        var depth: Int {
            var depth = 1
            var node = self
            while let next = node.a {
                depth += 1
                node = next
            }
            return depth
        }
    }

    func underlyingBSONError(_ body: () throws -> Any) -> BSONError? {
        do {
            _ = try body()
        } catch DecodingError.dataCorrupted(let context) {
            return context.underlyingError as? BSONError
        } catch {
            return nil
        }
        return nil
    }

    @Test func aDeepBombIsATypedErrorWhateverTheConfiguredLimit() throws {
        let ceiling = BSONLimits.nestingDepthCeiling
        #expect(ceiling == 128)
        #expect(Self.unlimited.effectiveNestingDepth == ceiling)
        #expect(BSONLimits(maximumNestingDepth: 50).effectiveNestingDepth == 50)
        let bomb = HostileInputTests.nestingBomb(depth: 100_000)

        // Binary: the first document too deep starts `ceiling` levels × 7 header bytes in.
        do {
            _ = try BSONDocument(validating: bomb, limits: Self.unlimited)
            Issue.record("100,000 levels accepted")
        } catch {
            #expect(error.code == .nestingTooDeep)
            #expect(error.offset == 7 * ceiling)
        }
        // Exactly at the ceiling is accepted, one more level is not.
        #expect((try? BSONDocument(validating: HostileInputTests.nestingBomb(depth: ceiling - 1), limits: Self.unlimited)) != nil)
        #expect((try? BSONDocument(validating: HostileInputTests.nestingBomb(depth: ceiling), limits: Self.unlimited)) == nil)

        // Extended JSON (maximumNestingDepth + 2 used to overflow for Int.max).
        let text = String(repeating: "{\"a\":", count: 100_000) + "{}" + String(repeating: "}", count: 100_000)
        do {
            _ = try BSONDocument(extendedJSON: text, limits: Self.unlimited)
            Issue.record("100,000 levels of Extended JSON accepted")
        } catch {
            #expect(error.code == .nestingTooDeep)
        }

        // Codable, from bytes: the validation error, wrapped.
        var decoder = BSONDecoder()
        decoder.limits = Self.unlimited
        #expect(underlyingBSONError { try decoder.decode(Nest.self, from: bomb) }?.code == .nestingTooDeep)
        // Codable, from a document that never met the validator: the decoder's own check.
        let unchecked = BSONDocument(_unchecked: ByteBuffer(bytes: bomb))
        let error = underlyingBSONError { try decoder.decode(Nest.self, from: unchecked) }
        #expect(error?.code == .nestingTooDeep)
        #expect(error?.offset == 7 * (ceiling - 1) + 4, "the element holding the first document too deep")
        #expect(try decoder.decode(Nest.self, from: HostileInputTests.nestingBomb(depth: ceiling - 1)).depth == ceiling)
    }

    @Test func everyReaderFitsA512KiBStackAtTheCeiling() {
        // The deepest any reader accepts.
        let bytes = HostileInputTests.nestingBomb(depth: BSONLimits.nestingDepthCeiling - 1)
        let finished = finishesOnA512KiBStack {
            do {
                let document = try BSONDocument(validating: bytes, limits: Self.unlimited)
                let json = document.canonicalExtendedJSON
                let parsed = try BSONDocument(extendedJSON: json, limits: Self.unlimited)
                precondition(parsed == document)
                let tree = try BSONOrderedDocument(document).encoded()
                precondition(tree == document)
                var decoder = BSONDecoder()
                decoder.limits = Self.unlimited
                let nest = try decoder.decode(Nest.self, from: document)
                precondition(nest.depth == BSONLimits.nestingDepthCeiling)
                let encoded = try BSONEncoder().encode(nest)
                precondition(encoded == document)
            } catch {
                preconditionFailure("\(error)")
            }
        }
        #expect(finished)
    }
}
