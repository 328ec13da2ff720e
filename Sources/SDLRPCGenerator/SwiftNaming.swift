/// How spec names become Swift names.
///
/// - Types: `SDL` + the spec name (`SDLResult`, `SDLImage`, `SDLCharacterSet`), so no generated type
///   shadows the standard library, Foundation or the runtime's `RPC…` types. Messages add
///   `Request`/`Response` to the function name (`SDLPublishAppServiceRequest`) unless the name
///   already ends with it (`SDLGenericResponse`); notifications keep the function name
///   (`SDLOnAppServiceData`).
/// - Parameters: the wire name unchanged (`rdsData.PS`, `windowID`), in backticks where it is a
///   Swift keyword (`` `protocol` ``), so the Swift name is always the JSON key.
/// - Enum cases: lowerCamelCase of the wire name split at `_`, `-` and spaces (`UNSUPPORTED_REQUEST`
///   → `unsupportedRequest`, `EN-US` → `enUs`, `mainField1` unchanged); a `_` is put between two
///   digits that a separator kept apart (`GEN3_8-INCH` → `gen3_8Inch`) and in front of a leading
///   digit (`2D` → `_2d`, `8KHZ` → `_8khz`); names that are Swift keywords or clash with `Optional`
///   or the enum's own members (`none`, `some`, `unknown`, `default`, `static`, …) get a trailing
///   `_` (`NONE` → `none_`). Two wire names that map to the same Swift name are refused.
public enum SwiftNaming {
    /// Keywords that cannot be used as identifiers without backticks, plus names that would clash
    /// with members every generated enum or struct has, or with `Optional`'s cases.
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init",
        "inout", "internal", "let", "operator", "private", "precedencegroup", "protocol", "public",
        "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue",
        "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return",
        "throw", "switch", "where", "while", "as", "Any", "false", "is", "nil", "self", "Self", "super",
        "throws", "true", "try", "await", "Type", "Protocol",
    ]

    /// Case names that would clash with what a generated enum already has or with `Optional`.
    static let reservedCaseNames: Set<String> = [
        "none", "some", "unknown", "isKnown", "wireName", "knownCases", "description", "hashValue", "init",
    ]

    /// Property names a generated struct already uses.
    static let reservedPropertyNames: Set<String> = ["unknownParameters", "droppedParameters", "extraParameters"]

    public static func typeName(_ specName: String) -> String {
        "SDL" + specName
    }

    public static func messageTypeName(_ function: SpecFunction) -> String {
        switch function.messageType {
        case .request:
            return "SDL" + function.name + (function.name.hasSuffix("Request") ? "" : "Request")
        case .response:
            return "SDL" + function.name + (function.name.hasSuffix("Response") ? "" : "Response")
        case .notification:
            return "SDL" + function.name
        }
    }

    /// A parameter's property name, with backticks where needed.
    public static func propertyName(_ wireName: String) -> String {
        self.keywords.contains(wireName) ? "`\(wireName)`" : wireName
    }

    /// A parameter's name where backticks are not allowed but a plain identifier is needed (locals).
    public static func localName(_ wireName: String) -> String {
        self.keywords.contains(wireName) ? wireName + "_" : wireName
    }

    /// The static member of `FunctionID` for a function name (`PublishAppService` → `publishAppService`).
    public static func functionIDMember(_ name: String) -> String {
        let member = self.lowerCamelWord(name)
        return self.keywords.contains(member) || self.reservedCaseNames.contains(member) ? member + "_" : member
    }

    /// An enum case name for a wire name, per the rules above.
    public static func caseName(_ wireName: String) -> String {
        let parts = wireName.split(whereSeparator: { $0 == "_" || $0 == "-" || $0 == " " }).map(String.init)
        var result = ""
        for (index, part) in parts.enumerated() {
            let word: String
            let hasLower = part.contains(where: { $0.isLowercase })
            if index == 0 {
                word = hasLower ? self.lowerCamelWord(part) : part.lowercased()
            } else {
                let lowered = hasLower ? part : part.lowercased()
                word = lowered.prefix(1).uppercased() + lowered.dropFirst()
            }
            if let last = result.last, last.isNumber, let first = word.first, first.isNumber {
                result += "_"
            }
            result += word
        }
        if let first = result.first, first.isNumber {
            result = "_" + result
        }
        if self.keywords.contains(result) || self.reservedCaseNames.contains(result) {
            result += "_"
        }
        return result
    }

    /// `PublishAppService` → `publishAppService`, `HMILevel` → `hmiLevel`, `mainField1` unchanged.
    static func lowerCamelWord(_ word: String) -> String {
        let characters = Array(word)
        var upperRun = 0
        while upperRun < characters.count, characters[upperRun].isUppercase {
            upperRun += 1
        }
        if upperRun == 0 {
            return word
        }
        if upperRun == characters.count {
            return word.lowercased()
        }
        // Keep the last capital of a run that starts the next word: `HMILevel` → `hmi` + `Level`.
        let lowerCount = upperRun > 1 && characters[upperRun].isLetter ? upperRun - 1 : upperRun
        return String(characters[..<lowerCount]).lowercased() + String(characters[lowerCount...])
    }
}
