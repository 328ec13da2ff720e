import Foundation
import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// The golden frames of `Vectors/golden-frames.json`: whole frames built by hand from the layouts
/// of protocol spec 5.4.1, compared byte for byte with what the engines write and fed to them as a
/// peer's bytes. Each vector has an id, a description and its frames as hex.
enum Vectors {
    static let path = "Tests/SDLSessionTests/Vectors/golden-frames.json"

    struct File: Decodable {
        var vectors: [Vector]
    }

    struct Vector: Decodable {
        var id: String
        var description: String
        var frames: [String]
    }

    /// Each vector's frames by id, read in place from the package. A missing or unreadable file, a
    /// vector without an id, a description or frames, an id given twice, or a frame not spelled
    /// as `hexString` spells bytes fails the test that asked.
    static let golden: [String: [String]] = {
        do {
            let file = try JSONDecoder().decode(File.self, from: Data(try SharedData.packageFile(path)))
            var vectors: [String: [String]] = [:]
            for vector in file.vectors {
                guard !vector.id.isEmpty, !vector.description.isEmpty, !vector.frames.isEmpty else {
                    Issue.record("\(path): vector '\(vector.id)' needs an id, a description and at least one frame")
                    continue
                }
                guard vectors[vector.id] == nil else {
                    Issue.record("\(path): vector \(vector.id) is given twice")
                    continue
                }
                for frame in vector.frames where frame.isEmpty || hexString([UInt8](hex: frame)) != frame {
                    Issue.record("\(path): vector \(vector.id) has a frame that is not lowercase hex with one space between bytes: '\(frame)'")
                }
                vectors[vector.id] = vector.frames
            }
            return vectors
        } catch {
            Issue.record("\(path): \(error)")
            return [:]
        }
    }()

    static func frame(_ id: String, _ index: Int = 0) -> String {
        guard let frames = golden[id], index < frames.count else {
            Issue.record("\(path) has no frame \(index) in vector \(id)")
            return ""
        }
        return frames[index]
    }

    static var a1: String { frame("A1") }
    static var a2: String { frame("A2") }
    static var a3: String { frame("A3") }
    static var a4: String { frame("A4") }
    static var a5: String { frame("A5") }
    static var a6: String { frame("A6") }
    static var a7: String { frame("A7") }
    static var a7b: String { frame("A7b") }
    static var a8: String { frame("A8") }
    static var a10EndService: String { frame("A10", 0) }
    static var a10ACK: String { frame("A10", 1) }
    static var a11Heartbeat: String { frame("A11", 0) }
    static var a11ACK: String { frame("A11", 1) }
    static var a12: String { frame("A12") }
}

/// A BSON control frame payload as a document, for field checks.
func document(_ frame: ProtocolFrame) -> BSONDocument {
    try! BSONDocument(validating: frame.payload)
}

func headUnit(_ adjust: (inout SessionConfiguration) -> Void = { _ in }) -> SessionConfiguration {
    var configuration = EnginePair.headUnitDefaults()
    adjust(&configuration)
    return configuration
}

