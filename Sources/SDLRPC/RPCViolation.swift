/// One way a received message breaks the spec, as lenient decoding reports it
/// (``RPCReceivePolicy/lenient``): what is wrong, where, and whether the value stayed in the
/// typed value or was dropped from it (and kept raw in `droppedParameters`).
///
/// `code` is the ``RPCError/Code`` that strict decoding throws for the same violation, so the
/// names are the stable ones tools already print (`missingParameter`, `valueOutOfRange`, …) and,
/// as there, only this module makes them. Unlike `RPCError`, a violation is a record, not an
/// error: `==` compares every property.
///
/// ```swift
/// let decoded = try RPCDecoded<SDLRegisterAppInterfaceResponse>(parameters: bytes, format: .json)
/// for violation in decoded.violations { print(violation) }
/// // displayCapabilities.imageFields[0].imageTypeSupported: missing mandatory parameter (dropped displayCapabilities.imageFields[0])
/// ```
public struct RPCViolation: Hashable, Sendable, CustomStringConvertible {
    /// The kinds of violation: the codes of ``RPCError``.
    public typealias Code = RPCError.Code

    /// What is wrong.
    public let code: Code
    /// Where in the parameters, outermost first, array elements by their index on the wire.
    public let path: [RPCError.PathComponent]
    /// A human-readable explanation.
    public let detail: String
    /// The part kept out of the typed value because of this violation (the nearest optional
    /// parameter or array element around `path`, so a prefix of it), or nil when the value stayed
    /// in the typed value (a constraint violation, an unknown enum value).
    public let droppedPath: [RPCError.PathComponent]?

    init(code: Code, path: [RPCError.PathComponent], detail: String, droppedPath: [RPCError.PathComponent]?) {
        self.code = code
        self.path = path
        self.detail = detail
        self.droppedPath = droppedPath
    }

    /// The violation an error of a decoding or validation pass stands for; `depthInsideDroppedPart` counts
    /// the components of its path that lie inside the part dropped for it (nil: nothing dropped).
    init(_ error: RPCError, depthInsideDroppedPart: Int?) {
        self.init(
            code: error.code, path: error.path, detail: error.detail,
            droppedPath: depthInsideDroppedPart.map { Array(error.path.dropLast($0)) })
    }

    /// Whether the value was dropped from the typed value (and kept raw).
    public var isDropped: Bool { self.droppedPath != nil }

    /// The path as text, e.g. `displayCapabilities.imageFields[3].imageTypeSupported`.
    public var pathString: String { RPCError.text(of: self.path) }

    /// The error strict decoding throws for this violation (the first one it meets).
    public var error: RPCError { RPCError(self.code, path: self.path, self.detail) }

    /// `path: detail`, and `(dropped path)` for a dropped part.
    public var description: String {
        var text = self.path.isEmpty ? self.detail : "\(self.pathString): \(self.detail)"
        if let droppedPath = self.droppedPath {
            text += " (dropped \(RPCError.text(of: droppedPath)))"
        }
        return text
    }
}
