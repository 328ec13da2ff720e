/// Reads MOBILE_API.xml into a `Spec`, refusing anything it does not understand: an element or
/// attribute the spec format does not define in that place, text outside descriptions, an unknown
/// type name, a malformed number or version, contradictory or misplaced constraints, references
/// to enum elements that do not exist. Each error names the element and its line.
public enum SpecParser {
    /// Parses the XML bytes of a spec.
    public static func parse(_ bytes: [UInt8]) throws(GeneratorError) -> Spec {
        try self.parse(root: XMLReader.parse(bytes))
    }

    /// Parses a spec given as a string.
    public static func parse(_ text: String) throws(GeneratorError) -> Spec {
        try self.parse(Array(text.utf8))
    }

    static func parse(root: SpecXMLElement) throws(GeneratorError) -> Spec {
        guard root.name == "interface" else {
            throw GeneratorError("root element is <\(root.name)>, expected <interface>", line: root.line)
        }
        try checkAttributes(root, allowed: ["name", "version", "minVersion", "date"], required: ["version"])
        let version = root.attribute("version")!
        try checkVersion(version, attribute: "version", of: root)

        var enums: [SpecEnum] = []
        var structElements: [SpecXMLElement] = []
        var functionElements: [SpecXMLElement] = []
        for child in try children(of: root, allowed: ["enum", "struct", "function"]) {
            switch child.name {
            case "enum":
                if let parsed = try parseEnum(child, inHistory: false) {
                    enums.append(parsed)
                }
            case "struct":
                structElements.append(child)
            default:
                functionElements.append(child)
            }
        }

        // Types are resolved against the current enums and structs of the whole document.
        var typeNames: [String: Bool] = [:]  // name → is enum
        for item in enums {
            guard typeNames.updateValue(true, forKey: item.name) == nil else {
                throw GeneratorError("duplicate enum \(item.name)", line: item.line)
            }
        }
        for element in structElements {
            if try isRemoved(element) { continue }
            let name = try requiredName(element)
            guard typeNames.updateValue(false, forKey: name) == nil else {
                throw GeneratorError("struct \(name) has the name of another enum or struct", line: element.line)
            }
        }
        let context = Context(enums: enums, typeNames: typeNames)

        var structs: [SpecStruct] = []
        for element in structElements {
            if let parsed = try parseStruct(element, context: context, inHistory: false) {
                structs.append(parsed)
            }
        }

        guard let functionIDEnum = enums.first(where: { $0.name == "FunctionID" }) else {
            throw GeneratorError("the spec has no FunctionID enum", line: root.line)
        }
        try checkMessageTypeEnum(enums)
        var functions: [SpecFunction] = []
        var seenFunctions = Set<String>()
        for element in functionElements {
            guard let parsed = try parseFunction(element, context: context, functionIDs: functionIDEnum, inHistory: false) else {
                continue
            }
            guard seenFunctions.insert("\(parsed.name) \(parsed.messageType)").inserted else {
                throw GeneratorError("duplicate \(parsed.messageType) of function \(parsed.name)", line: parsed.line)
            }
            functions.append(parsed)
        }
        return Spec(version: version, enums: enums, structs: structs, functions: functions)
    }

    struct Context {
        var enums: [SpecEnum]
        var typeNames: [String: Bool]
    }

    // MARK: Items

