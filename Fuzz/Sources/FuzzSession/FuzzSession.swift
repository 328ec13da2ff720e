import FuzzSupport
import NIOCore
import SDLProtocol
import SDLSession

// The session engine (ARCHITECTURE.md §4), an app engine and a head-unit engine joined in memory
// and driven by a small op language read from the input: transports opening and closing (either
// side, or the peer hanging up), secondary connections granted or refused, sessions and services
// started and ended from either side, registration, tagged messages sent both ways, bytes moved
// whole or in pieces, time passing and timers firing (on time or early), hostile bytes on a
// transport, the head unit's secondary offer changing. Configuration (versions, MTUs, limits, flood
// and malformed meters, heartbeats, security, secondary offers) comes from the input too.
// Invariants:
// - no crash, and the engines fall quiet: moving bytes between them ends;
// - every byte an engine writes is a well-formed frame;
// - sessions are isolated: a message arrives only at the session it was sent to (bound one to
//   one by handle and session id), whole, on its service, at most once and in order; events name
//   only sessions the engine made known, never after they ended, and follow the lifecycle
//   (started once, services started before they end and ended before their session);
// - limits hold: at most `maxSessions` live sessions on the head unit, session ids unique among
//   live sessions, and the heap never grows beyond a bound set by the limits and the input;
// - between the two engines (on transports no hostile byte reached) nothing is refused: no
//   protocol error but expiry;
// - every StartService, EndService and RegisterSecondaryTransport is answered exactly once with
//   an ACK or a NAK, on every transport still open when the engines fall quiet (ARCHITECTURE.md,
//   D-answers);
// - once quiet, both engines agree on the sessions each such transport carries, and every RPC
//   message sent on a session still running at both ends arrived;
// - once every transport is closed, no session is left on either side.

/// The tag every message carries: who sent it, on which service, its sequence number and the
/// session id it was sent on, then bytes derived from those, so a receiver can tell a lost,
/// repeated, reordered, corrupted or misdelivered message.
struct Tag {
    static let magic: UInt32 = 0x5344_4C46
    static let size = 15
    var fromApp: Bool
    var sender: SessionHandle
    var service: ServiceType
    var sequence: UInt32
    var sessionID: SessionID

    func payload(size: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(max(size, Self.size))
        buffer.writeMultipleIntegers(Self.magic, self.fromApp ? UInt8(1) : 0, self.sender.rawValue, self.service.rawValue, self.sequence, self.sessionID.rawValue)
        for index in Self.size..<max(size, Self.size) { buffer.writeInteger(self.filler(index)) }
        return buffer
    }

    func filler(_ index: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: Int(self.sequence) &* 31 &+ index &* 7 &+ Int(self.sender.rawValue))
    }

}

extension Tag {
    /// Reads a tag and checks the bytes after it; nil for anything the harness did not send.
    init?(reading payload: ByteBuffer) {
        guard let (magic, direction, sender, service, sequence, session) = payload.getMultipleIntegers(
            at: payload.readerIndex, as: (UInt32, UInt8, UInt32, UInt8, UInt32, UInt8).self), magic == Self.magic, direction <= 1
        else { return nil }
        self.init(
            fromApp: direction == 1, sender: SessionHandle(rawValue: sender), service: ServiceType(rawValue: service),
            sequence: sequence, sessionID: SessionID(session))
        for (index, byte) in payload.readableBytesView.enumerated().dropFirst(Self.size) where byte != self.filler(index) {
            return nil
        }
    }
}

