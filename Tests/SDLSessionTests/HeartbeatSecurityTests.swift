import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

@Suite("E. Heartbeat")
struct HeartbeatTests {
    @Test("36. Responder echoes session, message id and version; session 0 answered leniently; Core-style origination waits for the app's first heartbeat; any frame resets")
    func responderAndOriginator() throws {
        var hu = HeadUnitUnderTest { $0.heartbeat.timeout = .seconds(2) }
        let link = hu.accept()
        // A v3 session: A2, then a v3 frame binds the version.
        hu.feed([UInt8](hex: Vectors.a2), on: link)
        hu.feed(frameBytes(version: .v3, type: .single, service: .rpc, session: 1, messageID: 1, payload: [1]), on: link)
        _ = hu.newFrames(on: link)
        hu.advance(by: .seconds(10))
        #expect(hu.newFrames(on: link).isEmpty, "Core-compatible: no heartbeat before the app sent one")
        hu.feed([UInt8](hex: Vectors.a11Heartbeat), on: link)
        #expect(hu.newFrames(on: link).map { hexString($0.bytes) } == [Vectors.a11ACK])
        hu.feed(control(.heartbeat, version: .v5, service: .control, session: 0, messageID: 3), on: link)
        #expect(hu.newFrames(on: link).map { hexString($0.bytes) } == ["50 00 ff 00 00 00 00 00 00 00 00 03"])
        #expect(hu.driver.anomalies().contains(.heartbeatOnSessionZero))
        // Now watched: any frame resets the timer; 2 s of silence bring a heartbeat.
        hu.advance(by: .milliseconds(1500))
        hu.feed(frameBytes(version: .v3, type: .single, service: .rpc, session: 1, messageID: 2, payload: [1]), on: link)
        hu.advance(by: .milliseconds(1500))
        #expect(hu.newFrames(on: link).isEmpty)
        hu.advance(by: .milliseconds(600))
        let probe = hu.newFrames(on: link)
        #expect(probe.map { hexString($0.bytes.prefix(4)) } == ["30 00 00 01"])

        var eager = HeadUnitUnderTest { $0.heartbeat.timeout = .seconds(2); $0.heartbeat.origination = .always }
        let other = eager.accept()
        _ = eager.startSession(on: other)
        eager.advance(by: .milliseconds(2100))
        #expect(eager.newFrames(on: other).map { hexString($0.bytes.prefix(4)) } == ["50 00 00 01"])
    }

    @Test("37. A silent session is probed at T and closed at 2T; the others and the transport live on")
    func timeoutOneSession() throws {
        var hu = HeadUnitUnderTest { $0.heartbeat.timeout = .seconds(1) }
        let link = hu.accept()
        let (first, _) = hu.startSession(on: link)
        let (second, _) = hu.startSession(on: link)
        hu.feed(control(.heartbeat, service: .control, session: 1, messageID: 1) + control(.heartbeat, service: .control, session: 2, messageID: 1), on: link)
        _ = hu.newFrames(on: link)
        for step in 0..<20 {
            hu.advance(by: .milliseconds(100))
            hu.feed(frameBytes(type: .single, service: .rpc, session: 2, messageID: UInt32(step + 2), payload: [1]), on: link)
        }
        let frames = hu.newFrames(on: link)
        #expect(frames.map { hexString($0.bytes.prefix(4)) } == ["50 00 00 01", "50 07 04 01"])
        #expect(hu.driver.events.contains(.sessionEnded(first, .heartbeatTimeout)))
        #expect(hu.driver.engine.sessionInfo(second) != nil)
        #expect(hu.driver.closed.isEmpty)
        // Under a 10 MB bulk upload, an app's HeartbeatACK goes out before the next bulk frame.
        var (app, handle) = appWithSession()
        app.driver.autoWrite = false
        try app.driver.engine.send(ByteBuffer(repeating: 1, count: 10 << 20), on: .hybrid, of: handle, now: app.now)
        app.driver.drain()
        app.driver.pull(app.link, maxBytes: 1)
        _ = app.newFrames()
        app.feed(control(.heartbeat, service: .control, session: 1, messageID: 77))
        app.driver.pull(app.link, maxBytes: 1)
        #expect(app.newFrames().map { hexString($0.bytes) } == ["50 00 ff 01 00 00 00 00 00 00 00 4d"])
    }
}

