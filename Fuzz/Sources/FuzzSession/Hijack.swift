import FuzzSupport
import NIOCore
import SDLBSON
import SDLProtocol
import SDLSession

// Hostile connections: a peer that connects to the head unit only and writes frames built by hand
// at the sessions of other connections (issue 21's "takes over another app's session"), and peers
// that stop reading.

extension Pair {
    /// A hostile peer connects to the head unit.
    mutating func openAttacker() {
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        do {
            try self.hu.engine.transportOpened(transport, as: .accepted, now: self.now)
        } catch {
            preconditionFailure("a new transport refused: \(error)")
        }
        self.attackers.insert(transport)
        self.tainted.insert(transport)
        self.opened(transport)
    }

    /// An attacker writes one frame: it waits on the wire until the head unit reads it.
    mutating func attack(_ frame: ByteBuffer, on transport: TransportID) {
        var outbox = self.app.outbox[transport] ?? ByteBuffer()
        var frame = frame
        self.inputBytes += frame.readableBytes
        outbox.writeBuffer(&frame)
        self.app.outbox[transport] = outbox
        while self.reads(fromApp: false, transport), let bytes = self.app.take(transport, upTo: .max) {
            self.deliver(bytes, fromApp: true, on: transport)
        }
    }

    /// Checks an event the head unit reported while it read an attacker's frames: a session of
    /// another connection hears of them only as a secondary the attacker claimed where unproven
    /// registrations are taken, for audio and video on the attacker's connection.
    mutating func checkAttack(_ event: SessionEvent, from attacker: TransportID) {
        guard let handle = event.session, let track = self.hu.tracks[handle], track.transport != attacker,
            self.proven[attacker]?.contains(handle) != true
        else { return }
        let mayClaim = self.unprovenAllowed && self.claimed[attacker]?.contains(handle) == true
        let media: (ServiceType) -> Bool = { $0 == .audio || $0 == .video }
        let allowed: Bool
        switch event {
        case .anomaly:
            allowed = true
        case .serviceStarted(_, let service, let info):
            allowed = mayClaim && media(service) && info.transport == attacker
        case .serviceStartRequested(_, let service, _), .serviceStartFailed(_, let service, _):
            allowed = mayClaim && media(service)
        case .serviceEnded(_, let service, _):
            allowed = media(service) && track.serviceTransports[service.rawValue] == attacker
        case .message(_, let message):
            allowed = mayClaim && media(message.service) && message.transport == attacker
        default:
            allowed = false
        }
        precondition(allowed, "head unit: \(attacker)'s frames reached session \(String(describing: track.sessionID)) on \(String(describing: track.transport)): \(event)")
    }
}

extension SessionEvent {
    /// The session an event names, if any.
    var session: SessionHandle? {
        switch self {
        case .sessionStarted(let h, _), .sessionStartFailed(let h, _), .sessionEnded(let h, _), .serviceStarted(let h, _, _),
            .serviceStartFailed(let h, _, _), .serviceEnded(let h, _, _), .serviceWaiting(let h, _, _), .message(let h, _),
            .secondaryTransport(let h, _), .protocolViolation(let h, _), .serviceStartRequested(let h, _, _), .sessionFlooded(let h),
            .unprotectedMessageRefused(let h, _, _):
            return h
        case .anomaly(let anomaly):
            return anomaly.session
        case .sessionLimitReached, .transportClosed, .protocolError:
            return nil
        }
    }
}

