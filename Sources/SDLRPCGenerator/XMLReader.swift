/// An element of an XML document: name, attributes in document order, children, and the line it
/// starts on (1-based) for error messages.
public struct SpecXMLElement: Hashable, Sendable {
    public var name: String
    public var attributes: [(name: String, value: String)]
    public var children: [SpecXMLNode]
    public var line: Int

    public init(name: String, attributes: [(name: String, value: String)] = [], children: [SpecXMLNode] = [], line: Int = 0) {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.line = line
    }

    /// The value of the attribute `name`, if present.
    public func attribute(_ name: String) -> String? {
        self.attributes.first(where: { $0.name == name })?.value
    }

    /// The child elements, in order.
    public var elements: [SpecXMLElement] {
        self.children.compactMap {
            if case .element(let element) = $0 { return element }
            return nil
        }
    }

    /// The concatenated character data of the direct children.
    public var text: String {
        self.children.map {
            if case .text(let text, _) = $0 { return text }
            return ""
        }.joined()
    }

    public static func == (lhs: SpecXMLElement, rhs: SpecXMLElement) -> Bool {
        lhs.name == rhs.name && lhs.children == rhs.children && lhs.line == rhs.line
            && lhs.attributes.map(\.name) == rhs.attributes.map(\.name)
            && lhs.attributes.map(\.value) == rhs.attributes.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.name)
        hasher.combine(self.line)
        hasher.combine(self.children)
        for attribute in self.attributes {
            hasher.combine(attribute.name)
            hasher.combine(attribute.value)
        }
    }
}

/// A node of element content: a child element, or character data (text and CDATA, with entity and
/// character references resolved) with the line it starts on.
public enum SpecXMLNode: Hashable, Sendable {
    case element(SpecXMLElement)
    case text(String, line: Int)
}

/// A small, strict, non-validating XML 1.0 reader for the RPC spec: UTF-8 input; the XML declaration,
/// processing instructions and comments (skipped); elements and attributes; character data, CDATA
/// sections, the five predefined entities and numeric character references. Anything else — a
/// document type declaration, an undefined entity, a mismatched or unclosed tag, a duplicate
/// attribute, `<` in an attribute value, `--` inside a comment, `]]>` in text, content after the
/// root element, nesting deeper than `maxDepth` — is an error with the line it occurs on. Names
/// are limited to ASCII.
public struct XMLReader {
    /// The deepest element nesting accepted (the spec nests 6 levels); bounds the recursion.
    public static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var depth = 0

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses a whole document and returns its root element.
    public static func parse(_ bytes: [UInt8]) throws(GeneratorError) -> SpecXMLElement {
        var reader = XMLReader(bytes: bytes)
        return try reader.document()
    }

    /// Parses a whole document given as a string.
    public static func parse(_ text: String) throws(GeneratorError) -> SpecXMLElement {
        try self.parse(Array(text.utf8))
    }

    // MARK: Document

