import Foundation
import NIOCore
import Testing

@testable import sdl

/// The error `sdl encode` gives for a SPEC, or nil when it encodes.
private func specError(_ json: String) -> String? {
    do {
        _ = try spec(json)
        return nil
    } catch let error as ToolError {
        return error.description
    } catch {
        return "unexpected \(type(of: error)): \(error)"
    }
}

/// The bytes after the frame header and (for versions 2–5) the RPC binary header of the one
/// single-frame RPC a SPEC describes, checking that the header announces exactly them.
private func rpcParameters(_ json: String, binaryHeader: Bool = true) throws -> String {
    var stream = try spec(json)
    let frameHeaderSize = stream.getInteger(at: stream.readerIndex, as: UInt8.self)! >> 4 == 1 ? 8 : 12
    let dataSize = try #require(stream.getInteger(at: stream.readerIndex + 4, as: UInt32.self))
    stream.moveReaderIndex(forwardBy: frameHeaderSize)
    #expect(stream.readableBytes == Int(dataSize))
    if binaryHeader {
        let jsonSize = try #require(stream.getInteger(at: stream.readerIndex + 8, as: UInt32.self))
        stream.moveReaderIndex(forwardBy: 12)
        #expect(stream.readableBytes == Int(jsonSize))
    }
    return String(decoding: stream.readableBytesView, as: UTF8.self)
}