/// The hijack op: an attacker connection is opened, or one writes a frame aimed at a live session
/// of another connection (or at any id): RegisterSecondaryTransport without a hash id, with a
/// wrong one or (rarely) the right one, EndService(RPC) at version 1 and 5, EndService, its
/// answers and StartService of audio and video, the RPC protection upgrade, data frames of every service,
/// heartbeats and security queries.
func hijack(_ pair: inout Pair, _ input: inout FuzzInput) {
    let attackers = pair.attackers.sorted { $0.rawValue < $1.rawValue }
    guard input.int(in: 0...5) != 0, let attacker = pick(attackers, &input) else {
        if pair.attackers.count < 2 { pair.openAttacker() }
        return
    }
    let victims = pair.hu.liveHandles().filter { pair.hu.tracks[$0]?.transport != attacker }
    let victim = input.int(in: 0...7) == 0 ? nil : pick(victims, &input)
    let sid = victim.flatMap { pair.hu.tracks[$0]?.sessionID } ?? SessionID(UInt8(input.int(in: 1...255)))
    // The session the id names, if any, whichever way it was picked.
    let named = victim ?? pair.hu.liveHandles().first { pair.hu.tracks[$0]?.sessionID == sid }
    let info = named.flatMap { pair.hu.engine.sessionInfo($0) }
    let hash = info?.hashID
    let version = input.pick([ProtocolVersion.v5, info?.frameVersion ?? .v5, .v4, .v2])
    // The proof an attacker offers: none, a guess, or rarely the very hash id (it is then the
    // session's own app, on a connection of its own).
    let proof = input.int(in: 0...15)
    let proved = proof == 15 && hash != nil
    let offered: UInt32? = proved ? hash : proof >= 8 ? (hash ?? 0) &+ UInt32(proof) : nil
    let messageID = pair.attackerMessageID
    pair.attackerMessageID &+= 1
    var payload = ByteBuffer()
    var frameVersion = version
    var type = FrameType.control
    var service = ServiceType.control
    var info8: UInt8 = 0
    var encrypted = false
    switch input.int(in: 0...9) {
    case 0, 1:
        info8 = ControlFrameInfo.registerSecondaryTransport.rawValue
        frameVersion = .v5
        if let offered {
            payload.writeBSONDocument { $0.appendInt32("hashId", Int32(bitPattern: offered)) }
        }
        if let named {
            if proved {
                pair.proven[attacker, default: []].insert(named)
            } else if offered == nil {
                pair.claimed[attacker, default: []].insert(named)
            }
        }
    case 2:
        // Version 1 carries no hash: the way around it.
        info8 = ControlFrameInfo.endService.rawValue
        service = .rpc
        frameVersion = .v1
    case 3:
        info8 = ControlFrameInfo.endService.rawValue
        service = .rpc
        if let offered { try! EndServicePayload(hashID: Int32(bitPattern: offered)).write(to: &payload) }
    case 4:
        // An EndService, or the answer to the head unit's own (which it sends when it ends a
        // service of the victim).
        info8 = input.pick([ControlFrameInfo.endService, .endService, .endServiceACK, .endServiceNAK]).rawValue
        service = input.pick([.video, .audio])
    case 5:
        info8 = ControlFrameInfo.startService.rawValue
        service = input.pick([.video, .audio])
        encrypted = input.int(in: 0...3) == 0
        if service == .video && input.bool() {
            try! StartServicePayload(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264").write(to: &payload)
        }
    case 6:
        // The RPC protection upgrade of another app's session.
        info8 = ControlFrameInfo.startService.rawValue
        service = .rpc
        encrypted = true
    case 7:
        type = .single
        service = input.pick([.rpc, .hybrid, .audio, .video])
        encrypted = input.int(in: 0...7) == 0
        payload = input.bytes(input.int(in: 1...64))
        if payload.readableBytes == 0 { payload.writeInteger(UInt8(0)) }
    case 8:
        info8 = ControlFrameInfo.heartbeat.rawValue
    default:
        // A security query: an internal error (which would reset the session's protection) or
        // handshake data.
        type = .single
        let id = input.pick([SecurityQueryID.sendInternalError, .sendHandshakeData])
        payload.writeMultipleIntegers(UInt8(0x20), UInt8(0), UInt16(truncatingIfNeeded: id.rawValue), UInt32(1), UInt32(0))
        payload.writeInteger(UInt8(input.int(in: 0...255)))
    }
    if frameVersion == .v1 { encrypted = false }
    var frame = ByteBuffer()
    FrameEncoder.write(
        ProtocolFrame(
            header: FrameHeader(
                version: frameVersion, encrypted: encrypted, frameType: type, serviceType: service, frameInfo: info8,
                sessionID: sid, dataSize: 0, messageID: MessageID(messageID)),
            payload: payload),
        to: &frame)
    trace(" attacker \(attacker): \(type) \(service) info \(info8) v\(frameVersion.rawValue) for session \(sid.rawValue)\(proved ? " with its hash" : offered != nil ? " with a wrong hash" : "")")
    pair.attack(frame, on: attacker)
}

/// The non-reading op: a side's peer stops or resumes reading one transport, every peer resumes,
/// or the runtime gives up on a peer that does not read (closing the transport, as
/// `stalledReaderTimeout` does).
func stopReading(_ pair: inout Pair, _ input: inout FuzzInput) {
    guard let transport = pick(pair.open, &input) else { return }
    let fromApp = input.bool() && !pair.attackers.contains(transport)
    let key = Pair.key(fromApp, transport)
    switch input.int(in: 0...3) {
    case 0, 1:
        if pair.stalled.remove(key) == nil { pair.stalled.insert(key) }
    case 2:
        pair.stalled = []
    default:
        guard pair.stalled.contains(key), pair[fromApp].engine.hasPendingWrites(on: transport) else { return }
        pair[fromApp].engine.closeTransport(transport, reason: .peerStoppedReading, now: pair.now)
        pair.drain()
    }
}