struct Pair {
    var app: Side
    var hu: Side
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var nextTransport: UInt64 = 1
    /// Transports open on at least one side, in opening order.
    var open: [TransportID] = []
    /// Transports that carried hostile bytes into either engine.
    var tainted: Set<TransportID> = []
    /// Control frames written, per transport, app→head unit and head unit→app.
    var wire: [TransportID: (toHU: WireCount, toApp: WireCount)] = [:]
    var sequences: [UInt64: UInt32] = [:]
    /// RPC and hybrid messages sent and not yet seen, per sender side and handle.
    var unanswered: [Bool: [SessionHandle: Int]] = [true: [:], false: [:]]
    /// Bytes put in by the harness (payloads, hostile bytes): the heap may grow with them.
    var inputBytes = 0
    let heapBaseline = liveHeapBytes()
    let limits: ProtocolLimits
    let maxSessions: Int

    init(app: SessionConfiguration, headUnit: SessionConfiguration) {
        self.app = Side(name: "app", configuration: app)
        self.hu = Side(name: "head unit", configuration: headUnit)
        self.limits = headUnit.protocolLimits
        self.maxSessions = headUnit.headUnit.maxSessions
    }

    /// One side, changed in place (a get/set pair would copy the engine on every change).
    subscript(fromApp: Bool) -> Side {
        get { fromApp ? self.app : self.hu }
        _modify {
            if fromApp { yield &self.app } else { yield &self.hu }
        }
    }

    // MARK: Transports

    mutating func openPrimary() {
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        do {
            try self.app.engine.transportOpened(transport, as: .primary, now: self.now)
            try self.hu.engine.transportOpened(transport, as: .accepted, now: self.now)
        } catch {
            preconditionFailure("a new transport refused: \(error)")
        }
        self.opened(transport)
    }

    mutating func opened(_ transport: TransportID) {
        self.open.append(transport)
        self.wire[transport] = (WireCount(), WireCount())
        self.drain()
    }

    /// App role: the oldest connection request is granted or refused.
    mutating func answerConnect(grant: Bool) {
        guard !self.app.connects.isEmpty else { return }
        let request = self.app.connects.removeFirst()
        guard grant else {
            self.app.engine.connectFailed(request.id, now: self.now)
            self.drain()
            return
        }
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        try! self.hu.engine.transportOpened(transport, as: .accepted, now: self.now)
        do {
            try self.app.engine.transportOpened(transport, as: .secondary(request.id), now: self.now)
        } catch {
            // The request was withdrawn (its session ended): the connection is closed again.
            self.hu.engine.transportClosed(transport, now: self.now)
            self.drain()
            return
        }
        self.opened(transport)
    }

    /// The connection drops: both engines hear of it.
    mutating func hangUp(_ transport: TransportID) {
        self.app.engine.transportClosed(transport, now: self.now)
        self.hu.engine.transportClosed(transport, now: self.now)
        self.forget(transport)
        self.drain()
    }

    mutating func forget(_ transport: TransportID) {
        self.open.removeAll { $0 == transport }
        self.wire[transport] = nil
        self.app.outbox[transport] = nil
        self.hu.outbox[transport] = nil
        self.app.wantsWrite.remove(transport)
        self.hu.wantsWrite.remove(transport)
    }

    // MARK: Moving bytes

