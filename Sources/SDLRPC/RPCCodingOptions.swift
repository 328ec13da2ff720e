/// Settings and limits for encoding and decoding RPC parameters.
public struct RPCCodingOptions: Hashable, Sendable {
    /// Whether decoding validates the decoded value against the spec (ranges, lengths, sizes, enum
    /// values) and encoding validates before writing. Default: true. Turn it off to look at
    /// invalid messages (a dissector), or to send deliberately invalid ones (a test peer); unknown
    /// enum values only decode with it off (or under the lenient policy), as `.unknown(name)`.
    /// Decoding reads it under the ``RPCReceivePolicy/strict`` policy only: ``RPCReceivePolicy/lenient``
    /// always checks and reports, ``RPCReceivePolicy/off`` never checks. Mandatory parameters and
    /// value types are always checked when decoding. Whatever this says, decoders refuse repeated keys
    /// and nesting beyond `maxNestingDepth`, and encoders refuse to write what those decoders
    /// would refuse (and unknown parameters named like spec parameters), so that nothing we write
    /// can be read in two ways.
    public var validate: Bool
    /// The deepest nesting of objects and arrays a decoder accepts, counting the parameters object
    /// as 1. Default: 32. The deepest path of spec 8.0.0 nests 10 levels (GetSystemCapability response
    /// `systemCapability.displayCapabilities[].windowCapabilities[].buttonCapabilities[].moduleInfo.location`);
    /// only the recursive `VideoStreamingCapability` goes deeper. Bounds recursion, so hostile input
    /// cannot exhaust the stack. Encoders refuse values that nest deeper, naming the path.
    ///
    /// Never more than ``nestingDepthCeiling``: a larger value is stored as the ceiling, so a
    /// careless `Int.max` cannot switch the protection off, and the value read back is the one
    /// every reader, writer and validator enforces.
    public var maxNestingDepth: Int {
        get { self.clampedMaxNestingDepth }
        set { self.clampedMaxNestingDepth = min(newValue, Self.nestingDepthCeiling) }
    }

    private var clampedMaxNestingDepth: Int

    /// The deepest nesting `maxNestingDepth` may allow: 100.
    ///
    /// Readers, writers and the validator recurse once per level, and a secondary thread may have
    /// as little as 512 KiB of stack (Darwin's default, Swift concurrency's pool threads). Measured
    /// on x86_64 Linux, a level costs up to about 3.4 KiB in a debug build (JSON parameters the
    /// spec does not define; a generated struct 2.8 KiB) and 1.1 KiB in a release build (BSON,
    /// with SDLBSON's validator), so 100 levels take at most about 340 KiB in debug and 110 KiB in
    /// release, leaving the caller's own frames room; a test runs every reader and writer at this
    /// depth on a 512 KiB thread. BSON input is bounded by `BSONLimits.nestingDepthCeiling` (128)
    /// too, which is higher, so JSON and BSON accept the same depths.
    public static let nestingDepthCeiling = 100

    /// What decoding does with a message that breaks the spec: throw (``RPCReceivePolicy/strict``,
    /// the default), read what conforms and report the rest (``RPCReceivePolicy/lenient``, what an
    /// app uses for what a head unit sends), or read without reporting (``RPCReceivePolicy/off``).
    /// Encoding does not read it: what we send is validated as `validate` says.
    public var receivePolicy: RPCReceivePolicy

    /// The most violations a lenient decode lists (``RPCDecoded/violations``,
    /// ``AnyRPCMessage/violations``). Default: 100. Bounds the list a hostile message can make
    /// us build; the data of every dropped part is kept whatever this says, since it is part of
    /// the message (and bounded by its size).
    public var maxViolations: Int

    public init(
        validate: Bool = true, maxNestingDepth: Int = 32, receivePolicy: RPCReceivePolicy = .strict, maxViolations: Int = 100
    ) {
        self.validate = validate
        self.clampedMaxNestingDepth = min(maxNestingDepth, Self.nestingDepthCeiling)
        self.receivePolicy = receivePolicy
        self.maxViolations = maxViolations
    }

    /// Validate, nesting up to 32 levels, decode strictly.
    public static let `default` = RPCCodingOptions()

    /// The default options with the ``RPCReceivePolicy/lenient`` receive policy: what an app
    /// reads a head unit's messages with.
    public static let lenient = RPCCodingOptions(receivePolicy: .lenient)
}

/// How the parameters of an RPC travel: JSON text (protocol versions 1–4, and 5 when negotiated)
/// or a BSON document (protocol version 5). Protocol spec 5.4.1 knows no other.
public enum RPCParameterFormat: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// JSON text (RFC 8259).
    case json
    /// A BSON document (protocol version 5).
    case bson

    /// `json` or `bson`.
    public var description: String { self.rawValue }

    /// Tells BSON from JSON by the bytes: a BSON document starts with its own length (int32, little
    /// endian) and ends with a zero byte; JSON text starts with `{` or whitespace and cannot contain
    /// a zero byte.
    public static func detect<Bytes: BidirectionalCollection>(_ bytes: Bytes) -> RPCParameterFormat where Bytes.Element == UInt8 {
        if bytes.count >= 5, bytes.last == 0 {
            var length = 0
            for (shift, byte) in bytes.prefix(4).enumerated() {
                length |= Int(byte) << (8 * shift)
            }
            if length == bytes.count {
                return .bson
            }
        }
        return .json
    }
}
