import Foundation
import NIOCore
import SDLProtocol
import Testing

@testable import sdl

private let packageRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
    }
    fatalError("no Package.swift above \(#filePath)")
}()

func dissect(_ stream: ByteBuffer, chunkSize: Int? = nil) -> [OutputJSON] {
    var events: [OutputJSON] = []
    var dissector = Dissector()
    if let chunkSize {
        var rest = stream
        while rest.readableBytes > 0 {
            dissector.feed(rest.readSlice(length: min(chunkSize, rest.readableBytes))!) { events.append($0) }
        }
    } else {
        dissector.feed(stream) { events.append($0) }
    }
    dissector.finish { events.append($0) }
    return events
}

func field(_ event: OutputJSON, _ key: String) -> OutputJSON? {
    guard case .object(let members) = event else { return nil }
    return members.first { $0.0 == key }?.1
}

func spec(_ json: String) throws -> ByteBuffer {
    try StreamSpec.encode(specJSON: Data(json.utf8))
}

@Suite struct DissectEncodeTests {
    /// The sample stream the README dissects: every message comes back, garbage is reported.
    @Test func sampleStreamRoundTrips() throws {
        let url = packageRoot.appendingPathComponent("Examples/sample-stream.json")
        let stream = try StreamSpec.encode(specJSON: try Data(contentsOf: url))
        for chunkSize in [nil, 1, 7, 1000] {
            let events = dissect(stream, chunkSize: chunkSize)
            let kinds = events.compactMap { field($0, "event") }.map(\.text)
            #expect(kinds.filter { $0 == "\"message\"" }.count == 12)
            #expect(kinds.filter { $0 == "\"error\"" }.count == 2)
            #expect(events.last?.text == #"{"event":"end","bytes":2258,"frames":19,"messages":12,"errors":2}"#)
            let rpc = events.compactMap { field($0, "rpc") }
            #expect(rpc.count == 6)
            #expect(rpc.first.flatMap { field($0, "functionId") } == .int(52))
            #expect(rpc.first.flatMap { field($0, "functionName") } == .string("PublishAppService"))
            #expect(rpc[3].text == #"{"rpcType":"request","functionId":32,"functionName":"PutFile","correlationId":2,"encoding":"json","params":{"syncFileName":"icon.png","fileType":"GRAPHIC_PNG"},"bulkSize":16}"#)
            #expect(rpc[4].text == #"{"rpcType":"request","functionId":43,"functionName":"GetInteriorVehicleData","correlationId":3,"encoding":"bson","params":{"moduleType":"CLIMATE","subscribe":true},"bulkSize":0}"#)
            let errors = events.filter { field($0, "event") == .string("error") }
            #expect(errors.map { field($0, "offset")!.text } == ["1543", "2203"])
            #expect(errors.map { field($0, "code")! } == [.string("unsupportedVersion"), .string("unsupportedVersion")])
        }
    }