@Suite("F. Security")
struct SecurityTests {
    func protectedPair(
        appProvider: FakeSecurityProvider? = FakeSecurityProvider(role: .server),
        huProvider: FakeSecurityProvider? = FakeSecurityProvider(role: .client),
        force: Set<ServiceType> = []
    ) -> (EnginePair, TransportID, SessionHandle, SessionHandle) {
        var app = SessionConfiguration(role: .app)
        if let appProvider { app.makeSecurityProvider = { _ in appProvider } }
        var pair = EnginePair(app: app, headUnit: headUnit {
            if let huProvider { $0.makeSecurityProvider = { _ in huProvider } }
            $0.headUnit.forceProtectedServices = force
        })
        let link = pair.openPrimary()
        let handle = try! pair.app.engine.startSession(on: link, now: pair.now)
        pair.pump()
        let huHandle = pair.hu.engine.sessionHandles[0]
        try! pair.app.engine.sessionRegistered(handle, now: pair.now)
        try! pair.hu.engine.sessionRegistered(huHandle, now: pair.now)
        return (pair, link, handle, huHandle)
    }

    @Test("38a. Protected video: handshake queries with echoed sequence numbers, ACK E=1 with a protected payload, E=1 on Single and Consecutive frames, never on First")
    func protectedVideo() throws {
        var (pair, link, handle, huHandle) = self.protectedPair()
        try pair.app.engine.startService(.video, of: handle, protection: .required, now: pair.now)
        pair.pump()
        let huFrames = pair.hu.frames(on: link)
        let appFrames = pair.app.frames(on: link)
        let requests = try huFrames.filter { $0.header.serviceType == .control && $0.header.frameType == .single }.map { try SecurityQuery(parsing: $0.payload) }
        let responses = try appFrames.filter { $0.header.serviceType == .control && $0.header.frameType == .single }.map { try SecurityQuery(parsing: $0.payload) }
        #expect(requests.map(\.header.queryType) == [.request, .request])
        #expect(responses.map(\.header.queryType) == [.response, .response])
        #expect(requests.map(\.header.sequenceNumber) == responses.map(\.header.sequenceNumber))
        #expect(requests.map { String(buffer: $0.binaryData) } == ["C1", "C2"])
        #expect(responses.map { String(buffer: $0.binaryData) } == ["S1", "S2"])
        let ack = try #require(huFrames.last)
        #expect(ack.header.frameInfo == 0x02)
        #expect(ack.header.isEncrypted)
        #expect(Array(ack.payload.readableBytesView.prefix(4)) == FakeSecurityProvider.tag, "the ACK's BSON is protected (ARCHITECTURE.md, D-security)")
        #expect(serviceStarts(pair.app.events, .video).first?.isProtected == true)
        try pair.app.engine.send(ByteBuffer(repeating: 9, count: 300_000), on: .video, of: handle, now: pair.now)
        pair.pump()
        let video = pair.app.frames(on: link).filter { $0.header.serviceType == .video && $0.header.frameType != .control }
        #expect(video.map(\.header.frameType) == [.first, .consecutive, .consecutive, .consecutive])
        #expect(video.map(\.header.isEncrypted) == [false, true, true, true])
        let received = pair.hu.receivedMessages(huHandle)
        #expect(received.count == 1)
        #expect(received.first?.payload == ByteBuffer(repeating: 9, count: 300_000))
        #expect(received.first?.wasProtected == true)
    }

