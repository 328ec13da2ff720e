import Foundation
import Testing

/// Runs the built `sdl` binary (it sits next to the test bundle) and returns its exit status,
/// standard output and standard error.
func runSDL(_ arguments: [String], input: String? = nil) throws -> (status: Int32, out: String, err: String) {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
    let binary = directory.appendingPathComponent("sdl")
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: binary.path])
    }
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

@Suite struct CommandLineTests {
    @Test func bsonEncodeAndDecode() throws {
        let encoded = try runSDL(["bson", "encode", #"{"mtu":{"$numberLong":"131084"},"hashId":{"$numberInt":"5"}}"#])
        #expect(encoded.status == 0)
        #expect(encoded.out == "1e000000126d7475000c0002000000000010686173684964000500000000\n")
        let decoded = try runSDL(["bson", "decode", "-"], input: encoded.out)
        #expect(decoded.out == #"{"mtu": {"$numberLong": "131084"}, "hashId": {"$numberInt": "5"}}"# + "\n")
        let relaxed = try runSDL(["bson", "decode", "--relaxed", "1e000000126d7475000c0002000000000010686173684964000500000000"])
        #expect(relaxed.out == #"{"mtu": 131084, "hashId": 5}"# + "\n")
    }

    @Test func failuresExitNonZeroWithOneLineOnStderr() throws {
        let cases: [[String]] = [
            ["bson", "decode", "1f00"],
            ["bson", "decode", "zz"],
            ["bson", "encode", #"{"a":"#],
            ["dissect", "/nonexistent/stream.bin"],
            ["encode", "-"],
        ]
        for arguments in cases {
            let result = try runSDL(arguments, input: "[{\"kind\":\"bogus\"}]")
            #expect(result.status != 0, "\(arguments)")
            #expect(result.out.isEmpty, "\(arguments)")
            #expect(result.err.hasPrefix("sdl: ") && result.err.filter { $0 == "\n" }.count == 1, "\(arguments): \(result.err)")
        }
    }

    @Test func encodeThenDissectAsJSONLines() throws {
        let spec = #"[{"kind":"control","frameInfo":"StartServiceACK","sessionId":3,"bson":{"hashId":{"$numberInt":"9"},"mtu":{"$numberLong":"1500"}}},{"kind":"control","version":3,"frameInfo":"EndService","payloadHex":"0000002a"}]"#
        let hex = try runSDL(["encode", "--hex", "-"], input: spec)
        #expect(hex.status == 0)
        let dissected = try runSDL(["dissect", "--hex", "--json", "-"], input: hex.out)
        #expect(dissected.status == 0)
        let lines = dissected.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[1] == #"{"event":"message","sessionId":3,"serviceType":0,"messageId":0,"version":5,"encrypted":false,"size":30,"frames":1,"control":{"frameInfo":2,"name":"StartServiceACK","bson":{"hashId": {"$numberInt": "9"}, "mtu": {"$numberLong": "1500"}}}}"#)
        // Before protocol version 5 the hash id is the raw 4-byte payload.
        #expect(lines[3] == #"{"event":"message","sessionId":1,"serviceType":0,"messageId":0,"version":3,"encrypted":false,"size":4,"frames":1,"control":{"frameInfo":4,"name":"EndService","hashId":42}}"#)
        #expect(lines[4] == #"{"event":"end","bytes":58,"frames":2,"messages":2,"errors":0}"#)
    }

    @Test func controlPayloadOfTheWrongShapeIsReported() throws {
        // A StartServiceACK whose hashId is a string, as in sdl_java_suite's PSM test.
        let spec = #"[{"kind":"control","frameInfo":"StartServiceACK","bson":{"hashId":"3bb34978fe3a"}}]"#
        let hex = try runSDL(["encode", "--hex", "-"], input: spec)
        let dissected = try runSDL(["dissect", "--hex", "--json", "-"], input: hex.out)
        #expect(dissected.out.contains(#"{"event":"error","offset":0,"code":"invalidControlPayload","detail":"StartServiceACK field hashId must be an int32 (or an int64 within the int32 range), not string"}"#))
        #expect(dissected.out.contains(#""bson":{"hashId": "3bb34978fe3a"}"#))
    }
}
