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

    /// `queued-bytes-of-a-version-1-header` and `queued-bytes-of-a-first-frame`
    /// (Fuzz/FailCases/FuzzSession): a message was counted as its payload and 12 bytes a frame,
    /// so a version 1 frame counted 4 bytes more than it took and a First frame 8 bytes fewer.
    @Test("queuedBytes(on:) is what a full pull writes: a version 1 frame counts its 8-byte header and a First frame its 8 bytes (FuzzSession found both miscounted)")
    func queuedBytesAreTheWireBytes() throws {
        var app = AppUnderTest()
        app.driver.autoWrite = false
        _ = app.start()
        // The session start goes with a version 1 header.
        let queued = app.driver.engine.queuedBytes(on: app.link)
        app.driver.pull(app.link)
        let written = app.driver.takeOutbox(app.link)
        #expect(decodeFrames(written).map(\.header.version) == [.v1])
        #expect(queued == written.count)
        #expect(app.driver.engine.queuedBytes(on: app.link) == 0)

        var hu = HeadUnitUnderTest()
        hu.driver.autoWrite = false
        let link = hu.accept()
        let (handle, _) = hu.startSession(on: link)
        hu.driver.pull(link)
        _ = hu.newFrames(on: link)
        try hu.driver.engine.send(ByteBuffer(repeating: 1, count: 200_000), on: .rpc, of: handle, now: hu.now)
        hu.feed(control(.heartbeat, service: .control, session: 1, messageID: 9), on: link)
        let both = hu.driver.engine.queuedBytes(on: link)
        hu.driver.pull(link)
        #expect(both == hu.driver.takeOutbox(link).count)
    }
}
