import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// An app engine with a running v5 session (id 1, hash 0x00010001) started by a scripted ACK.
func appWithSession(
    ack: [UInt8] = bson {
        $0.appendString("protocolVersion", "5.4.1")
        $0.appendInt32("hashId", 0x0001_0001)
        $0.appendInt64("mtu", 131_072)
    },
    registered: Bool = true, _ adjust: (inout SessionConfiguration) -> Void = { _ in }
) -> (AppUnderTest, SessionHandle) {
    var app = AppUnderTest(adjust)
    let handle = app.start()
    app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: ack))
    if registered { try! app.driver.engine.sessionRegistered(handle, now: app.now) }
    _ = app.newFrames()
    return (app, handle)
}

@Suite("C. Services")
struct ServiceTests {
    @Test("18. A/V before registration: refused locally without a byte (app); NAK \"application not registered\" (head unit)")
    func beforeRegistration() throws {
        var (app, handle) = appWithSession(registered: false)
        #expect(throws: SessionError.self) { try app.driver.engine.startService(.video, of: handle, now: app.now) }
        do {
            try app.driver.engine.startService(.video, of: handle, now: app.now)
        } catch {
            #expect(error.code == .notRegistered)
        }
        app.driver.drain()
        #expect(app.newFrames().isEmpty)

        var hu = HeadUnitUnderTest()
        let link = hu.accept()
        let (huHandle, _) = hu.startSession(on: link, registered: false)
        hu.feed(control(.startService, service: .video, session: 1, messageID: 2), on: link)
        let nak = try #require(hu.newFrames(on: link).first)
        #expect(hexString(nak.bytes.prefix(12)) == "50 0b 03 01 00 00 00 \(hexString([UInt8(nak.payload.readableBytes)])) 00 00 00 02")
        #expect(document(nak)["reason"]?.stringValue == "application not registered")
        #expect(hu.driver.events.contains(.serviceStartFailed(huHandle, .video, .refused(.notRegistered))))
    }

    @Test("19. Video with parameters: ACK echoes them with the mtu; an unsupported codec is NAKed by name")
    func videoParameters() throws {
        var pair = EnginePair()
        let link = pair.openPrimary()
        let handle = try pair.app.engine.startSession(on: link, now: pair.now)
        pair.pump()
        try pair.app.engine.sessionRegistered(handle, now: pair.now)
        try pair.hu.engine.sessionRegistered(pair.hu.engine.sessionHandles[0], now: pair.now)
        let parameters = VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264")
        try pair.app.engine.startService(.video, of: handle, video: parameters, now: pair.now)
        pair.pump()
        let ack = try #require(pair.hu.frames(on: link).last)
        #expect(ack.header.serviceType == .video)
        #expect(ack.header.frameInfo == 0x02)
        let fields = document(ack)
        #expect(fields["mtu"]?.type == .int64)
        #expect(fields["height"]?.int32Value == 480)
        #expect(fields["width"]?.int32Value == 800)
        #expect(fields["videoProtocol"]?.stringValue == "RAW")
        #expect(fields["videoCodec"]?.stringValue == "H264")
        let started = pair.app.events.compactMap { event -> ServiceInfo? in
            if case .serviceStarted(_, .video, let info) = event { return info } else { return nil }
        }
        #expect(started.first?.video == parameters)

        var hu = HeadUnitUnderTest()
        let other = hu.accept()
        let (huHandle, _) = hu.startSession(on: other)
        hu.feed(control(.startService, service: .video, session: 1, messageID: 2, payload: bson { $0.appendString("videoCodec", "MJPEG") }), on: other)
        let nak = try #require(hu.newFrames(on: other).first)
        #expect(nak.header.frameInfo == 0x03)
        #expect(document(nak)["rejectedParams"]?.arrayValue.map { $0.map { $0.stringValue } } == ["videoCodec"])
        #expect(document(nak)["reason"] != nil)
        #expect(hu.driver.events.contains(.serviceStartFailed(huHandle, .video, .refused(.rejectedParameters(["videoCodec"])))))
    }

    @Test("20. A duplicate StartService is NAKed; the running service and its frames are unaffected")
    func duplicateStart() throws {
        var hu = HeadUnitUnderTest()
        let link = hu.accept()
        let (handle, _) = hu.startSession(on: link)
        hu.feed(control(.startService, service: .video, session: 1, messageID: 2), on: link)
        #expect(hu.newFrames(on: link).map(\.header.frameInfo) == [0x02])
        hu.feed(control(.startService, service: .video, session: 1, messageID: 3), on: link)
        let nak = try #require(hu.newFrames(on: link).first)
        #expect(nak.header.frameInfo == 0x03)
        #expect(document(nak)["reason"]?.stringValue == "service already started")
        hu.feed(frameBytes(type: .single, service: .video, session: 1, messageID: 4, payload: [1, 2, 3]), on: link)
        #expect(hu.driver.receivedMessages(handle).map { Array($0.payload.readableBytesView) } == [[1, 2, 3]])
    }

