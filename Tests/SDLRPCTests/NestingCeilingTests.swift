import Foundation
import NIOCore
import SDLBSON
import SDLRPC
import Testing

/// `RPCCodingOptions.maxNestingDepth` never exceeds `RPCCodingOptions.nestingDepthCeiling`, so no
/// setting lets nested input or a nested value run a thread out of stack.
@Suite("Nesting ceiling")
struct NestingCeilingTests {
    static let ceiling = RPCCodingOptions.nestingDepthCeiling
    static let unlimited = RPCCodingOptions(validate: false, maxNestingDepth: .max)
    static let unlimitedValidating = RPCCodingOptions(validate: true, maxNestingDepth: .max)

    /// A `VideoStreamingCapability` whose deepest container sits at `levels`: structs at odd
    /// levels, `additionalVideoStreamingCapabilities` arrays at even ones, and at an even depth an
    /// `ImageResolution` object last. Valid against the spec at every depth.
    static func videoCapability(levels: Int) -> String {
        let pairs = (levels - 1) / 2
        let innermost = levels % 2 == 0
            ? #"{"preferredResolution":{"resolutionWidth":800,"resolutionHeight":480}}"#
            : #"{"maxBitrate":5}"#
        return String(repeating: #"{"maxBitrate":5,"additionalVideoStreamingCapabilities":["#, count: pairs) + innermost
            + String(repeating: "]}", count: pairs)
    }

    /// An object whose member `a` holds arrays down to level `levels`.
    static func arrays(levels: Int) -> String {
        #"{"a":"# + String(repeating: "[", count: levels - 1) + String(repeating: "]", count: levels - 1) + "}"
    }

    /// The same value built in code, for the encoders.
    static func arrayTree(levels: Int) -> RPCValue {
        var value = RPCValue.array([])
        for _ in 0..<(levels - 2) { value = .array([value]) }
        return .object(["a": value])
    }

    @Test("a larger maxNestingDepth is stored as the ceiling")
    func clamped() {
        #expect(Self.ceiling == 100)
        #expect(RPCCodingOptions(maxNestingDepth: .max).maxNestingDepth == 100)
        #expect(RPCCodingOptions(maxNestingDepth: 50).maxNestingDepth == 50)
        var options = RPCCodingOptions()
        #expect(options.maxNestingDepth == 32)
        options.maxNestingDepth = 1_000_000
        #expect(options.maxNestingDepth == 100)
        #expect(options == RPCCodingOptions(maxNestingDepth: 100))
        #expect(RPCValidator(maxNestingDepth: .max).maxNestingDepth == 100)
    }

    @Test("a 100,000-level bomb is nestingTooDeep at the ceiling, whatever the setting")
    func bombs() throws {
        let depth = 100_000
        // JSON: the container one level below the ceiling is refused where it starts.
        let unknownError = try #require(throws: RPCError.self) {
            try RPCValue(jsonObject: Self.arrays(levels: depth), options: Self.unlimited)
        }
        #expect(unknownError.code == .nestingTooDeep)
        #expect(unknownError.offset == 5 + Self.ceiling - 1, "{\"a\": then 99 brackets")
        #expect(unknownError.path.count == Self.ceiling, "a, then the index 0 in each of 99 arrays")
        let typedError = try #require(throws: RPCError.self) {
            try SDLVideoStreamingCapability(jsonParameters: Self.videoCapability(levels: depth), options: Self.unlimited)
        }
        #expect(typedError.code == .nestingTooDeep)
        #expect(typedError.pathString.hasPrefix("additionalVideoStreamingCapabilities[0].additionalVideoStreamingCapabilities[0]"))
        // BSON: SDLBSON's validator refuses it before anything recurses.
        let atTheCeiling = try BSONDocument(validating: try Self.arrayTree(levels: Self.ceiling).bsonDocument(options: Self.unlimited))
        var deeper = ByteBuffer()
        deeper.writeBSONDocument { document in
            document.appendDocument("a", atTheCeiling)
        }
        let bsonError = try #require(throws: RPCError.self) { try RPCValue(bsonObject: deeper, options: Self.unlimited) }
        #expect(bsonError.code == .nestingTooDeep)
        // Encoders refuse a value built in code that nests past the ceiling, naming the path.
        let encodeError = try #require(throws: RPCError.self) {
            try Self.arrayTree(levels: Self.ceiling + 1).jsonText(options: Self.unlimited)
        }
        #expect(encodeError.code == .nestingTooDeep)
        #expect(encodeError.path.count == Self.ceiling)
        #expect(throws: RPCError.self) { try Self.arrayTree(levels: Self.ceiling + 1).bsonDocument(options: Self.unlimited) }
    }

    /// Runs `body` on a thread with a 512 KiB stack (Darwin's default for secondary threads) and
    /// reports whether it finished; running out of stack would crash the test process instead.
    static func finishesOnA512KiBStack(_ body: @escaping @Sendable () -> Void) -> Bool {
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            body()
            finished.signal()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        return finished.wait(timeout: .now() + 120) == .success
    }

    @Test("every reader, writer and the validator fit a 512 KiB stack at the ceiling, in JSON and BSON")
    func atTheCeilingOnASmallStack() throws {
        let ceiling = Self.ceiling
        let typedText = Self.videoCapability(levels: ceiling)
        let unknownText = Self.arrays(levels: ceiling)
        let finished = Self.finishesOnA512KiBStack {
            do {
                for options in [Self.unlimited, Self.unlimitedValidating] {
                    // Typed: JSON in, validated, JSON and BSON out and back.
                    let typed = try SDLVideoStreamingCapability(jsonParameters: typedText, options: options)
                    try typed.validate(options: options)
                    let fromJSON = try SDLVideoStreamingCapability(jsonParameters: typed.jsonParameters(options: options), options: options)
                    let fromBSON = try SDLVideoStreamingCapability(bsonParameters: typed.bsonParameters(options: options), options: options)
                    precondition(fromJSON == typed && fromBSON == typed)
                    // Parameters the spec does not define: the generic tree, and inside a struct.
                    let tree = try RPCValue(jsonObject: unknownText, options: options)
                    let treeFromJSON = try RPCValue(jsonObject: tree.jsonText(options: options), options: options)
                    let treeFromBSON = try RPCValue(bsonObject: tree.bsonDocument(options: options), options: options)
                    precondition(tree == Self.arrayTree(levels: ceiling) && treeFromJSON == tree && treeFromBSON == tree)
                    let holder = try SDLImageResolution(
                        jsonParameters: #"{"resolutionWidth":1,"resolutionHeight":2,"# + unknownText.dropFirst(), options: options)
                    let holderFromBSON = try SDLImageResolution(bsonParameters: holder.bsonParameters(options: options), options: options)
                    let holderFromJSON = try SDLImageResolution(jsonParameters: holder.jsonParameters(options: options), options: options)
                    precondition(holderFromBSON == holder && holderFromJSON == holder)
                }
                var validator = RPCValidator(maxNestingDepth: .max)
                try SDLVideoStreamingCapability(jsonParameters: typedText, options: Self.unlimited).validate(into: &validator)
                precondition(validator.errors.isEmpty, "\(validator.errors)")
            } catch {
                preconditionFailure("\(error)")
            }
        }
        #expect(finished)
        // One level more is refused by every decoder and encoder.
        let deeperText = Self.videoCapability(levels: ceiling + 1)
        let error = try #require(throws: RPCError.self) {
            try SDLVideoStreamingCapability(jsonParameters: deeperText, options: Self.unlimited)
        }
        #expect(error.code == .nestingTooDeep)
        // The innermost struct, at level 101, is refused where it starts.
        #expect(error.offset == deeperText.utf8.count - #"{"maxBitrate":5}"#.utf8.count - 2 * (ceiling / 2))
        #expect(throws: RPCError.self) { try RPCValue(jsonObject: Self.arrays(levels: ceiling + 1), options: Self.unlimited) }
        #expect(throws: RPCError.self) { try Self.arrayTree(levels: ceiling + 1).bsonDocument(options: Self.unlimited) }
    }
}

extension RPCStruct {
    /// Validates as decoding with `options` does.
    func validate(options: RPCCodingOptions) throws(RPCError) {
        var validator = RPCValidator(limit: 1, maxNestingDepth: options.maxNestingDepth)
        self.validate(into: &validator)
        if let first = validator.errors.first { throw first }
    }
}
