import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// One connection cannot act on another app's session, nor take every session id, nor make the
/// head unit hold reassemblies without bound: each attack as a hostile connection beside a victim.
@Suite("Session isolation and fair shares")
struct IsolationTests {
    /// A head unit offering a secondary transport, with the victim's session registered on its
    /// own connection.
    static func headUnit(
        _ adjust: @escaping (inout SessionConfiguration) -> Void = { _ in }
    ) -> (HeadUnitUnderTest, victimLink: TransportID, victim: SessionHandle, info: SessionInfo) {
        var hu = HeadUnitUnderTest {
            $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 12346)
            adjust(&$0)
        }
        let link = hu.accept()
        let (victim, info) = hu.startSession(on: link)
        return (hu, link, victim, info)
    }

    /// A new connection that registers as the session's secondary without a hash id.
    static func claim(_ session: UInt8, on hu: inout HeadUnitUnderTest) -> TransportID {
        let attacker = hu.accept()
        hu.feed(control(.registerSecondaryTransport, service: .control, session: session, messageID: 1), on: attacker)
        return attacker
    }

    static func hashPayload(_ hash: UInt32) -> [UInt8] {
        bson { $0.appendInt32("hashId", Int32(bitPattern: hash)) }
    }

    @Test("a connection that registers itself as another app's secondary cannot end its RPC service, not even with a hashless v1 EndService")
    func aClaimedSecondaryCannotEndTheSession() throws {
        var (hu, victimLink, victim, info) = Self.headUnit()
        let attacker = hu.accept()
        let sid = info.sessionID.rawValue
        // Unproven (no hash): taken, as the official app libraries send none.
        hu.feed(control(.registerSecondaryTransport, service: .control, session: sid, messageID: 1), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x08])
        // EndService(RPC) from that connection, v5 without a hash and v1: both refused, the
        // session untouched.
        hu.feed(control(.endService, service: .rpc, session: sid, messageID: 2), on: attacker)
        hu.feed(control(.endService, version: .v1, service: .rpc, session: sid), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x06, 0x06])
        // v1 on the victim's own primary too: a v1 header carries no hash.
        hu.feed(control(.endService, version: .v1, service: .rpc, session: sid), on: victimLink)
        #expect(hu.newFrames(on: victimLink).map(\.header.frameInfo) == [0x06])
        #expect(!hu.driver.events.contains { if case .sessionEnded(victim, _) = $0 { return true } else { return false } })
        #expect(hu.driver.events.contains { if case .anomaly(let a) = $0 { return a.code == .foreignSessionFrame } else { return false } })
    }

    @Test("the app's own registration, proven by its hash id, displaces a connection that claimed its secondary; a wrong hash is refused")
    func aProvenRegistrationWins() throws {
        var (hu, _, victim, info) = Self.headUnit()
        let sid = info.sessionID.rawValue
        let hash = try #require(info.hashID)
        let attacker = hu.accept()
        hu.feed(control(.registerSecondaryTransport, service: .control, session: sid, messageID: 1), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x08])
        // A guessed hash: refused, counted.
        let guesser = hu.accept()
        hu.feed(
            control(.registerSecondaryTransport, service: .control, session: sid, messageID: 1, payload: Self.hashPayload(hash &+ 1)),
            on: guesser)
        let refused = try #require(hu.newFrames(on: guesser).first)
        #expect(refused.header.frameInfo == 0x09)
        #expect(try BSONDocument(validating: refused.payload)["reason"]?.stringValue == "Wrong hash_id for session \(sid)")
        // The app's own: accepted; the claiming connection carries the session no more and closes.
        let own = hu.accept()
        hu.feed(
            control(.registerSecondaryTransport, service: .control, session: sid, messageID: 1, payload: Self.hashPayload(hash)), on: own)
        #expect(hu.newFrames(on: own).map(\.header.frameInfo) == [0x08])
        #expect(hu.driver.closed.contains { $0.0 == attacker })
        // Video started from the displaced connection is refused: it is no transport of the session.
        #expect(hu.driver.engine.hasSessions(on: own))
        _ = victim
    }

    /// `unproven-secondary-proves-itself` (Fuzz/FailCases/FuzzSession): the proven registration
    /// detached the unproven one it displaced, here the very connection it came on, which then
    /// closed under it: the head unit trapped on the transport record gone.
    @Test("a connection that registered without a hash id and then proves it with the hash keeps the session and its video (the head unit crashed: FuzzSession)")
    func anUnprovenSecondaryProvesItself() throws {
        var (hu, _, victim, info) = Self.headUnit()
        let sid = info.sessionID.rawValue
        let hash = try #require(info.hashID)
        let secondary = Self.claim(sid, on: &hu)
        hu.feed(control(.startService, service: .video, session: sid, messageID: 2), on: secondary)
        #expect(hu.newFrames(on: secondary).map(\.header.frameInfo) == [0x08, 0x02])
        hu.feed(
            control(.registerSecondaryTransport, service: .control, session: sid, messageID: 3, payload: Self.hashPayload(hash)),
            on: secondary)
        #expect(hu.newFrames(on: secondary).map(\.header.frameInfo) == [0x08])
        #expect(!hu.driver.closed.contains { $0.0 == secondary })
        #expect(hu.driver.engine.serviceInfo(.video, of: victim)?.transport == secondary)
        // Proven now: another connection's proof no longer displaces it.
        let other = hu.accept()
        hu.feed(
            control(.registerSecondaryTransport, service: .control, session: sid, messageID: 1, payload: Self.hashPayload(hash)), on: other)
        #expect(hu.newFrames(on: other).map(\.header.frameInfo) == [0x09])
    }

    /// Events of the victim other than anomalies.
    static func victimEvents(_ hu: HeadUnitUnderTest, _ victim: SessionHandle) -> [SessionEvent] {
        hu.driver.events.filter { if case .anomaly = $0 { return false } else { return $0.handle == victim } }
    }

    /// `start-from-another-connection-reported-to-the-session` (Fuzz/FailCases/FuzzSession): a
    /// StartService naming another app's session was reported to that session as a failed start.
    @Test("a StartService from a connection that does not carry the session, or of RPC from its secondary, or of a running service, is refused with no event for the session")
    func startsThatReachNoSession() throws {
        var (hu, victimLink, victim, info) = Self.headUnit()
        let sid = info.sessionID.rawValue
        hu.feed(control(.startService, service: .audio, session: sid, messageID: 5), on: victimLink)
        #expect(hu.newFrames(on: victimLink).map(\.header.frameInfo) == [0x02])
        hu.driver.events = []
        let attacker = hu.accept()
        hu.feed(control(.startService, service: .video, session: sid, messageID: 1), on: attacker)
        hu.feed(control(.registerSecondaryTransport, service: .control, session: sid, messageID: 2), on: attacker)
        hu.feed(control(.startService, encrypted: true, service: .rpc, session: sid, messageID: 3), on: attacker)
        hu.feed(control(.startService, service: .audio, session: sid, messageID: 4), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x03, 0x08, 0x03, 0x03])
        // The app itself asking again for its running audio: refused, and audio runs on.
        hu.feed(control(.startService, service: .audio, session: sid, messageID: 6), on: victimLink)
        #expect(hu.newFrames(on: victimLink).map(\.header.frameInfo) == [0x03])
        #expect(Self.victimEvents(hu, victim).isEmpty)
        #expect(hu.driver.engine.serviceInfo(.audio, of: victim)?.transport == victimLink)
        #expect(hu.driver.anomalies().contains(.foreignSessionFrame))
    }

    @Test("control frames on a claimed secondary do not count towards the session's flood limit")
    func aClaimedSecondaryCannotFloodTheSession() throws {
        var (hu, _, victim, info) = Self.headUnit { $0.headUnit.floodLimit = RateLimit(count: 8, per: .seconds(1)) }
        let sid = info.sessionID.rawValue
        hu.driver.events = []
        let attacker = Self.claim(sid, on: &hu)
        for index in 0..<20 {
            hu.feed(control(.heartbeat, service: .control, session: sid, messageID: UInt32(index + 2)), on: attacker)
        }
        #expect(hu.newFrames(on: attacker).count == 21)
        #expect(Self.victimEvents(hu, victim).isEmpty)
        #expect(hu.driver.engine.sessionInfo(victim) != nil)
    }

    /// `protected-bulk-data-from-a-claimed-secondary` (Fuzz/FailCases/FuzzSession): an E=1 frame
    /// of bulk data on a connection that claimed the session was reported to the session as a
    /// refused protected message (an RPC request among them is answered INVALID_DATA on its
    /// primary); security queries there could reset its protection.
    @Test("a claimed secondary carries audio and video only: RPC, bulk data and security queries on it are dropped and counted, and what it cannot unprotect touches nothing of the session")
    func aClaimedSecondaryCarriesMediaOnly() throws {
        var (hu, victimLink, victim, info) = Self.headUnit { $0.headUnit.malformedLimit = RateLimit(count: 10, per: .seconds(1)) }
        let sid = info.sessionID.rawValue
        let attacker = Self.claim(sid, on: &hu)
        hu.feed(control(.startService, service: .video, session: sid, messageID: 2), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x08, 0x02])
        hu.driver.events = []
        // A protected video frame without a security context: dropped, counted; no internal
        // error goes to the app on its primary.
        hu.feed(frameBytes(encrypted: true, type: .single, service: .video, session: sid, messageID: 3, payload: [1, 2]), on: attacker)
        hu.feed(frameBytes(type: .single, service: .rpc, session: sid, messageID: 4, payload: [1, 2, 3]), on: attacker)
        hu.feed(frameBytes(encrypted: true, type: .single, service: .rpc, session: sid, messageID: 5, payload: [1, 2, 3]), on: attacker)
        hu.feed(frameBytes(type: .single, service: .hybrid, session: sid, messageID: 6, payload: [1]), on: attacker)
        // A security query: an internal error would reset the session's protection.
        let query: [UInt8] = [0x20, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 5]
        hu.feed(frameBytes(type: .single, service: .control, session: sid, messageID: 7, payload: query), on: attacker)
        #expect(hu.newFrames(on: victimLink).isEmpty)
        #expect(Self.victimEvents(hu, victim).isEmpty)
        #expect(!hu.driver.closed.contains { $0.0 == attacker })
        for index in 0..<6 {
            hu.feed(frameBytes(type: .single, service: .rpc, session: sid, messageID: UInt32(10 + index), payload: [1]), on: attacker)
        }
        #expect(hu.driver.closed.map(\.0) == [attacker])
        #expect(hu.driver.engine.sessionInfo(victim) != nil)
    }

    /// `end-service-ack-from-another-connection` (Fuzz/FailCases/FuzzSession): an EndServiceACK
    /// from a connection that claimed the session reported the end of an audio service the head
    /// unit was ending on the primary.
    @Test("a claimed secondary cannot end a service starting on the primary, report the end of one draining there, nor get the session reported for streaming after its end")
    func aClaimedSecondaryCannotEndOrReportTheVictimsServices() throws {
        var (hu, victimLink, victim, info) = Self.headUnit {
            $0.headUnit.approvesMediaStarts = true
            $0.headUnit.closeSessionOnViolation = true
            $0.headUnit.streamingGracePeriod = .milliseconds(50)
        }
        let sid = info.sessionID.rawValue
        let attacker = Self.claim(sid, on: &hu)
        _ = hu.newFrames(on: attacker)
        // Video waits for approval on the primary; the attacker's EndService is refused.
        hu.feed(control(.startService, service: .video, session: sid, messageID: 2), on: victimLink)
        hu.feed(control(.endService, service: .video, session: sid, messageID: 3), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x06])
        try hu.driver.engine.approveServiceStart(.video, of: victim, now: hu.now)
        hu.driver.drain()
        #expect(hu.newFrames(on: victimLink).map(\.header.frameInfo) == [0x02])
        // The head unit ends it: the attacker's ACK does not report the end, nor its EndService.
        try hu.driver.engine.endService(.video, of: victim, now: hu.now)
        hu.driver.drain()
        hu.driver.events = []
        hu.feed(control(.endServiceACK, service: .video, session: sid, messageID: 4), on: attacker)
        hu.feed(control(.endService, service: .video, session: sid, messageID: 5), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x06])
        #expect(Self.victimEvents(hu, victim).isEmpty)
        // Video from it after the grace: no violation, the session lives.
        hu.advance(by: .milliseconds(100))
        hu.driver.events = []
        hu.feed(frameBytes(type: .single, service: .video, session: sid, messageID: 6, payload: [1]), on: attacker)
        #expect(Self.victimEvents(hu, victim).isEmpty)
        #expect(hu.driver.engine.sessionInfo(victim) != nil)
    }

    @Test("with hashIDRequired a registration without the session's hash id is refused")
    func hashRequired() throws {
        var (hu, _, _, info) = Self.headUnit { $0.headUnit.secondaryTransportProof = .hashIDRequired }
        let attacker = hu.accept()
        hu.feed(control(.registerSecondaryTransport, service: .control, session: info.sessionID.rawValue, messageID: 1), on: attacker)
        #expect(hu.newFrames(on: attacker).map(\.header.frameInfo) == [0x09])
    }

    @Test("frames aimed at sessions a connection does not carry count towards closing that connection, and only it")
    func foreignFramesCloseTheirConnection() throws {
        var (hu, victimLink, victim, info) = Self.headUnit { $0.headUnit.malformedLimit = RateLimit(count: 10, per: .seconds(1)) }
        let attacker = hu.accept()
        let sid = info.sessionID.rawValue
        for index in 0..<11 {
            hu.feed(frameBytes(type: .single, service: .rpc, session: sid, messageID: UInt32(index + 1), payload: [1, 2, 3]), on: attacker)
        }
        #expect(hu.driver.closed.contains { $0.0 == attacker })
        #expect(!hu.driver.closed.contains { $0.0 == victimLink })
        #expect(!hu.driver.events.contains { if case .sessionEnded(victim, _) = $0 { return true } else { return false } })
    }

    @Test("one connection gets at most maxSessionsPerConnection sessions (default 16); another connection still starts one")
    func sessionsPerConnection() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.maxSessionsPerConnection = SessionConfiguration(role: .headUnit).headUnit.maxSessionsPerConnection }
        #expect(SessionConfiguration(role: .headUnit).headUnit.maxSessionsPerConnection == 16)
        let greedy = hu.accept()
        for _ in 0..<16 { _ = hu.startSession(on: greedy, registered: false) }
        hu.feed([UInt8](hex: Vectors.a1), on: greedy)
        let nak = try #require(hu.newFrames(on: greedy).first)
        #expect(nak.header.frameInfo == 0x03)
        #expect(try BSONDocument(validating: nak.payload)["reason"]?.stringValue == "too many sessions on this connection")
        let other = hu.accept()
        let (_, info) = hu.startSession(on: other)
        #expect(info.sessionID.rawValue == 17)
    }

    @Test("when every session id is taken, the session that waited longest without registering gives its id up to a new app")
    func idleSessionsGiveTheirIDsUp() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.maxSessions = 4 }
        let idle = hu.accept()
        var idleHandles: [SessionHandle] = []
        for _ in 0..<4 { idleHandles.append(hu.startSession(on: idle, registered: false).0) }
        // Within the grace nothing is reclaimed: a session that just started is not idle yet.
        let app = hu.accept()
        hu.feed([UInt8](hex: Vectors.a1), on: app)
        #expect(hu.newFrames(on: app).map(\.header.frameInfo) == [0x03])
        hu.advance(by: .seconds(3))
        let (handle, _) = hu.startSession(on: app)
        #expect(!idleHandles.contains(handle))
        #expect(hu.driver.events.contains { if case .sessionEnded(idleHandles[0], .registrationTimeout) = $0 { return true } else { return false } })
        #expect(!hu.driver.events.contains { if case .sessionEnded(idleHandles[1], _) = $0 { return true } else { return false } })
    }

    /// A First frame declaring `total` bytes in `count` Consecutive frames.
    static func first(session: UInt8, messageID: UInt32, total: UInt32, count: UInt32 = 64) -> [UInt8] {
        frameBytes(
            type: .first, service: .rpc, session: session, messageID: messageID,
            payload: [UInt8(total >> 24), UInt8(total >> 16 & 0xFF), UInt8(total >> 8 & 0xFF), UInt8(total & 0xFF),
                      UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)])
    }

    @Test("reassemblies of every connection together stay under maxReassemblyBytesTotal, each newcomer's message taking the room of the connection holding the most")
    func reassemblyAcrossConnections() throws {
        var hu = HeadUnitUnderTest {
            $0.maxReassemblyBytesTotal = 32 << 20
            $0.headUnit.malformedLimit = nil
        }
        var links: [TransportID] = []
        for connection in 0..<8 {
            let link = hu.accept()
            links.append(link)
            let (_, info) = hu.startSession(on: link)
            for message in 0..<2 {
                // 8 MiB declared, nothing more sent: the declared size is what counts.
                hu.feed(Self.first(session: info.sessionID.rawValue, messageID: UInt32(100 + message), total: 8 << 20), on: link)
                #expect(hu.driver.engine.totalReassemblyBytes <= 32 << 20)
            }
            #expect(hu.driver.engine.transports[existing: link].reassembler.reservedBytes == 16 << 20, "connection \(connection)")
        }
        // The last two connections hold the budget; each earlier one gave its room up once.
        #expect(hu.driver.engine.totalReassemblyBytes == 32 << 20)
        #expect(links.map { hu.driver.engine.transports[existing: $0].reassembler.reservedBytes } == [0, 0, 0, 0, 0, 0, 16 << 20, 16 << 20])
        let evicted = hu.driver.events.filter { if case .protocolError(_, let error) = $0 { return error.code == .tooManyReassemblies } else { return false } }
        #expect(evicted.count == 6)
    }

    @Test("a connection that fills the reassembly budget loses it to another app's message; connections holding no more than the newcomer keep theirs")
    func reassemblyBudgetHog() throws {
        var hu = HeadUnitUnderTest {
            $0.maxReassemblyBytesTotal = 32 << 20
            $0.headUnit.malformedLimit = nil
        }
        let hog = hu.accept()
        let (_, hogInfo) = hu.startSession(on: hog)
        for message in 0..<4 {
            hu.feed(Self.first(session: hogInfo.sessionID.rawValue, messageID: UInt32(10 + message), total: 8 << 20), on: hog)
        }
        #expect(hu.driver.engine.totalReassemblyBytes == 32 << 20)
        // Another app's 2,000-byte message in two frames: the hog's reassemblies go, the message
        // arrives whole.
        let app = hu.accept()
        let (appSession, appInfo) = hu.startSession(on: app)
        let sid = appInfo.sessionID.rawValue
        hu.driver.events = []
        hu.feed(Self.first(session: sid, messageID: 9, total: 2000, count: 2), on: app)
        hu.feed(frameBytes(type: .consecutive, service: .rpc, info: 1, session: sid, messageID: 9, payload: [UInt8](repeating: 7, count: 1000)), on: app)
        hu.feed(frameBytes(type: .consecutive, service: .rpc, info: 0, session: sid, messageID: 9, payload: [UInt8](repeating: 7, count: 1000)), on: app)
        #expect(hu.driver.receivedMessages(appSession).map(\.payload.readableBytes) == [2000])
        #expect(hu.driver.engine.transports[existing: hog].reassembler.reservedBytes == 0)
        #expect(hu.driver.events.contains { if case .protocolError(hog, let error) = $0 { return error.code == .tooManyReassemblies } else { return false } })
        #expect(!hu.driver.events.contains { if case .protocolError(app, _) = $0 { return true } else { return false } })

        // Two connections holding 16 MiB each: a third's 16 MiB message would hold as much as
        // either, so it is refused and they keep theirs.
        var holders: [TransportID] = []
        for _ in 0..<2 {
            let link = hu.accept()
            let (_, info) = hu.startSession(on: link)
            hu.feed(Self.first(session: info.sessionID.rawValue, messageID: 20, total: 16 << 20, count: 128), on: link)
            holders.append(link)
        }
        #expect(hu.driver.engine.totalReassemblyBytes == 32 << 20)
        let third = hu.accept()
        let (_, thirdInfo) = hu.startSession(on: third)
        hu.driver.events = []
        hu.feed(Self.first(session: thirdInfo.sessionID.rawValue, messageID: 20, total: 16 << 20, count: 128), on: third)
        #expect(hu.driver.events.contains { if case .protocolError(third, let error) = $0 { return error.code == .tooManyReassemblies } else { return false } })
        #expect(holders.map { hu.driver.engine.transports[existing: $0].reassembler.reservedBytes } == [16 << 20, 16 << 20])
    }

    @Test("a message trickled frame by frame is dropped after maxReassemblyDuration, however often frames come")
    func trickleDeadline() throws {
        var hu = HeadUnitUnderTest {
            $0.protocolLimits.maxReassemblyDuration = .seconds(20)
            $0.protocolLimits.reassemblyTimeout = .seconds(10)
        }
        let link = hu.accept()
        let (_, info) = hu.startSession(on: link)
        let sid = info.sessionID.rawValue
        let total: UInt32 = 1000
        hu.feed(
            frameBytes(type: .first, service: .rpc, session: sid, messageID: 7, payload: [0, 0, 3, 232, 0, 0, 0, 100]), on: link)
        for index in 1...5 {
            hu.advance(by: .seconds(5))
            hu.feed(frameBytes(type: .consecutive, service: .rpc, info: UInt8(index), session: sid, messageID: 7, payload: [1]), on: link)
        }
        // 25 s after its First frame, every gap under 10 s: dropped all the same.
        #expect(hu.driver.engine.totalReassemblyBytes == 0)
        #expect(hu.driver.events.contains { if case .protocolError(_, let error) = $0 { return error.code == .reassemblyExpired } else { return false } })
        _ = total
    }
}
