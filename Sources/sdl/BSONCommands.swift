import ArgumentParser
import Foundation
import SDLBSON

/// `sdl bson encode|decode`: Extended JSON to BSON hex and back (ARCHITECTURE.md §5).
struct BSONCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bson",
        abstract: "Convert between canonical Extended JSON v2 and BSON.",
        subcommands: [Encode.self, Decode.self])

    struct Encode: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the BSON hex of an Extended JSON document.")

        @Argument(help: "Extended JSON text, e.g. '{\"mtu\":{\"$numberLong\":\"131084\"}}', or - for standard input.")
        var extendedJSON: String

        func run() throws {
            try SDLTool.run {
                let text = self.extendedJSON == "-" ? try readText("-") : self.extendedJSON
                do {
                    let document = try BSONDocument(extendedJSON: text)
                    print(document.bytes.hexString)
                } catch let error as BSONError {
                    throw ToolError("not a valid Extended JSON document: \(error)")
                }
            }
        }
    }

    struct Decode: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a BSON document (hex) as Extended JSON.")

        @Flag(help: "Relaxed Extended JSON (plain numbers) instead of canonical.")
        var relaxed = false

        @Argument(help: "The document's bytes as hex (whitespace ignored), or - for standard input.")
        var hex: String

        func run() throws {
            try SDLTool.run {
                let text = self.hex == "-" ? try readText("-") : self.hex
                guard let bytes = parseHex(text) else { throw ToolError("not hex") }
                do {
                    let document = try BSONDocument(validating: bytes)
                    print(document.extendedJSON(self.relaxed ? .relaxed : .canonical))
                } catch let error as BSONError {
                    throw ToolError("not a valid BSON document: \(error)")
                }
            }
        }
    }
}