    /// `protected-video-ack-queued-when-its-session-ended` and `…-audio-…` (FuzzSession): a
    /// protected StartServiceACK was protected at write time, so when its session ended first (the
    /// app's EndService(RPC) read in the same batch) the security context was gone and the ACK was
    /// dropped: a start left unanswered, against ARCHITECTURE.md's D-answers. It is protected as it
    /// is queued now.
    @Test("A protected StartServiceACK queued when its session ends still goes out, protected")
    func protectedAckOutlivesItsSession() throws {
        var (pair, link, handle, huHandle) = self.protectedPair()
        try pair.app.engine.startService(.video, of: handle, protection: .required, now: pair.now)
        pair.pump()
        #expect(serviceStarts(pair.app.events, .video).first?.isProtected == true)
        _ = pair.hu.takeOutbox(link)
        pair.hu.autoWrite = false
        let id = try #require(pair.hu.engine.sessionInfo(huHandle)?.sessionID)
        var payload = ByteBuffer()
        try StartServiceACKPayload(mtu: 131_072).write(to: &payload)
        pair.hu.engine.sendControl(
            .startServiceACK, service: .audio, session: id, version: .v5, messageID: 9, payload: payload, eBit: true,
            protectPayload: true, on: link)
        try pair.hu.engine.endSession(huHandle, now: pair.now)
        pair.hu.drain()
        pair.hu.pull(link)
        let frames = decodeFrames(pair.hu.takeOutbox(link))
        #expect(frames.map(\.header.controlFrameInfo) == [.startServiceACK, .endService])
        let ack = try #require(frames.first)
        #expect(ack.header.isEncrypted)
        #expect(Array(ack.payload.readableBytesView.prefix(4)) == FakeSecurityProvider.tag)
    }

