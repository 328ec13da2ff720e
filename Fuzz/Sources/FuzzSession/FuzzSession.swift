import FuzzSupport
import NIOCore
import SDLProtocol
import SDLSession

// The session engine (ARCHITECTURE.md §4), an app engine and a head-unit engine joined in memory
// and driven by a small op language read from the input: transports opening and closing (either
// side, or the peer hanging up), secondary connections granted or refused, sessions and services
// started and ended from either side, registration, tagged messages sent both ways, bytes moved
// whole or in pieces, time passing and timers firing (on time or early), hostile bytes on a
// transport, the head unit's secondary offer changing, hostile connections on the head unit that
// aim hand-built frames at other connections' sessions (Hijack.swift), peers that stop reading
// and the runtime's throttle towards them. Configuration (versions, MTUs, limits, flood and
// malformed meters, heartbeats, security, secondary offers, the proof a secondary registration
// needs, the throttle's limit) comes from the input too.
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
// - once every transport is closed, no session is left on either side;
// - a hostile connection's bytes (unless it proved a session's hash id) never end a session nor a
//   service that does not run on that connection, never deliver an RPC or hybrid message to a
//   session, reach a session at all only as its claimed secondary when the head unit takes
//   unproven registrations (audio and video there), and get nothing but control frames back
//   (and the audio and video of a session it claimed, which run on its connection);
//   every request it makes is answered while it stays open;
// - queues: `queuedBytes(on:)` is never negative, 0 exactly when nothing waits, equal to the
//   frames a full pull hands out (headers included), and one delivery of input adds at most its
//   answers to it (a bound linear in the bytes delivered), so that the runtime's throttle (no
//   input read from a transport whose queue passed the limit, until it drains below half) keeps
//   it within the limit and one delivery's answers; once reading resumes everything arrives.

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
    /// Whether protected data frames may be written (their wire size is not the queued size).
    let secure: Bool

    // Hostile connections (Hijack.swift).
    /// Transports a hostile peer opened on the head unit only; their "app side" outbox holds the
    /// frames it built, not yet read by the head unit. Also in `open` and `tainted`.
    var attackers: Set<TransportID> = []
    /// Attackers that also carried random bytes: their frames may be read otherwise than built.
    var garbled: Set<TransportID> = []
    /// The head unit's sessions each attacker named in a registration without a hash id.
    var claimed: [TransportID: Set<SessionHandle>] = [:]
    /// The head unit's sessions each attacker proved it owns (a registration with the hash id).
    var proven: [TransportID: Set<SessionHandle>] = [:]
    /// The attacker whose bytes the head unit is reading now.
    var attacking: TransportID?
    var attackerMessageID: UInt32 = 1
    /// Whether the head unit takes a secondary registration without the session's hash id.
    let unprovenAllowed: Bool

    // Non-reading peers and the runtime's throttle (SessionDriver).
    /// Sides whose writes on a transport are not pulled: their peer does not read.
    var stalled: Set<UInt64> = []
    /// Sides that read nothing more from a transport: their queue there passed `queueLimit`, and
    /// has not drained below half of it since.
    var throttled: Set<UInt64> = []
    /// Sides whose queue on a transport may hold a partly written message.
    var partial: Set<UInt64> = []
    let queueLimit: Int

    init(app: SessionConfiguration, headUnit: SessionConfiguration, queueLimit: Int = 512 << 10) {
        self.app = Side(name: "app", configuration: app)
        self.hu = Side(name: "head unit", configuration: headUnit)
        self.limits = headUnit.protocolLimits
        self.maxSessions = headUnit.headUnit.maxSessions
        self.secure = app.makeSecurityProvider != nil || headUnit.makeSecurityProvider != nil
        self.unprovenAllowed = headUnit.headUnit.secondaryTransportProof == .hashIDWhenGiven
        self.queueLimit = queueLimit
    }

    /// One side of one transport, for the throttle's sets.
    static func key(_ fromApp: Bool, _ transport: TransportID) -> UInt64 {
        transport.rawValue << 1 | (fromApp ? 1 : 0)
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
        self.attackers.remove(transport)
        for fromApp in [true, false] {
            let key = Self.key(fromApp, transport)
            self.stalled.remove(key)
            self.throttled.remove(key)
            self.partial.remove(key)
        }
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

    /// Hands bytes written by one side to the other. The receiving side's queue on the transport
    /// grows by at most the answers to them; past `queueLimit` the side reads no more from it.
    mutating func deliver(_ bytes: ByteBuffer, fromApp: Bool, on transport: TransportID) {
        guard self.open.contains(transport) else { return }
        trace(" \(bytes.readableBytes) bytes \(fromApp ? "app→head unit" : "head unit→app") on \(transport)")
        if fromApp {
            self.wire[transport]?.toHU.add(bytes, what: "app on \(transport)")
        } else {
            // An attacker gets answers, never another session's data: only the audio and video of a
            // session it claimed, which run on its connection, may go to it.
            self.wire[transport]?.toApp.add(
                bytes, what: "head unit on \(transport)", controlOnly: self.attackers.contains(transport),
                mediaToo: self.unprovenAllowed && self.claimed[transport]?.isEmpty == false)
        }
        let receiver = !fromApp
        let before = self[receiver].engine.queuedBytes(on: transport)
        if fromApp && self.attackers.contains(transport) && !self.garbled.contains(transport) {
            self.attacking = transport
        }
        self[receiver].engine.received(bytes, on: transport, now: self.now)
        self.drain()
        self.attacking = nil
        let after = self[receiver].engine.queuedBytes(on: transport)
        // Every frame completed by these bytes (at most one more than an 8-byte header fits) is
        // answered with a few control frames at most: a session's StartServiceACK and its
        // TransportEventUpdate are the largest.
        let bound = 1024 * (1 + bytes.readableBytes / 8)
        precondition(
            after - before <= bound,
            "\(self[receiver].name): \(bytes.readableBytes) bytes on \(transport) queued \(after - before) bytes of answers")
        if after > self.queueLimit, self.throttled.insert(Self.key(receiver, transport)).inserted {
            trace(" \(self[receiver].name) throttles \(transport): \(after) bytes queued")
        }
    }

    /// What the runtime does when a transport can take writes: the side's frames there are
    /// pulled (up to `maxBytes`), unless its peer does not read, and the queue's accounting is
    /// checked against what came out. A throttled side reads again once its queue drained
    /// below half the limit.
    mutating func pull(fromApp: Bool, _ transport: TransportID, maxBytes: Int) {
        let key = Self.key(fromApp, transport)
        guard !self.stalled.contains(key) else { return }
        let before = self[fromApp].engine.queuedBytes(on: transport)
        let (counted, protected) = self[fromApp].pull(transport, maxBytes: maxBytes)
        let after = self[fromApp].engine.queuedBytes(on: transport)
        let pending = self[fromApp].engine.hasPendingWrites(on: transport)
        let name = self[fromApp].name
        precondition(after >= 0 && (after == 0) == !pending, "\(name): \(after) bytes queued on \(transport), pending writes: \(pending)")
        if !pending && !self.partial.contains(key) && !(protected && self.secure) {
            precondition(before - after == counted, "\(name): the queue on \(transport) went from \(before) to \(after) bytes, \(counted) written")
        }
        if pending { self.partial.insert(key) } else { self.partial.remove(key) }
        if self.throttled.contains(key) && after <= self.queueLimit / 2 {
            self.throttled.remove(key)
            trace(" \(name) reads \(transport) again: \(after) bytes queued")
        }
    }

    /// Whether a side reads from a transport (the throttle).
    func reads(fromApp: Bool, _ transport: TransportID) -> Bool {
        !self.throttled.contains(Self.key(fromApp, transport))
    }

    /// Moves everything both ways until neither engine has anything to say, or what is left waits
    /// for a peer that does not read.
    mutating func pump(chunk: Int = .max) {
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 100_000, "the engines keep talking")
            var moved = false
            for fromApp in [true, false] {
                for transport in self[fromApp].wantsWrite.sorted(by: { $0.rawValue < $1.rawValue }) {
                    self.pull(fromApp: fromApp, transport, maxBytes: .max)
                }
                // A throttled side whose queue emptied otherwise (a session ended) reads again
                // when its transport is next writable.
                for key in self.throttled where key & 1 == (fromApp ? 1 : 0) && !self.stalled.contains(key) {
                    self.pull(fromApp: fromApp, TransportID(key >> 1), maxBytes: .max)
                }
                for transport in self.open {
                    while self.reads(fromApp: !fromApp, transport), let bytes = self[fromApp].take(transport, upTo: chunk) {
                        moved = true
                        self.deliver(bytes, fromApp: fromApp, on: transport)
                    }
                }
            }
            let waiting = [true, false].contains { fromApp in
                self[fromApp].wantsWrite.contains { !self.stalled.contains(Self.key(fromApp, $0)) }
            }
            if !moved && !waiting { return }
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
        if !fromApp, let attacker = self.attacking { self.checkAttack(event, from: attacker) }
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
        case .serviceStarted(let handle, let service, let info):
            _ = track(handle)
            if service == .audio || service == .video {
                precondition(self[fromApp].tracks[handle]!.services.insert(service.rawValue).inserted, "\(side): \(service) started twice")
                self[fromApp].tracks[handle]!.serviceTransports[service.rawValue] = info.transport
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
        case .serviceWaiting(let handle, _, _), .secondaryTransport(let handle, _), .protocolViolation(let handle, _),
            .sessionFlooded(let handle), .unprotectedMessageRefused(let handle, _, _), .serviceStartRequested(let handle, _, _):
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

    /// Once quiet: ACK/NAK accounting and agreement on every clean transport still open, and the
    /// answers every attacker still connected got.
    func checkQuiet() {
        for transport in self.open where !self.tainted.contains(transport) {
            guard let wire = self.wire[transport] else { continue }
            Self.checkAnswers(to: wire.toHU, in: wire.toApp, "\(transport) app→head unit")
            Self.checkAnswers(to: wire.toApp, in: wire.toHU, "\(transport) head unit→app")
        let appIDs = Set(self.app.liveHandles(on: transport).compactMap { self.app.tracks[$0]?.sessionID })
            let huIDs = Set(self.hu.liveHandles(on: transport).compactMap { self.hu.tracks[$0]?.sessionID })
            precondition(appIDs == huIDs, "\(transport): the app runs sessions \(appIDs), the head unit \(huIDs)")
        }
        for transport in self.attackers where !self.garbled.contains(transport) {
            guard let wire = self.wire[transport] else { continue }
            Self.checkAnswers(to: wire.toHU, in: wire.toApp, "\(transport) attacker→head unit")
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

    /// Every StartService, EndService and RegisterSecondaryTransport of one direction answered
    /// exactly once in the other.
    static func checkAnswers(to requests: WireCount, in answers: WireCount, _ label: String) {
        for service in ServiceType.known {
            let starts = requests[service, .startService]
            let startAnswers = answers[service, .startServiceACK] + answers[service, .startServiceNAK]
            precondition(starts == startAnswers, "\(label): \(starts) StartService(\(service)), \(startAnswers) answers")
            let ends = requests[service, .endService]
            let endAnswers = answers[service, .endServiceACK] + answers[service, .endServiceNAK]
            precondition(ends == endAnswers, "\(label): \(ends) EndService(\(service)), \(endAnswers) answers")
        }
        let registers = requests[.control, .registerSecondaryTransport]
        let registerAnswers = answers[.control, .registerSecondaryTransportACK] + answers[.control, .registerSecondaryTransportNAK]
        precondition(registers == registerAnswers, "\(label): \(registers) RegisterSecondaryTransport, \(registerAnswers) answers")
    }
}