    @Test func frameEventHasTheDesignedKeysInOrder() throws {
        let stream = try spec(#"[{"kind":"frame","frameType":"control","serviceType":"CONTROL","frameInfo":"HeartbeatACK","sessionId":9},{"kind":"frame","version":1,"frameType":"single","encrypted":true,"payloadHex":"7b7d"}]"#)
        let events = dissect(stream)
        #expect(events[0].text == #"{"event":"frame","offset":0,"version":5,"encrypted":false,"frameType":"control","serviceType":0,"frameInfo":255,"sessionId":9,"dataSize":0,"messageId":0}"#)
        // Version 1: no message id, and the E bit reads as compression.
        #expect(events[2].text == #"{"event":"frame","offset":12,"version":1,"encrypted":false,"compressed":true,"frameType":"single","serviceType":7,"frameInfo":0,"sessionId":1,"dataSize":2,"messageId":null}"#)
    }

    @Test func truncatedAndIncompleteStreamsAreReported() throws {
        // A First frame announcing 3 frames, one Consecutive frame, then half a frame.
        var stream = try spec(#"[{"kind":"rpc","rpc":{"functionId":7,"json":{"a":"0123456789012345678901234567890123456789"}},"mtu":20}]"#)
        stream.moveWriterIndex(to: 12 + 8 + 12 + 20 + 5)
        let events = dissect(stream)
        let errors = events.filter { field($0, "event") == .string("error") }
        #expect(errors.map { field($0, "code")! } == [.string("truncatedFrame"), .string("incompleteMessage")])
        #expect(field(errors[0], "offset") == .int(52))
        #expect(events.last.flatMap { field($0, "messages") } == .int(0))
    }

    @Test func rpcPayloadErrorsAreReportedNotDropped() throws {
        // A Single RPC frame whose binary header claims more JSON than there is.
        let stream = try spec(#"[{"kind":"frame","frameType":"single","serviceType":"RPC","payloadHex":"000000070000000100000099"}]"#)
        let events = dissect(stream)
        let error = try #require(events.first { field($0, "event") == .string("error") })
        #expect(field(error, "code") == .string("jsonSizeExceedsPayload"))
        let message = try #require(events.first { field($0, "event") == .string("message") })
        #expect(field(message, "payloadSize") == .int(12))
    }

    @Test func encodeBuildsDeliberatelyMalformedFrames() throws {
        let stream = try spec(#"[{"kind":"frame","version":0,"frameType":7,"serviceType":200,"frameInfo":77,"sessionId":3,"messageId":9,"dataSize":4000000000,"payloadHex":"ab"},{"kind":"raw","hex":"ff ff"}]"#)
        #expect(Array(stream.readableBytesView).hexString == "07c84d03ee6b280000000009abffff")
        let events = dissect(stream)
        #expect(field(events[0], "code") == .string("unsupportedVersion"))
    }

    @Test func specErrorsNameTheEntryAndField() throws {
        let cases: [(String, String)] = [
            (#"{"kind":"rpc"}"#, "SPEC must be a JSON array of messages"),
            (#"[{"kind":"nope"}]"#, "SPEC[0]: unknown kind \"nope\" (rpc, control, data, frame, raw)"),
            (#"[{"kind":"raw","hex":"0"}]"#, "SPEC[0]: raw entry needs \"hex\""),
            (#"[{},{"kind":"frame","sessionId":256}]"#, "SPEC[1]: \"sessionId\" must be an integer in 0...255"),
            (#"[{"kind":"control"}]"#, "SPEC[0]: control entry needs \"frameInfo\""),
            (#"[{"kind":"control","frameInfo":"Bogus"}]"#, "SPEC[0]: \"frameInfo\": unknown control frame Bogus"),
            (#"[{"kind":"rpc","rpc":{"functionId":268435456}}]"#, "SPEC[0]: rpc needs a \"functionId\": a spec function name or a number in 0...0x0FFFFFFF"),
            (#"[{"kind":"rpc","rpc":{"functionId":"Teleport"}}]"#, "SPEC[0]: \"functionId\": no function named \"Teleport\" in the spec"),
            (#"[{"kind":"frame","serviceType":"RADIO"}]"#, "SPEC[0]: \"serviceType\": unknown service RADIO (CONTROL, RPC, AUDIO, VIDEO, HYBRID or a number)"),
        ]
        for (json, message) in cases {
            #expect(throws: ToolError.self) { try spec(json) }
            do {
                _ = try spec(json)
            } catch let error as ToolError {
                #expect(error.description == message)
            }
        }
    }

    /// Version 1 has no binary header: the function travels by name in the JSON envelope.
    @Test func version1RPCsCarryTheFunctionName() throws {
        let stream = try spec(#"[{"kind":"rpc","version":1,"rpc":{"rpcType":"response","functionId":"ButtonPress","correlationId":4,"json":{"success":true,"resultCode":"SUCCESS"}}},{"kind":"rpc","version":1,"rpc":{"rpcType":"notification","functionId":"OnRCStatus","json":{"allocatedModules":[],"freeModules":[]}}}]"#)
        let rpc = dissect(stream).compactMap { field($0, "rpc") }
        #expect(rpc.map(\.text) == [
            #"{"rpcType":"response","functionId":41,"functionName":"ButtonPressResponse","correlationId":4,"encoding":"json","params":{"resultCode":"SUCCESS","success":true},"bulkSize":0}"#,
            #"{"rpcType":"notification","functionId":32785,"functionName":"OnRCStatus","correlationId":0,"encoding":"json","params":{"allocatedModules":[],"freeModules":[]},"bulkSize":0}"#,
        ])
        #expect(throws: ToolError.self) { try spec(#"[{"kind":"rpc","version":1,"rpc":{"functionId":999999}}]"#) }
    }

    @Test func messageIDsCountUpAndControlFramesUseZero() throws {
        let stream = try spec(#"[{"kind":"control","frameInfo":"StartService"},{"kind":"rpc","rpc":{"functionId":1}},{"kind":"data","serviceType":"VIDEO","payloadHex":"01"},{"kind":"rpc","messageId":40,"rpc":{"functionId":1}},{"kind":"rpc","rpc":{"functionId":1}}]"#)
        let ids = dissect(stream).filter { field($0, "event") == .string("frame") }.map { field($0, "messageId")! }
        #expect(ids == [.int(0), .int(1), .int(2), .int(40), .int(41)])
    }
}
