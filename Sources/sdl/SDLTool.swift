import ArgumentParser
import Foundation
import NIOCore
import SDLProtocol

@main
struct SDLTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdl",
        abstract: "SmartDeviceLink protocol tools: dissect and build SDL byte streams, run a test head unit and scripted apps.",
        subcommands: [Dissect.self, Encode.self, BSONCommand.self, RPCCommand.self, HeadUnitSubcommand.self, AppSubcommand.self])

    /// Refuses an argument that is not valid UTF-8 before parsing: `CommandLine.arguments` would
    /// hand it over with U+FFFD in place of the bad bytes, and the tool must not repair its input.
    static func main() async {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeRawBufferPointer(start: argument, count: strlen(argument))
            if let offset = firstInvalidUTF8(bytes) {
                FileHandle.standardError.write(Data("sdl: argument \(index) is not valid UTF-8 (byte \(offset))\n".utf8))
                Self.exit(withError: ExitCode.failure)
            }
        }
        await Self.main(nil)
    }

    /// Runs a command body, turning any failure into one line on stderr and exit code 1.
    static func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as ToolError {
            FileHandle.standardError.write(Data("sdl: \(error.description)\n".utf8))
            throw ExitCode.failure
        } catch let error as SDLProtocolError {
            FileHandle.standardError.write(Data("sdl: \(error)\n".utf8))
            throw ExitCode.failure
        } catch let error as ExitCode {
            throw error
        } catch {
            FileHandle.standardError.write(Data("sdl: \(error.localizedDescription)\n".utf8))
            throw ExitCode.failure
        }
    }
}

/// Reads a file, or standard input for "-".
func readInput(_ path: String) throws -> Data {
    if path == "-" {
        return FileHandle.standardInput.readDataToEndOfFile()
    }
    guard let data = FileManager.default.contents(atPath: path) else {
        throw ToolError("cannot read \(path)")
    }
    return data
}

/// Reads a text file, or standard input for "-", refusing bytes that are not UTF-8 instead of
/// replacing them with U+FFFD.
func readText(_ path: String) throws -> String {
    try utf8Text(readInput(path), source: path == "-" ? "standard input" : path)
}

/// `data` as text, or an error naming `source` and the first byte that is not UTF-8.
func utf8Text(_ data: Data, source: String) throws -> String {
    let offset = data.withUnsafeBytes { firstInvalidUTF8($0) }
    if let offset {
        throw ToolError("\(source) is not valid UTF-8 (byte \(offset))")
    }
    return String(decoding: data, as: UTF8.self)
}

/// The offset of the first byte that does not belong to a well-formed UTF-8 sequence; nil when
/// every byte does.
func firstInvalidUTF8(_ bytes: UnsafeRawBufferPointer) -> Int? {
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    var offset = 0
    while true {
        switch parser.parseScalar(from: &iterator) {
        case .valid(let scalar): offset += scalar.count
        case .emptyInput: return nil
        case .error: return offset
        }
    }
}

/// Buffered standard output.
struct Output {
    private var buffer = Data()

    mutating func line(_ text: String) {
        self.buffer.append(contentsOf: text.utf8)
        self.buffer.append(UInt8(ascii: "\n"))
        if self.buffer.count > 1 << 16 { self.flush() }
    }

    mutating func flush() {
        FileHandle.standardOutput.write(self.buffer)
        self.buffer.removeAll(keepingCapacity: true)
    }
}

struct Dissect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print each frame, message and error of one direction of an SDL byte stream.")

    @Flag(help: "The input is hex text (whitespace ignored), not raw bytes.")
    var hex = false

    @Flag(help: "One JSON object per line.")
    var json = false

    @Argument(help: "The stream file, or - for standard input.")
    var file: String

    func run() throws {
        try SDLTool.run {
            var data = try readInput(self.file)
            if self.hex {
                guard let bytes = parseHex(try utf8Text(data, source: self.file == "-" ? "standard input" : self.file)) else {
                    throw ToolError("\(self.file) is not hex text")
                }
                data = Data(bytes)
            }
            var output = Output()
            var dissector = Dissector()
            let emit: (OutputJSON) -> Void = { event in
                output.line(self.json ? event.text : TextRendering.line(for: event))
            }
            dissector.feed(ByteBuffer(bytes: data), emit: emit)
            dissector.finish(emit: emit)
            output.flush()
        }
    }
}

struct Encode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the SDL byte stream a SPEC file describes (a JSON array of messages).")

    @Option(help: "Write the stream to this file instead of standard output.")
    var out: String?

    @Flag(help: "Write hex text instead of raw bytes.")
    var hex = false

    @Argument(help: "The SPEC file, or - for standard input.")
    var spec: String

    func run() throws {
        try SDLTool.run {
            let stream = try StreamSpec.encode(specJSON: try readInput(self.spec))
            var bytes = Data(stream.readableBytesView)
            if self.hex { bytes = Data((stream.readableBytesView.hexString + "\n").utf8) }
            if let out = self.out {
                guard FileManager.default.createFile(atPath: out, contents: bytes) else {
                    throw ToolError("cannot write \(out)")
                }
            } else {
                FileHandle.standardOutput.write(bytes)
            }
        }
    }
}

/// The human-readable form of dissector events: one line each.
enum TextRendering {
    static func line(for event: OutputJSON) -> String {
        guard case .object(let members) = event else { return event.text }
        let fields = Dictionary(members, uniquingKeysWith: { first, _ in first })
        func value(_ key: String) -> String {
            switch fields[key] {
            case .string(let string)?: return string
            case let other?: return other.text
            case nil: return "-"
            }
        }
        switch value("event") {
        case "frame":
            var line = "frame    @\(value("offset"))  v\(value("version")) \(value("frameType"))"
            line += "  service \(serviceName(fields["serviceType"]))  info \(value("frameInfo"))"
            line += "  session \(value("sessionId"))  msg \(value("messageId"))  size \(value("dataSize"))"
            if value("encrypted") == "true" { line += "  encrypted" }
            if fields["compressed"] != nil { line += "  compressed" }
            if fields["totalSize"] != nil { line += "  total \(value("totalSize")) in \(value("consecutiveFrames")) frames" }
            return line
        case "message":
            var line = "message  session \(value("sessionId"))  service \(serviceName(fields["serviceType"]))"
            line += "  msg \(value("messageId"))  v\(value("version"))  \(value("size")) bytes in \(value("frames")) frame(s)"
            if value("encrypted") == "true" { line += "  encrypted" }
            for key in ["control", "rpc", "securityQuery"] {
                if let detail = fields[key] { line += "  \(key) \(detail.text)" }
            }
            return line
        case "error":
            return "error    @\(value("offset"))  \(value("code")): \(value("detail"))"
        case "end":
            return "end      \(value("bytes")) bytes, \(value("frames")) frames, \(value("messages")) messages, \(value("errors")) errors"
        default:
            return event.text
        }
    }

    static func serviceName(_ value: OutputJSON?) -> String {
        guard case .int(let raw)? = value else { return "-" }
        return ServiceType(rawValue: UInt8(raw)).description
    }
}
