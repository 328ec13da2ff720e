/// The error every malformed, invalid or unsupported RPC input of this module is reported with.
///
/// `code` says what went wrong (an open set: adding a code is not a breaking change), `path` where
/// in the parameters (`moduleData.climateControlData.fanSpeed`, array elements as `name[3]`),
/// `offset` the byte offset in the parameter bytes for syntax errors, and `detail` explains it for a
/// human. `description` renders `path: detail`, e.g.
/// `moduleData.climateControlData.fanSpeed: above maxvalue 100`.
public struct RPCError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var code: Code
    /// Where in the parameters, outermost first; empty for errors of the whole message.
    public var path: [PathComponent]
    /// The byte offset in the parameter bytes, for errors found while parsing; nil otherwise.
    public var offset: Int?
    /// A human-readable explanation.
    public var detail: String

    public init(_ code: Code, path: [PathComponent] = [], offset: Int? = nil, _ detail: String) {
        self.code = code
        self.path = path
        self.offset = offset
        self.detail = detail
    }

    /// One step of a parameter path: a parameter name or an array index.
    public enum PathComponent: Hashable, Sendable {
        case key(String)
        case index(Int)
    }

    /// The path as text: keys joined by `.`, indices as `[n]`, e.g. `windowCapabilities[2].textFields`.
    public var pathString: String {
        var text = ""
        for component in self.path {
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

    public var description: String {
        var text = self.path.isEmpty ? self.detail : "\(self.pathString): \(self.detail)"
        if let offset = self.offset {
            text += " (at byte \(offset))"
        }
        return text
    }

    /// This error with `component` put in front of its path (errors are built from the leaf up).
    public func prefixed(_ component: PathComponent) -> RPCError {
        var copy = self
        copy.path.insert(component, at: 0)
        return copy
    }

    /// An error code. Codes are compared by their name.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String

        public init(_ name: String) { self.name = name }

        public var description: String { self.name }

        // Syntax (RFC 8259 for JSON).
        /// The parameter bytes are not well-formed JSON (or BSON): unexpected byte, unterminated
        /// string, bad escape, lone surrogate, control character, trailing bytes.
        public static let malformedInput = Code("malformedInput")
        /// A string is not valid UTF-8.
        public static let invalidUTF8 = Code("invalidUTF8")
        /// Objects and arrays nest deeper than `RPCCodingOptions.maxNestingDepth` (decoding), or
        /// would (encoding).
        public static let nestingTooDeep = Code("nestingTooDeep")

        // Decoding against the spec.
        /// A parameter has the wrong JSON/BSON type (e.g. a string where the spec says Integer).
        public static let typeMismatch = Code("typeMismatch")
        /// An Integer parameter holds a number with a fractional part (e.g. 1.5).
        public static let notAnInteger = Code("notAnInteger")
        /// A number does not fit the parameter's storage (Int32, Int64, or a finite Double).
        public static let numberOutOfRange = Code("numberOutOfRange")
        /// A mandatory parameter is absent.
        public static let missingParameter = Code("missingParameter")
        /// A name appears twice in one object (a spec parameter or not, at any level). RFC 8259
        /// leaves repeated names undefined and peers read them differently, so neither decoding
        /// nor encoding accepts them.
        public static let duplicateParameter = Code("duplicateParameter")
        /// A parameter kept as unknown (`unknownParameters`) has the name of a parameter the spec
        /// defines for that struct: encoded, it would repeat that parameter or be read back as it.
        public static let unknownParameterNamedLikeKnown = Code("unknownParameterNamedLikeKnown")

        // Validation (MOBILE_API.xml constraints).
        /// A number is below `minvalue` or above `maxvalue`.
        public static let valueOutOfRange = Code("valueOutOfRange")
        /// A string is shorter than `minlength` or longer than `maxlength` (in Unicode scalars).
        public static let lengthOutOfRange = Code("lengthOutOfRange")
        /// An array has fewer than `minsize` or more than `maxsize` elements.
        public static let sizeOutOfRange = Code("sizeOutOfRange")
        /// An enum parameter holds a name the spec does not define (decoded as `.unknown`).
        public static let unknownEnumValue = Code("unknownEnumValue")
        /// A Float parameter is NaN or infinite, which neither JSON nor the spec allows.
        public static let nonFiniteNumber = Code("nonFiniteNumber")

        // Messages.
        /// No function of the spec has this name or id, or it has no message of this RPC type.
        public static let unknownFunction = Code("unknownFunction")
        /// The RPC payload's binary header is malformed (see `SDLProtocolError`).
        public static let invalidPayload = Code("invalidPayload")
        /// The parameter format is not available (BSON until the SDLBSON conformance lands).
        public static let unsupportedFormat = Code("unsupportedFormat")
    }
}

extension RPCError {
    static func missingParameter(_ name: StaticString) -> RPCError {
        RPCError(.missingParameter, path: [.key(name.description)], "missing mandatory parameter")
    }
}