    static func parseEnum(_ element: SpecXMLElement, inHistory: Bool) throws(GeneratorError) -> SpecEnum? {
        try checkAttributes(
            element, allowed: ["name", "since", "until", "deprecated", "removed", "internal_scope", "platform"],
            required: ["name"])
        let name = try requiredName(element)
        try checkIdentifier(name, of: element)
        let lifecycle = try parseLifecycle(element)
        var isDocumentationOnly = false
        if let platform = element.attribute("platform") {
            guard platform == "documentation" else {
                throw GeneratorError("enum \(name): unknown platform \"\(platform)\"", line: element.line)
            }
            isDocumentationOnly = true
        }
        let internalScope = element.attribute("internal_scope")
        if let internalScope, internalScope != "base" {
            throw GeneratorError("enum \(name): unknown internal_scope \"\(internalScope)\"", line: element.line)
        }
        var elements: [SpecEnumElement] = []
        for child in try children(of: element, allowed: ["description", "element", "history"]) {
            switch child.name {
            case "description":
                try checkText(child)
            case "history":
                for old in try historyEntries(child, of: element) {
                    _ = try parseEnum(old, inHistory: true)
                }
            default:
                if let parsed = try parseElement(child, of: name) {
                    guard !elements.contains(where: { $0.name == parsed.name }) else {
                        throw GeneratorError("enum \(name): duplicate element \(parsed.name)", line: child.line)
                    }
                    elements.append(parsed)
                }
            }
        }
        if lifecycle.removed { return nil }
        if !inHistory && elements.isEmpty {
            throw GeneratorError("enum \(name) has no elements", line: element.line)
        }
        return SpecEnum(
            name: name, elements: elements, lifecycle: lifecycle, isDocumentationOnly: isDocumentationOnly,
            internalScope: internalScope, line: element.line)
    }

    static func parseElement(_ element: SpecXMLElement, of enumName: String) throws(GeneratorError) -> SpecEnumElement? {
        try checkAttributes(
            element,
            allowed: ["name", "hexvalue", "internal_name", "rootscreen", "deprecated", "removed", "since", "until", "value"],
            required: ["name"])
        let name = try requiredName(element)
        // Wire names travel as JSON strings and Swift string literals: printable ASCII without quotes.
        guard name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else {
            throw GeneratorError("element \"\(name)\" of enum \(enumName): unsupported characters in the name", line: element.line)
        }
        let lifecycle = try parseLifecycle(element)
        var value: Int64?
        if let text = element.attribute("value") {
            guard let parsed = Int64(text) else {
                throw GeneratorError("element \(name) of enum \(enumName): value \"\(text)\" is not an integer", line: element.line)
            }
            value = parsed
        }
        let hexValue = element.attribute("hexvalue")
        if let hexValue {
            guard let parsed = Int64(hexValue, radix: 16), !hexValue.hasPrefix("-"), !hexValue.hasPrefix("+") else {
                throw GeneratorError("element \(name) of enum \(enumName): hexvalue \"\(hexValue)\" is not hexadecimal", line: element.line)
            }
            if let value, value != parsed {
                throw GeneratorError("element \(name) of enum \(enumName): hexvalue \(hexValue) contradicts value \(value)", line: element.line)
            }
            value = value ?? parsed
        }
        let rootScreen = try element.attribute("rootscreen").map { (text) throws(GeneratorError) in
            try parseBool(text, attribute: "rootscreen", of: element)
        }
        for child in try children(of: element, allowed: ["description", "warning", "history"]) {
            switch child.name {
            case "history":
                for old in try historyEntries(child, of: element) {
                    _ = try parseElement(old, of: enumName)
                }
            default:
                try checkText(child)
            }
        }
        if lifecycle.removed { return nil }
        return SpecEnumElement(
            name: name, internalName: element.attribute("internal_name"), value: value, hexValue: hexValue,
            rootScreen: rootScreen, lifecycle: lifecycle, line: element.line)
    }

    static func parseStruct(_ element: SpecXMLElement, context: Context, inHistory: Bool) throws(GeneratorError) -> SpecStruct? {
        try checkAttributes(element, allowed: ["name", "since", "until", "deprecated", "removed"], required: ["name"])
        let name = try requiredName(element)
        try checkIdentifier(name, of: element)
        let lifecycle = try parseLifecycle(element)
        var params: [SpecParam] = []
        for child in try children(of: element, allowed: ["description", "param", "history"]) {
            switch child.name {
            case "description":
                try checkText(child)
            case "history":
                for old in try historyEntries(child, of: element) {
                    _ = try parseStruct(old, context: context, inHistory: true)
                }
            default:
                if let param = try parseParam(child, owner: "struct \(name)", context: context) {
                    guard !params.contains(where: { $0.name == param.name }) else {
                        throw GeneratorError("struct \(name): duplicate param \(param.name)", line: child.line)
                    }
                    params.append(param)
                }
            }
        }
        if lifecycle.removed { return nil }
        return SpecStruct(name: name, params: params, lifecycle: lifecycle, line: element.line)
    }

