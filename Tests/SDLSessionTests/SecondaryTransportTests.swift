import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// A pair whose head unit offers a TCP secondary with the given lists, with a registered session.
func secondaryPair(
    video: [TransportSlot], audio: [TransportSlot] = [.secondary], policy: SecondaryConnectionPolicy = .lazy,
    address: String = "127.0.0.1", port: Int32? = 12346
) -> (EnginePair, TransportID, SessionHandle, SessionHandle) {
    var app = SessionConfiguration(role: .app)
    app.app.secondaryConnection = policy
    var pair = EnginePair(app: app, headUnit: headUnit {
        var offer = SecondaryTransportOffer(tcpAddress: address, tcpPort: port)
        offer.videoServiceTransports = video
        offer.audioServiceTransports = audio
        $0.headUnit.secondaryTransport = offer
    })
    let link = pair.openPrimary()
    let handle = try! pair.app.engine.startSession(on: link, now: pair.now)
    pair.pump()
    let huHandle = pair.hu.engine.sessionHandles[0]
    try! pair.app.engine.sessionRegistered(handle, now: pair.now)
    try! pair.hu.engine.sessionRegistered(huHandle, now: pair.now)
    pair.advance(by: .milliseconds(200))  // the TransportEventUpdate's debounce
    return (pair, link, handle, huHandle)
}

func serviceStarts(_ events: [SessionEvent], _ service: ServiceType) -> [ServiceInfo] {
    events.compactMap { if case .serviceStarted(_, service, let info) = $0 { return info } else { return nil } }
}

@Suite("D. Secondary transports")
struct SecondaryTransportTests {
    @Test("27. Lazy: no second connection until video is wanted; then RST, its ACK, and video on the secondary, RPC on the primary")
    func lazyHappyPath() throws {
        var (pair, link, handle, _) = secondaryPair(video: [.secondary])
        #expect(pair.app.written.keys.sorted { $0.rawValue < $1.rawValue } == [link])
        try pair.app.engine.startService(.video, of: handle, now: pair.now)
        pair.pump()
        let secondary = TransportID(2)
        let appFrames = pair.app.frames(on: secondary)
        // A5, with the session's hash id as proof of ownership for the head unit (SDL Core ignores
        // the payload of this frame).
        let register = appFrames[0]
        #expect(hexString(Array(register.bytes.prefix(4))) == hexString(Array([UInt8](hex: Vectors.a5).prefix(4))))
        #expect(register.header.messageID?.rawValue == 1)
        let hash = try #require(pair.app.engine.sessionInfo(handle)?.hashID)
        #expect(try BSONDocument(validating: register.payload)["hashId"]?.int32Value == Int32(bitPattern: hash))
        #expect(hexString(pair.hu.frames(on: secondary)[0].bytes) == hexString([UInt8](hex: Vectors.a6)))
        #expect(appFrames[1].header.serviceType == .video)
        #expect(appFrames[1].header.frameInfo == 0x01)
        #expect(appFrames[1].header.sessionID == SessionID(1))
        #expect(pair.hu.frames(on: secondary)[1].header.frameInfo == 0x02)
        let video = try #require(serviceStarts(pair.app.events, .video).first)
        #expect(video.transport == secondary)
        #expect(video.slot == .secondary)
        try pair.app.engine.send(ByteBuffer(bytes: [1, 2]), on: .video, of: handle, now: pair.now)
        try pair.app.engine.send(ByteBuffer(bytes: [3, 4]), on: .rpc, of: handle, now: pair.now)
        pair.pump()
        let received = pair.hu.receivedMessages()
        #expect(received.map(\.transport) == [secondary, link] || received.map(\.transport) == [link, secondary])
        #expect(received.first { $0.service == .video }?.transport == secondary)
        #expect(received.first { $0.service == .rpc }?.transport == link)

        var (eager, _, _, _) = secondaryPair(video: [.secondary], policy: .eager)
        eager.pump()
        #expect(eager.app.written[TransportID(2)].map { hexString($0.prefix(4)) } == hexString(Array([UInt8](hex: Vectors.a5).prefix(4))))
    }

