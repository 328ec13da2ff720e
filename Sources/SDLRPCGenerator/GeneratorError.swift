/// Why the generator refused its input: malformed XML, or a spec construct it does not understand
/// (unknown element, attribute or type name, contradictory constraints). The message names the
/// element; `line` is where it starts in the XML.
public struct GeneratorError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var line: Int?

    public init(_ message: String, line: Int?) {
        self.message = message
        self.line = line
    }

    public var description: String {
        if let line = self.line {
            return "line \(line): \(self.message)"
        }
        return self.message
    }
}
