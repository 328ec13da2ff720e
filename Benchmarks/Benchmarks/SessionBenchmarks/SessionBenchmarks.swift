import Benchmark
import NIOCore
import SDLProtocol
import SDLSession

#if canImport(Glibc)
import Glibc
#endif

/// An app engine and a head-unit engine joined in memory, as a test or a router would run them:
/// bytes the app writes are handed to the head unit whole, and the head unit's actions are drained
/// (messages counted, their payloads dropped).
struct EnginePair {
    var app: SessionEngine
    var hu: SessionEngine
    let link = TransportID(1)
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var wire = ByteBuffer()
    var appSessions: [SessionHandle] = []
    var huSessions: [SessionHandle] = []

    init(sessions: Int, video: Bool, advertisedMTU: Int64 = 131_072) {
        var appConfiguration = SessionConfiguration(role: .app)
        appConfiguration.protocolLimits.maxMessageSize = 64 << 20
        var huConfiguration = SessionConfiguration(role: .headUnit)
        huConfiguration.headUnit.hashSeed = 1
        huConfiguration.headUnit.floodLimit = nil
        huConfiguration.headUnit.advertisedMTU = advertisedMTU
        self.app = SessionEngine(configuration: appConfiguration)
        self.hu = SessionEngine(configuration: huConfiguration)
        try! self.app.transportOpened(self.link, as: .primary, now: self.now)
        try! self.hu.transportOpened(self.link, as: .accepted, now: self.now)
        for _ in 0..<sessions {
            self.appSessions.append(try! self.app.startSession(on: self.link, now: self.now))
        }
        self.settle()
        while let action = self.hu.nextAction() {
            if case .event(.sessionStarted(let handle, _)) = action { self.huSessions.append(handle) }
        }
        for (app, hu) in zip(self.appSessions, self.huSessions) {
            try! self.app.sessionRegistered(app, now: self.now)
            try! self.hu.sessionRegistered(hu, now: self.now)
            if video { try! self.app.startService(.video, of: app, now: self.now) }
        }
        self.settle()
        _ = self.drainHeadUnit()
        while self.app.nextAction() != nil {}
    }

    /// Moves bytes both ways until both engines are quiet (setup only).
    mutating func settle() {
        for _ in 0..<10_000 {
            var moved = false
            var buffer = ByteBuffer()
            if self.app.nextWrite(on: self.link, maxBytes: .max, into: &buffer) > 0 {
                self.hu.received(buffer, on: self.link, now: self.now)
                moved = true
            }
            buffer.clear()
            if self.hu.nextWrite(on: self.link, maxBytes: .max, into: &buffer) > 0 {
                self.app.received(buffer, on: self.link, now: self.now)
                moved = true
            }
            if !moved { return }
        }
    }

    /// Moves what the app wrote to the head unit, in writes of up to `chunk` bytes.
    mutating func transfer(chunk: Int) -> Int {
        var delivered = 0
        while self.app.hasPendingWrites(on: self.link) {
            self.wire.clear()
            _ = self.app.nextWrite(on: self.link, maxBytes: chunk, into: &self.wire)
            self.hu.received(self.wire, on: self.link, now: self.now)
            delivered += self.drainHeadUnit()
        }
        while self.app.nextAction() != nil {}
        return delivered
    }

    /// Drains the head unit's actions; returns the bytes of the messages delivered.
    mutating func drainHeadUnit() -> Int {
        var bytes = 0
        while let action = self.hu.nextAction() {
            if case .event(.message(_, let message)) = action { bytes += message.payload.readableBytes }
        }
        return bytes
    }
}