    @Test("28. [2, 1]: video starts on the primary, moves to the secondary once registered (EndService, ACK, StartService), and back when it is lost")
    func migration() throws {
        var (pair, link, handle, _) = secondaryPair(video: [.secondary, .primary])
        pair.autoConnect = false
        try pair.app.engine.startService(.video, of: handle, now: pair.now)
        pair.pump()
        #expect(serviceStarts(pair.app.events, .video).map(\.slot) == [.primary])
        let request = try #require(pair.app.connects.first)
        pair.app.connects = []
        let secondary = TransportID(9)
        try pair.hu.engine.transportOpened(secondary, as: .accepted, now: pair.now)
        try pair.app.engine.transportOpened(secondary, as: .secondary(request.id), now: pair.now)
        pair.pump()
        let primaryControl = pair.app.frames(on: link).filter { $0.header.serviceType == .video }.map(\.header.frameInfo)
        #expect(primaryControl == [0x01, 0x04])
        #expect(pair.hu.frames(on: link).filter { $0.header.serviceType == .video }.map(\.header.frameInfo) == [0x02, 0x05])
        #expect(pair.app.frames(on: secondary).map(\.header.frameInfo) == [0x07, 0x01])
        #expect(serviceStarts(pair.app.events, .video).map(\.slot) == [.primary, .secondary])
        #expect(pair.app.events.contains(.serviceEnded(handle, .video, .moving(to: .secondary))))
        // Never two video services at once on the head unit.
        var running = 0
        var maximum = 0
        for event in pair.hu.events {
            if case .serviceStarted(_, .video, _) = event { running += 1 }
            if case .serviceEnded(_, .video, _) = event { running -= 1 }
            maximum = max(maximum, running)
        }
        #expect(maximum == 1)
        // The secondary dies: video restarts on the primary; nothing is sent on the dead transport.
        let before = pair.app.written[secondary]!.count
        pair.severed.insert(secondary)
        pair.app.engine.transportClosed(secondary, now: pair.now)
        pair.hu.engine.transportClosed(secondary, now: pair.now)
        pair.pump()
        #expect(pair.app.written[secondary]!.count == before)
        #expect(serviceStarts(pair.app.events, .video).map(\.slot) == [.primary, .secondary, .primary])
        #expect(pair.app.events.contains(.serviceEnded(handle, .video, .transportLost)))
    }

    @Test("29. Secondary lost mid-video ([2]): ended by transport loss, no EndService, reconnects back off 1, 2, 4 s …, video restarts after the new registration")
    func secondaryLostApp() throws {
        var (pair, _, handle, _) = secondaryPair(video: [.secondary])
        try pair.app.engine.startService(.video, of: handle, now: pair.now)
        pair.pump()
        let secondary = TransportID(2)
        pair.autoConnect = false
        pair.severed.insert(secondary)
        pair.app.engine.transportClosed(secondary, now: pair.now)
        pair.hu.engine.transportClosed(secondary, now: pair.now)
        pair.pump()
        #expect(pair.app.events.contains(.serviceEnded(handle, .video, .transportLost)))
        #expect(pair.app.events.contains(.secondaryTransport(handle, .backoff(attempt: 1))))
        #expect(!pair.app.frames(on: TransportID(1)).contains { $0.header.frameInfo == 0x04 })
        // Connection attempts fail: 1 s, then 2 s, then 4 s apart.
        var attempts: [NIODeadline] = []
        for _ in 0..<3 {
            while pair.app.connects.isEmpty { pair.advance(by: .milliseconds(100)) }
            attempts.append(pair.now)
            let request = pair.app.connects.removeFirst()
            pair.app.engine.connectFailed(request.id, now: pair.now)
            pair.pump()
        }
        let gaps = zip(attempts.dropFirst(), attempts).map { ($0 - $1).nanoseconds / 1_000_000 }
        #expect(gaps.count == 2)
        #expect(abs(gaps[0] - 2000) <= 100 && abs(gaps[1] - 4000) <= 100, "\(gaps)")
        // The next attempt succeeds: video starts again on the secondary.
        while pair.app.connects.isEmpty { pair.advance(by: .milliseconds(100)) }
        pair.autoConnect = true
        pair.pump()
        #expect(serviceStarts(pair.app.events, .video).count == 2)
        #expect(serviceStarts(pair.app.events, .video).last?.slot == .secondary)
    }

