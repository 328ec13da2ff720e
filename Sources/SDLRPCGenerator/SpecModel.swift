/// The RPC spec (MOBILE_API.xml) as the generator sees it: names, types and constraints, in
/// document order. Descriptions, warnings and todos are read and checked but not kept: generated
/// code carries no spec prose.
///
/// Only the current definitions count: `<history>` children (earlier versions of an item) are
/// parsed and checked, then left out, and so are items marked `removed="true"`. That is how spec
/// 8.0.0 yields 152 functions (messages), 121 structs and 111 enums.
public struct Spec: Hashable, Sendable {
    /// The `version` attribute of `<interface>`, e.g. "8.0.0".
    public var version: String
    public var enums: [SpecEnum]
    public var structs: [SpecStruct]
    public var functions: [SpecFunction]

    public func enumNamed(_ name: String) -> SpecEnum? { self.enums.first(where: { $0.name == name }) }
    public func structNamed(_ name: String) -> SpecStruct? { self.structs.first(where: { $0.name == name }) }
}

/// Lifecycle attributes shared by enums, elements, structs, functions and params.
public struct SpecLifecycle: Hashable, Sendable {
    public var since: String?
    public var until: String?
    public var deprecated: Bool
    public var removed: Bool

    public init(since: String? = nil, until: String? = nil, deprecated: Bool = false, removed: Bool = false) {
        self.since = since
        self.until = until
        self.deprecated = deprecated
        self.removed = removed
    }
}

public struct SpecEnum: Hashable, Sendable {
    public var name: String
    public var elements: [SpecEnumElement]
    public var lifecycle: SpecLifecycle
    /// `platform="documentation"`: the enum only documents names that params carry as plain strings.
    public var isDocumentationOnly: Bool
    /// `internal_scope`, e.g. "base" for Result and FunctionID.
    public var internalScope: String?
    public var line: Int
}

public struct SpecEnumElement: Hashable, Sendable {
    /// The wire name.
    public var name: String
    /// `internal_name`: what other generators use as an identifier; not on the wire.
    public var internalName: String?
    /// `value` (e.g. FunctionID ids, LightName numbers; the wire still carries the name).
    public var value: Int64?
    /// `hexvalue`, checked to agree with `value`.
    public var hexValue: String?
    public var rootScreen: Bool?
    public var lifecycle: SpecLifecycle
    public var line: Int
}

public struct SpecStruct: Hashable, Sendable {
    public var name: String
    public var params: [SpecParam]
    public var lifecycle: SpecLifecycle
    public var line: Int
}

public enum SpecMessageType: String, Hashable, Sendable, CaseIterable {
    case request, response, notification
}

public struct SpecFunction: Hashable, Sendable {
    public var name: String
    /// The FunctionID element this function names, e.g. "PublishAppServiceID".
    public var functionIDName: String
    /// The id, resolved through the FunctionID enum.
    public var functionID: Int64
    public var messageType: SpecMessageType
    public var params: [SpecParam]
    public var lifecycle: SpecLifecycle
    public var line: Int
}

/// The type of a param: one of the four base types or a spec enum or struct.
public enum SpecType: Hashable, Sendable {
    case boolean
    case integer
    case float
    case string
    case enumeration(String)
    case structure(String)
}

public struct SpecParam: Hashable, Sendable {
    public var name: String
    public var type: SpecType
    public var mandatory: Bool
    public var isArray: Bool
    public var minSize: Int?
    public var maxSize: Int?
    /// `minvalue`/`maxvalue` as written (decimal text); `minValue`/`maxValue` parse them.
    public var minValueText: String?
    public var maxValueText: String?
    public var minLength: Int?
    public var maxLength: Int?
    public var defaultValue: String?
    /// `platform="documentation"` (e.g. `success`/`resultCode`/`info` of responses).
    public var isDocumentationPlatform: Bool
    /// `<element>` children: the documented subset of an enum (per-response result codes).
    /// Documentation only: decoding accepts every value of the enum.
    public var documentedElements: [String]
    public var lifecycle: SpecLifecycle
    public var line: Int

    public var minValue: Double? { self.minValueText.flatMap { Double($0) } }
    public var maxValue: Double? { self.maxValueText.flatMap { Double($0) } }

    /// The effective minimum string length: `minlength`, else 1 (an empty string is invalid unless
    /// the spec allows it).
    public var effectiveMinLength: Int { self.minLength ?? 1 }

    /// Whether an Integer param needs 64 bits: its range reaches beyond Int32.
    public var needsInt64: Bool {
        guard case .integer = self.type else { return false }
        if let min = self.minValue, min < Double(Int32.min) { return true }
        if let max = self.maxValue, max > Double(Int32.max) { return true }
        return false
    }
}