/// A SPEC is read strictly (RFC 8259, no repeated keys, numbers as written) and never repaired:
/// what `JSONSerialization` used to change silently is now refused with one line naming the path.
@Suite struct SpecReadingTests {
    @Test("a repeated key is refused wherever it is, naming the object that repeats it", arguments: [
        (#"{"kind":"raw","kind":"frame"}"#, #"SPEC: the key "kind" appears more than once in one object"#),
        (#"[{"kind":"raw","hex":"00","kind":"frame"}]"#, #"SPEC[0]: the key "kind" appears more than once in one object"#),
        (#"[{"kind":"raw","hex":"00"},{"kind":"rpc","rpc":{"functionId":1,"correlationId":2,"functionId":3}}]"#,
         #"SPEC[1].rpc: the key "functionId" appears more than once in one object"#),
        (#"[{"kind":"rpc","rpc":{"functionId":1,"json":{"a":1,"a":1}}}]"#,
         #"SPEC[0].rpc.json: the key "a" appears more than once in one object"#),
        (#"[{"kind":"rpc","rpc":{"functionId":1,"json":{"a":1,"b":[{"c":1,"d":2,"c":1}]}}}]"#,
         #"SPEC[0].rpc.json.b[0]: the key "c" appears more than once in one object"#),
        (#"[{"kind":"rpc","rpc":{"functionId":1,"bson":{"a":true,"a":false}}}]"#,
         #"SPEC[0].rpc.bson: the key "a" appears more than once in one object"#),
        (#"[{"kind":"control","frameInfo":"StartService","bson":{"hashId":{"$numberInt":"1","$numberInt":"2"}}}]"#,
         #"SPEC[0].bson.hashId: the key "$numberInt" appears more than once in one object"#),
    ])
    func repeatedKeys(json: String, message: String) {
        #expect(specError(json) == message)
    }

    @Test("an integer field takes an exact integer in range, never a number rounded to one", arguments: [
        (#"[{"kind":"frame","sessionId":1.0}]"#, #"SPEC[0]: "sessionId" must be an integer in 0...255, written without a fraction or exponent"#),
        (#"[{"kind":"frame","version":5e0}]"#, #"SPEC[0]: "version" must be an integer in 0...15, written without a fraction or exponent"#),
        // JSONSerialization read these as 4294967295 and 1 and encoded them.
        (#"[{"kind":"rpc","rpc":{"functionId":1,"correlationId":4294967295.0000001}}]"#,
         #"SPEC[0]: "correlationId" must be an integer in 0...4294967295, written without a fraction or exponent"#),
        (#"[{"kind":"frame","messageId":0.99999999999999999999}]"#,
         #"SPEC[0]: "messageId" must be an integer in 0...4294967295, written without a fraction or exponent"#),
        (#"[{"kind":"frame","messageId":4294967296}]"#, #"SPEC[0]: "messageId" must be an integer in 0...4294967295"#),
        (#"[{"kind":"frame","sessionId":true}]"#, #"SPEC[0]: "sessionId" must be an integer in 0...255"#),
        (#"[{"kind":"rpc","rpc":{"functionId":52.0}}]"#, #"SPEC[0]: rpc needs a "functionId": a spec function name or a number in 0...0x0FFFFFFF"#),
        (#"[{"kind":"rpc","rpc":{"rpcType":1.0,"functionId":1}}]"#,
         "SPEC[0]: rpcType 1.0 is not request, response, notification, erroneousResponse or 0...15"),
    ])
    func integerFields(json: String, message: String) {
        #expect(specError(json) == message)
    }

    @Test("a number that could only be kept rounded is refused, with its path", arguments: [
        (#"[{"kind":"rpc","rpc":{"functionId":1,"json":{"n":[1,18446744073709551615]}}}]"#,
         "SPEC[0].rpc.json.n[1]: a number beyond the 64-bit integer range, which JSON readers hold only as a rounded Double (1.8446744073709552e+19)"),
        (#"[{"kind":"control","frameInfo":"StartService","bson":{"n":-9223372036854775809}}]"#,
         "SPEC[0].bson.n: a number beyond the 64-bit integer range, which JSON readers hold only as a rounded Double (-9.223372036854776e+18)"),
        (#"[{"kind":"rpc","rpc":{"functionId":1,"json":{"n":1e400}}}]"#, "SPEC[0].rpc.json.n: 1e400 is too large for a Double (at byte 49)"),
    ])
    func roundedNumbers(json: String, message: String) {
        #expect(specError(json) == message)
    }

    @Test("text that is not RFC 8259 JSON is refused with its byte offset", arguments: [
        ("", "SPEC: expected a value, found the end of the input (at byte 0)"),
        ("[1,", "SPEC[1]: expected a value, found the end of the input (at byte 3)"),
        (#"[{"kind":"raw","hex":"00"},]"#, "SPEC[1]: expected a value, found ']' (at byte 27)"),
        (#"[{"kind":"raw","hex":"00"}] // note"#, "SPEC: unexpected '/' after the top-level value (at byte 28)"),
        (#"[{"kind":"raw","hex":'00'}]"#, "SPEC[0].hex: expected a value, found ''' (at byte 21)"),
        ("[{\"kind\":\"raw\",\"hex\":\"0\t0\"}]", "SPEC[0].hex: control character 0x9 in a string (at byte 23)"),
    ])
    func syntax(json: String, message: String) {
        #expect(specError(json) == message)
    }

    /// The parameters are written in the SPEC's order with the SPEC's values: `1.0` stays a
    /// Double, `1e2` is the Double 100, integers up to 64 bits stay exact, strings keep their
    /// characters (JSONSerialization sorted the keys, wrote `1.0` as `1` and `\/` for `/`).
    @Test func jsonParametersKeepTheAuthorsOrderAndValues() throws {
        let json = #"{"zeta":1.0,"alpha":{"y":true,"x":null},"mid":[1e2,-0.5,9223372036854775807,-9223372036854775808,0.1,-0.0,1E-7],"s":"\u00e9\u0000/"}"#
        #expect(try rpcParameters(#"[{"kind":"rpc","rpc":{"functionId":7,"correlationId":9,"json":"# + json + "}}]") ==
            #"{"zeta":1.0,"alpha":{"y":true,"x":null},"mid":[100.0,-0.5,9223372036854775807,-9223372036854775808,0.1,-0.0,0.0000001],"s":"é\u0000/"}"#)
        // Whitespace between tokens is not part of the value; the order is.
        #expect(try rpcParameters("[{\"kind\":\"rpc\",\"rpc\":{\"functionId\":7,\"json\":{\n  \"b\" : 2,\n  \"a\" : [ 1 , \"x\" ]\n}}}]") ==
            #"{"b":2,"a":[1,"x"]}"#)
        // Not an object: deliberately invalid parameters are test input too.
        #expect(try rpcParameters(#"[{"kind":"rpc","rpc":{"functionId":7,"json":[3,1,2]}}]"#) == "[3,1,2]")
    }

    @Test func version1EnvelopeKeepsTheParameterOrder() throws {
        let spec = #"[{"kind":"rpc","version":1,"rpc":{"rpcType":"response","functionId":"ButtonPress","correlationId":4,"json":{"success":true,"resultCode":"SUCCESS"}}}]"#
        #expect(try rpcParameters(spec, binaryHeader: false) ==
            #"{"response":{"correlationID":4,"name":"ButtonPressResponse","parameters":{"success":true,"resultCode":"SUCCESS"}}}"#)
    }

    /// Extended JSON keeps its key order into BSON, and `1.0` stays a double (JSONSerialization
    /// sorted the keys and made it int32 1).
    @Test func controlPayloadKeepsTheAuthorsOrderAndTypes() throws {
        var stream = try spec(#"[{"kind":"control","frameInfo":"StartServiceACK","bson":{"mtu":{"$numberLong":"1500"},"hashId":{"$numberInt":"9"},"f":1.0}}]"#)
        stream.moveReaderIndex(forwardBy: 12)
        #expect(Array(stream.readableBytesView).hexString ==
            "29000000" + "126d747500dc05000000000000" + "106861736849640009000000" + "016600000000000000f03f" + "00")
    }

    @Test func theCommandRefusesARepeatedKeyWithOneLine() throws {
        let result = try runSDL(["encode", "--hex", "-"], input: #"[{"kind":"raw","hex":"00","hex":"01"}]"#)
        #expect(result.status == 1)
        #expect(result.out.isEmpty)
        #expect(result.err == "sdl: SPEC[0]: the key \"hex\" appears more than once in one object\n")
    }
}

/// What the dissector shows of JSON a peer sent is what the peer sent, read strictly: JSON a
/// strict reader refuses is an error event, never repaired, and never dropped in silence.
@Suite struct DissectJSONStrictnessTests {
    /// A security query's JSON is shown in the peer's order; JSON a strict reader refuses is an
    /// error event and its bytes are shown as hex, not repaired and not dropped.
    @Test func securityQueryJSON() throws {
        let good = Array(#"{"b":1,"a":[2.5]}"#.utf8).hexString
        let repeated = Array(#"{"a":1,"a":2}"#.utf8).hexString
        let stream = try spec(
            #"[{"kind":"data","serviceType":"CONTROL","payloadHex":"1000000100000001000000"# + String(format: "%02x", good.count / 2)
                + good + #"ff"},{"kind":"data","serviceType":"CONTROL","payloadHex":"10000001000000020000000d"# + repeated + #""}]"#)
        let events = dissect(stream)
        let queries = events.compactMap { field($0, "securityQuery") }.map(\.text)
        #expect(queries == [
            #"{"queryType":"RESPONSE","queryId":"SEND_HANDSHAKE_DATA","sequenceNumber":1,"json":{"b":1,"a":[2.5]},"binarySize":1}"#,
            #"{"queryType":"RESPONSE","queryId":"SEND_HANDSHAKE_DATA","sequenceNumber":2,"json":null,"jsonHex":"\#(repeated)","binarySize":0}"#,
        ])
        let errors = events.filter { field($0, "event") == .string("error") }.map(\.text)
        #expect(errors == [#"{"event":"error","offset":42,"code":"invalidJSON","detail":"security query JSON: a: parameter appears more than once"}"#])
    }

    /// The error events a version 1 RPC frame carrying `json` gives.
    private func v1Errors(_ json: String) throws -> [String] {
        let stream = try spec(#"[{"kind":"frame","version":1,"frameType":"single","serviceType":"RPC","payloadHex":""# + Array(json.utf8).hexString + #""}]"#)
        return dissect(stream).filter { field($0, "event") == .string("error") }.compactMap { field($0, "detail")?.text }
    }

    @Test func version1Envelope() throws {
        #expect(try v1Errors(#"{"request":{"name":"Show","correlationID":1,"parameters":{},"name":"Alert"}}"#) ==
            [#""v1 RPC payload is not a JSON envelope: request.name: parameter appears more than once""#])
        #expect(try v1Errors(#"{"request":{"name":"Show","correlationID":1},"response":{}}"#) ==
            [#""v1 RPC envelope must be an object with one member, request, response or notification, whose value is an object""#])
        #expect(try v1Errors(#"{"request":{"name":"Show","correlationID":"1","extra":true}}"#) ==
            [#""v1 envelope: correlationID is not an integer in 0...4294967295""#, #""v1 envelope: unknown member extra""#])
        #expect(try v1Errors(#"{"response":{"correlationID":4294967296,"parameters":[]}}"#) ==
            [#""v1 envelope: correlationID is not an integer in 0...4294967295""#, #""v1 envelope: parameters is not an object""#,
             #""v1 envelope: no name""#])
        #expect(try v1Errors(#"{"notification":{"name":"OnRCStatus","parameters":{"freeModules":[],"allocatedModules":[]}}}"#) == [])
    }
}