    @Test("30. Head unit: secondary loss ends the services of every session bound to it; each may register again")
    func secondaryLostHeadUnit() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 2) }
        let primary = hu.accept()
        let (first, _) = hu.startSession(on: primary)
        let (second, _) = hu.startSession(on: primary)
        let shared = hu.accept()
        hu.feed(control(.registerSecondaryTransport, service: .control, session: 1, messageID: 1) + control(.registerSecondaryTransport, service: .control, session: 2, messageID: 1), on: shared)
        #expect(hu.newFrames(on: shared).map(\.header.frameInfo) == [0x08, 0x08])
        hu.feed(control(.startService, service: .video, session: 1, messageID: 2) + control(.startService, service: .audio, session: 2, messageID: 2), on: shared)
        #expect(hu.newFrames(on: shared).map(\.header.frameInfo) == [0x02, 0x02])
        hu.driver.engine.transportClosed(shared, now: hu.now)
        hu.driver.drain()
        #expect(hu.driver.events.contains(.serviceEnded(first, .video, .transportLost)))
        #expect(hu.driver.events.contains(.serviceEnded(second, .audio, .transportLost)))
        let again = hu.accept()
        hu.feed(control(.registerSecondaryTransport, service: .control, session: 1, messageID: 1) + control(.registerSecondaryTransport, service: .control, session: 2, messageID: 1), on: again)
        #expect(hu.newFrames(on: again).map(\.header.frameInfo) == [0x08, 0x08])
    }

    @Test("31. TEU with an empty address: EndService on the secondary, close it, unavailable, no retries; [2] waits, [2, 1] moves to the primary")
    func emptyAddress() throws {
        for list in [[TransportSlot.secondary], [.secondary, .primary]] {
            var (pair, link, handle, huHandle) = secondaryPair(video: list)
            try pair.app.engine.startService(.video, of: handle, now: pair.now)
            pair.pump()
            if list.count == 2 {
                // Started on the primary, moved to the secondary.
                #expect(serviceStarts(pair.app.events, .video).last?.slot == .secondary)
            }
            try pair.hu.engine.updateSecondaryTransport(SecondaryTransportOffer(tcpAddress: "", tcpPort: nil), now: pair.now)
            pair.pump()
            #expect(hexString(pair.hu.frames(on: link).last!.bytes.dropFirst(12)) == hexString([UInt8](hex: Vectors.a7).dropFirst(12)))
            pair.advance(by: .milliseconds(200))
            let secondary = TransportID(2)
            #expect(pair.app.frames(on: secondary).last?.header.frameInfo == 0x04)
            #expect(pair.app.closed.map(\.0).contains(secondary))
            #expect(pair.app.events.contains(.secondaryTransport(handle, .unavailable)))
            if list.count == 1 {
                #expect(pair.app.events.contains(.serviceWaiting(handle, .video, .noSecondary)))
            } else {
                #expect(serviceStarts(pair.app.events, .video).last?.slot == .primary)
            }
            pair.advance(by: .seconds(60))
            #expect(pair.app.connects.isEmpty)
            #expect(pair.app.written.keys.count == 2, "no new connection")
            _ = huHandle
        }
        // A port without an address is ignored; an address without a port is kept, with no connection.
        var (app, handle) = appWithSession(ack: bson {
            $0.appendString("protocolVersion", "5.4.1")
            $0.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI") }
            $0.appendArray("videoServiceTransports") { $0.appendInt32(2) }
        })
        app.feed(control(.transportEventUpdate, service: .control, session: 1, messageID: 1, payload: bson { $0.appendInt32("tcpPort", 5) }))
        app.advance(by: .seconds(1))
        #expect(app.driver.anomalies().contains(.oddTransportEventUpdate))
        app.feed(control(.transportEventUpdate, service: .control, session: 1, messageID: 2, payload: bson { $0.appendString("tcpIpAddress", "10.0.0.9") }))
        app.advance(by: .seconds(1))
        try app.driver.engine.startService(.video, of: handle, now: app.now)
        app.driver.drain()
        #expect(app.driver.connects.isEmpty)
        #expect(app.driver.events.contains(.secondaryTransport(handle, .configured(address: "10.0.0.9", port: nil))))
        #expect(app.driver.events.contains(.serviceWaiting(handle, .video, .noSecondary)))
    }

    @Test("32. TEU order: a new address reconnects there; one before the ACK is applied after it; a burst makes one attempt, to the last address")
    func transportEventOrder() throws {
        var (pair, _, handle, huHandle) = secondaryPair(video: [.secondary])
        try pair.app.engine.startService(.video, of: handle, now: pair.now)
        pair.pump()
        #expect(pair.app.events.contains(.secondaryTransport(handle, .registered(TransportID(2)))))
        pair.autoConnect = false
        try pair.hu.engine.updateSecondaryTransport(SecondaryTransportOffer(tcpAddress: "10.9.9.9", tcpPort: 77), now: pair.now)
        pair.pump()
        pair.advance(by: .milliseconds(200))
        #expect(pair.app.closed.map(\.0).contains(TransportID(2)))
        #expect(pair.app.connects.map(\.host) == ["10.9.9.9"])
        _ = huHandle

        var app = AppUnderTest()
        let started = app.start()
        app.feed(control(.transportEventUpdate, service: .control, session: 1, messageID: 1, payload: bson {
            $0.appendString("tcpIpAddress", "192.168.1.2")
            $0.appendInt32("tcpPort", 12345)
        }))
        app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson {
            $0.appendString("protocolVersion", "5.4.1")
            $0.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI") }
        }))
        app.advance(by: .seconds(1))
        #expect(app.driver.events.contains(.secondaryTransport(started, .configured(address: "192.168.1.2", port: 12345))))

        var burst = AppUnderTest { $0.app.secondaryConnection = .eager }
        _ = burst.start()
        burst.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson {
            $0.appendString("protocolVersion", "5.4.1")
            $0.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI") }
        }))
        for i in 0..<5 {
            burst.feed(control(.transportEventUpdate, service: .control, session: 1, messageID: UInt32(i + 1), payload: bson {
                $0.appendString("tcpIpAddress", "10.0.0.\(i)")
                $0.appendInt32("tcpPort", 12345)
            }))
            burst.advance(by: .milliseconds(2))
        }
        burst.advance(by: .seconds(1))
        #expect(burst.driver.connects.map(\.host) == ["10.0.0.4"])
    }

    @Test("33. RST NAK: the secondary is closed, nothing else is sent on it; [2, 1] runs on the primary; three retries, then silence until a new TEU")
    func registerRefused() throws {
        var (app, handle) = appWithSession(ack: bson {
            $0.appendString("protocolVersion", "5.4.1")
            $0.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI") }
            $0.appendArray("videoServiceTransports") { $0.appendInt32(2); $0.appendInt32(1) }
        })
        app.feed(control(.transportEventUpdate, service: .control, session: 1, messageID: 1, payload: bson {
            $0.appendString("tcpIpAddress", "127.0.0.1")
            $0.appendInt32("tcpPort", 12346)
        }))
        app.advance(by: .milliseconds(200))
        try app.driver.engine.startService(.video, of: handle, now: app.now)
        app.driver.drain()
        #expect(app.newFrames().map(\.header.serviceType) == [.video], "started on the primary meanwhile")
        app.feed(control(.startServiceACK, service: .video, session: 1, messageID: 2))
        var nextTransport: UInt64 = 10
        var attempts = 0
        while let request = app.driver.connects.first {
            app.driver.connects.removeFirst()
            attempts += 1
            let transport = TransportID(nextTransport)
            nextTransport += 1
            try app.driver.engine.transportOpened(transport, as: .secondary(request.id), now: app.now)
            app.driver.drain()
            #expect(app.newFrames(on: transport).map(\.header.frameInfo) == [0x07])
            app.feed(control(.registerSecondaryTransportNAK, service: .control, session: 1, messageID: 2, payload: bson { $0.appendString("reason", "no") }), on: transport)
            #expect(app.newFrames(on: transport).isEmpty)
            #expect(app.driver.closed.last?.0 == transport)
            app.advance(by: .seconds(60))
        }
        #expect(attempts == 4, "the first attempt and three retries")
        #expect(app.driver.events.contains(.secondaryTransport(handle, .rejected(reason: "no"))))
        #expect(serviceStarts(app.driver.events, .video).map(\.slot).allSatisfy { $0 == .primary } || serviceStarts(app.driver.events, .video).isEmpty)
        // A new TEU starts over.
        app.feed(control(.transportEventUpdate, service: .control, session: 1, messageID: 9, payload: bson {
            $0.appendString("tcpIpAddress", "127.0.0.2")
            $0.appendInt32("tcpPort", 12346)
        }))
        app.advance(by: .milliseconds(200))
        #expect(app.driver.connects.map(\.host) == ["127.0.0.2"])
    }

    @Test("34. RST validation on the head unit")
    func registerValidation() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 2) }
        let primary = hu.accept()
        let (handle, _) = hu.startSession(on: primary)
        func register(_ session: UInt8, on transport: TransportID) -> ProtocolFrame {
            hu.feed(control(.registerSecondaryTransport, service: .control, session: session, messageID: 1), on: transport)
            return hu.newFrames(on: transport)[0]
        }
        let fresh = hu.accept()
        var nak = register(0, on: fresh)
        #expect(nak.header.frameInfo == 0x09)
        #expect(document(nak)["reason"]?.stringValue == "RegisterSecondaryTransport MUST include a non-zero session ID")
        nak = register(9, on: fresh)
        #expect(hexString(nak.bytes.prefix(4)) == "50 00 09 09")
        #expect(nak.header.messageID == MessageID(2))
        #expect(document(nak)["reason"]?.stringValue == "RegisterSecondaryTransport session ID not found")
        nak = register(1, on: primary)
        #expect(nak.header.frameInfo == 0x09)
        #expect(document(nak)["reason"]?.stringValue == "RegisterSecondaryTransport must be sent on a secondary transport")
        // Before registration a StartService on an unbound connection is refused.
        hu.feed(control(.startService, service: .video, session: 1, messageID: 3), on: fresh)
        let refused = hu.newFrames(on: fresh)[0]
        #expect(refused.header.frameInfo == 0x03)
        #expect(document(refused)["reason"]?.stringValue == Refusal.transportNotRegistered.description)
        #expect(register(1, on: fresh).header.frameInfo == 0x08)
        let third = hu.accept()
        nak = register(1, on: third)
        #expect(document(nak)["reason"]?.stringValue == "RegisterSecondaryTransport session ID has already been registered")
        // RPC data on the secondary is dropped with an event.
        hu.feed(frameBytes(type: .single, service: .rpc, session: 1, messageID: 4, payload: [1]), on: fresh)
        #expect(hu.driver.receivedMessages(handle).isEmpty)
        #expect(hu.driver.anomalies().contains(.unexpectedFrame))
        // A 5.0.0 session, or multiple transports off: "not enabled".
        var old = HeadUnitUnderTest { $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 2) }
        let oldPrimary = old.accept()
        old.feed(frameBytes(version: .v1, type: .control, service: .rpc, info: 1, session: 0, payload: bson { $0.appendString("protocolVersion", "5.0.0") }), on: oldPrimary)
        let oldFresh = old.accept()
        old.feed(control(.registerSecondaryTransport, service: .control, session: 1, messageID: 1), on: oldFresh)
        #expect(document(old.newFrames(on: oldFresh)[0])["reason"]?.stringValue == "secondary transport not enabled for this session")
    }

    @Test("35. Primary lost: the app closes the secondary at once and every service ends; the head unit ends everything and closes an unused secondary")
    func primaryLost() throws {
        var (pair, link, handle, huHandle) = secondaryPair(video: [.secondary])
        try pair.app.engine.startService(.video, of: handle, now: pair.now)
        pair.pump()
        let secondary = TransportID(2)
        pair.severed.insert(link)
        pair.app.engine.transportClosed(link, now: pair.now)
        pair.app.drain()
        #expect(pair.app.closed.map(\.0) == [secondary])
        #expect(pair.app.events.contains(.serviceEnded(handle, .video, .transportLost)))
        #expect(pair.app.events.contains(.sessionEnded(handle, .transportLost)))
        pair.hu.engine.transportClosed(link, now: pair.now)
        pair.hu.drain()
        #expect(pair.hu.events.contains(.serviceEnded(huHandle, .video, .transportLost)))
        #expect(pair.hu.events.contains(.sessionEnded(huHandle, .transportLost)))
        #expect(pair.hu.closed.map(\.0) == [secondary])
    }
}