    static func parseFunction(
        _ element: SpecXMLElement, context: Context, functionIDs: SpecEnum, inHistory: Bool
    ) throws(GeneratorError) -> SpecFunction? {
        try checkAttributes(
            element, allowed: ["name", "functionID", "messagetype", "since", "until", "deprecated", "removed"],
            required: ["name", "functionID", "messagetype"])
        let name = try requiredName(element)
        try checkIdentifier(name, of: element)
        let functionIDName = element.attribute("functionID")!
        guard let idElement = functionIDs.elements.first(where: { $0.name == functionIDName }), let id = idElement.value else {
            throw GeneratorError("function \(name): functionID \"\(functionIDName)\" is not an element of enum FunctionID with a value", line: element.line)
        }
        let typeText = element.attribute("messagetype")!
        guard let messageType = SpecMessageType(rawValue: typeText) else {
            throw GeneratorError("function \(name): unknown messagetype \"\(typeText)\"", line: element.line)
        }
        let lifecycle = try parseLifecycle(element)
        var params: [SpecParam] = []
        for child in try children(of: element, allowed: ["description", "param", "history"]) {
            switch child.name {
            case "description":
                try checkText(child)
            case "history":
                for old in try historyEntries(child, of: element) {
                    _ = try parseFunction(old, context: context, functionIDs: functionIDs, inHistory: true)
                }
            default:
                if let param = try parseParam(child, owner: "function \(name) (\(messageType))", context: context) {
                    guard !params.contains(where: { $0.name == param.name }) else {
                        throw GeneratorError("function \(name): duplicate param \(param.name)", line: child.line)
                    }
                    params.append(param)
                }
            }
        }
        if lifecycle.removed { return nil }
        return SpecFunction(
            name: name, functionIDName: functionIDName, functionID: id, messageType: messageType, params: params,
            lifecycle: lifecycle, line: element.line)
    }

    static func parseParam(_ element: SpecXMLElement, owner: String, context: Context) throws(GeneratorError) -> SpecParam? {
        try checkAttributes(
            element,
            allowed: [
                "name", "type", "mandatory", "array", "defvalue", "deprecated", "removed", "maxlength", "maxsize",
                "maxvalue", "minlength", "minsize", "minvalue", "platform", "since", "until",
            ],
            required: ["name", "type", "mandatory"])
        let name = try requiredName(element)
        try checkIdentifier(name, of: element)
        let what = "param \(name) of \(owner)"
        let fail = { (message: String) -> GeneratorError in GeneratorError("\(what): \(message)", line: element.line) }

        let typeName = element.attribute("type")!
        let type = try paramType(typeName, context: context, fail: fail)
        let mandatory = try parseBool(element.attribute("mandatory")!, attribute: "mandatory", of: element)
        let isArray = try element.attribute("array").map { (text) throws(GeneratorError) in
            try parseBool(text, attribute: "array", of: element)
        } ?? false
        let counts = try parseCounts(element, type: type, isArray: isArray, fail: fail)
        let bounds = try parseValueBounds(element, type: type, fail: fail)

        var isDocumentationPlatform = false
        if let platform = element.attribute("platform") {
            guard platform == "documentation" else {
                throw fail("unknown platform \"\(platform)\"")
            }
            isDocumentationPlatform = true
        }
        let lifecycle = try parseLifecycle(element)
        let documentedElements = try parseParamChildren(element, type: type, owner: owner, what: what, context: context)

        let param = SpecParam(
            name: name, type: type, mandatory: mandatory, isArray: isArray, minSize: counts.minSize,
            maxSize: counts.maxSize, minValueText: bounds.min, maxValueText: bounds.max, minLength: counts.minLength,
            maxLength: counts.maxLength, defaultValue: element.attribute("defvalue"),
            isDocumentationPlatform: isDocumentationPlatform, documentedElements: documentedElements,
            lifecycle: lifecycle, line: element.line)
        if let defaultValue = param.defaultValue {
            try checkDefault(defaultValue, of: param, context: context, fail: fail)
        }
        if lifecycle.removed { return nil }
        return param
    }