@Suite("A. Version negotiation")
struct NegotiationTests {
    @Test("1. v5 app and our head unit: ACK with every 5.1+ field, then the TransportEventUpdate after it")
    func v5HappyPath() throws {
        var pair = EnginePair(headUnit: headUnit {
            $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 12346)
        })
        let link = pair.openPrimary()
        let handle = try pair.app.engine.startSession(on: link, now: pair.now)
        pair.pump()
        #expect(hexString(pair.app.written[link]!) == hexString([UInt8](hex: Vectors.a1)))
        let frames = pair.hu.frames(on: link)
        try #require(frames.count == 2)
        let ack = frames[0]
        #expect(ack.header.version == .v5)
        #expect(ack.header.frameType == .control)
        #expect(ack.header.serviceType == .rpc)
        #expect(ack.header.frameInfo == 0x02)
        #expect(ack.header.sessionID == SessionID(1))
        let fields = document(ack)
        #expect(fields["protocolVersion"]?.stringValue == "5.4.1")
        #expect(fields["hashId"]?.type == .int32)
        #expect(fields["mtu"]?.type == .int64)
        #expect(fields["mtu"]?.int64Value == 131_072)
        #expect(fields["secondaryTransports"]?.arrayValue.map { $0.map { $0.stringValue } } == ["TCP_WIFI"])
        #expect(fields["audioServiceTransports"]?.arrayValue.map { $0.map { $0.int32Value } } == [1, 2])
        #expect(fields["videoServiceTransports"]?.arrayValue.map { $0.map { $0.int32Value } } == [1, 2])
        let teu = frames[1]
        #expect(teu.header.serviceType == .control)
        #expect(teu.header.frameInfo == 0xFD)
        #expect(teu.header.sessionID == SessionID(1))
        #expect(document(teu)["tcpIpAddress"]?.stringValue == "127.0.0.1")
        #expect(document(teu)["tcpPort"]?.int32Value == 12346)
        let started = try #require(pair.app.events.compactMap(\.startedInfo).first)
        #expect(started.version == SDLVersion(major: 5, minor: 4, patch: 1))
        #expect(started.sessionID == SessionID(1))
        #expect(started.hashID == UInt32(bitPattern: fields["hashId"]!.int32Value!))
        #expect(started.secondaryTransports == ["TCP_WIFI"])
        #expect(pair.appEvents(handle).contains(.secondaryTransport(handle, .configured(address: nil, port: nil))))
        #expect(pair.hu.events.compactMap(\.startedInfo).first?.version == SDLVersion(major: 5, minor: 4, patch: 1))
    }

    @Test("2. Feature gates: 5.0.0 gets no secondary fields and no TransportEventUpdate; reason only from 5.3.0")
    func featureGates() throws {
        for (offer, expectSecondary, expectReason) in [("5.0.0", false, false), ("5.2.0", true, false), ("5.3.0", true, true), ("5.4.1", true, true)] {
            var app = SessionConfiguration(role: .app)
            app.maxProtocolVersion = SDLVersion(parsing: offer)!
            var pair = EnginePair(app: app, headUnit: headUnit {
                $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "10.0.0.1", tcpPort: 1)
            })
            let link = pair.openPrimary()
            let handle = try pair.app.engine.startSession(on: link, now: pair.now)
            pair.pump()
            let frames = pair.hu.frames(on: link)
            let fields = document(frames[0])
            #expect(fields["protocolVersion"]?.stringValue == offer)
            #expect((fields["secondaryTransports"] != nil) == expectSecondary, "\(offer)")
            #expect(frames.count == (expectSecondary ? 2 : 1), "\(offer)")
            #expect(fields["make"] == nil)
            // A refused video start: the NAK carries `reason` only from 5.3.0.
            try pair.app.engine.sessionRegistered(handle, now: pair.now)
            let huHandle = pair.hu.engine.sessionHandles[0]
            try pair.hu.engine.sessionRegistered(huHandle, now: pair.now)
            var request = ByteBuffer()
            try StartServicePayload(videoCodec: "MJPEG").write(to: &request)
            var frame = ByteBuffer()
            FrameEncoder.write(
                ProtocolFrame(header: FrameHeader(version: .v5, frameType: .control, serviceType: .video, frameInfo: 1, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(3)), payload: request),
                to: &frame)
            let before = pair.hu.written[link]!.count
            pair.hu.feed(Array(frame.readableBytesView), on: link, now: pair.now)
            let nak = decodeFrames(Array(pair.hu.written[link]![before...]))[0]
            #expect(nak.header.frameInfo == 0x03)
            #expect(document(nak)["rejectedParams"]?.arrayValue.map { $0.map { $0.stringValue } } == ["videoCodec"])
            #expect((document(nak)["reason"] != nil) == expectReason, "\(offer)")
        }
    }

    @Test("3. v4 app: A2 is answered by A3 (v4, raw hash), no TEU; RAI's version binds the session; raw-hash EndService ACKed")
    func v4App() throws {
        var pair = EnginePair(headUnit: headUnit {
            $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 1)
        })
        let link = pair.openPrimary()
        pair.hu.feed([UInt8](hex: Vectors.a2), on: link, now: pair.now)
        let frames = pair.hu.frames(on: link)
        try #require(frames.count == 1)
        #expect(frames[0].header.version == .v4)
        #expect(frames[0].header.frameInfo == 0x02)
        #expect(frames[0].payload.readableBytes == 4)
        let hash = try RawHashID.read(frames[0].payload)
        #expect(hash != 0)
        // RegisterAppInterface in a v4 Single frame: the session becomes version 4.
        var rai = ByteBuffer()
        FrameEncoder.write(
            ProtocolFrame(header: FrameHeader(version: .v4, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(1)), payload: ByteBuffer(bytes: [1, 2, 3])),
            to: &rai)
        pair.hu.feed(Array(rai.readableBytesView), on: link, now: pair.now)
        let handle = pair.hu.engine.sessionHandles[0]
        #expect(pair.hu.engine.sessionInfo(handle)?.frameVersion == .v4)
        #expect(pair.hu.receivedMessages(handle).map { Array($0.payload.readableBytesView) } == [[1, 2, 3]])
        // EndService(RPC) with the raw big-endian hash: ACKed with a v4 header.
        var end = ByteBuffer()
        var hashBytes = ByteBuffer()
        RawHashID.write(hash, to: &hashBytes)
        FrameEncoder.write(
            ProtocolFrame(header: FrameHeader(version: .v4, frameType: .control, serviceType: .rpc, frameInfo: 4, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(2)), payload: hashBytes),
            to: &end)
        pair.hu.feed(Array(end.readableBytesView), on: link, now: pair.now)
        let answer = pair.hu.frames(on: link).last!
        #expect(answer.header.version == .v4)
        #expect(answer.header.frameInfo == 0x05)
        #expect(pair.hu.events.contains(.sessionEnded(handle, .peer)))
    }

    @Test("4. v2 session: video refused with a bare v2 NAK, heartbeat not answered")
    func v2App() throws {
        var pair = EnginePair()
        let link = pair.openPrimary()
        pair.hu.feed([UInt8](hex: Vectors.a2), on: link, now: pair.now)
        var bytes = ByteBuffer()
        FrameEncoder.write(
            ProtocolFrame(header: FrameHeader(version: .v2, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(1)), payload: ByteBuffer(bytes: [9])),
            to: &bytes)
        FrameEncoder.write(
            ProtocolFrame(header: FrameHeader(version: .v2, frameType: .control, serviceType: .video, frameInfo: 1, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(2)), payload: ByteBuffer()),
            to: &bytes)
        FrameEncoder.write(
            ProtocolFrame(header: FrameHeader(version: .v2, frameType: .control, serviceType: .control, frameInfo: 0, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(3)), payload: ByteBuffer()),
            to: &bytes)
        let handle = pair.hu.engine.sessionHandles[0]
        try pair.hu.engine.sessionRegistered(handle, now: pair.now)
        let before = pair.hu.written[link]!.count
        pair.hu.feed(Array(bytes.readableBytesView), on: link, now: pair.now)
        let answers = decodeFrames(Array(pair.hu.written[link]![before...]))
        #expect(answers.count == 1)
        #expect(hexString(answers[0].bytes) == "20 0b 03 01 00 00 00 00 00 00 00 02")
        #expect(pair.hu.events.contains(.serviceStartFailed(handle, .video, .refused(.versionTooLow))))
        #expect(pair.hu.anomalies().contains(.heartbeatUnsupported))
    }
}

