import NIOCore
import SDLProtocol
import Testing

@testable import SDLSession

/// `queuedMessages(_:of:)`: what an I/O layer reads to bound what it queues.
struct QueuedMessagesTests {
    @Test("A message counts until its last frame is written; other services and sessions do not count")
    func countsUntilTheLastFrame() throws {
        var hu = HeadUnitUnderTest()
        hu.driver.autoWrite = false
        let link = hu.accept()
        let (first, _) = hu.startSession(on: link)
        let (second, _) = hu.startSession(on: link)
        hu.driver.pull(link)
        #expect(hu.driver.engine.queuedMessages(.rpc, of: first) == 0)

        // Three frames (the MTU is 131,072 at v5), then two single-frame messages.
        try hu.driver.engine.send(ByteBuffer(repeating: 1, count: 200_000), on: .rpc, of: first, now: hu.now)
        try hu.driver.engine.send(ByteBuffer(repeating: 2, count: 100), on: .rpc, of: first, now: hu.now)
        try hu.driver.engine.send(ByteBuffer(repeating: 3, count: 100), on: .rpc, of: second, now: hu.now)
        #expect(hu.driver.engine.queuedMessages(.rpc, of: first) == 2)
        #expect(hu.driver.engine.queuedMessages(.rpc, of: second) == 1)
        #expect(hu.driver.engine.queuedMessages(.video, of: first) == 0)

        // Frames are whole and taken one per pull at this size; sessions take turns.
        var counts: [[Int]] = []
        while hu.driver.engine.hasPendingWrites(on: link) {
            hu.driver.pull(link, maxBytes: 1)
            counts.append([hu.driver.engine.queuedMessages(.rpc, of: first), hu.driver.engine.queuedMessages(.rpc, of: second)])
        }
        #expect(counts == [[2, 1], [2, 0], [2, 0], [1, 0], [0, 0]])
        // An unknown or ended session has nothing queued.
        #expect(hu.driver.engine.queuedMessages(.rpc, of: SessionHandle(rawValue: 999)) == 0)
    }
}