    /// A param's `type` attribute: a base type, or an enum or struct of the spec.
    static func paramType(_ typeName: String, context: Context, fail: (String) -> GeneratorError) throws(GeneratorError) -> SpecType {
        switch typeName {
        case "Boolean": return .boolean
        case "Integer": return .integer
        case "Float": return .float
        case "String": return .string
        default:
            guard let isEnum = context.typeNames[typeName] else {
                throw fail("unknown type name \"\(typeName)\"")
            }
            return isEnum ? .enumeration(typeName) : .structure(typeName)
        }
    }

    /// `minsize`/`maxsize` (arrays only) and `minlength`/`maxlength` (Strings only).
    static func parseCounts(
        _ element: SpecXMLElement, type: SpecType, isArray: Bool, fail: (String) -> GeneratorError
    ) throws(GeneratorError) -> (minSize: Int?, maxSize: Int?, minLength: Int?, maxLength: Int?) {
        func count(_ attribute: String) throws(GeneratorError) -> Int? {
            guard let text = element.attribute(attribute) else { return nil }
            guard let value = Int(text), value >= 0, !text.hasPrefix("+") else {
                throw fail("\(attribute) \"\(text)\" is not a non-negative integer")
            }
            return value
        }
        let minSize = try count("minsize")
        let maxSize = try count("maxsize")
        let minLength = try count("minlength")
        let maxLength = try count("maxlength")
        if (minSize != nil || maxSize != nil) && !isArray {
            throw fail("minsize/maxsize on a param that is not an array")
        }
        if let minSize, let maxSize, minSize > maxSize {
            throw fail("minsize \(minSize) exceeds maxsize \(maxSize)")
        }
        if (minLength != nil || maxLength != nil) && type != .string {
            throw fail("minlength/maxlength on a param of type \(element.attribute("type")!)")
        }
        if let minLength, let maxLength, minLength > maxLength {
            throw fail("minlength \(minLength) exceeds maxlength \(maxLength)")
        }
        if maxLength == 0 {
            throw fail("maxlength 0 allows no string")
        }
        return (minSize, maxSize, minLength, maxLength)
    }

    /// `minvalue`/`maxvalue` as the spec writes them (Integer and Float params only): decimal
    /// numbers, 64-bit integers for Integer params, the minimum not above the maximum.
    static func parseValueBounds(
        _ element: SpecXMLElement, type: SpecType, fail: (String) -> GeneratorError
    ) throws(GeneratorError) -> (min: String?, max: String?) {
        let minValueText = element.attribute("minvalue")
        let maxValueText = element.attribute("maxvalue")
        if (minValueText != nil || maxValueText != nil) && type != .integer && type != .float {
            throw fail("minvalue/maxvalue on a param of type \(element.attribute("type")!)")
        }
        for (attribute, text) in [("minvalue", minValueText), ("maxvalue", maxValueText)] {
            guard let text else { continue }
            guard isDecimal(text), Double(text) != nil else {
                throw fail("\(attribute) \"\(text)\" is not a decimal number")
            }
            if type == .integer, Int64(text) == nil {
                throw fail("\(attribute) \"\(text)\" of an Integer param is not a 64-bit integer")
            }
        }
        if let minValueText, let maxValueText, Double(minValueText)! > Double(maxValueText)! {
            throw fail("minvalue \(minValueText) exceeds maxvalue \(maxValueText)")
        }
        return (minValueText, maxValueText)
    }