    /// Drains both engines' actions, checking every event, and reports closes to the peer.
    mutating func drain() {
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 10_000, "closes keep coming")
            self.drainActions(fromApp: true)
            self.drainActions(fromApp: false)
            guard !self.app.closedByEngine.isEmpty || !self.hu.closedByEngine.isEmpty else { return }
            for fromApp in [true, false] {
                let closed = self[fromApp].closedByEngine
                self[fromApp].closedByEngine = []
                for transport in closed {
                    self[!fromApp].engine.transportClosed(transport, now: self.now)
                    self.forget(transport)
                }
            }
        }
    }

    mutating func drainActions(fromApp: Bool) {
        while let action = self[fromApp].engine.nextAction() {
            switch action {
            case .event(let event): self.observe(event, fromApp: fromApp)
            case .write(let transport): self[fromApp].wantsWrite.insert(transport)
            case .connect(let request):
                precondition(fromApp, "a head unit asked to connect")
                self.app.connects.append(request)
            case .close(let transport, _): self[fromApp].closedByEngine.append(transport)
            case .armTimer(let deadline): self[fromApp].timer = deadline
            }
        }
        self.checkLimits()
    }

    /// Hands bytes written by one side to the other.
    mutating func deliver(_ bytes: ByteBuffer, fromApp: Bool, on transport: TransportID) {
        guard self.open.contains(transport) else { return }
        trace(" \(bytes.readableBytes) bytes \(fromApp ? "app→head unit" : "head unit→app") on \(transport)")
        if fromApp {
            self.wire[transport]?.toHU.add(bytes, what: "app on \(transport)")
        } else {
            self.wire[transport]?.toApp.add(bytes, what: "head unit on \(transport)")
        }
        self[!fromApp].engine.received(bytes, on: transport, now: self.now)
        self.drain()
    }

    /// Moves everything both ways until neither engine has anything to say.
    mutating func pump(chunk: Int = .max) {
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 100_000, "the engines keep talking")
            var moved = false
            for fromApp in [true, false] {
                for transport in self[fromApp].wantsWrite.sorted(by: { $0.rawValue < $1.rawValue }) {
                    self[fromApp].pull(transport, maxBytes: .max)
                }
                for transport in self.open {
                    while let bytes = self[fromApp].take(transport, upTo: chunk) {
                        moved = true
                        self.deliver(bytes, fromApp: fromApp, on: transport)
                    }
                }
            }
            if !moved && self.app.wantsWrite.isEmpty && self.hu.wantsWrite.isEmpty { return }
        }
    }

    /// Moves the clock, firing each engine's timer when it comes due, pumping after each.
    mutating func advance(by amount: TimeAmount) {
        let end = self.now + amount
        var firings = 0
        while let next = [self.app.timer, self.hu.timer].compactMap({ $0 }).filter({ $0 <= end }).min() {
            firings += 1
            precondition(firings < 10_000, "timers keep firing")
            self.now = max(self.now, next)
            for fromApp in [true, false] {
                if let timer = self[fromApp].timer, timer <= self.now {
                    self[fromApp].timer = nil
                    self[fromApp].engine.timerFired(now: self.now)
                    self.drain()
                }
            }
            self.pump()
        }
        self.now = end
    }

    // MARK: Checks

    mutating func checkLimits() {
        let live = self.hu.liveHandles()
        precondition(live.count <= self.maxSessions, "\(live.count) sessions, at most \(self.maxSessions) allowed")
        // Unique across the head unit; the app may briefly hold an id the head unit freed and
        // gave out again on another transport, but never twice on one.
        for side in [self.app, self.hu] {
            var ids = Set<UInt64>()
            for handle in side.liveHandles() {
                guard let track = side.tracks[handle], let id = track.sessionID?.rawValue else { continue }
                let key = side.name == "app" ? track.transport!.rawValue << 8 | UInt64(id) : UInt64(id)
                precondition(ids.insert(key).inserted, "\(side.name): session id \(id) twice among live sessions")
            }
        }
        if let baseline = self.heapBaseline, let now = liveHeapBytes() {
            let perTransport = 2 * (self.limits.maxReassemblyBytes + 2 * self.limits.maxFramePayloadSize + 65_536)
            let bound = (16 << 20) + 16 * self.inputBytes + 2 * max(1, self.open.count) * perTransport
            precondition(now - baseline <= bound, "heap grew by \(now - baseline) bytes, bound \(bound)")
        }
    }

    /// Checks one event against what the side's engine reported before.
    mutating func observe(_ event: SessionEvent, fromApp: Bool) {
        let side = self[fromApp].name
        trace("  \(side): \(event)")
        func track(_ handle: SessionHandle, live: Bool = true) -> SessionTrack {
            guard let track = self[fromApp].tracks[handle] else { preconditionFailure("\(side): \(event) names an unknown session") }
            precondition(!live || track.isLive, "\(side): \(event) for a session that is not running")
            return track
        }
        switch event {
        case .sessionStarted(let handle, let info):
            if !fromApp { self.hu.addHandle(handle) }
            let before = track(handle, live: false)
            precondition(!before.started && !before.failed && !before.ended, "\(side): \(handle) started twice")
            self[fromApp].tracks[handle]!.started = true
            self[fromApp].tracks[handle]!.sessionID = info.sessionID
            self[fromApp].tracks[handle]!.transport = info.transport
            precondition(info.sessionID.rawValue != 0, "\(side): a session with id 0")
            // Core's lowest-free order gives an id out again at once. When the head unit ended its
            // previous session there on its own, the app's frames for that session still on the way
            // (sent before it read the EndService, its own crossing EndService included) reach the
            // new one: the protocol cannot tell them apart, which is why the default order
            // (ARCHITECTURE.md, D-session-ids) reuses an id as late as possible. The transport is
            // then no longer checked.
            if !fromApp, self.hu.tracks.values.contains(where: {
                $0.ended && !$0.endedByPeer && $0.transport == info.transport && $0.sessionID == info.sessionID
            }) {
                self.tainted.insert(info.transport)
            }
        case .sessionStartFailed(let handle, _):
            let before = track(handle, live: false)
            precondition(fromApp && !before.started && !before.failed, "\(side): \(event) for a session not starting")
            self[fromApp].tracks[handle]!.failed = true
        case .sessionEnded(let handle, let reason):
            // A start the app cancelled (endSession before the ACK) ends without starting.
            let before = track(handle, live: !(fromApp && self.app.tracks[handle]?.endRequested == true))
            precondition(!before.ended && !before.failed, "\(side): \(handle) ended twice")
            precondition(before.services.isEmpty, "\(side): \(handle) ended with services \(before.services) not reported ended")
            self[fromApp].tracks[handle]!.ended = true
            self[fromApp].tracks[handle]!.endedByPeer = reason == .peer
        case .serviceStarted(let handle, let service, _):
            _ = track(handle)
            if service == .audio || service == .video {
                precondition(self[fromApp].tracks[handle]!.services.insert(service.rawValue).inserted, "\(side): \(service) started twice")
            }
        case .serviceEnded(let handle, let service, _):
            _ = track(handle)
            if service == .audio || service == .video {
                precondition(self[fromApp].tracks[handle]!.services.remove(service.rawValue) != nil, "\(side): \(service) ended, not running")
            }
        case .serviceStartFailed(let handle, let service, _):
            let before = track(handle, live: false)
            precondition(!before.ended || !fromApp, "\(side): \(event) after the session ended")
            precondition(!before.services.contains(service.rawValue), "\(side): \(service) failed to start while running")
        case .serviceWaiting(let handle, _, _), .secondaryTransport(let handle, _), .protocolViolation(let handle, _):
            _ = track(handle)
        case .message(let handle, let message):
            let before = track(handle)
            if message.service == .audio || message.service == .video {
                precondition(before.services.contains(message.service.rawValue), "\(side): \(message.service) message for a service not running")
            }
            self.checkMessage(message, to: handle, fromApp: !fromApp)
        case .anomaly(let anomaly):
            if let handle = anomaly.session { _ = track(handle, live: false) }
        case .protocolError(let transport, let error):
            precondition(
                self.tainted.contains(transport) || error.code == .reassemblyExpired,
                "\(side): the engines refused each other's frames on \(transport): \(error)")
        case .unprotectedMessageRefused(let handle, _, _):
            _ = track(handle, live: false)
        case .sessionFlooded, .serviceStartRequested:
            // Only without endsFloodingSessions or with approvesMediaStarts, which no input sets.
            preconditionFailure("\(side): \(event) under settings that never ask for it")
        case .transportClosed, .sessionLimitReached:
            break
        }
    }

    /// A message from the peer: it must be one the harness sent to this very session.
    mutating func checkMessage(_ message: ReceivedMessage, to handle: SessionHandle, fromApp: Bool) {
        if self.tainted.contains(message.transport) { return }
        let receiver = fromApp ? "head unit" : "app"
        guard let tag = Tag(reading: message.payload), tag.fromApp == fromApp else {
            preconditionFailure("\(receiver): a message the peer did not send, or corrupted, on \(message.service)")
        }
        precondition(tag.service == message.service, "\(receiver): a \(tag.service) message delivered as \(message.service)")
        let track = self[!fromApp].tracks[handle]!
        precondition(tag.sessionID == track.sessionID, "\(receiver): session \(tag.sessionID)'s message delivered to \(String(describing: track.sessionID))")
        if let bound = self[!fromApp].boundFrom[handle] {
            precondition(bound == tag.sender, "\(receiver): \(handle) receives from \(tag.sender) and \(bound)")
        } else {
            precondition(self[!fromApp].boundTo[tag.sender] == nil, "\(receiver): \(tag.sender) sends to two sessions")
            self[!fromApp].boundFrom[handle] = tag.sender
            self[!fromApp].boundTo[tag.sender] = handle
        }
        let key = UInt64(tag.sender.rawValue) << 8 | UInt64(tag.service.rawValue)
        if let last = self[!fromApp].lastSequence[key] {
            precondition(tag.sequence > last, "\(receiver): message \(tag.sequence) after \(last) on \(tag.service): repeated or reordered")
        }
        self[!fromApp].lastSequence[key] = tag.sequence
        if tag.service == .rpc || tag.service == .hybrid {
            self.unanswered[fromApp]![tag.sender, default: 0] -= 1
        }
    }

    /// Once quiet: ACK/NAK accounting and agreement on every clean transport still open.
    func checkQuiet() {
        for transport in self.open where !self.tainted.contains(transport) {
            guard let wire = self.wire[transport] else { continue }
            for (requests, answers, label) in [(wire.toHU, wire.toApp, "app→head unit"), (wire.toApp, wire.toHU, "head unit→app")] {
                for service in ServiceType.known {
                    let starts = requests[service, .startService]
                    let startAnswers = answers[service, .startServiceACK] + answers[service, .startServiceNAK]
                    precondition(starts == startAnswers, "\(transport) \(label): \(starts) StartService(\(service)), \(startAnswers) answers")
                    let ends = requests[service, .endService]
                    let endAnswers = answers[service, .endServiceACK] + answers[service, .endServiceNAK]
                    precondition(ends == endAnswers, "\(transport) \(label): \(ends) EndService(\(service)), \(endAnswers) answers")
                }
                let registers = requests[.control, .registerSecondaryTransport]
                let registerAnswers = answers[.control, .registerSecondaryTransportACK] + answers[.control, .registerSecondaryTransportNAK]
                precondition(registers == registerAnswers, "\(transport) \(label): \(registers) RegisterSecondaryTransport, \(registerAnswers) answers")
            }
            let appIDs = Set(self.app.liveHandles(on: transport).compactMap { self.app.tracks[$0]?.sessionID })
            let huIDs = Set(self.hu.liveHandles(on: transport).compactMap { self.hu.tracks[$0]?.sessionID })
            precondition(appIDs == huIDs, "\(transport): the app runs sessions \(appIDs), the head unit \(huIDs)")
        }
        for fromApp in [true, false] {
            for (sender, missing) in self.unanswered[fromApp]! where missing > 0 {
                guard let track = self[fromApp].tracks[sender], track.isLive, let transport = track.transport,
                    self.open.contains(transport), !self.tainted.contains(transport)
                else { continue }
                precondition(false, "\(self[fromApp].name): \(missing) RPC messages of running session \(sender) never arrived")
            }
        }
    }
}
