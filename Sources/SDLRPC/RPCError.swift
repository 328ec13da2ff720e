/// The error every malformed, invalid or unsupported RPC input of this module is reported with.
///
/// `code` says what went wrong (an open set: adding a code is not a breaking change), `path` where
/// in the parameters (`moduleData.climateControlData.fanSpeed`, array elements as `name[3]`),
/// `offset` the byte offset in the parameter bytes for syntax errors, and `detail` explains it for a
/// human. `description` renders `path: detail`, e.g.
/// `moduleData.climateControlData.fanSpeed: above maxvalue 100`.
///
/// `RPCError` is `Equatable` and `Hashable` by its `code` alone, as swift-asn1's `ASN1Error` is:
/// `error == RPCError(.missingParameter, "")` holds for every missing parameter, whatever the path,
/// offset and detail; compare those properties explicitly where they matter.
public struct RPCError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let code: Code
    /// Where in the parameters, outermost first; empty for errors of the whole message.
    public internal(set) var path: [PathComponent]
    /// The byte offset in the parameter bytes, for errors found while parsing; nil otherwise.
    public let offset: Int?
    /// A human-readable explanation.
    public let detail: String
    /// Set on an error met while reading a non-conforming part again as raw parameters (a BSON
    /// value no `RPCValue` holds): no enclosing optional part could keep it either, so lenient
    /// decoding passes it on instead of trying again one level up.
    var isFinal = false

    /// An error of kind `code` at `path` (and, for syntax errors, at byte `offset`).
    public init(_ code: Code, path: [PathComponent] = [], offset: Int? = nil, _ detail: String) {
        self.code = code
        self.path = path
        self.offset = offset
        self.detail = detail
    }

    /// Whether both errors have the same code; path, offset and detail are not compared.
    public static func == (lhs: RPCError, rhs: RPCError) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the code only, in line with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
    }

    /// One step of a parameter path: a parameter name or an array index.
    public enum PathComponent: Hashable, Sendable {
        /// A parameter name.
        case key(String)
        /// An element of an array, counted from 0.
        case index(Int)
    }

    /// The path as text: keys joined by `.`, indices as `[n]`, e.g. `windowCapabilities[2].textFields`.
    public var pathString: String { Self.text(of: self.path) }

    /// A path as text, as `pathString` shows it.
    static func text(of path: [PathComponent]) -> String {
        var text = ""
        for component in path {
            switch component {
            case .key(let key):
                if !text.isEmpty { text += "." }
                text += key
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }

    /// `path: detail (at byte offset)`, leaving out what is absent.
    public var description: String {
        var text = self.path.isEmpty ? self.detail : "\(self.pathString): \(self.detail)"
        if let offset = self.offset {
            text += " (at byte \(offset))"
        }
        return text
    }

    /// Whether lenient decoding keeps the part this error is about out of the typed value, raw:
    /// the value is there and well-formed, only not what the typed value can hold. Syntax,
    /// nesting and repeated keys are not: no value can be read from them.
    var isContainable: Bool {
        guard !self.isFinal else { return false }
        switch self.code {
        case .missingParameter, .typeMismatch, .notAnInteger, .numberOutOfRange: return true
        default: return false
        }
    }

    /// This error with `component` put in front of its path (errors are built from the leaf up).
    public func prefixed(_ component: PathComponent) -> RPCError {
        var copy = self
        copy.path.insert(component, at: 0)
        return copy
    }

    /// The kind of an error. Only this module makes codes: the static members below are all there
    /// are. Adding one is not a breaking change.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case malformedInput, invalidUTF8, nestingTooDeep
            case typeMismatch, notAnInteger, numberOutOfRange, missingParameter, duplicateParameter
            case unknownParameterNamedLikeKnown
            case valueOutOfRange, lengthOutOfRange, sizeOutOfRange, unknownEnumValue, nonFiniteNumber
            case unknownFunction, invalidPayload
        }

        private let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// The stable, machine-readable name of the code, e.g. `"missingParameter"` (the member's
        /// name; tools print it).
        public var name: String { self.backing.rawValue }

        /// The name.
        public var description: String { self.name }

        // Syntax (RFC 8259 for JSON).
        /// The parameter bytes are not well-formed JSON (or BSON): unexpected byte, unterminated
        /// string, bad escape, lone surrogate, control character, trailing bytes.
        public static let malformedInput = Code(.malformedInput)
        /// A string is not valid UTF-8.
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// Objects and arrays nest deeper than `RPCCodingOptions.maxNestingDepth` (decoding), or
        /// would (encoding).
        public static let nestingTooDeep = Code(.nestingTooDeep)

        // Decoding against the spec.
        /// A parameter has the wrong JSON/BSON type (e.g. a string where the spec says Integer).
        public static let typeMismatch = Code(.typeMismatch)
        /// An Integer parameter holds a number with a fractional part (e.g. 1.5).
        public static let notAnInteger = Code(.notAnInteger)
        /// A number does not fit the parameter's storage (Int32, Int64, or a finite Double).
        public static let numberOutOfRange = Code(.numberOutOfRange)
        /// A mandatory parameter is absent.
        public static let missingParameter = Code(.missingParameter)
        /// A name appears twice in one object (a spec parameter or not, at any level). RFC 8259
        /// leaves repeated names undefined and peers read them differently, so neither decoding
        /// nor encoding accepts them.
        public static let duplicateParameter = Code(.duplicateParameter)
        /// A parameter kept as unknown (`unknownParameters`) has the name of a parameter the spec
        /// defines for that struct: encoded, it would repeat that parameter or be read back as it.
        public static let unknownParameterNamedLikeKnown = Code(.unknownParameterNamedLikeKnown)

        // Validation (MOBILE_API.xml constraints).
        /// A number is below `minvalue` or above `maxvalue`.
        public static let valueOutOfRange = Code(.valueOutOfRange)
        /// A string is shorter than `minlength` or longer than `maxlength` (in Unicode scalars).
        public static let lengthOutOfRange = Code(.lengthOutOfRange)
        /// An array has fewer than `minsize` or more than `maxsize` elements.
        public static let sizeOutOfRange = Code(.sizeOutOfRange)
        /// An enum parameter holds a name the spec does not define (decoded as `.unknown`).
        public static let unknownEnumValue = Code(.unknownEnumValue)
        /// A Float parameter is NaN or infinite, which neither JSON nor the spec allows.
        public static let nonFiniteNumber = Code(.nonFiniteNumber)

        // Messages.
        /// No function of the spec has this name or id, or it has no message of this RPC type.
        public static let unknownFunction = Code(.unknownFunction)
        /// The RPC payload's binary header is malformed (see `SDLProtocolError`), or a message
        /// cannot be put in one (an erroneous response that is no response, a BSON key with a NUL).
        public static let invalidPayload = Code(.invalidPayload)
    }
}

extension RPCError {
    static func missingParameter(_ name: StaticString) -> RPCError {
        RPCError(.missingParameter, path: [.key(name.description)], "missing mandatory parameter")
    }
}