    /// A param's children: descriptions, history entries (checked as params), and the `<element>`s
    /// an enum param documents, whose names it returns.
    static func parseParamChildren(
        _ element: SpecXMLElement, type: SpecType, owner: String, what: String, context: Context
    ) throws(GeneratorError) -> [String] {
        var documentedElements: [String] = []
        for child in try children(of: element, allowed: ["description", "history", "todo", "element"]) {
            switch child.name {
            case "history":
                for old in try historyEntries(child, of: element) {
                    _ = try parseParam(old, owner: owner, context: context)
                }
            case "element":
                guard case .enumeration(let enumName) = type, let spec = context.enums.first(where: { $0.name == enumName }) else {
                    throw GeneratorError("\(what): <element> children on a param that is not an enum", line: child.line)
                }
                try checkAttributes(child, allowed: ["name"], required: ["name"])
                let elementName = try requiredName(child)
                guard spec.elements.contains(where: { $0.name == elementName }) else {
                    throw GeneratorError("\(what): \(elementName) is not an element of enum \(enumName)", line: child.line)
                }
                for grandchild in try children(of: child, allowed: ["description"]) {
                    try checkText(grandchild)
                }
                documentedElements.append(elementName)
            default:
                try checkText(child)
            }
        }
        return documentedElements
    }

    static func checkDefault(
        _ text: String, of param: SpecParam, context: Context, fail: (String) -> GeneratorError
    ) throws(GeneratorError) {
        switch param.type {
        case .boolean:
            guard text == "true" || text == "false" else { throw fail("defvalue \"\(text)\" is not a Boolean") }
        case .integer, .float:
            guard isDecimal(text), let value = Double(text) else { throw fail("defvalue \"\(text)\" is not a number") }
            if param.type == .integer && Int64(text) == nil { throw fail("defvalue \"\(text)\" is not an integer") }
            if let min = param.minValue, value < min { throw fail("defvalue \(text) is below minvalue") }
            if let max = param.maxValue, value > max { throw fail("defvalue \(text) is above maxvalue") }
        case .string:
            let length = text.unicodeScalars.count
            if length < param.effectiveMinLength || length > (param.maxLength ?? Int.max) {
                throw fail("defvalue \"\(text)\" violates the length limits")
            }
        case .enumeration(let name):
            guard let spec = context.enums.first(where: { $0.name == name }), spec.elements.contains(where: { $0.name == text }) else {
                throw fail("defvalue \(text) is not an element of enum \(name)")
            }
        case .structure:
            throw fail("defvalue on a struct param")
        }
    }

    static func checkMessageTypeEnum(_ enums: [SpecEnum]) throws(GeneratorError) {
        // Generated code uses SDLProtocol's RPCType; the spec's messageType enum must agree with it.
        guard let messageType = enums.first(where: { $0.name == "messageType" }) else { return }
        let expected: [String: Int64] = ["request": 0, "response": 1, "notification": 2]
        for element in messageType.elements {
            guard let value = expected[element.name], element.value == value else {
                throw GeneratorError("enum messageType: element \(element.name) does not match the RPC binary header's types", line: element.line)
            }
        }
    }

    // MARK: Helpers

    static func isRemoved(_ element: SpecXMLElement) throws(GeneratorError) -> Bool {
        guard let text = element.attribute("removed") else { return false }
        return try parseBool(text, attribute: "removed", of: element)
    }

    static func parseLifecycle(_ element: SpecXMLElement) throws(GeneratorError) -> SpecLifecycle {
        var lifecycle = SpecLifecycle()
        if let since = element.attribute("since") {
            try checkVersion(since, attribute: "since", of: element)
            lifecycle.since = since
        }
        if let until = element.attribute("until") {
            try checkVersion(until, attribute: "until", of: element)
            lifecycle.until = until
        }
        if let text = element.attribute("deprecated") {
            lifecycle.deprecated = try parseBool(text, attribute: "deprecated", of: element)
        }
        lifecycle.removed = try isRemoved(element)
        return lifecycle
    }

    static func parseBool(_ text: String, attribute: String, of element: SpecXMLElement) throws(GeneratorError) -> Bool {
        switch text {
        case "true": return true
        case "false": return false
        default:
            throw GeneratorError("<\(element.name)\(nameSuffix(element))>: \(attribute) \"\(text)\" is not true or false", line: element.line)
        }
    }

