import NIOCore
import SDLProtocol
import Testing

@testable import SDLSession

/// `nextWrite(on:maxBytes:into:handingOutPayloadsFrom:_:)`: the same bytes on the wire as the
/// copying write, large payloads handed out as slices of the message sent.
@Suite struct PayloadHandOutTests {
    /// An app engine with a running session and three messages queued: 40,000 bytes (at the
    /// session's MTU of 16,384 bytes a frame, 16,372 of payload: a first frame and consecutive
    /// frames of 16,372, 16,372 and 7,256), 100 bytes (a single frame) and 20,000 bytes (a first
    /// frame, then 16,372 and 3,628): eight frames.
    static func loadedApp() throws -> AppUnderTest {
        var app = AppUnderTest()
        let handle = app.start()
        app.feed(control(.startServiceACK, service: .rpc, session: 1, payload: bson {
            $0.appendString("protocolVersion", "5.4.1")
            $0.appendInt64("mtu", 16_384)
        }))
        _ = app.newFrames()
        app.driver.autoWrite = false
        for size in [40_000, 100, 20_000] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) }
            try app.driver.engine.send(ByteBuffer(bytes: bytes), on: .rpc, of: handle, now: app.now)
        }
        app.driver.drain()
        return app
    }

    @Test func theWireBytesAreTheCopyingWritesAndLargePayloadsAreNotCopied() throws {
        var copying = try Self.loadedApp()
        var copied = ByteBuffer()
        let copiedCount = copying.driver.engine.nextWrite(on: copying.link, maxBytes: .max, into: &copied)

        var slicing = try Self.loadedApp()
        var pieces: [ByteBuffer] = []
        var rest = ByteBuffer()
        let slicedCount = slicing.driver.engine.nextWrite(
            on: slicing.link, maxBytes: .max, into: &rest, handingOutPayloadsFrom: 10_000
        ) { pieces.append($0) }

        var wire = ByteBuffer()
        for piece in pieces { wire.writeImmutableBuffer(piece) }
        wire.writeImmutableBuffer(rest)
        #expect(slicedCount == copiedCount)
        #expect(wire.readableBytes == copiedCount)
        #expect(wire == copied)
        // A buffer (the frames before, then the header), then the payload, for each of the three
        // payloads of 16,372 bytes.
        let payloadSizes = pieces.enumerated().filter { $0.offset % 2 == 1 }.map(\.element.readableBytes)
        #expect(pieces.count == 6)
        #expect(payloadSizes == [16_372, 16_372, 16_372])
        #expect(!slicing.driver.engine.hasPendingWrites(on: slicing.link))
    }

    @Test func aThresholdAboveEveryPayloadHandsOutNothing() throws {
        var app = try Self.loadedApp()
        var buffer = ByteBuffer()
        var handedOut = 0
        let count = app.driver.engine.nextWrite(on: app.link, maxBytes: .max, into: &buffer, handingOutPayloadsFrom: 1 << 20) { _ in
            handedOut += 1
        }
        #expect(handedOut == 0)
        #expect(count == buffer.readableBytes)
        #expect(decodeFrames(Array(buffer.readableBytesView)).count == 8)
    }
}