/// Heap bytes in use (glibc), for the idle-memory row.
func heapInUse() -> Int {
    #if canImport(Glibc)
    return Int(mallinfo2().uordblks)
    #else
    return 0
    #endif
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
        warmupIterations: 3,
        maxDuration: .seconds(3),
        maxIterations: 100_000)

    // One iteration: the app sends 1,000 RPC messages of 1 KiB, they are written in 64 KiB writes
    // and delivered by the head unit. Messages/s = 1,000 × throughput; allocations per message =
    // malloc count / 1,000.
    Benchmark("Engine pair: 1,000 RPC messages of 1 KiB, app to head unit") { benchmark in
        var pair = EnginePair(sessions: 1, video: false)
        let payload = ByteBuffer(repeating: 0x42, count: 1024)
        let session = pair.appSessions[0]
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for _ in 0..<1000 {
                try! pair.app.send(payload, on: .rpc, of: session, now: pair.now)
            }
            let delivered = pair.transfer(chunk: 64 << 10)
            precondition(delivered == 1000 * 1024)
        }
        benchmark.stopMeasurement()
    }

    // One iteration: 8 sessions each send 16 video frames of 128 KiB (16 MiB in all), written in
    // 256 KiB writes and delivered. Compare with the memcpy row below: MB/s = throughput × 16.8.
    Benchmark("Engine pair: video, 8 sessions × 16 frames of 128 KiB (16 MiB)") { benchmark in
        var pair = EnginePair(sessions: 8, video: true)
        let frame = ByteBuffer(repeating: 0x17, count: 128 << 10)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for _ in 0..<16 {
                for session in pair.appSessions {
                    try! pair.app.send(frame, on: .video, of: session, now: pair.now)
                }
            }
            let delivered = pair.transfer(chunk: 256 << 10)
            precondition(delivered == 16 << 20)
        }
        benchmark.stopMeasurement()
    }

    // The reference: memcpy of the same 16 MiB in 128 KiB pieces into an existing buffer.
    Benchmark("memcpy 16 MiB in 128 KiB pieces") { benchmark in
        let source = [UInt8](repeating: 0x17, count: 128 << 10)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: 16 << 20, alignment: 16)
        defer { destination.deallocate() }
        for _ in benchmark.scaledIterations {
            source.withUnsafeBytes { raw in
                for piece in 0..<128 {
                    _ = memcpy(destination + piece * (128 << 10), raw.baseAddress!, 128 << 10)
                }
            }
            blackHole(destination.load(fromByteOffset: (16 << 20) - 1, as: UInt8.self))
        }
    }

    // Under continuous video on 8 sessions, an RPC message is queued after every written frame;
    // the custom metric is the most video frames written between an RPC's send and its frame.
    Benchmark(
        "Worst RPC wait under full video (frames)",
        configuration: .init(metrics: [.custom("worst RPC wait (frames)", polarity: .prefersSmaller, useScalingFactor: false)], maxIterations: 20)
    ) { benchmark in
        var pair = EnginePair(sessions: 8, video: true)
        let frame = ByteBuffer(repeating: 0x17, count: 128 << 10)
        let rpc = ByteBuffer(repeating: 0x42, count: 1024)
        var worst = 0
        for round in 0..<200 {
            for session in pair.appSessions { try! pair.app.send(frame, on: .video, of: session, now: pair.now) }
            try! pair.app.send(rpc, on: .rpc, of: pair.appSessions[round % 8], now: pair.now)
            var waited = 0
            while true {
                pair.wire.clear()
                // One frame per write: the smallest budget.
                guard pair.app.nextWrite(on: pair.link, maxBytes: 1, into: &pair.wire) > 0 else { break }
                let header = FrameHeader.peek(in: pair.wire)!
                pair.hu.received(pair.wire, on: pair.link, now: pair.now)
                _ = pair.drainHeadUnit()
                if header.serviceType == .rpc { break }
                waited += 1
            }
            worst = max(worst, waited)
        }
        benchmark.measurement(.custom("worst RPC wait (frames)", polarity: .prefersSmaller, useScalingFactor: false), worst)
    }

    // Heap bytes per idle session: a head unit with 255 sessions started on 255 connections, less
    // one with none, divided by 255 (glibc's mallinfo2).
    Benchmark(
        "Idle memory per session (bytes, 255 sessions)",
        configuration: .init(metrics: [.custom("bytes per idle session", polarity: .prefersSmaller, useScalingFactor: false)], maxIterations: 5)
    ) { benchmark in
        let start = ByteBuffer(bytes: [0x10, 0x07, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x20, 0x00, 0x00, 0x00, 0x02] + Array("protocolVersion".utf8) + [0x00, 0x06, 0x00, 0x00, 0x00] + Array("5.4.1".utf8) + [0x00, 0x00])
        var configuration = SessionConfiguration(role: .headUnit)
        configuration.headUnit.hashSeed = 1
        let before = heapInUse()
        var engine = SessionEngine(configuration: configuration)
        for index in 0..<255 {
            let transport = TransportID(UInt64(index + 1))
            try! engine.transportOpened(transport, as: .accepted, now: .uptimeNanoseconds(0))
            engine.received(start, on: transport, now: .uptimeNanoseconds(0))
            var sink = ByteBuffer()
            _ = engine.nextWrite(on: transport, maxBytes: .max, into: &sink)
        }
        while engine.nextAction() != nil {}
        let withSessions = heapInUse()
        var empty = SessionEngine(configuration: configuration)
        for index in 0..<255 {
            try! empty.transportOpened(TransportID(UInt64(index + 1)), as: .accepted, now: .uptimeNanoseconds(0))
        }
        let withTransports = heapInUse()
        blackHole(empty)
        blackHole(engine)
        // Sessions and transports both: the transports' share is (withTransports - withSessions).
        benchmark.measurement(
            .custom("bytes per idle session", polarity: .prefersSmaller, useScalingFactor: false),
            max(0, (withSessions - before) - (withTransports - withSessions)) / 255)
    }
}
