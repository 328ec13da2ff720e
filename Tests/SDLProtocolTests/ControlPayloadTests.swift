import NIOCore
import SDLBSON
import Testing

@testable import SDLProtocol

/// control_payloads.json: BSON control payloads from sdl_ios, sdl_java_suite and sdl_core, and
/// the pre-v5 raw hash ids.
@Suite struct ControlPayloadTests {
    /// The control frame a vector's payload belongs to, from its `frameInfo` text ("… (0x02) …").
    static func frameInfo(of vector: [String: Any]) -> ControlFrameInfo? {
        guard let text = vector["frameInfo"] as? String, let open = text.range(of: "(0x") else {
            // sdl_java_suite's PSM test payload: a StartServiceACK (see its notes).
            return vector["id"] as? String == "java-sdlpsm-startserviceack-string-tags" ? .startServiceACK : nil
        }
        let hex = text[open.upperBound...].prefix(2)
        return ControlFrameInfo(rawValue: UInt8(hex, radix: 16)!)
    }

    /// Checks one expected field (`{"type": …, "value"|"items": …}`) against a BSON element.
    static func expectField(_ element: BSONElement?, _ expected: [String: Any], _ context: String) {
        guard let element else {
            Issue.record("\(context): missing")
            return
        }
        switch expected["type"] as! String {
        case "string": #expect(element.stringValue == expected["value"] as? String, "\(context)")
        case "int32": #expect(element.int32Value.map(Int.init) == expected["value"] as? Int, "\(context): int32")
        case "int64": #expect(element.int64Value.map(Int.init) == expected["value"] as? Int, "\(context): int64")
        case "array":
            let items = expected["items"] as! [[String: Any]]
            let array = Array(element.arrayValue ?? BSONDocument())
            #expect(element.type == .array && array.count == items.count, "\(context): array")
            for (item, want) in zip(array, items) { expectField(item, want, context + "[]") }
        default: Issue.record("\(context): unexpected type \(expected["type"]!)")
        }
    }

    @Test func peerPayloadsDecodeToTypedFieldsAndReencode() throws {
        let vectors = try loadVectors("control_payloads.json").filter { $0["kind"] as? String == "bson_control_payload" }
        #expect(vectors.count == 24)
        for vector in vectors {
            let id = vector["id"] as! String
            let info = try #require(Self.frameInfo(of: vector), "\(id)")
            let payload = ByteBuffer(bytes: [UInt8](hex: vector["hex"] as! String))
            let expect = vector["expect"] as! [String: Any]
            if id == "java-sdlpsm-startserviceack-string-tags" {
                // The Java PSM test deliberately carries hashId and mtu as strings; the spec (and
                // every peer's ACK handling) has them as integers, so the typed decode refuses it,
                // naming the field, while the bytes are still valid BSON.
                do {
                    _ = try ControlPayload(frameInfo: info, version: .v5, payload: payload)
                    Issue.record("\(id): accepted")
                } catch {
                    #expect(error.code == .invalidControlPayload)
                    #expect(error.detail == "StartServiceACK field hashId must be an int32 (or an int64 within the int32 range), not string")
                    #expect(error.offset == 4)
                }
                continue
            }
            let decoded = try ControlPayload(frameInfo: info, version: .v5, payload: payload)
            // Re-encode with our writer; whatever the key order, the fields and their wire
            // types are the peer's.
            var reencoded = ByteBuffer()
            try decoded.write(to: &reencoded)
            let document = try BSONDocument(validating: reencoded)
            let fields = expect["fields"] as! [String: [String: Any]]
            #expect(document.count == fields.count, "\(id): \(document.count) fields")
            for (key, want) in fields {
                Self.expectField(document[key], want, "\(id).\(key)")
            }
            #expect(try ControlPayload(frameInfo: info, version: .v5, payload: reencoded) == decoded, "\(id): round trip")
            if case .document = decoded { Issue.record("\(id): not typed") }
        }
    }

