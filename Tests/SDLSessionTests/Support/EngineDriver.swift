import NIOCore
import SDLProtocol
import Testing

@testable import SDLSession

/// Decodes every frame in `bytes` (the test's own view of what an engine wrote).
func decodeFrames(_ bytes: [UInt8]) -> [ProtocolFrame] {
    var decoder = FrameDecoder(invalidHeaderPolicy: .fail)
    decoder.append(contentsOf: bytes)
    var frames: [ProtocolFrame] = []
    while let frame = try! decoder.nextFrame() { frames.append(frame) }
    return frames
}

/// One engine with everything it does recorded: events in order, bytes written per transport,
/// connections requested, transports closed, the timer armed. Drives the engine the way an I/O
/// layer would: writes are pulled whole whenever the engine asks.
struct EngineDriver {
    var engine: SessionEngine
    var events: [SessionEvent] = []
    var written: [TransportID: [UInt8]] = [:]
    /// Whether `written` keeps every byte (the scenario tests read it; the random schedules only
    /// need the transports it names).
    var recordsWrites = true
    /// Bytes written but not yet handed to a peer (EnginePair moves them).
    var outbox: [TransportID: [UInt8]] = [:]
    var connects: [ConnectRequest] = []
    var closed: [(TransportID, TransportCloseReason)] = []
    var timer: NIODeadline?
    /// Whether writes are pulled as soon as the engine asks (false: the test pulls them).
    var autoWrite = true
    var pendingWrites: Set<TransportID> = []
    /// Transports whose peer does not read: their writes stay queued in the engine.
    var unread: Set<TransportID> = []

    init(_ configuration: SessionConfiguration) {
        self.engine = SessionEngine(configuration: configuration)
    }

    /// Drains the engine's actions.
    mutating func drain() {
        while let action = self.engine.nextAction() {
            switch action {
            case .event(let event):
                self.events.append(event)
            case .write(let transport):
                self.pendingWrites.insert(transport)
            case .connect(let request):
                self.connects.append(request)
            case .close(let transport, let reason):
                self.closed.append((transport, reason))
                self.pendingWrites.remove(transport)
            case .armTimer(let deadline):
                self.timer = deadline
            }
        }
        if self.autoWrite {
            for transport in self.pendingWrites.sorted(by: { $0.rawValue < $1.rawValue }) where !self.unread.contains(transport) {
                self.pull(transport)
            }
        }
    }

    /// Pulls every waiting frame of a transport.
    mutating func pull(_ transport: TransportID, maxBytes: Int = .max) {
        var buffer = ByteBuffer()
        _ = self.engine.nextWrite(on: transport, maxBytes: maxBytes, into: &buffer)
        if !self.engine.hasPendingWrites(on: transport) { self.pendingWrites.remove(transport) }
        let bytes = Array(buffer.readableBytesView)
        if self.recordsWrites {
            self.written[transport, default: []] += bytes
        } else if self.written[transport] == nil {
            self.written[transport] = []
        }
        self.outbox[transport, default: []] += bytes
        // Closing after the flush may have queued actions.
        if self.engine.nextActionPending { self.drain() }
    }

    mutating func takeEvents() -> [SessionEvent] {
        defer { self.events = [] }
        return self.events
    }

    mutating func takeOutbox(_ transport: TransportID) -> [UInt8] {
        defer { self.outbox[transport] = [] }
        return self.outbox[transport] ?? []
    }

    /// The frames written on a transport so far.
    func frames(on transport: TransportID) -> [ProtocolFrame] {
        decodeFrames(self.written[transport] ?? [])
    }

    mutating func feed(_ bytes: [UInt8], on transport: TransportID, now: NIODeadline) {
        self.engine.received(ByteBuffer(bytes: bytes), on: transport, now: now)
        self.drain()
    }

    /// Events of one kind, for assertions.
    func anomalies() -> [Anomaly.Code] {
        self.events.compactMap { if case .anomaly(let anomaly) = $0 { return anomaly.code } else { return nil } }
    }

    func receivedMessages(_ handle: SessionHandle? = nil) -> [ReceivedMessage] {
        self.events.compactMap {
            if case .message(let h, let message) = $0, handle == nil || h == handle { return message }
            return nil
        }
    }
}

extension SessionEngine {
    /// Whether actions wait (for the driver).
    var nextActionPending: Bool { !self.actions.isEmpty }
}

/// An app engine and a head-unit engine joined by in-memory transports, with one clock.
///
/// Transport ids are shared: transport N of the app is transport N of the head unit. Bytes move
/// in `pump()`, in the chunking the test asks for, until neither side has anything to say.
struct EnginePair {
    var app: EngineDriver
    var hu: EngineDriver
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    private var nextTransport: UInt64 = 1
    /// Whether secondary connections the app asks for are opened at once.
    var autoConnect = true
    /// Splits every delivery into chunks of this size (nil: whole).
    var chunkSize: Int?
    /// Transports the "network" has dropped: bytes written on them are lost.
    var severed: Set<TransportID> = []
    /// Connections open on the head unit only (a hostile peer's), and what the head unit wrote
    /// on them: the app never hears of them.
    var headUnitOnly: [TransportID: [UInt8]] = [:]

    init(app: SessionConfiguration = SessionConfiguration(role: .app), headUnit: SessionConfiguration = EnginePair.headUnitDefaults()) {
        self.app = EngineDriver(app)
        self.hu = EngineDriver(headUnit)
    }