    private mutating func document() throws(GeneratorError) -> SpecXMLElement {
        guard String(validating: self.bytes, as: UTF8.self) != nil else {
            throw GeneratorError("XML input is not valid UTF-8", line: nil)
        }
        // A UTF-8 byte order mark is allowed before the declaration.
        if self.bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            self.index = 3
        }
        if self.lookingAt("<?xml") && self.isWhitespace(at: self.index + 5) {
            try self.processingInstruction(allowDeclaration: true)
        }
        var root: SpecXMLElement?
        while true {
            self.skipWhitespace()
            if self.index >= self.bytes.count {
                break
            }
            if self.lookingAt("<!--") {
                try self.comment()
            } else if self.lookingAt("<?") {
                try self.processingInstruction(allowDeclaration: false)
            } else if self.lookingAt("<!DOCTYPE") {
                throw self.error("document type declarations are not supported")
            } else if self.lookingAt("<") {
                guard root == nil else {
                    throw self.error("content after the root element")
                }
                root = try self.element()
            } else {
                throw self.error(root == nil ? "text before the root element" : "text after the root element")
            }
        }
        guard let root else {
            throw GeneratorError("XML document has no root element", line: self.line)
        }
        return root
    }

    // MARK: Markup

    private mutating func element() throws(GeneratorError) -> SpecXMLElement {
        let line = self.line
        guard self.depth < Self.maxDepth else {
            throw self.error("elements nest deeper than \(Self.maxDepth) levels")
        }
        self.depth += 1
        defer { self.depth -= 1 }
        self.index += 1  // <
        let name = try self.name()
        var element = SpecXMLElement(name: name, line: line)
        while true {
            let hadSpace = self.skipWhitespace()
            if self.lookingAt("/>") {
                self.index += 2
                return element
            }
            if self.lookingAt(">") {
                self.index += 1
                break
            }
            guard hadSpace else {
                throw self.error("expected whitespace, '>' or '/>' in tag <\(name)>")
            }
            let attributeName = try self.name()
            self.skipWhitespace()
            guard self.lookingAt("=") else {
                throw self.error("attribute \(attributeName) of <\(name)> has no value")
            }
            self.index += 1
            self.skipWhitespace()
            let value = try self.attributeValue()
            if element.attributes.contains(where: { $0.name == attributeName }) {
                throw self.error("duplicate attribute \(attributeName) in <\(name)>")
            }
            element.attributes.append((attributeName, value))
        }
        try self.content(of: &element)
        return element
    }

    /// Reads children up to and including the end tag.
    private mutating func content(of element: inout SpecXMLElement) throws(GeneratorError) {
        var text: [UInt8] = []
        var textLine = self.line
        func flush(_ text: inout [UInt8], into element: inout SpecXMLElement, line: Int) {
            if !text.isEmpty {
                element.children.append(.text(String(decoding: text, as: UTF8.self), line: line))
                text.removeAll()
            }
        }
        while true {
            guard self.index < self.bytes.count else {
                throw GeneratorError("element <\(element.name)> opened on line \(element.line) is not closed", line: self.line)
            }
            if self.lookingAt("</") {
                flush(&text, into: &element, line: textLine)
                self.index += 2
                let name = try self.name()
                self.skipWhitespace()
                guard self.lookingAt(">") else {
                    throw self.error("expected '>' in end tag </\(name)>")
                }
                self.index += 1
                guard name == element.name else {
                    throw self.error("end tag </\(name)> does not match <\(element.name)> opened on line \(element.line)")
                }
                return
            } else if self.lookingAt("<!--") {
                try self.comment()
            } else if self.lookingAt("<![CDATA[") {
                if text.isEmpty { textLine = self.line }
                self.index += 9
                while !self.lookingAt("]]>") {
                    guard self.index < self.bytes.count else {
                        throw self.error("unterminated CDATA section")
                    }
                    self.advance(into: &text)
                }
                self.index += 3
            } else if self.lookingAt("<?") {
                try self.processingInstruction(allowDeclaration: false)
            } else if self.lookingAt("<!") {
                throw self.error("unsupported markup declaration")
            } else if self.lookingAt("<") {
                flush(&text, into: &element, line: textLine)
                element.children.append(.element(try self.element()))
            } else if self.lookingAt("&") {
                if text.isEmpty { textLine = self.line }
                try self.reference(into: &text)
            } else if self.lookingAt("]]>") {
                throw self.error("']]>' is not allowed in text")
            } else {
                if text.isEmpty { textLine = self.line }
                self.advance(into: &text)
            }
        }
    }

    private mutating func comment() throws(GeneratorError) {
        let line = self.line
        self.index += 4
        while self.index < self.bytes.count {
            if self.lookingAt("--") {
                guard self.lookingAt("-->") else {
                    throw self.error("'--' is not allowed inside a comment")
                }
                self.index += 3
                return
            }
            self.advance()
        }
        throw GeneratorError("comment opened on line \(line) is not closed", line: self.line)
    }

    private mutating func processingInstruction(allowDeclaration: Bool) throws(GeneratorError) {
        let line = self.line
        self.index += 2
        let target = try self.name()
        if target.lowercased() == "xml" && !allowDeclaration {
            throw self.error("the XML declaration must come first")
        }
        while self.index < self.bytes.count {
            if self.lookingAt("?>") {
                self.index += 2
                return
            }
            self.advance()
        }
        throw GeneratorError("processing instruction opened on line \(line) is not closed", line: self.line)
    }

    private mutating func attributeValue() throws(GeneratorError) -> String {
        guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\"") || self.bytes[self.index] == UInt8(ascii: "'") else {
            throw self.error("attribute value must be quoted")
        }
        let quote = self.bytes[self.index]
        self.index += 1
        var value: [UInt8] = []
        while true {
            guard self.index < self.bytes.count else {
                throw self.error("unterminated attribute value")
            }
            let byte = self.bytes[self.index]
            if byte == quote {
                self.index += 1
                return String(decoding: value, as: UTF8.self)
            }
            switch byte {
            case UInt8(ascii: "<"):
                throw self.error("'<' is not allowed in an attribute value")
            case UInt8(ascii: "&"):
                try self.reference(into: &value)
            case 0x09, 0x0A, 0x0D:
                // Attribute-value normalisation (XML 1.0 §3.3.3): literal whitespace becomes a space.
                self.advance()
                value.append(0x20)
            default:
                self.advance(into: &value)
            }
        }
    }

    /// Resolves `&lt;` `&gt;` `&amp;` `&apos;` `&quot;` `&#N;` `&#xH;`.
    private mutating func reference(into output: inout [UInt8]) throws(GeneratorError) {
        let start = self.index
        self.index += 1
        var body: [UInt8] = []
        while self.index < self.bytes.count, self.bytes[self.index] != UInt8(ascii: ";") {
            guard body.count < 16 else { break }
            body.append(self.bytes[self.index])
            self.index += 1
        }
        guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: ";") else {
            self.index = start
            throw self.error("unterminated entity reference")
        }
        self.index += 1
        let name = String(decoding: body, as: UTF8.self)
        switch name {
        case "lt": output.append(UInt8(ascii: "<"))
        case "gt": output.append(UInt8(ascii: ">"))
        case "amp": output.append(UInt8(ascii: "&"))
        case "apos": output.append(UInt8(ascii: "'"))
        case "quot": output.append(UInt8(ascii: "\""))
        default:
            var scalarValue: UInt32?
            if name.hasPrefix("#x") {
                scalarValue = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                scalarValue = UInt32(name.dropFirst(1), radix: 10)
            } else {
                self.index = start
                throw self.error("undefined entity &\(name);")
            }
            // XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
            guard let value = scalarValue, value == 0x9 || value == 0xA || value == 0xD
                || (0x20...0xD7FF).contains(value) || (0xE000...0xFFFD).contains(value) || (0x10000...0x10FFFF).contains(value),
                let scalar = Unicode.Scalar(value)
            else {
                self.index = start
                throw self.error("character reference &\(name); is not an XML character")
            }
            output.append(contentsOf: Array(String(Character(scalar)).utf8))
        }
    }

    private mutating func name() throws(GeneratorError) -> String {
        let start = self.index
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            let isStart = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
            let isPart = isStart || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            if self.index == start ? !isStart : !isPart {
                break
            }
            self.index += 1
        }
        guard self.index > start else {
            throw self.error("expected a name")
        }
        return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
    }

    // MARK: Bytes

    private func lookingAt(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard self.bytes.count - self.index >= count else { return false }
        for offset in 0..<count where self.bytes[self.index + offset] != literal.utf8Start[offset] {
            return false
        }
        return true
    }

    private func isWhitespace(at index: Int) -> Bool {
        guard index < self.bytes.count else { return false }
        let byte = self.bytes[index]
        return byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = self.index
        while self.isWhitespace(at: self.index) {
            self.advance()
        }
        return self.index > start
    }

    /// Moves one byte on, counting lines.
    private mutating func advance() {
        if self.bytes[self.index] == 0x0A {
            self.line += 1
        }
        self.index += 1
    }

    private mutating func advance(into output: inout [UInt8]) {
        output.append(self.bytes[self.index])
        self.advance()
    }

    private func error(_ message: String) -> GeneratorError {
        GeneratorError(message, line: self.line)
    }
}
