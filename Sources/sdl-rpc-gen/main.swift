import ArgumentParser
import Foundation
import SDLRPCGenerator

/// Reads MOBILE_API.xml and writes the generated Swift files of SDLRPC.
@main
struct SDLRPCGen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdl-rpc-gen",
        abstract: "Generate the SDLRPC types from the SDL RPC spec (MOBILE_API.xml).")

    @Argument(help: "Path to MOBILE_API.xml.")
    var spec: String

    @Option(help: "Folder to write the generated files into (created if missing).")
    var output: String

    func run() throws {
        guard let data = FileManager.default.contents(atPath: self.spec) else {
            throw ValidationError("cannot read \(self.spec)")
        }
        let files: [(name: String, contents: String)]
        do {
            files = try CodeGenerator(spec: SpecParser.parse(Array(data))).generate()
        } catch {
            throw ValidationError("\(self.spec): \(error)")
        }
        let folder = URL(fileURLWithPath: self.output, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in files {
            try Data(file.contents.utf8).write(to: folder.appendingPathComponent(file.name))
        }
        print("wrote \(files.count) files to \(self.output)")
    }
}
