import Foundation
import Testing

/// The test data: `../shared` beside the package root (vectors, the BSON corpus, the RPC spec),
/// read in place and never copied into the repository, and the package's own files (saved fuzz
/// crashers, examples, generated code).
///
/// A missing or unreadable file fails the test that asked for it, naming the path: a test never
/// skips silently because its data is not there.
public enum SharedData {
    /// The folder holding Package.swift: the first one above this file that has one.
    public static let packageRoot: URL = {
        let here = URL(fileURLWithPath: #filePath)
        var url = here.deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url
            }
            url.deleteLastPathComponent()
        }
        // Not found (a remapped #filePath): Tests/SDLTestSupport/<file> is three levels down, and
        // every read below then fails naming the path it tried.
        return here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }()

    /// `../shared` beside the package root.
    public static let root: URL = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")

    /// The URL of `relativePath` inside `../shared`, e.g. `vectors/multiframe.json`.
    public static func url(_ relativePath: String) -> URL {
        self.root.appendingPathComponent(relativePath).standardizedFileURL
    }

    /// The bytes of `../shared/<relativePath>`; fails the calling test, naming the path, when the
    /// file cannot be read.
    public static func bytes(_ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        Array(try self.contents(of: self.url(relativePath), sourceLocation: sourceLocation))
    }

    /// The JSON file `../shared/<relativePath>` decoded into `type`. A file of another shape fails
    /// the calling test with the path of the file and of the offending value in it.
    public static func decode<Value: Decodable>(
        _ type: Value.Type, from relativePath: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Value {
        let url = self.url(relativePath)
        let data = try self.contents(of: url, sourceLocation: sourceLocation)
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw TestDataError(path: url.path, problem: "does not decode as \(Value.self): \(Self.explain(error))")
        }
    }

    /// The names of the files in the folder `../shared/<relativePath>` whose names end in
    /// `suffix`, sorted; fails the calling test when the folder cannot be read or holds none.
    public static func fileNames(
        in relativePath: String, endingWith suffix: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String] {
        try self.names(in: self.url(relativePath), endingWith: suffix, sourceLocation: sourceLocation)
    }

    /// The names of the files in the package's folder `relativePath` (from the package root)
    /// whose names end in `suffix`, sorted; fails the calling test when the folder cannot be read
    /// or holds none.
    public static func packageFileNames(
        in relativePath: String, endingWith suffix: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String] {
        try self.names(in: self.packageRoot.appendingPathComponent(relativePath), endingWith: suffix, sourceLocation: sourceLocation)
    }

    /// The bytes of a file of the package itself, `relativePath` from the package root (e.g.
    /// `Fuzz/FailCases/FuzzBSON/regex-options-multibyte`); fails the calling test, naming the path,
    /// when it cannot be read.
    public static func packageFile(_ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        Array(try self.contents(of: self.packageRoot.appendingPathComponent(relativePath), sourceLocation: sourceLocation))
    }

    private static let hint = "the tests read ../shared beside the package root"

    private static func names(in folder: URL, endingWith suffix: String, sourceLocation: SourceLocation) throws -> [String] {
        let path = folder.standardizedFileURL.path
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw TestDataError(path: path, problem: "is not a readable folder (\(error.localizedDescription)); \(Self.hint)")
        }
        let matching = names.filter { $0.hasSuffix(suffix) }.sorted()
        try #require(!matching.isEmpty, "missing test data: no *\(suffix) file in \(path)", sourceLocation: sourceLocation)
        return matching
    }

    private static func contents(of url: URL, sourceLocation: SourceLocation) throws -> Data {
        let path = url.standardizedFileURL.path
        return try #require(
            FileManager.default.contents(atPath: path), "missing test data: \(path) (\(Self.hint))", sourceLocation: sourceLocation)
    }

    /// A decoding error as one line: what is wrong, and where (`[3].expect.frames[0].dataSize`).
    private static func explain(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let text = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
            return text.isEmpty ? "the top level" : text
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) is not \(type): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) is null, want \(type)"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

/// Test data that is there but not what the tests expect (or a folder that cannot be listed).
public struct TestDataError: Error, CustomStringConvertible {
    /// The file or folder.
    public var path: String
    /// What is wrong with it.
    public var problem: String

    /// `test data <path> <problem>`.
    public var description: String { "test data \(self.path) \(self.problem)" }
}