@Suite("A. Version negotiation, app role against scripted head units")
struct AppNegotiationTests {
    @Test("5. A v4-only head unit: v4 framing, raw hash, no secondary, EndService with the big-endian hash")
    func v4HeadUnit() throws {
        var app = AppUnderTest()
        let handle = app.start()
        #expect(hexString(app.newFrames().flatMap(\.bytes)) == hexString([UInt8](hex: Vectors.a1)))
        app.feed([UInt8](hex: Vectors.a3))
        let info = try #require(app.driver.events.compactMap(\.startedInfo).first)
        #expect(info.frameVersion == .v4)
        #expect(info.version == SDLVersion(major: 4, minor: 0, patch: 0))
        #expect(info.hashID == 0x0001_0001)
        #expect(!app.driver.events.contains { if case .secondaryTransport = $0 { return true } else { return false } })
        try app.driver.engine.endSession(handle, now: app.now)
        app.driver.drain()
        let end = try #require(app.newFrames().first)
        #expect(hexString(end.bytes) == "40 07 04 01 00 00 00 04 00 00 00 01 00 01 00 01")
        app.feed(control(.endServiceACK, version: .v4, service: .rpc, session: 1, messageID: 1))
        #expect(app.driver.events.contains(.sessionEnded(handle, .local)))
        #expect(app.driver.closed.map(\.0) == [app.link])
    }

