import NIOCore
import SDLBSON
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

@Suite("C. Priority and ordering")
struct PriorityTests {
    @Test("26. Control before RPC before video at frame granularity; bulk ages; the ACK leaves before the TEU")
    func priorities() throws {
        var (app, handle) = appWithSession(ack: bson {
            $0.appendString("protocolVersion", "5.4.1")
            $0.appendInt32("hashId", 1)
            $0.appendInt64("mtu", 131_084)
        })
        app.driver.autoWrite = false
        for service in [ServiceType.video, .audio] {
            try app.driver.engine.startService(service, of: handle, now: app.now)
            app.driver.drain()
            app.driver.pull(app.link)
            app.feed(control(.startServiceACK, service: service, session: 1, messageID: 2, payload: bson { $0.appendInt64("mtu", 131_084) }))
        }
        _ = app.newFrames()
        for _ in 0..<16 {
            try app.driver.engine.send(ByteBuffer(repeating: 0xEE, count: 128 << 10), on: .video, of: handle, now: app.now)
        }
        app.driver.drain()
        app.driver.pull(app.link, maxBytes: 1)  // the video frame in progress
        try app.driver.engine.send(ByteBuffer(repeating: 0x11, count: 200_000), on: .rpc, of: handle, now: app.now)
        app.feed([UInt8](hex: Vectors.a11Heartbeat).with(version: 5))
        app.feed(control(.endService, service: .audio, session: 1, messageID: 8))
        app.driver.pull(app.link)
        let frames = app.newFrames()
        let kinds = frames.map { frame -> String in
            switch (frame.header.frameType, frame.header.serviceType) {
            case (.control, _): return ControlFrameInfo(rawValue: frame.header.frameInfo).description
            case (_, .rpc): return "rpc-\(frame.header.frameType)"
            case (_, .video): return "video"
            default: return "other"
            }
        }
        #expect(Array(kinds.prefix(6)) == ["video", "HeartbeatACK", "EndServiceACK", "rpc-first", "rpc-consecutive", "rpc-consecutive"])
        #expect(Array(kinds.dropFirst(6)) == [String](repeating: "video", count: 15))

        // Bulk on the hybrid service under endless video finishes within the aging bound.
        var scheduler = FrameScheduler(agingThreshold: 2)
        func message(_ service: ServiceType, size: Int) -> OutgoingMessage {
            OutgoingMessage(
                try! MessageFragmenter(
                    payload: ByteBuffer(repeating: 1, count: size), version: .v5, serviceType: service, sessionID: SessionID(1),
                    maxPayloadPerFrame: 131_072),
                isProtected: false)
        }
        for _ in 0..<100 { scheduler.enqueue(message(.video, size: 131_072), session: SessionID(1), service: .video, frameType: .single) }
        scheduler.enqueue(message(.hybrid, size: 1 << 20), session: SessionID(1), service: .hybrid, frameType: .single)
        var videoFrames = 0
        var bulkLeft = MessageFragmenter.frameCount(size: 1 << 20, limit: 131_072)
        while bulkLeft > 0, let next = scheduler.next() {
            if next.frame.header.serviceType == .video { videoFrames += 1 } else { bulkLeft -= 1 }
        }
        #expect(bulkLeft == 0)
        #expect(videoFrames <= 20, "bulk finished after \(videoFrames) video frames")
        #expect(videoFrames >= 10, "video kept the larger share: \(videoFrames)")
    }

    @Test("Head unit: the RPC ACK always leaves before the TransportEventUpdate of the same session")
    func ackBeforeTEU() throws {
        var hu = HeadUnitUnderTest { $0.headUnit.secondaryTransport = SecondaryTransportOffer(tcpAddress: "10.1.1.1", tcpPort: 7) }
        hu.driver.autoWrite = false
        let link = hu.accept()
        for _ in 0..<5 { hu.feed([UInt8](hex: Vectors.a1), on: link) }
        hu.driver.pull(link)
        let frames = hu.newFrames(on: link)
        for sid in 1...5 {
            let order = frames.filter { $0.header.sessionID == SessionID(UInt8(sid)) }.map(\.header.frameInfo)
            #expect(order == [0x02, 0xFD])
        }
    }

    @Test("An RPC message waits for at most the one video frame in progress, however much video is queued")
    func rpcWait() throws {
        var scheduler = FrameScheduler(agingThreshold: 2)
        for i in 0..<64 {
            scheduler.enqueue(
                OutgoingMessage(
                    try! MessageFragmenter(
                        payload: ByteBuffer(repeating: 1, count: 131_072), version: .v5, serviceType: .video,
                        sessionID: SessionID(UInt8(i % 8 + 1)), maxPayloadPerFrame: 131_072), isProtected: false),
                session: SessionID(UInt8(i % 8 + 1)), service: .video, frameType: .single)
        }
        var worst = 0
        for round in 0..<20 {
            _ = scheduler.next()
            scheduler.enqueue(
                OutgoingMessage(
                    try! MessageFragmenter(
                        payload: ByteBuffer(repeating: 2, count: 1000), version: .v5, serviceType: .rpc,
                        sessionID: SessionID(UInt8(round % 8 + 1)), maxPayloadPerFrame: 131_072), isProtected: false),
                session: SessionID(UInt8(round % 8 + 1)), service: .rpc, frameType: .single)
            var waited = 0
            while let next = scheduler.next(), next.frame.header.serviceType != .rpc { waited += 1 }
            worst = max(worst, waited)
        }
        #expect(worst == 0)
    }
}

extension Array where Element == UInt8 {
    /// The frame with its header's version nibble replaced.
    func with(version: UInt8) -> [UInt8] {
        var copy = self
        copy[0] = version << 4 | (copy[0] & 0x0F)
        return copy
    }
}

extension MessageFragmenter {
    static func frameCount(size: Int, limit: Int) -> Int {
        size <= limit ? 1 : (size + limit - 1) / limit + 1
    }
}
