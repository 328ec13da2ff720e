import Foundation
import Testing

/// The built `sdl` binary (it sits next to the test bundle).
func sdlBinary() throws -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
    let binary = directory.appendingPathComponent("sdl")
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: binary.path])
    }
    return binary
}

/// Runs `sdl` and returns its exit status, standard output and standard error.
func runSDL(_ arguments: [String], input: String? = nil) throws -> (status: Int32, out: String, err: String) {
    try runSDL(arguments, bytes: input.map { Data($0.utf8) })
}

/// Runs `executable` (`sdl` by default) with `bytes` on standard input.
func runSDL(_ arguments: [String], bytes input: Data?, executable: URL? = nil) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = try executable ?? sdlBinary()
    process.arguments = arguments
    let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(input) }
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

    @Test func rpcEncodeValidatesAndDecodeNamesTheFunction() throws {
        let encoded = try runSDL([
            "rpc", "encode", "--function", "SetInteriorVehicleData", "--type", "request", "--correlation-id", "9",
            #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":50}}}"#,
        ])
        #expect(encoded.status == 0)
        #expect(encoded.out.hasPrefix("0000002c000000090000004c7b22"))
        let decoded = try runSDL(["rpc", "decode", "-"], input: encoded.out)
        #expect(decoded.out == #"{"rpcType":"request","functionId":44,"functionName":"SetInteriorVehicleData","correlationId":9,"encoding":"json","params":{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":50}}},"bulkSize":0}"# + "\n")

        let invalid = try runSDL([
            "rpc", "encode", "--function", "SetInteriorVehicleData", "--type", "request",
            #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":500}}}"#,
        ])
        #expect(invalid.status != 0)
        #expect(invalid.err == "sdl: moduleData.climateControlData.fanSpeed: above maxvalue 100\n")

        let bson = try runSDL(["rpc", "encode", "--function", "GetFile", "--type", "response", "--format", "bson",
                               #"{"success":true,"resultCode":"SUCCESS","crc":4294967295}"#])
        let back = try runSDL(["rpc", "decode", bson.out.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(back.out == #"{"rpcType":"response","functionId":54,"functionName":"GetFile","correlationId":0,"encoding":"bson","params":{"success":true,"resultCode":"SUCCESS","crc":4294967295},"bulkSize":0}"# + "\n")
    }

    @Test func rpcDecodeOfAPayloadWithoutParameters() throws {
        // SDL Core's header-only UnregisterAppInterface request (JSON size 0).
        let decoded = try runSDL(["rpc", "decode", "000000020000000100000000"])
        #expect(decoded.status == 0)
        #expect(decoded.out == #"{"rpcType":"request","functionId":2,"functionName":"UnregisterAppInterface","correlationId":1,"encoding":"json","params":{},"bulkSize":0}"# + "\n")
        // A function the spec does not define: the generic reader shows the empty parameters too.
        let unknown = try runSDL(["rpc", "decode", "00007fff0000000100000000"])
        #expect(unknown.status == 0)
        #expect(unknown.out.contains(#""functionName":null,"correlationId":1,"encoding":"json","params":{}"#))
    }

    @Test func erroneousResponsesAreNamed() throws {
        let encoded = try runSDL([
            "rpc", "encode", "--function", "ButtonPress", "--type", "erroneousResponse", "--correlation-id", "5",
            #"{"success":false,"resultCode":"INVALID_DATA"}"#,
        ])
        #expect(encoded.status == 0)
        #expect(encoded.out.hasPrefix("3000002900000005"))
        let decoded = try runSDL(["rpc", "decode", "-"], input: encoded.out)
        #expect(decoded.out == #"{"rpcType":"erroneousResponse","functionId":41,"functionName":"ButtonPress","correlationId":5,"encoding":"json","params":{"resultCode":"INVALID_DATA","success":false},"bulkSize":0}"# + "\n")
        let spec = #"[{"kind":"rpc","rpc":{"rpcType":"erroneousResponse","functionId":"ButtonPress","correlationId":5,"json":{"resultCode":"INVALID_DATA","success":false}}}]"#
        let hex = try runSDL(["encode", "--hex", "-"], input: spec)
        let lines = try runSDL(["dissect", "--hex", "--json", "-"], input: hex.out).out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[1].contains(#""rpc":{"rpcType":"erroneousResponse","functionId":41,"functionName":"ButtonPress","correlationId":5,"encoding":"json","params":{"resultCode":"INVALID_DATA","success":false}"#))
    }

    @Test func rpcDecodeOfAnInvalidPayloadFailsUnlessAskedToShowIt() throws {
        // fanSpeed 500 in a hand-made payload: header (request, 44, corr 1) + JSON.
        let json = #"{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":500}}}"#
        let header = String(format: "0000002c00000001%08x", json.utf8.count)
        let hex = header + Array(json.utf8).map { String(format: "%02x", $0) }.joined()
        let strict = try runSDL(["rpc", "decode", hex])
        #expect(strict.status != 0 && strict.err == "sdl: moduleData.climateControlData.fanSpeed: above maxvalue 100\n")
        let lenient = try runSDL(["rpc", "decode", "--no-validate", hex])
        #expect(lenient.status == 0 && lenient.out.contains(#""fanSpeed":500"#))
    }

    @Test func dissectReportsSpecViolationsAfterTheMessage() throws {
        let spec = #"[{"kind":"rpc","rpc":{"functionId":"SetInteriorVehicleData","json":{"moduleData":{"moduleType":"CLIMATE","climateControlData":{"fanSpeed":500}}}}}]"#
        let hex = try runSDL(["encode", "--hex", "-"], input: spec)
        let lines = try runSDL(["dissect", "--hex", "--json", "-"], input: hex.out).out.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[1].contains(#""functionName":"SetInteriorVehicleData""#) && lines[1].contains(#""fanSpeed":500"#))
        #expect(lines[2] == #"{"event":"error","offset":0,"code":"rpcValidation","detail":"moduleData.climateControlData.fanSpeed: above maxvalue 100"}"#)
    }

    /// `{"a":"` then 0xFF: not UTF-8 at byte 6.
    static let invalidText = Data(#"{"a":""#.utf8) + Data([0xFF]) + Data(#""}"#.utf8)

    @Test("text on standard input or in a file that is not UTF-8 is refused, not repaired")
    func invalidUTF8Input() throws {
        let commands: [[String]] = [
            ["rpc", "encode", "--function", "SubscribeWayPoints", "--type", "request", "-"],
            ["rpc", "decode", "-"], ["bson", "encode", "-"], ["bson", "decode", "-"], ["dissect", "--hex", "-"],
        ]
        for arguments in commands {
            let result = try runSDL(arguments, bytes: Self.invalidText)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.out.isEmpty, "\(arguments)")
            #expect(result.err == "sdl: standard input is not valid UTF-8 (byte 6)\n", "\(arguments)")
        }
        let spec = try runSDL(["encode", "-"], bytes: Data(#"[{"kind":"raw","hex":""#.utf8) + Data([0xC3, 0x28]) + Data(#""}]"#.utf8))
        #expect(spec.status == 1 && spec.out.isEmpty)
        #expect(spec.err == "sdl: SPEC is not valid UTF-8 (byte 22)\n")
        // UTF-16 is well-formed UTF-8 byte by byte, but its NULs cannot be in UTF-8 JSON text.
        let utf16 = try runSDL(["encode", "-"], bytes: #"[{"kind":"raw","hex":"00"}]"#.data(using: .utf16LittleEndian)!)
        #expect(utf16.status == 1 && utf16.out.isEmpty)
        #expect(utf16.err == "sdl: SPEC is not UTF-8 JSON text: a NUL byte at byte 1\n")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sdl-invalid-utf8-\(getpid()).hex")
        try (Data("00 01".utf8) + Data([0xE2, 0x82])).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let dissected = try runSDL(["dissect", "--hex", file.path], input: nil)
        #expect(dissected.status == 1 && dissected.out.isEmpty)
        #expect(dissected.err == "sdl: \(file.path) is not valid UTF-8 (byte 5)\n")

        // Valid UTF-8 beyond ASCII still goes through.
        let accented = try runSDL(["bson", "encode", "-"], input: #"{"ville":"Montréal"}"#)
        #expect(accented.status == 0)
        #expect(accented.out == "1a0000000276696c6c65000a0000004d6f6e7472c3a9616c0000\n")
    }

    @Test("an argument that is not UTF-8 is refused before any command runs")
    func invalidUTF8Argument() throws {
        // Foundation's Process takes Strings, which cannot hold such bytes: a shell passes them.
        let shell = URL(fileURLWithPath: "/bin/sh")
        let binary = try sdlBinary().path
        for (command, index) in [("rpc decode \"$(printf 'ab\\377')\"", 3), ("bson encode \"$(printf '{\\\"a\\\":\\\"\\351\\\"}')\"", 3),
                                 ("rpc encode --function \"$(printf '\\300\\200')\" --type request '{}'", 4)] {
            let result = try runSDL(["-c", "exec \"$0\" " + command, binary], bytes: nil, executable: shell)
            #expect(result.status == 1, "\(command)")
            #expect(result.out.isEmpty, "\(command)")
            #expect(result.err.hasPrefix("sdl: argument \(index) is not valid UTF-8 (byte "), "\(command): \(result.err)")
            #expect(result.err.filter { $0 == "\n" }.count == 1, "\(command)")
        }
    }
}