    @Test func typedValuesOfSelectedVectors() throws {
        let vectors = Dictionary(uniqueKeysWithValues: try loadVectors("control_payloads.json").map { ($0["id"] as! String, $0) })
        func payload(_ id: String) -> ByteBuffer { ByteBuffer(bytes: [UInt8](hex: vectors[id]!["hex"] as! String)) }

        let ack = try StartServiceACKPayload(bson: payload("ios-rpc-startservice-ack-full"))
        #expect(ack.hashID == 1_457_689 && ack.mtu == 5_984_649)
        #expect(ack.videoServiceTransports == [2, 1])
        #expect(ack.make != nil && ack.model == "Is" && ack.otherFields.isEmpty)

        let cloud = try StartServiceACKPayload(bson: payload("core-rpc-startservice-ack-cloud-authtoken"))
        #expect(cloud.secondaryTransports == [])  // Core sends an empty array when there is none
        #expect(cloud.authToken == "Sample auth token")

        let video = try StartServicePayload(bson: payload("ios-video-startservice"))
        #expect(video == StartServicePayload(height: 59794, width: 363, videoProtocol: "RTMP", videoCodec: "H265"))

        let disabled = try TransportEventUpdatePayload(bson: payload("core-transport-event-update-tcp-disabled"))
        #expect(disabled == TransportEventUpdatePayload(tcpIPAddress: ""))

        let nak = try ServiceNAKPayload(bson: payload("core-end-nack-rejected-hashid-reason"))
        #expect(nak.rejectedParams == ["hashId"] && nak.reason == "Wrong hash_id for session 255")
    }

    @Test func preV5RawHashIDs() throws {
        let vectors = try loadVectors("control_payloads.json").filter { $0["kind"] as? String == "raw_hash_id" }
        #expect(vectors.count == 4)
        for vector in vectors {
            let id = vector["id"] as! String
            let payload = ByteBuffer(bytes: [UInt8](hex: vector["hex"] as! String))
            let expect = vector["expect"] as! [String: Any]
            let info: ControlFrameInfo = id.contains("startservice-ack") ? .startServiceACK : .endService
            if expect["valid"] as? Bool == false {
                // Fewer than 4 bytes, or more: sdl_core reads the first 4 and calls 0 wrong; we
                // refuse any payload that is not exactly the 4-byte hash id.
                #expect(throws: SDLProtocolError.self, "\(id)") { try ControlPayload(frameInfo: info, version: .v3, payload: payload) }
                continue
            }
            let decoded = try ControlPayload(frameInfo: info, version: .v3, payload: payload)
            #expect(decoded == .hashID(UInt32(expect["hashId"] as! Int)), "\(id)")
            var written = ByteBuffer()
            try decoded.write(to: &written)
            #expect(written == payload, "\(id)")
        }
        // No payload: no hash id (Core sends none for "not supported").
        #expect(try ControlPayload(frameInfo: .startServiceACK, version: .v4, payload: ByteBuffer()) == ControlPayload.none)
    }