    @Test("21. EndService(RPC) hash matrix")
    func hashMatrix() throws {
        // v5, correct hash: ACK, every running service ends, then the session.
        var hu = HeadUnitUnderTest()
        let link = hu.accept()
        let (handle, info) = hu.startSession(on: link)
        hu.feed(control(.startService, service: .video, session: 1, messageID: 2) + control(.startService, service: .audio, session: 1, messageID: 3), on: link)
        _ = hu.newFrames(on: link)
        hu.feed(control(.endService, service: .rpc, session: 1, messageID: 4, payload: bson { $0.appendInt32("hashId", Int32(bitPattern: info.hashID!)) }), on: link)
        #expect(hu.newFrames(on: link).map { hexString($0.bytes) } == ["50 07 05 01 00 00 00 00 00 00 00 04"])
        let ends = hu.driver.events.filter {
            switch $0 { case .serviceEnded, .sessionEnded: return true; default: return false }
        }
        #expect(ends == [.serviceEnded(handle, .audio, .sessionEnded), .serviceEnded(handle, .video, .sessionEnded), .sessionEnded(handle, .peer)])

        // v5, wrong or missing hash: NAK with rejectedParams hashId.
        for payload in [bson { $0.appendInt32("hashId", 12345) }, [UInt8]()] {
            var hu = HeadUnitUnderTest()
            let link = hu.accept()
            _ = hu.startSession(on: link)
            hu.feed(control(.endService, service: .rpc, session: 1, messageID: 6, payload: payload), on: link)
            let nak = try #require(hu.newFrames(on: link).first)
            #expect(nak.header.frameInfo == 0x06)
            #expect(document(nak)["rejectedParams"]?.arrayValue.map { $0.map { $0.stringValue } } == ["hashId"])
        }

        // Pre-v5 sessions: the raw hash.
        func preV5(_ version: ProtocolVersion) -> (HeadUnitUnderTest, TransportID, UInt32) {
            var hu = HeadUnitUnderTest()
            let link = hu.accept()
            hu.feed([UInt8](hex: Vectors.a2), on: link)
            let hash = try! RawHashID.read(hu.newFrames(on: link)[0].payload)
            hu.feed(frameBytes(version: version, type: .single, service: .rpc, session: 1, messageID: 1, payload: [1]), on: link)
            return (hu, link, hash)
        }
        var (v4, v4Link, _) = preV5(.v4)
        v4.feed(control(.endService, version: .v4, service: .rpc, session: 1, messageID: 2, payload: [0, 0, 0, 0]), on: v4Link)
        #expect(v4.newFrames(on: v4Link).map { hexString($0.bytes) } == ["40 07 06 01 00 00 00 00 00 00 00 02"])
        var (v3, v3Link, _) = preV5(.v3)
        v3.feed(control(.endService, version: .v3, service: .rpc, session: 1, messageID: 2, payload: [0, 1]), on: v3Link)
        #expect(v3.newFrames(on: v3Link).map(\.header.frameInfo) == [0x06])
        var (v4ok, v4okLink, hash) = preV5(.v4)
        var raw = ByteBuffer()
        RawHashID.write(hash, to: &raw)
        v4ok.feed(control(.endService, version: .v4, service: .rpc, session: 1, messageID: 2, payload: Array(raw.readableBytesView)), on: v4okLink)
        #expect(v4ok.newFrames(on: v4okLink).map(\.header.frameInfo) == [0x05])

        // Version 1 header: it carries no hash, so it ends only a session that has none; for a
        // session with a hash it is a way around the check (another connection's, say): NAK.
        var v1 = HeadUnitUnderTest()
        let v1Link = v1.accept()
        _ = v1.startSession(on: v1Link)
        v1.feed(control(.endService, version: .v1, service: .rpc, session: 1), on: v1Link)
        #expect(v1.newFrames(on: v1Link).map(\.header.frameInfo) == [0x06])

        // Unknown session, service not running, hybrid and control: NAK.
        var other = HeadUnitUnderTest()
        let otherLink = other.accept()
        _ = other.startSession(on: otherLink)
        other.feed(control(.endService, service: .rpc, session: 9, messageID: 1), on: otherLink)
        let unknown = try #require(other.newFrames(on: otherLink).first)
        #expect(unknown.header.frameInfo == 0x06)
        #expect(unknown.header.sessionID == SessionID(9))
        for service in [ServiceType.video, .hybrid, .control] {
            other.feed(control(.endService, service: service, session: 1, messageID: 2), on: otherLink)
            let nak = try #require(other.newFrames(on: otherLink).first)
            #expect(nak.header.frameInfo == 0x06, "\(service)")
            #expect(document(nak)["reason"] != nil)
        }
    }

