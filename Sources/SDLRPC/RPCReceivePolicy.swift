/// What a decoder does with a received message that breaks the spec: refuse it, read what
/// conforms and report the rest, or read what it can without looking.
///
/// Real peers break the spec: SDL Core 8.2.0's RegisterAppInterface response leaves the mandatory
/// `imageTypeSupported` out of 10 of its 12 `displayCapabilities.imageFields`, so an app that
/// refused it could not connect. The roles choose differently, as SDL Core does: an app reads
/// what a head unit sends with ``lenient`` and sends strictly (encoding always validates unless
/// told not to); a head unit reads strictly and answers a request it cannot read with
/// INVALID_DATA (``AnyRPCMessage/invalidDataResponse(functionID:correlationID:error:)``).
///
/// Under ``lenient`` and ``off`` a decoder keeps a non-conforming part out of the typed value
/// and keeps its data: the nearest optional parameter or array element around a violation that
/// a typed value cannot hold (a mandatory parameter missing, a value of the wrong type, a number
/// the Swift type cannot store) goes, as it was received, into the `droppedParameters` of the
/// struct that holds it (``RPCDroppedParameters``), and encoding writes it back in place. A
/// violation no optional part contains (a mandatory parameter of the message itself) still
/// fails, and so does what no value can be read from: malformed JSON or BSON, nesting beyond
/// `maxNestingDepth`, a repeated key.
///
/// A struct with a private backing value rather than an enum, so that adding a policy is not a
/// breaking change.
public struct RPCReceivePolicy: Hashable, Sendable, CustomStringConvertible {
    private enum Backing: String, Hashable, Sendable {
        case strict, lenient, off
    }

    private let backing: Backing

    private init(_ backing: Backing) { self.backing = backing }

    /// Refuse: the first violation is thrown as an `RPCError` naming its parameter path. Spec
    /// constraints (ranges, lengths, sizes, enum values) are checked when `RPCCodingOptions.validate`
    /// is true, as before this policy existed. The default, and what a head unit uses.
    public static let strict = RPCReceivePolicy(.strict)

    /// Read what conforms, keep the rest raw, report every violation with its path
    /// (``RPCViolation``): constraint violations leave the value in the typed value (a string
    /// longer than `maxlength` is still the peer's string) and unknown enum values stay
    /// `.unknown(name)`; values a typed value cannot hold are dropped from it, nearest optional
    /// part first, and kept in `droppedParameters`. `RPCCodingOptions.validate` does not apply:
    /// constraints are always checked and reported. What an app uses for what it receives.
    public static let lenient = RPCReceivePolicy(.lenient)

    /// Read as ``lenient`` does, without checking constraints or reporting anything: no
    /// violations are listed (a dropped part's `droppedParameters` entry still says why it was
    /// dropped). For tools that only look.
    public static let off = RPCReceivePolicy(.off)

    /// `strict`, `lenient` or `off`.
    public var description: String { self.backing.rawValue }

    /// Whether a decoder keeps non-conforming optional parts raw instead of failing.
    var keepsNonconformingParts: Bool { self.backing != .strict }
}