    @Test func integerWidthsOnTheWireAndOnRead() throws {
        // Written: mtu int64, hashId int32.
        var buffer = ByteBuffer()
        try StartServiceACKPayload(protocolVersion: "5.4.1", hashID: 7, mtu: 131_084).write(to: &buffer)
        let document = try BSONDocument(validating: buffer)
        #expect(document["mtu"]?.type == .int64 && document["hashId"]?.type == .int32)
        // Read: either width, as long as the value fits.
        var swapped = ByteBuffer()
        swapped.writeBSONDocument { doc in
            doc.appendInt64("hashId", 7)
            doc.appendInt32("mtu", 1500)
            doc.appendArray("videoServiceTransports") { $0.appendInt64(2); $0.appendInt32(1) }
        }
        let ack = try StartServiceACKPayload(bson: swapped)
        #expect(ack.hashID == 7 && ack.mtu == 1500 && ack.videoServiceTransports == [2, 1])
        var tooWide = ByteBuffer()
        tooWide.writeBSONDocument { $0.appendInt64("hashId", 1 << 40) }
        expectError(SDLProtocolError(.invalidControlPayload, offset: 4,
                                         "StartServiceACK field hashId must be an int32 (or an int64 within the int32 range), not int64")) {
            try StartServiceACKPayload(bson: tooWide)
        }
        var wrongItem = ByteBuffer()
        wrongItem.writeBSONDocument { doc in doc.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI"); $0.appendInt32(3) } }
        #expect(throws: SDLProtocolError.self) { try StartServiceACKPayload(bson: wrongItem) }
    }

    @Test func unknownFieldsRoundTrip() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "6.0.0")
            doc.appendBool("futureFlag", true)
            doc.appendDocument("futureDocument") { $0.appendDouble("x", 1.5) }
            doc.appendInt32("hashId", -5)
        }
        let ack = try StartServiceACKPayload(bson: buffer)
        #expect(ack.protocolVersion == "6.0.0" && ack.hashID == -5)
        #expect(ack.otherFields.map(\.key) == ["futureFlag", "futureDocument"])
        var written = ByteBuffer()
        try ack.write(to: &written)
        #expect(try StartServiceACKPayload(bson: written) == ack)
        // Known fields first, then the unknown ones in their order.
        #expect(Array(try BSONDocument(validating: written)).map(\.key) == ["protocolVersion", "hashId", "futureFlag", "futureDocument"])
        // A key BSON cannot hold is refused, not a crash.
        var bad = ack
        bad.otherFields.append("a\u{0}b", .int32(1))
        var sink = ByteBuffer()
        #expect(throws: SDLProtocolError.self) { try bad.write(to: &sink) }
    }

    /// A NaN with a payload among the unknown fields comes back bit for bit (found by FuzzBSON:
    /// as values, NaN != NaN, so round trips are compared as bytes).
    @Test func nanInUnknownFieldsRoundTripsBitForBit() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendDouble("d", Double(bitPattern: 0xFFFF_FFFF_FFFF_FFFF))
            doc.appendString("reason", "x")
        }
        let payload = try ControlPayload(frameInfo: .startServiceNAK, version: .v5, payload: buffer)
        var written = ByteBuffer()
        try payload.write(to: &written)
        #expect(try BSONDocument(validating: written)["d"]?.doubleValue?.bitPattern == 0xFFFF_FFFF_FFFF_FFFF)
        #expect(written.readableBytes == buffer.readableBytes)
    }

    @Test func malformedBSONIsATypedErrorWithOffset() throws {
        // Declared length larger than the payload; a string of declared length 0.
        let cases: [[UInt8]] = [
            [0x10, 0, 0, 0, 0x00],
            [0x0E, 0, 0, 0, 0x02, 0x61, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
            [0x05, 0, 0, 0],
        ]
        for bytes in cases {
            do {
                _ = try ControlPayload(frameInfo: .startServiceACK, version: .v5, payload: ByteBuffer(bytes: bytes))
                Issue.record("accepted \(bytes.hex)")
            } catch {
                #expect(error.code == .invalidControlPayload)
                #expect(error.offset != nil)
                #expect(error.detail.hasPrefix("StartServiceACK payload is not valid BSON"))
            }
        }
        // Frames without defined fields keep any BSON payload as a document.
        var heartbeat = ByteBuffer()
        heartbeat.writeBSONDocument { $0.appendString("x", "y") }
        guard case .document(let document) = try ControlPayload(frameInfo: .heartbeat, version: .v5, payload: heartbeat) else {
            Issue.record("not a document")
            return
        }
        #expect(document["x"]?.stringValue == "y")
    }
}

/// Repeated keys and payloads with very many unknown fields.
@Suite struct ControlPayloadHostileTests {
    func refusal(_ body: () throws -> Void) -> SDLProtocolError? {
        do {
            try body()
            return nil
        } catch {
            return error as? SDLProtocolError
        }
    }