    @Test("22. The head unit ends video while the app streams: EndServiceACK first, queued video dropped, none after")
    func headUnitEndsVideo() throws {
        var (app, handle) = appWithSession()
        app.driver.autoWrite = false
        try app.driver.engine.startService(.video, of: handle, now: app.now)
        app.driver.drain()
        app.driver.pull(app.link)
        _ = app.newFrames()
        app.feed(control(.startServiceACK, service: .video, session: 1, messageID: 2, payload: bson { $0.appendInt64("mtu", 131_072) }))
        for _ in 0..<30 {
            try app.driver.engine.send(ByteBuffer(repeating: 7, count: 1000), on: .video, of: handle, now: app.now)
        }
        app.driver.drain()
        app.driver.pull(app.link, maxBytes: 1)  // one video frame on its way
        #expect(app.newFrames().map(\.header.serviceType) == [.video])
        app.feed([UInt8](hex: Vectors.a10EndService))
        app.driver.pull(app.link)
        let after = app.newFrames()
        #expect(after.map { hexString($0.bytes) } == [Vectors.a10ACK])
        #expect(app.driver.events.contains(.serviceEnded(handle, .video, .peer)))
        #expect(throws: SessionError.self) {
            try app.driver.engine.send(ByteBuffer(repeating: 7, count: 10), on: .video, of: handle, now: app.now)
        }
    }

    @Test("23. Head unit role: frames after our EndService are dropped silently during the grace, then reported; the service ends at the grace")
    func streamingAfterEnd() throws {
        for closeOnViolation in [false, true] {
            var hu = HeadUnitUnderTest { $0.headUnit.closeSessionOnViolation = closeOnViolation }
            let link = hu.accept()
            let (handle, _) = hu.startSession(on: link)
            hu.feed(control(.startService, service: .video, session: 1, messageID: 2), on: link)
            _ = hu.newFrames(on: link)
            try hu.driver.engine.endService(.video, of: handle, now: hu.now)
            hu.driver.drain()
            #expect(hu.newFrames(on: link).map { hexString($0.bytes.prefix(4)) } == ["50 0b 04 01"])
            hu.advance(by: .milliseconds(500))
            hu.feed(frameBytes(type: .single, service: .video, session: 1, messageID: 3, payload: [1]), on: link)
            #expect(!hu.driver.events.contains(.protocolViolation(handle, .video)))
            #expect(hu.driver.receivedMessages(handle).isEmpty)
            hu.advance(by: .milliseconds(600))
            #expect(hu.driver.events.contains(.serviceEnded(handle, .video, .local)), "ended after the grace without an ACK")
            hu.feed(frameBytes(type: .single, service: .video, session: 1, messageID: 4, payload: [1]), on: link)
            #expect(hu.driver.events.contains(.protocolViolation(handle, .video)))
            if closeOnViolation {
                #expect(hu.newFrames(on: link).map { hexString($0.bytes.prefix(4)) } == ["50 07 04 01"])
                #expect(hu.driver.events.contains(.sessionEnded(handle, .protocolViolation)))
            } else {
                #expect(hu.newFrames(on: link).isEmpty)
            }
        }
    }

    @Test("24. Crossing EndServices: each side ACKs the other's, a late NAK is ignored, one serviceEnded each")
    func crossingEnds() throws {
        var pair = EnginePair()
        let link = pair.openPrimary()
        let handle = try pair.app.engine.startSession(on: link, now: pair.now)
        pair.pump()
        let huHandle = pair.hu.engine.sessionHandles[0]
        try pair.app.engine.sessionRegistered(handle, now: pair.now)
        try pair.hu.engine.sessionRegistered(huHandle, now: pair.now)
        try pair.app.engine.startService(.video, of: handle, now: pair.now)
        pair.pump()
        // Both end video in the same tick, before either sees the other's frame.
        try pair.app.engine.endService(.video, of: handle, now: pair.now)
        try pair.hu.engine.endService(.video, of: huHandle, now: pair.now)
        pair.pump()
        #expect(pair.app.events.filter { $0 == .serviceEnded(handle, .video, .peer) || $0 == .serviceEnded(handle, .video, .local) }.count == 1)
        #expect(pair.hu.events.filter { if case .serviceEnded(huHandle, .video, _) = $0 { return true } else { return false } }.count == 1)
        // A late "Couldn't remove service" NAK changes nothing.
        pair.app.feed(control(.endServiceNAK, service: .video, session: 1, payload: bson { $0.appendString("reason", "Couldn't remove service") }), on: link, now: pair.now)
        #expect(pair.app.events.filter { if case .serviceEnded(handle, .video, _) = $0 { return true } else { return false } }.count == 1)
    }

    @Test("25. The head unit ends the session without hash and hangs up: sessionEnded(peer) once, then transportClosed")
    func headUnitHangsUp() throws {
        var (app, handle) = appWithSession()
        app.feed(control(.endService, service: .rpc, session: 1, messageID: 3))
        #expect(app.newFrames().map { hexString($0.bytes) } == ["50 07 05 01 00 00 00 00 00 00 00 03"])
        app.now = app.now + .milliseconds(5)
        app.driver.engine.transportClosed(app.link, now: app.now)
        app.driver.drain()
        let relevant = app.driver.events.filter {
            switch $0 { case .sessionEnded, .transportClosed: return true; default: return false }
        }
        #expect(relevant == [.sessionEnded(handle, .peer), .transportClosed(app.link, .closedByPeer)] || relevant == [.sessionEnded(handle, .peer), .transportClosed(app.link, .closedByEngine(.noSessionsLeft))])
        #expect(!app.driver.events.contains { if case .protocolError = $0 { return true } else { return false } })
    }
}
