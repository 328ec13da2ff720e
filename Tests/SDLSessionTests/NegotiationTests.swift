import NIOCore
import SDLBSON
import SDLProtocol
import Testing

@testable import SDLSession

/// SESSION.md appendix A vectors used as golden frames.
enum Vectors {
    static let a1 = "10 07 01 00 00 00 00 20 20 00 00 00 02 70 72 6f 74 6f 63 6f 6c 56 65 72 73 69 6f 6e 00 06 00 00 00 35 2e 34 2e 31 00 00"
    static let a2 = "10 07 01 00 00 00 00 00"
    static let a3 = "40 07 02 01 00 00 00 04 00 00 00 00 00 01 00 01"
    static let a4 = "10 07 03 00 00 00 00 00"
    static let a5 = "50 00 07 01 00 00 00 00 00 00 00 01"
    static let a6 = "50 00 08 01 00 00 00 00 00 00 00 02"
    static let a7 = "50 00 fd 01 00 00 00 18 00 00 00 01 18 00 00 00 02 74 63 70 49 70 41 64 64 72 65 73 73 00 01 00 00 00 00 00"
    static let a7b = "50 00 fd 01 00 00 00 2e 00 00 00 01 2e 00 00 00 02 74 63 70 49 70 41 64 64 72 65 73 73 00 0a 00 00 00 31 32 37 2e 30 2e 30 2e 31 00 10 74 63 70 50 6f 72 74 00 39 30 00 00 00"
    static let a8 = "50 07 06 01 00 00 00 50 00 00 00 06 50 00 00 00 04 72 65 6a 65 63 74 65 64 50 61 72 61 6d 73 00 13 00 00 00 02 30 00 07 00 00 00 68 61 73 68 49 64 00 00 02 72 65 61 73 6f 6e 00 1c 00 00 00 57 72 6f 6e 67 20 68 61 73 68 5f 69 64 20 66 6f 72 20 73 65 73 73 69 6f 6e 20 31 00 00"
    static let a10EndService = "50 0b 04 01 00 00 00 00 00 00 00 09"
    static let a10ACK = "50 0b 05 01 00 00 00 00 00 00 00 09"
    static let a11Heartbeat = "30 00 00 01 00 00 00 00 00 00 00 07"
    static let a11ACK = "30 00 ff 01 00 00 00 00 00 00 00 07"
    static let a12 = "50 07 04 01 00 00 00 11 00 00 00 05 11 00 00 00 10 68 61 73 68 49 64 00 01 00 01 00 00"
}

/// A BSON control frame payload as a document, for field checks.
func document(_ frame: Frame) -> BSONDocument {
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
        #expect(hexString(pair.app.written[link]!) == hexString(hexBytes(Vectors.a1)))
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
        #expect(started.version == SDLVersion(5, 4, 1))
        #expect(started.sessionID == SessionID(1))
        #expect(started.hashID == UInt32(bitPattern: fields["hashId"]!.int32Value!))
        #expect(started.secondaryTransports == ["TCP_WIFI"])
        #expect(pair.appEvents(handle).contains(.secondaryTransport(handle, .configured(address: nil, port: nil))))
        #expect(pair.hu.events.compactMap(\.startedInfo).first?.version == SDLVersion(5, 4, 1))
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
                Frame(header: FrameHeader(version: .v5, frameType: .control, serviceType: .video, frameInfo: 1, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(3)), payload: request),
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
        pair.hu.feed(hexBytes(Vectors.a2), on: link, now: pair.now)
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
            Frame(header: FrameHeader(version: .v4, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(1)), payload: ByteBuffer(bytes: [1, 2, 3])),
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
            Frame(header: FrameHeader(version: .v4, frameType: .control, serviceType: .rpc, frameInfo: 4, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(2)), payload: hashBytes),
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
        pair.hu.feed(hexBytes(Vectors.a2), on: link, now: pair.now)
        var bytes = ByteBuffer()
        FrameEncoder.write(
            Frame(header: FrameHeader(version: .v2, frameType: .single, serviceType: .rpc, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(1)), payload: ByteBuffer(bytes: [9])),
            to: &bytes)
        FrameEncoder.write(
            Frame(header: FrameHeader(version: .v2, frameType: .control, serviceType: .video, frameInfo: 1, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(2)), payload: ByteBuffer()),
            to: &bytes)
        FrameEncoder.write(
            Frame(header: FrameHeader(version: .v2, frameType: .control, serviceType: .control, frameInfo: 0, sessionID: SessionID(1), dataSize: 0, messageID: MessageID(3)), payload: ByteBuffer()),
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