    static func checkVersion(_ text: String, attribute: String, of element: SpecXMLElement) throws(GeneratorError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else {
            throw GeneratorError("<\(element.name)\(nameSuffix(element))>: \(attribute) \"\(text)\" is not a version", line: element.line)
        }
    }

    static func isDecimal(_ text: String) -> Bool {
        var body = Substring(text)
        if body.hasPrefix("-") { body = body.dropFirst() }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }

    static func checkIdentifier(_ name: String, of element: SpecXMLElement) throws(GeneratorError) {
        let bytes = Array(name.utf8)
        guard let first = bytes.first,
              first == UInt8(ascii: "_") || (first | 0x20 >= UInt8(ascii: "a") && first | 0x20 <= UInt8(ascii: "z")),
              bytes.allSatisfy({ $0 == UInt8(ascii: "_") || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= UInt8(ascii: "a") && $0 | 0x20 <= UInt8(ascii: "z")) })
        else {
            throw GeneratorError("<\(element.name)> name \"\(name)\" is not an identifier", line: element.line)
        }
    }

    static func requiredName(_ element: SpecXMLElement) throws(GeneratorError) -> String {
        guard let name = element.attribute("name"), !name.isEmpty else {
            throw GeneratorError("<\(element.name)> has no name", line: element.line)
        }
        return name
    }

    static func nameSuffix(_ element: SpecXMLElement) -> String {
        element.attribute("name").map { " name=\"\($0)\"" } ?? ""
    }

    static func checkAttributes(_ element: SpecXMLElement, allowed: Set<String>, required: [String]) throws(GeneratorError) {
        for attribute in element.attributes where !allowed.contains(attribute.name) {
            throw GeneratorError("<\(element.name)\(nameSuffix(element))>: unknown attribute \"\(attribute.name)\"", line: element.line)
        }
        for name in required where element.attribute(name) == nil {
            throw GeneratorError("<\(element.name)\(nameSuffix(element))>: missing attribute \"\(name)\"", line: element.line)
        }
    }

    /// The child elements, refusing other element names and non-whitespace text.
    static func children(of element: SpecXMLElement, allowed: Set<String>) throws(GeneratorError) -> [SpecXMLElement] {
        var result: [SpecXMLElement] = []
        for child in element.children {
            switch child {
            case .element(let inner):
                guard allowed.contains(inner.name) else {
                    throw GeneratorError("<\(element.name)\(nameSuffix(element))>: unknown element <\(inner.name)>", line: inner.line)
                }
                result.append(inner)
            case .text(let text, let line):
                guard text.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else {
                    throw GeneratorError("<\(element.name)\(nameSuffix(element))>: unexpected text", line: line)
                }
            }
        }
        return result
    }

    /// The earlier versions a `<history>` element lists. Spec 8.0.0 gives `<history>` no
    /// attributes, and each entry is an element of its parent's kind with its parent's name and an
    /// `until` (where that version ended); anything else is refused, as it would otherwise be
    /// ignored. Each entry is then parsed, with the attribute checks of its kind, by the caller.
    static func historyEntries(_ history: SpecXMLElement, of parent: SpecXMLElement) throws(GeneratorError) -> [SpecXMLElement] {
        try checkAttributes(history, allowed: [], required: [])
        let entries = try children(of: history, allowed: [parent.name])
        for entry in entries {
            guard entry.attribute("name") == parent.attribute("name") else {
                throw GeneratorError(
                    "<history> of <\(parent.name)\(nameSuffix(parent))>: entry <\(entry.name)\(nameSuffix(entry))> has another name",
                    line: entry.line)
            }
            guard entry.attribute("until") != nil else {
                throw GeneratorError(
                    "<history> of <\(parent.name)\(nameSuffix(parent))>: entry has no \"until\"", line: entry.line)
            }
        }
        return entries
    }

    /// Description, warning and todo elements: text only.
    static func checkText(_ element: SpecXMLElement) throws(GeneratorError) {
        try checkAttributes(element, allowed: [], required: [])
        if let inner = element.elements.first {
            throw GeneratorError("<\(element.name)>: unknown element <\(inner.name)>", line: inner.line)
        }
    }
}