    static func headUnitDefaults() -> SessionConfiguration {
        var configuration = SessionConfiguration(role: .headUnit)
        configuration.headUnit.hashSeed = 42
        // The suites that run 255 sessions on one or a few links (a router's case) lift the
        // per-connection cap; IsolationTests checks the cap at its default.
        configuration.headUnit.maxSessionsPerConnection = 255
        return configuration
    }

    /// Opens a primary link: the app's `.primary`, the head unit's `.accepted`.
    mutating func openPrimary() -> TransportID {
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        try! self.app.engine.transportOpened(transport, as: .primary, now: self.now)
        try! self.hu.engine.transportOpened(transport, as: .accepted, now: self.now)
        return transport
    }

    /// Opens a connection on the head unit only, as a peer that is no app of this pair would.
    mutating func openHeadUnitOnly() -> TransportID {
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        try! self.hu.engine.transportOpened(transport, as: .accepted, now: self.now)
        self.headUnitOnly[transport] = []
        return transport
    }

    /// Moves bytes both ways and opens requested connections until both engines are quiet.
    mutating func pump() {
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 100_000, "the engines keep talking")
            self.app.drain()
            self.hu.drain()
            var moved = false
            for (transport, bytes) in self.app.outbox where !bytes.isEmpty {
                _ = self.app.takeOutbox(transport)
                moved = true
                if self.severed.contains(transport) { continue }
                self.deliver(bytes, to: \.hu, on: transport)
            }
            for (transport, bytes) in self.hu.outbox where !bytes.isEmpty {
                _ = self.hu.takeOutbox(transport)
                moved = true
                if self.headUnitOnly[transport] != nil {
                    self.headUnitOnly[transport]! += bytes
                    continue
                }
                if self.severed.contains(transport) { continue }
                self.deliver(bytes, to: \.app, on: transport)
            }
            if self.autoConnect, !self.app.connects.isEmpty {
                let requests = self.app.connects
                self.app.connects = []
                for request in requests {
                    let transport = TransportID(self.nextTransport)
                    self.nextTransport += 1
                    try! self.hu.engine.transportOpened(transport, as: .accepted, now: self.now)
                    try? self.app.engine.transportOpened(transport, as: .secondary(request.id), now: self.now)
                }
                moved = true
            }
            moved = self.propagateCloses() || moved
            if !moved { return }
        }
    }

    private var appClosesSeen = 0
    private var huClosesSeen = 0

    /// A transport one engine closed is closed for the other too.
    private mutating func propagateCloses() -> Bool {
        var moved = false
        while self.appClosesSeen < self.app.closed.count {
            let (transport, _) = self.app.closed[self.appClosesSeen]
            self.appClosesSeen += 1
            self.hu.engine.transportClosed(transport, now: self.now)
            moved = true
        }
        while self.huClosesSeen < self.hu.closed.count {
            let (transport, _) = self.hu.closed[self.huClosesSeen]
            self.huClosesSeen += 1
            self.app.engine.transportClosed(transport, now: self.now)
            moved = true
        }
        return moved
    }

    private mutating func deliver(_ bytes: [UInt8], to side: WritableKeyPath<EnginePair, EngineDriver>, on transport: TransportID) {
        let now = self.now
        if let size = self.chunkSize {
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + size)
                self[keyPath: side].engine.received(ByteBuffer(bytes: bytes[start..<end]), on: transport, now: now)
                start = end
            }
        } else {
            self[keyPath: side].engine.received(ByteBuffer(bytes: bytes), on: transport, now: now)
        }
        self[keyPath: side].drain()
    }

    /// Moves the clock forward, firing each engine's timer when it comes due, pumping after each.
    mutating func advance(by amount: TimeAmount) {
        let end = self.now + amount
        while true {
            let next = [self.app.timer, self.hu.timer].compactMap { $0 }.filter { $0 <= end }.min()
            guard let next else { break }
            self.now = max(self.now, next)
            if let timer = self.app.timer, timer <= self.now {
                self.app.timer = nil
                self.app.engine.timerFired(now: self.now)
            }
            if let timer = self.hu.timer, timer <= self.now {
                self.hu.timer = nil
                self.hu.engine.timerFired(now: self.now)
            }
            self.pump()
        }
        self.now = end
    }

    /// The app's session events of one handle.
    func appEvents(_ handle: SessionHandle) -> [SessionEvent] {
        self.app.events.filter { $0.handle == handle }
    }
}

extension SessionEvent {
    /// The session an event concerns.
    var handle: SessionHandle? {
        switch self {
        case .sessionStarted(let h, _), .sessionStartFailed(let h, _), .sessionEnded(let h, _), .serviceStarted(let h, _, _),
            .serviceStartFailed(let h, _, _), .serviceEnded(let h, _, _), .serviceWaiting(let h, _, _), .message(let h, _),
            .secondaryTransport(let h, _), .protocolViolation(let h, _), .serviceStartRequested(let h, _, _), .sessionFlooded(let h), .unprotectedMessageRefused(let h, _, _):
            return h
        case .anomaly(let anomaly):
            return anomaly.session
        case .sessionLimitReached, .transportClosed, .protocolError:
            return nil
        }
    }

    var startedInfo: SessionInfo? {
        if case .sessionStarted(_, let info) = self { return info }
        return nil
    }
}