    @Test("6. A Core-like bare v1 NAK: start fails without reason, nothing resent, the transport is closed")
    func coreNAK() throws {
        var app = AppUnderTest()
        let handle = app.start()
        _ = app.newFrames()
        app.feed([UInt8](hex: Vectors.a4))
        #expect(app.driver.events.contains(.sessionStartFailed(handle, .rejected(NAKContent()))))
        #expect(app.newFrames().isEmpty)
        #expect(app.driver.closed.map(\.1) == [.noSessionsLeft])
    }

    @Test("7. Version strings in the ACK are read leniently; frames always use the header's version")
    func versionTolerance() throws {
        let cases: [(String, [UInt8], SDLVersion, Anomaly.Code?)] = [
            ("5.4", bson { $0.appendString("protocolVersion", "5.4") }, SDLVersion(major: 5, minor: 4, patch: 0), nil),
            ("5", bson { $0.appendString("protocolVersion", "5") }, SDLVersion(major: 5, minor: 0, patch: 0), nil),
            ("5.4.1-rc1", bson { $0.appendString("protocolVersion", "5.4.1-rc1") }, SDLVersion(major: 5, minor: 4, patch: 1), nil),
            ("6.0.0", bson { $0.appendString("protocolVersion", "6.0.0") }, SDLVersion(major: 5, minor: 4, patch: 1), .versionMismatch),
            ("absent", bson { $0.appendInt32("hashId", 7) }, SDLVersion(major: 5, minor: 0, patch: 0), nil),
            ("int32", bson { $0.appendInt32("protocolVersion", 5) }, SDLVersion(major: 5, minor: 0, patch: 0), .unusableProtocolVersion),
        ]
        for (name, payload, expected, anomaly) in cases {
            var app = AppUnderTest()
            let handle = app.start()
            app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: payload))
            let info = try #require(app.driver.events.compactMap(\.startedInfo).first, "\(name)")
            #expect(info.version == expected, "\(name)")
            #expect(info.frameVersion == .v5, "\(name)")
            if let anomaly {
                #expect(app.driver.anomalies().contains(anomaly), "\(name)")
            } else {
                #expect(app.driver.anomalies().isEmpty, "\(name): \(app.driver.anomalies())")
            }
            _ = handle
        }
    }

    @Test("9. A slow head unit: one StartService only; a short timeout fails the start and closes the transport")
    func slowHeadUnit() throws {
        var app = AppUnderTest()
        let handle = app.start()
        #expect(app.newFrames().count == 1)
        app.advance(by: .seconds(14))
        app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson { $0.appendString("protocolVersion", "5.4.1") }))
        #expect(app.driver.events.compactMap(\.startedInfo).count == 1)
        #expect(app.newFrames().isEmpty)

        var short = AppUnderTest { $0.app.sessionStartTimeout = .seconds(2) }
        let failing = short.start()
        _ = short.newFrames()
        short.advance(by: .seconds(3))
        #expect(short.driver.events.contains(.sessionStartFailed(failing, .timeout)))
        #expect(short.driver.closed.map(\.0) == [short.link])
        #expect(short.newFrames().isEmpty)
        _ = handle
    }

    @Test("10. An ACK without hashId, with mtu as int32, no secondary fields: established, EndService without payload, A/V on the primary")
    func oddACK() throws {
        var app = AppUnderTest()
        let handle = app.start()
        _ = app.newFrames()
        app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson {
            $0.appendString("protocolVersion", "5.4.0")
            $0.appendInt32("mtu", 65536)
        }))
        let info = try #require(app.driver.events.compactMap(\.startedInfo).first)
        #expect(info.mtu == 65536)
        #expect(info.hashID == nil)
        try app.driver.engine.sessionRegistered(handle, now: app.now)
        try app.driver.engine.startService(.video, of: handle, now: app.now)
        app.driver.drain()
        let start = try #require(app.newFrames().first)
        #expect(start.header.serviceType == .video)
        #expect(start.header.frameInfo == 0x01)
        try app.driver.engine.endSession(handle, now: app.now)
        app.driver.drain()
        let end = try #require(app.newFrames().last)
        #expect(end.header.frameInfo == 0x04)
        #expect(end.header.serviceType == .rpc)
        #expect(end.payload.readableBytes == 0)
    }
}

