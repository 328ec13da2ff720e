import CHeapInUse
import ComparisonKit
import NIOCore
import SDLSession

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An app engine and a head-unit engine joined in memory, as a test or a router would run them:
/// bytes the app writes are handed to the head unit whole, and the head unit's actions are drained
/// (messages counted, their payloads dropped).
public struct EnginePair {
    public var app: SessionEngine
    public var hu: SessionEngine
    public let link = TransportID(1)
    public var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    public var wire = ByteBuffer()
    public var appSessions: [SessionHandle] = []
    public var huSessions: [SessionHandle] = []

    public init(sessions: Int, video: Bool, advertisedMTU: Int64 = 131_072) {
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
    public mutating func settle() {
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
    public mutating func transfer(chunk: Int) -> Int {
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
    public mutating func drainHeadUnit() -> Int {
        var bytes = 0
        while let action = self.hu.nextAction() {
            if case .event(.message(_, let message)) = action { bytes += message.payload.readableBytes }
        }
        return bytes
    }
}

/// Heap bytes in use (glibc), for the idle-memory row.
public func heapInUse() -> Int {
    Int(c_heap_in_use())
}

/// Heap bytes one idle session costs a head unit: 255 sessions, each started with a v5
/// StartService on its own accepted transport and answered, less the same engine with the 255
/// transports and no session, divided by 255; and what each of those transports costs alone.
public func idleBytesPerSession() -> (session: Int, transport: Int) {
    let start = ByteBuffer(
        bytes: [0x50, 0x07, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x01, 0x20, 0x00, 0x00, 0x00, 0x02]
            + Array("protocolVersion".utf8) + [0x00, 0x06, 0x00, 0x00, 0x00] + Array("5.4.1".utf8) + [0x00, 0x00])
    var configuration = SessionConfiguration(role: .headUnit)
    configuration.headUnit.hashSeed = 1
    let now = NIODeadline.uptimeNanoseconds(0)
    let before = heapInUse()
    var engine = SessionEngine(configuration: configuration)
    var started = 0
    for index in 0..<255 {
        let transport = TransportID(UInt64(index + 1))
        try! engine.transportOpened(transport, as: .accepted, now: now)
        engine.received(start, on: transport, now: now)
        var sink = ByteBuffer()
        _ = engine.nextWrite(on: transport, maxBytes: .max, into: &sink)
    }
    while let action = engine.nextAction() {
        if case .event(.sessionStarted) = action { started += 1 }
    }
    precondition(started == 255, "\(started) sessions started")
    let withSessions = heapInUse() - before
    var empty = SessionEngine(configuration: configuration)
    let beforeEmpty = heapInUse()
    for index in 0..<255 {
        try! empty.transportOpened(TransportID(UInt64(index + 1)), as: .accepted, now: now)
    }
    let transportsOnly = heapInUse() - beforeEmpty
    withExtendedLifetime((engine, empty)) {}
    return (max(0, withSessions - transportsOnly) / 255, transportsOnly / 255)
}

/// memcpy of `pieces` pieces of `pieceSize` bytes into one existing buffer: the reference of the
/// engine pair rows (the least any stack does with the bytes it moves).
func memcpyPieces(_ pieces: Int, of pieceSize: Int) -> (Int) -> Void {
    let source = [UInt8](repeating: 0x17, count: pieceSize)
    let destination = UnsafeMutableRawPointer.allocate(byteCount: pieces * pieceSize, alignment: 16)
    return { count in
        source.withUnsafeBytes { raw in
            for _ in 0..<count {
                for piece in 0..<pieces {
                    _ = memcpy(destination + piece * pieceSize, raw.baseAddress!, pieceSize)
                }
                sink(destination)
            }
        }
    }
}

/// The session engine's comparisons: an app and a head-unit engine joined in memory.
public enum SessionWorkloads {
    public static var comparisons: [Comparison] {
        [
            // One operation: the app queues 1,000 RPC messages of 1 KiB, they are written in
            // 64 KiB writes and delivered by the head unit.
            Comparison(
                "Engine pair: 1,000 RPC messages of 1 KiB, app to head unit", group: "Session",
                ours: Workload("SDLSession engine pair") {
                    let state = RunState(EnginePair(sessions: 1, video: false))
                    let payload = ByteBuffer(repeating: 0x42, count: 1024)
                    return { count in
                        state.withValue { pair in
                            let session = pair.appSessions[0]
                            for _ in 0..<count {
                                for _ in 0..<1000 {
                                    try! pair.app.send(payload, on: .rpc, of: session, now: pair.now)
                                }
                                precondition(pair.transfer(chunk: 64 << 10) == 1000 * 1024)
                            }
                        }
                    }
                },
                reference: Workload("memcpy in 1 KiB pieces") { memcpyPieces(1000, of: 1024) },
                items: (1000, "message"), bytesPerOperation: 1000 * 1024),
            // One operation: 8 sessions each send 16 video frames of 128 KiB (16 MiB in all),
            // written in 256 KiB writes (frames span writes and are gathered, as from a socket).
            Comparison(
                "Engine pair: video, 8 sessions × 16 frames of 128 KiB", group: "Session",
                ours: Workload("SDLSession engine pair") {
                    let state = RunState(EnginePair(sessions: 8, video: true))
                    let frame = ByteBuffer(repeating: 0x17, count: 128 << 10)
                    return { count in
                        state.withValue { pair in
                            for _ in 0..<count {
                                for _ in 0..<16 {
                                    for session in pair.appSessions {
                                        try! pair.app.send(frame, on: .video, of: session, now: pair.now)
                                    }
                                }
                                precondition(pair.transfer(chunk: 256 << 10) == 16 << 20)
                            }
                        }
                    }
                },
                reference: Workload("memcpy in 128 KiB pieces") { memcpyPieces(128, of: 128 << 10) },
                bytesPerOperation: 16 << 20),
        ]
    }
}
