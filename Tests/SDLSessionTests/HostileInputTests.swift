import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// Hostile input on one session never disturbs another, and memory stays within the limits.
@Suite("Hostile input")
struct HostileInputTests {
    /// Session 1 (the attacker) and session 2 (the victim) share the transport; the victim sends
    /// a valid RPC message after every hostile step and must get every one through.
    @Test("A hostile session on the same transport: the other session's messages all arrive, limits hold", arguments: 0..<40)
    func sameTransport(seed: Int) throws {
        var random = SDLTestSupport.SplitMix64(seed: UInt64(seed) &+ 77)
        var hu = HeadUnitUnderTest {
            $0.headUnit.floodLimit = RateLimit(count: 200, per: .seconds(1))
            $0.headUnit.malformedLimit = nil
            $0.protocolLimits.maxReassemblyBytes = 1 << 20
            $0.protocolLimits.maxReassembliesPerSession = 4
        }
        let link = hu.accept()
        let (attacker, attackerInfo) = hu.startSession(on: link, registered: Bool.random(using: &random))
        let (victim, victimInfo) = hu.startSession(on: link)
        let a = attackerInfo.sessionID.rawValue, v = victimInfo.sessionID.rawValue
        #expect(a != v)
        let eventsBefore = hu.driver.events.count
        var expected = 0
        var attackerEnded = false
        for step in 0..<60 {
            switch Int.random(in: 0...6, using: &random) {
            case 0:  // garbage
                hu.feed((0..<Int.random(in: 1...300, using: &random)).map { _ in UInt8.random(in: 0xF0...0xFF, using: &random) }, on: link)
            case 1:  // bogus First frames declaring large messages, never completed
                let total = UInt32.random(in: 1000...(16 << 20), using: &random)
                hu.feed(frameBytes(type: .first, service: .rpc, session: a, messageID: UInt32(step) + 1000,
                                   payload: [UInt8(total >> 24), UInt8(total >> 16 & 0xFF), UInt8(total >> 8 & 0xFF), UInt8(total & 0xFF), 0, 0, 0, 200]), on: link)
            case 2:  // a flood of small messages
                var flood: [UInt8] = []
                for i in 0..<Int.random(in: 10...300, using: &random) {
                    flood += frameBytes(type: .single, service: .rpc, session: a, messageID: UInt32(i), payload: [0])
                }
                hu.feed(flood, on: link)
            case 3:  // RegisterSecondaryTransport on the primary
                hu.feed(control(.registerSecondaryTransport, service: .control, session: a, messageID: 1), on: link)
            case 4:  // StartService for video, registered or not
                hu.feed(control(.startService, service: .video, session: a, messageID: 2), on: link)
            case 5:  // Consecutive frames of messages that never started, wrong versions
                hu.feed(frameBytes(version: .v4, type: .consecutive, service: .rpc, info: 3, session: a, messageID: 5, payload: [1, 2]), on: link)
            default:  // EndService with a wrong hash
                hu.feed(control(.endService, service: .rpc, session: a, messageID: 3, payload: bson { $0.appendInt32("hashId", 1) }), on: link)
            }
            hu.advance(by: .milliseconds(Int64.random(in: 1...50, using: &random)))
            hu.feed(frameBytes(type: .single, service: .rpc, session: v, messageID: UInt32(step) + 1, payload: [0xAB, UInt8(step)]), on: link)
            expected += 1
            let record = hu.driver.engine.transports[link]
            #expect(record != nil, "the transport stays open")
            #expect((record?.reassembler.reservedBytes ?? 0) <= 1 << 20)
            #expect(hu.driver.engine.sessionInfo(victim) != nil)
            if hu.driver.engine.sessionInfo(attacker) == nil { attackerEnded = true }
            #expect(!attackerEnded || hu.driver.engine.sessionInfo(attacker) == nil, "an ended session stays ended")
        }
        let delivered = hu.driver.receivedMessages(victim).map { Array($0.payload.readableBytesView) }
        #expect(delivered == (0..<expected).map { [0xAB, UInt8($0)] })
        // Nothing but the victim's own messages reached it: no event of the attacker's names it.
        let victimEvents = hu.driver.events[eventsBefore...].filter { $0.handle == victim }
        #expect(victimEvents.allSatisfy { if case .message = $0 { return true } else { return false } })
        _ = attackerEnded
    }

    @Test("Garbage until the malformed limit closes one connection; a session on another connection is untouched")
    func otherTransport() throws {
        var hu = HeadUnitUnderTest()
        let bad = hu.accept()
        let good = hu.accept()
        let (victim, victimInfo) = hu.startSession(on: good)
        let (_, attackerInfo) = hu.startSession(on: bad)
        let a = attackerInfo.sessionID.rawValue, v = victimInfo.sessionID.rawValue
        for i in 0..<30 {
            hu.feed([0xFF, 0xEE, 0xDD] + frameBytes(type: .single, service: .rpc, session: a, messageID: UInt32(i), payload: [1]), on: bad)
            hu.feed(frameBytes(type: .single, service: .rpc, session: v, messageID: UInt32(i), payload: [2]), on: good)
        }
        #expect(hu.driver.closed.map(\.0) == [bad])
        #expect(hu.driver.receivedMessages(victim).count == 30)
        #expect(hu.driver.engine.sessionInfo(victim) != nil)
    }
}