    @Test("38a'. The legacy notification type is accepted for handshake data")
    func legacyQueryType() throws {
        var (app, handle) = appWithSession { $0.makeSecurityProvider = { _ in FakeSecurityProvider(role: .server) } }
        try app.driver.engine.startService(.video, of: handle, protection: .preferred, now: app.now)
        app.driver.drain()
        _ = app.newFrames()
        var payload = ByteBuffer()
        try SecurityQuery(header: SecurityQueryHeader(queryType: .notification, queryID: .sendHandshakeData, sequenceNumber: 5, jsonSize: 0), json: ByteBuffer(), binaryData: ByteBuffer(string: "C1")).write(to: &payload)
        app.feed(frameBytes(type: .single, service: .control, session: 1, messageID: 3, payload: Array(payload.readableBytesView)))
        let answer = try SecurityQuery(parsing: try #require(app.newFrames().first).payload)
        #expect(answer.header.queryType == .response)
        #expect(answer.header.sequenceNumber == 5)
        #expect(String(buffer: answer.binaryData) == "S1")
    }

    @Test("38b. The app's provider fails: Internal Error 9 with the one-byte code; unforced → ACK E=0 (and EndService when protection is required); forced → NAK")
    func handshakeFailure() throws {
        for forced in [false, true] {
            var (pair, link, handle, _) = self.protectedPair(appProvider: FakeSecurityProvider(role: .server, failAtRound: 1), force: forced ? [.video] : [])
            try pair.app.engine.startService(.video, of: handle, protection: .required, now: pair.now)
            pair.pump()
            let error = try pair.app.frames(on: link).filter { $0.header.serviceType == .control && $0.header.frameType == .single }.map { try SecurityQuery(parsing: $0.payload) }.first
            #expect(error?.header.queryType == .notification)
            #expect(error?.header.queryID == .sendInternalError)
            #expect(error.map { String(buffer: $0.json) }?.hasPrefix("{\"id\":9,") == true)
            #expect(error.map { Array($0.binaryData.readableBytesView) } == [9])
            if forced {
                #expect(pair.app.events.contains { if case .serviceStartFailed(handle, .video, .rejectedByPeer) = $0 { return true } else { return false } })
            } else {
                #expect(serviceStarts(pair.app.events, .video).first?.isProtected == false)
                #expect(pair.app.anomalies().contains(.protectionDowngraded))
                #expect(pair.app.frames(on: link).last?.header.frameInfo == 0x04, "required: EndService at once")
            }
        }
    }

    @Test("38c. No provider on the app: the first query is answered with Internal Error 3; no crash")
    func noProvider() throws {
        var (pair, link, handle, _) = self.protectedPair(appProvider: nil)
        try pair.app.engine.startService(.video, of: handle, protection: .preferred, now: pair.now)
        pair.pump()
        let error = try pair.app.frames(on: link).filter { $0.header.serviceType == .control && $0.header.frameType == .single }.map { try SecurityQuery(parsing: $0.payload) }.first
        #expect(error?.header.queryID == .sendInternalError)
        #expect(error.map { Array($0.binaryData.readableBytesView) } == [3])
        #expect(serviceStarts(pair.app.events, .video).first?.isProtected == false)
    }

    @Test("38d. RPC upgrade in the negotiated version; afterwards RPC and hybrid frames carry E=1; a frame that does not unprotect: Internal Error 6 and protection stops")
    func rpcUpgrade() throws {
        var (pair, link, handle, huHandle) = self.protectedPair()
        try pair.app.engine.startService(.rpc, of: handle, protection: .preferred, now: pair.now)
        pair.pump()
        let start = try #require(pair.app.frames(on: link).first { $0.header.frameInfo == 0x01 && $0.header.serviceType == .rpc && $0.header.sessionID == SessionID(1) })
        #expect(start.header.version == .v5)
        #expect(start.header.isEncrypted)
        #expect(pair.app.events.contains { if case .serviceStarted(handle, .rpc, let info) = $0 { return info.isProtected } else { return false } })
        try pair.app.engine.send(ByteBuffer(bytes: [1, 2, 3]), on: .rpc, of: handle, now: pair.now)
        try pair.app.engine.send(ByteBuffer(bytes: [4, 5, 6]), on: .hybrid, of: handle, now: pair.now)
        pair.pump()
        let data = pair.app.frames(on: link).filter { $0.header.frameType == .single && ($0.header.serviceType == .rpc || $0.header.serviceType == .hybrid) }
        #expect(data.map(\.header.isEncrypted) == [true, true])
        #expect(pair.hu.receivedMessages(huHandle).map { Array($0.payload.readableBytesView) } == [[1, 2, 3], [4, 5, 6]])
        // A protected frame that does not unprotect.
        pair.hu.feed(frameBytes(encrypted: true, type: .single, service: .rpc, session: 1, messageID: 99, payload: [1, 2, 3, 4, 5]), on: link, now: pair.now)
        let error = try pair.hu.frames(on: link).filter { $0.header.serviceType == .control && $0.header.frameType == .single }.map { try SecurityQuery(parsing: $0.payload) }.last
        #expect(error?.header.queryID == .sendInternalError)
        #expect(error.map { Array($0.binaryData.readableBytesView) } == [6])
        #expect(pair.hu.events.contains(.serviceEnded(huHandle, .rpc, .securityFailure)))
    }

    @Test("38e. Two protected starts at once: the second waits until the first is answered")
    func serialisedStarts() throws {
        var (app, handle) = appWithSession { $0.makeSecurityProvider = { _ in FakeSecurityProvider(role: .server) } }
        try app.driver.engine.startService(.audio, of: handle, protection: .preferred, now: app.now)
        try app.driver.engine.startService(.video, of: handle, protection: .preferred, now: app.now)
        app.driver.drain()
        #expect(app.newFrames().map(\.header.serviceType) == [.audio])
        app.feed(control(.startServiceNAK, service: .audio, session: 1, messageID: 2))
        #expect(app.newFrames().map(\.header.serviceType) == [.video])
    }
}