    /// A repeated key is refused wherever it is, by the typed payloads and by `ControlPayload`
    /// (documents of frames without defined fields too), at the second occurrence; the validated
    /// view of the same bytes keeps both.
    @Test func aRepeatedKeyIsRefusedAtItsSecondOccurrence() throws {
        var known = ByteBuffer()  // {protocolVersion "5.4.1", protocolVersion "9.9.9"}: the repeat at 31
        known.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "5.4.1")
            doc.appendString("protocolVersion", "9.9.9")
        }
        var unknown = ByteBuffer()  // {hashId 1, x {a 1, a 2}}: the nested repeat at 30
        unknown.writeBSONDocument { doc in
            doc.appendInt32("hashId", 1)
            doc.appendDocument("x") { $0.appendInt32("a", 1); $0.appendInt32("a", 2) }
        }
        let cases: [(ControlFrameInfo, ByteBuffer, String, Int)] = [
            (.startService, known, "StartService", 31),
            (.startServiceACK, known, "StartServiceACK", 31),
            (.endService, unknown, "EndService", 30),
            (.startServiceNAK, unknown, "ServiceNAK", 30),
            (.transportEventUpdate, unknown, "TransportEventUpdate", 30),
            (.heartbeat, unknown, "Heartbeat", 30),
        ]
        var twoUnknown = ByteBuffer()  // {hashId 1, future 2, future 3}: the repeat at 28, both unknown to StartService
        twoUnknown.writeBSONDocument { doc in
            doc.appendInt32("hashId", 1)
            doc.appendInt32("future", 2)
            doc.appendInt32("future", 3)
        }
        let unknownTwice = refusal { _ = try StartServicePayload(bson: twoUnknown) }
        #expect(unknownTwice?.offset == 28)
        #expect(unknownTwice?.detail == "StartService payload: key \"future\" appears more than once in one document")
        for (info, payload, frame, offset) in cases {
            let error = refusal { _ = try ControlPayload(frameInfo: info, version: .v5, payload: payload) }
            #expect(error?.code == .invalidControlPayload, "\(info)")
            #expect(error?.offset == offset, "\(info)")
            let key = offset == 31 ? "protocolVersion" : "a"
            #expect(error?.detail == "\(frame) payload: key \"\(key)\" appears more than once in one document", "\(info)")
        }
        #expect(refusal { _ = try StartServicePayload(bson: known) }?.offset == 31)
        #expect(refusal { _ = try StartServiceACKPayload(bson: known) }?.offset == 31)
        #expect(refusal { _ = try ServiceNAKPayload(bson: unknown) }?.offset == 30)
        #expect(refusal { _ = try EndServicePayload(bson: unknown) }?.offset == 30)
        #expect(refusal { _ = try RegisterSecondaryTransportNAKPayload(bson: unknown) }?.offset == 30)
        #expect(refusal { _ = try TransportEventUpdatePayload(bson: unknown) }?.offset == 30)
        #expect(try BSONDocument(validating: known).count == 2)
        #expect(try BSONDocument(validating: known)["protocolVersion"]?.stringValue == "5.4.1")

        // Array items carry keys nobody reads: "0", "0" is still a list of two.
        var array = ByteBuffer()
        array.writeBSONDocument { doc in
            doc.appendDocument("secondaryTransports") { $0.appendString("0", "TCP_WIFI"); $0.appendString("0", "USB") }
        }
        array.setInteger(UInt8(0x04), at: 4)
        #expect(try StartServiceACKPayload(bson: array).secondaryTransports == ["TCP_WIFI", "USB"])
    }

    /// A StartService of `count` unknown boolean fields u00000, u00001, … after a known one.
    static func startService(unknownFields count: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            doc.appendString("protocolVersion", "5.4.1")
            for i in 0..<count {
                let digits = String(i)
                doc.appendBool("u" + String(repeating: "0", count: 5 - digits.count) + digits, i % 2 == 0)
            }
        }
        return buffer
    }

    /// Merging unknown fields walks the document once: it was a scan of the unknown list per
    /// element (14,000 fields: about 10^8 comparisons, most of a second).
    @Test func decodingManyUnknownFieldsIsLinear() throws {
        func steps(_ count: Int) throws -> Int {
            let payload = Self.startService(unknownFields: count)
            let reader = try ControlFieldReader(payload, frame: "StartService", limits: .default)
            var decoded = StartServicePayload()
            let steps = try reader.read(into: &decoded) { (payload, field) throws(SDLProtocolError) -> Bool in
                guard field.hasKey("protocolVersion") else { return false }
                payload.protocolVersion = try reader.string(field)
                return true
            }
            #expect(decoded.otherFields.count == count)
            return steps
        }
        // Both passes together step over each element at most twice.
        #expect(try steps(1_400) <= 2 * 1_401)
        #expect(try steps(14_000) <= 2 * 14_001)

        // The whole decode of a 130 KB payload: every field kept, in order, and written back.
        let payload = Self.startService(unknownFields: 14_000)
        #expect(payload.readableBytes > 125_000)
        let decoded = try StartServicePayload(bson: payload)
        #expect(decoded.protocolVersion == "5.4.1")
        #expect(decoded.otherFields.count == 14_000)
        #expect(decoded.otherFields.first?.key == "u00000" && decoded.otherFields.last?.key == "u13999")
        #expect(decoded.otherFields[13_999].value == .bool(false))
        var written = ByteBuffer()
        try decoded.write(to: &written)
        #expect(written == payload)
    }
}