@Suite("A. Version negotiation, head unit role against scripted apps")
struct HeadUnitNegotiationTests {
    func ack(for payload: [UInt8], header: ProtocolVersion = .v1, policy: NegotiationPolicy = .spec) -> (ProtocolFrame?, [Anomaly.Code]) {
        var hu = HeadUnitUnderTest { $0.headUnit.negotiationPolicy = policy }
        let link = hu.accept()
        hu.feed(frameBytes(version: header, type: .control, service: .rpc, info: 1, session: 0, payload: payload), on: link)
        return (hu.newFrames(on: link).first, hu.driver.anomalies())
    }

    @Test("8. protocolVersion \"5.2\" reads as 5.2.0; missing, empty, below 5 or undecodable: a v4 ACK, or a bare v1 NAK for coreCompatible")
    func versionTolerance() throws {
        let (ack52, _) = self.ack(for: bson { $0.appendString("protocolVersion", "5.2") })
        #expect(ack52.map { document($0)["protocolVersion"]?.stringValue } == "5.2.0")
        #expect(ack52?.header.version == .v5)
        for payload in [bson { $0.appendString("protocolVersion", "4.0.0") }, bson { $0.appendString("protocolVersion", "") }, bson { $0.appendInt32("x", 1) }] {
            let (spec, _) = self.ack(for: payload)
            #expect(spec?.header.version == .v4)
            #expect(spec?.header.frameInfo == 0x02)
            #expect(spec?.payload.readableBytes == 4)
            let (core, _) = self.ack(for: payload, policy: .coreCompatible)
            #expect(core.map { hexString($0.bytes) } == hexString([UInt8](hex: Vectors.a4)))
        }
        let (garbage, anomalies) = self.ack(for: [0x07, 0x00, 0x00, 0x00, 0x01])
        #expect(garbage?.header.version == .v4)
        #expect(anomalies.contains(.malformedControlPayload))
    }

    @Test("A v5 header without payload (the JavaScript suite) is a v5 offer")
    func javascriptSuiteStart() throws {
        let (frame, _) = self.ack(for: [], header: .v5)
        #expect(frame?.header.version == .v5)
        #expect(frame.map { document($0)["protocolVersion"]?.stringValue } == "5.4.1")
    }
}
