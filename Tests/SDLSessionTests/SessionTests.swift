import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

@Suite("B. Sessions and multiplexing")
struct SessionTests {
    @Test("11. Router mode: the second session-0 StartService waits for the first answer; a NAK does not take the next slot")
    func routerMode() throws {
        var app = AppUnderTest()
        let a = app.start()
        let b = app.start()
        #expect(app.newFrames().count == 1)
        app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson { $0.appendString("protocolVersion", "5.4.1") }))
        #expect(app.driver.events.compactMap(\.startedInfo).map(\.sessionID) == [SessionID(1)])
        #expect(app.driver.events.first { $0.startedInfo != nil }?.handle == a)
        let second = app.newFrames()
        #expect(second.count == 1)
        #expect(second.first?.header.frameInfo == 0x01)
        app.feed(control(.startServiceACK, service: .rpc, session: 2, payload: bson { $0.appendString("protocolVersion", "5.4.1") }))
        #expect(app.driver.events.last { $0.startedInfo != nil }?.handle == b)

        var nak = AppUnderTest()
        let first = nak.start()
        let next = nak.start()
        _ = nak.newFrames()
        nak.feed([UInt8](hex: Vectors.a4))
        #expect(nak.driver.events.contains(.sessionStartFailed(first, .rejected(NAKContent()))))
        #expect(nak.newFrames().count == 1, "the next session's StartService goes out")
        nak.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson { $0.appendString("protocolVersion", "5.4.1") }))
        #expect(nak.driver.events.last { $0.startedInfo != nil }?.handle == next)
        #expect(nak.driver.closed.isEmpty)
    }

    @Test("12. Two StartServices in one segment: two sessions with distinct hashes, each TEU after its own ACK")
    func backToBack() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 9) }
        let link = hu.accept()
        hu.feed([UInt8](hex: Vectors.a1) + [UInt8](hex: Vectors.a1), on: link)
        let frames = hu.newFrames(on: link)
        let acks = frames.filter { $0.header.frameInfo == 0x02 }
        #expect(acks.map(\.header.sessionID) == [SessionID(1), SessionID(2)])
        #expect(document(acks[0])["hashId"]?.int32Value != document(acks[1])["hashId"]?.int32Value)
        for sid in [SessionID(1), SessionID(2)] {
            let ackIndex = frames.firstIndex { $0.header.frameInfo == 0x02 && $0.header.sessionID == sid }!
            let teuIndex = frames.firstIndex { $0.header.frameInfo == 0xFD && $0.header.sessionID == sid }!
            #expect(ackIndex < teuIndex)
        }
    }

    @Test("13. 255 sessions, then a NAK (v5 with reason, or Core's bare v1); a freed id is reused with a new hash; least recently freed first")
    func sessionLimit() throws {
        for policy in [NegotiationPolicy.spec, .coreCompatible] {
            var hu = HeadUnitUnderTest { $0.headUnit.negotiationPolicy = policy }
            let links = [hu.accept(), hu.accept(), hu.accept()]
            var hashes: [UInt8: Int32] = [:]
            for i in 0..<255 {
                let link = links[i % 3]
                hu.feed([UInt8](hex: Vectors.a1), on: link)
                let ack = hu.newFrames(on: link).first { $0.header.frameInfo == 0x02 }!
                hashes[ack.header.sessionID.rawValue] = document(ack)["hashId"]!.int32Value!
            }
            #expect(hashes.count == 255)
            hu.feed([UInt8](hex: Vectors.a1), on: links[0])
            let nak = try #require(hu.newFrames(on: links[0]).first)
            if policy == .spec {
                #expect(nak.header.version == .v5)
                #expect(nak.header.frameInfo == 0x03)
                #expect(nak.header.sessionID == SessionID(0))
                #expect(document(nak)["reason"]?.stringValue == "no free session id")
            } else {
                #expect(hexString(nak.bytes) == hexString([UInt8](hex: Vectors.a4)))
            }
            #expect(hu.driver.events.contains(.sessionLimitReached(links[0])))
            #expect(hu.driver.closed.isEmpty)
            // End session 17 with its hash, start again: id 17, another hash.
            let link17 = links[16 % 3]
            hu.feed(control(.endService, service: .rpc, session: 17, messageID: 5, payload: bson { $0.appendInt32("hashId", hashes[17]!) }), on: link17)
            #expect(hu.newFrames(on: link17).map(\.header.frameInfo) == [0x05])
            hu.feed([UInt8](hex: Vectors.a1), on: link17)
            let again = try #require(hu.newFrames(on: link17).first)
            #expect(again.header.sessionID == SessionID(17))
            #expect(document(again)["hashId"]?.int32Value != hashes[17])
        }
        var lrf = HeadUnitUnderTest()
        let link = lrf.accept()
        var hashes: [Int32] = []
        for _ in 0..<3 {
            lrf.feed([UInt8](hex: Vectors.a1), on: link)
            hashes.append(document(lrf.newFrames(on: link)[0])["hashId"]!.int32Value!)
        }
        lrf.feed(control(.endService, service: .rpc, session: 2, payload: bson { $0.appendInt32("hashId", hashes[1]) }), on: link)
        _ = lrf.newFrames(on: link)
        lrf.feed([UInt8](hex: Vectors.a1), on: link)
        #expect(lrf.newFrames(on: link)[0].header.sessionID == SessionID(4))

        var lowest = HeadUnitUnderTest { $0.headUnit.sessionIDPolicy = .lowestFree }
        let other = lowest.accept()
        hashes = []
        for _ in 0..<3 {
            lowest.feed([UInt8](hex: Vectors.a1), on: other)
            hashes.append(document(lowest.newFrames(on: other)[0])["hashId"]!.int32Value!)
        }
        lowest.feed(control(.endService, service: .rpc, session: 2, payload: bson { $0.appendInt32("hashId", hashes[1]) }), on: other)
        _ = lowest.newFrames(on: other)
        lowest.feed([UInt8](hex: Vectors.a1), on: other)
        #expect(lowest.newFrames(on: other)[0].header.sessionID == SessionID(2))
    }

    @Test("14. An EndService with the old hash after id reuse is refused (A8); the new session stays")
    func staleEndService() throws {
        var hu = HeadUnitUnderTest()
        let link = hu.accept()
        let (old, oldInfo) = hu.startSession(on: link)
        for _ in 2...255 { _ = hu.startSession(on: link) }
        hu.feed(control(.endService, service: .rpc, session: 1, payload: bson { $0.appendInt32("hashId", Int32(bitPattern: oldInfo.hashID!)) }), on: link)
        #expect(hu.driver.events.contains(.sessionEnded(old, .peer)))
        _ = hu.newFrames(on: link)
        let (new, newInfo) = hu.startSession(on: link)
        #expect(newInfo.sessionID == SessionID(1))
        #expect(newInfo.hashID != oldInfo.hashID)
        hu.feed(control(.endService, service: .rpc, session: 1, messageID: 6, payload: bson { $0.appendInt32("hashId", Int32(bitPattern: oldInfo.hashID!)) }), on: link)
        let nak = try #require(hu.newFrames(on: link).first)
        #expect(hexString(nak.bytes) == hexString([UInt8](hex: Vectors.a8)))
        #expect(!hu.driver.events.contains(.sessionEnded(new, .peer)))
        #expect(hu.driver.engine.sessionInfo(new) != nil)
    }

    @Test("15. A session that never registers is ended after the registration timeout; the other one is not")
    func orphanSession() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.registrationTimeout = .seconds(2) }
        let link = hu.accept()
        hu.feed([UInt8](hex: Vectors.a1) + [UInt8](hex: Vectors.a1), on: link)
        let handles = hu.driver.events.compactMap { $0.startedInfo != nil ? $0.handle : nil }
        try hu.driver.engine.sessionRegistered(handles[0], now: hu.now)
        _ = hu.newFrames(on: link)
        hu.advance(by: .seconds(3))
        let frames = hu.newFrames(on: link)
        #expect(frames.map { hexString($0.bytes.prefix(4)) } == ["50 07 04 02"])
        #expect(hu.driver.events.contains(.sessionEnded(handles[1], .registrationTimeout)))
        #expect(hu.driver.engine.sessionInfo(handles[0]) != nil)
    }

    @Test("16. Flood: messages per session are counted (audio, video and Consecutive frames excluded); session 0 floods close the transport")
    func flood() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.floodLimit = RateLimit(count: 100, per: .seconds(1)) ; $0.headUnit.sessionZeroFloodLimit = RateLimit(count: 100, per: .seconds(1)) }
        let link = hu.accept()
        var sessions: [SessionHandle] = []
        for _ in 0..<3 { sessions.append(hu.startSession(on: link).0) }
        // Video on session 1: 10,000 frames in a second are not counted.
        hu.feed(control(.startService, service: .video, session: 1, messageID: 2), on: link)
        _ = hu.newFrames(on: link)
        var video: [UInt8] = []
        for i in 0..<10_000 { video += frameBytes(type: .single, service: .video, session: 1, messageID: UInt32(i + 3), payload: [1]) }
        hu.feed(video, on: link)
        #expect(hu.driver.engine.sessionInfo(sessions[0]) != nil)
        // A bulk message of 2,000 Consecutive frames counts once.
        var bulk = frameBytes(type: .first, service: .rpc, session: 2, messageID: 9, payload: [0, 0, 0x07, 0xD0, 0, 0, 0x07, 0xD0])
        for i in 1...2000 {
            bulk += frameBytes(type: .consecutive, service: .rpc, info: i == 2000 ? 0 : UInt8((i - 1) % 255 + 1), session: 2, messageID: 9, payload: [7])
        }
        hu.feed(bulk, on: link)
        #expect(hu.driver.receivedMessages(sessions[1]).map(\.payload.readableBytes) == [2000])
        // 101 RPC messages on session 3 within a second: EndService(RPC) for it alone.
        var rpc: [UInt8] = []
        for i in 0..<101 { rpc += frameBytes(type: .single, service: .rpc, session: 3, messageID: UInt32(i + 1), payload: [1]) }
        hu.advance(by: .milliseconds(10))
        hu.feed(rpc, on: link)
        #expect(hu.newFrames(on: link).contains { hexString($0.bytes.prefix(4)) == "50 07 04 03" })
        #expect(hu.driver.events.contains(.sessionEnded(sessions[2], .flood)))
        #expect(hu.driver.anomalies().contains(.floodDetected))
        #expect(hu.driver.engine.sessionInfo(sessions[0]) != nil)
        #expect(hu.driver.engine.sessionInfo(sessions[1]) != nil)
        // 101 control frames on session 0: the transport closes with its sessions.
        var zero: [UInt8] = []
        for _ in 0..<101 { zero += control(.heartbeat, service: .control, session: 0) }
        hu.feed(zero, on: link)
        #expect(hu.driver.closed.map(\.1) == [.flood])
        #expect(hu.driver.events.contains(.sessionEnded(sessions[0], .transportLost)))
    }

    @Test("17. Malformed runs: ten in a second are tolerated, the eleventh closes the transport without EndService; one long run counts once")
    func malformedBursts() throws {
        var hu = HeadUnitUnderTest()
        let link = hu.accept()
        let (handle, _) = hu.startSession(on: link)
        let valid = frameBytes(type: .single, service: .rpc, session: 1, messageID: 1, payload: [1])
        for _ in 0..<10 { hu.feed([0xFF, 0xFF] + valid, on: link) }
        #expect(hu.driver.closed.isEmpty)
        hu.feed([0xFF, 0xFF] + valid, on: link)
        #expect(hu.driver.closed.map(\.1) == [.malformedInput])
        #expect(hu.newFrames(on: link).isEmpty, "no EndService")
        #expect(hu.driver.events.contains(.transportClosed(link, .closedByEngine(.malformedInput))))
        #expect(hu.driver.events.contains(.sessionEnded(handle, .transportLost)))

        var long = HeadUnitUnderTest()
        let other = long.accept()
        _ = long.startSession(on: other)
        long.feed([UInt8](repeating: 0xFF, count: 1 << 20) + valid, on: other)
        #expect(long.driver.closed.isEmpty)
        #expect(long.driver.events.filter { if case .protocolError = $0 { return true } else { return false } }.count == 1)
    }
}
