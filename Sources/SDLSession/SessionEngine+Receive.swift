import NIOCore
import SDLProtocol

extension SessionEngine {
    /// A bad header or a decoder that stopped: reported, counted against the malformed limit.
    mutating func malformedInput(_ error: SDLProtocolError, on transport: TransportID, now: NIODeadline) {
        self.emit(.protocolError(transport, error))
        if error.code == .decoderFailed {
            self.close(transport, reason: .malformedInput, now: now)
            return
        }
        if self.configuration.invalidHeaderPolicy == .fail {
            // The decoder refuses everything from now on; nothing more will come from this transport.
            self.close(transport, reason: .malformedInput, now: now)
            return
        }
        self.countMalformed(on: transport, now: now)
    }

    /// Counts one malformed run or broken message; over the limit the transport is closed without
    /// EndService frames (Core: `MalformedFrequencyCount`).
    mutating func countMalformed(on transport: TransportID, now: NIODeadline) {
        guard self.transports[transport]?.malformed?.record(now: now) == true else { return }
        let limit = self.transports[existing: transport].malformed!.limit
        self.anomaly(.malformedLimitReached, transport: transport, "more than \(limit.count) malformed runs in \(limit.period)")
        self.close(transport, reason: .malformedInput, now: now)
    }

    /// A frame for a session the transport does not carry, or a control frame that would act on
    /// a session from a transport that may not: reported, and counted against the transport's
    /// malformed limit, so that a connection that keeps aiming at other apps' sessions is closed
    /// and only that connection.
    mutating func foreignFrame(on transport: TransportID, _ detail: String, now: NIODeadline) {
        self.anomaly(.foreignSessionFrame, transport: transport, detail)
        self.countMalformed(on: transport, now: now)
    }

    /// The storage the reassemblies of every transport hold.
    var totalReassemblyBytes: Int {
        self.transports.values.reduce(0) { $0 + $1.reassembler.reservedBytes }
    }

    /// Whether a message of `size` bytes fits the budget of every transport's reassemblies
    /// (``SessionConfiguration/maxReassemblyBytesTotal``). When it does not, the connection that
    /// holds the most loses its reassemblies, if it holds more than `transport` would with the
    /// message (reported as ``SessionEvent/protocolError(_:_:)`` on it and counted towards its
    /// malformed limit), until the message fits: a connection that declares large messages and
    /// fills the budget cannot keep the other connections' messages out. A connection holding no
    /// more than the one asking keeps its messages.
    mutating func makeRoomForReassembly(of size: Int, on transport: TransportID, now: NIODeadline) -> Bool {
        while self.totalReassemblyBytes + size > self.configuration.maxReassemblyBytesTotal {
            let own = self.transports[existing: transport].reassembler.reservedBytes
            var holder: (id: TransportID, held: Int)?
            for id in self.transports.keys where id != transport {
                let held = self.transports[existing: id].reassembler.reservedBytes
                if held > (holder?.held ?? 0) { holder = (id, held) }
            }
            guard let holder, holder.held > own + size else { return false }
            let dropped = self.transports[existing: holder.id].reassembler.discardAll()
            let detail = "\(dropped.count) message(s) in reassembly dropped: this connection held \(holder.held) of the "
                + "\(self.configuration.maxReassemblyBytesTotal) bytes every connection's reassemblies may hold, and another needed room"
            if let key = dropped.first {
                self.emit(.protocolError(holder.id, SDLProtocolError(.tooManyReassemblies, key: key, detail)))
            } else {
                self.emit(.protocolError(holder.id, SDLProtocolError(.tooManyReassemblies, detail)))
            }
            self.countMalformed(on: holder.id, now: now)
        }
        return true
    }

    /// Routes one decoded frame.
    mutating func handleFrame(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        if header.frameType == .control {
            self.handleControlFrame(frame, on: transport, now: now)
            return
        }
        guard let handle = self.sessionHandle(header.sessionID, on: transport) else {
            self.foreignFrame(
                on: transport,
                "\(header.frameType) frame of service \(header.serviceType) for session \(header.sessionID), which does not run on this transport",
                now: now)
            return
        }
        let media = header.serviceType == .audio || header.serviceType == .video
        if !media, transport != self.sessions[existing: handle].primary {
            // A secondary transport carries audio and video only: RPC, bulk data and security
            // queries of its session go on the primary. Dropped before anything reads them
            // (another app's connection may have claimed the session), and counted.
            self.anomaly(.unexpectedFrame, session: handle, transport: transport, "\(header.serviceType) data on a secondary transport, dropped (it runs on the primary only)")
            self.countMalformed(on: transport, now: now)
            return
        }
        self.touch(handle, countsAsMessage: header.frameType != .consecutive && !media, now: now)
        guard self.sessions.contains(handle) else { return }
        var frame = frame
        if header.isEncrypted && header.frameType != .first {
            guard let clear = self.unprotectIncoming(frame.payload, of: handle, on: transport, now: now) else {
                if header.frameType == .single, self.sessions.contains(handle), transport == self.sessions[existing: handle].primary,
                    !self.sessions[existing: handle].hasSecurityContext
                {
                    // Marked protected on a session that never set protection up: the layer above
                    // can still answer a request in it (SDL Core answers INVALID_DATA).
                    self.emit(.unprotectedMessageRefused(handle, header.serviceType, frame.payload))
                }
                return
            }
            frame.payload = clear
        }
        if header.frameType == .first, let declared = frame.firstFramePayload?.totalSize,
            !self.makeRoomForReassembly(of: Int(declared), on: transport, now: now)
        {
            // Every transport together: many connections' large messages cannot add up without bound.
            self.emit(.protocolError(transport, SDLProtocolError(
                .tooManyReassemblies, key: MessageKey(of: header),
                "cannot start a message of \(declared) bytes: \(self.totalReassemblyBytes) of "
                    + "\(self.configuration.maxReassemblyBytesTotal) bytes of every transport's reassemblies in use")))
            self.countMalformed(on: transport, now: now)
            return
        }
        let message: ProtocolMessage?
        do {
            message = try self.transports[existing: transport].reassembler.process(frame, now: now, mtus: self.mtus)
        } catch {
            self.emit(.protocolError(transport, error))
            self.countMalformed(on: transport, now: now)
            return
        }
        if self.transports.contains(transport), let nextExpiry = self.transports[existing: transport].reassembler.nextExpiry {
            self.noteDeadline(nextExpiry)
        }
        guard let message else { return }
        if header.serviceType == .control {
            self.handleSecurityQuery(message, of: handle, on: transport, now: now)
        } else {
            self.deliver(message, of: handle, on: transport, now: now)
        }
    }

    /// Any frame of a session resets its heartbeat timer; messages count against the flood limit.
    mutating func touch(_ handle: SessionHandle, countsAsMessage: Bool, now: NIODeadline) {
        if self.sessions[existing: handle].heartbeat.watched {
            self.sessions[existing: handle].heartbeat.probing = false
            self.sessions[existing: handle].heartbeat.deadline = now + self.configuration.heartbeat.timeout
        }
        guard countsAsMessage, self.sessions[existing: handle].flood?.record(now: now) == true else { return }
        let limit = self.sessions[existing: handle].flood!.limit
        self.anomaly(.floodDetected, session: handle, "more than \(limit.count) messages in \(limit.period)")
        self.sessions[existing: handle].flood = nil
        guard self.configuration.headUnit.endsFloodingSessions else {
            self.emit(.sessionFlooded(handle))
            return
        }
        self.endSessionByHeadUnit(handle, reason: .flood, now: now)
    }

    /// Hands a whole data message to the layer above if its service runs on this transport.
    mutating func deliver(_ message: ProtocolMessage, of handle: SessionHandle, on transport: TransportID, now: NIODeadline) {
        let service = message.serviceType
        // Fields read in place: a copy of the record costs more than the rest of a delivery.
        if self.sessions[existing: handle].versionFromFirstFrame {
            // Version 1–4 negotiation: the app's first frame after the ACK says its version.
            self.sessions[existing: handle].versionFromFirstFrame = false
            self.sessions[existing: handle].frameVersion = message.version
            self.sessions[existing: handle].version = SDLVersion(major: UInt16(message.version.rawValue))
            self.sessions[existing: handle].info?.frameVersion = message.version
            self.sessions[existing: handle].info?.version = SDLVersion(major: UInt16(message.version.rawValue))
        }
        let allowed: Bool
        switch service {
        case .rpc, .hybrid:
            allowed = self.sessions[existing: handle].isRunning && transport == self.sessions[existing: handle].primary
            if !allowed && transport == self.sessions[existing: handle].secondary {
                self.anomaly(.unexpectedFrame, session: handle, transport: transport, "\(service) data on the secondary transport, dropped (RPC runs on the primary only)")
                return
            }
        case .audio, .video:
            switch self.sessions[existing: handle][service: service] {
            case .running(let running):
                allowed = running.transport == transport
            case .ending(let ending):
                // Frames in flight when our EndService crossed them.
                allowed = ending.running.transport == transport
            case .draining(let until, _, let ranOn):
                let unproven = transport != self.sessions[existing: handle].primary && !self.sessions[existing: handle].secondaryProven
                if transport != ranOn || unproven {
                    // From a transport the service did not run on, or a secondary registered
                    // without the session's hash id: perhaps another connection's, which must not
                    // get the session reported or ended.
                    self.anomaly(.unexpectedFrame, session: handle, transport: transport, "\(service) data after its end, from a transport that cannot answer for the session; dropped")
                    return
                }
                if now >= until {
                    self.emit(.protocolViolation(handle, service))
                    if self.configuration.headUnit.closeSessionOnViolation {
                        self.endSessionByHeadUnit(handle, reason: .protocolViolation, now: now)
                    }
                }
                return
            default:
                allowed = false
            }
        default:
            allowed = false
        }
        guard allowed else {
            self.anomaly(.unexpectedFrame, session: handle, transport: transport, "data for \(service), which is not running here; dropped")
            return
        }
        self.emit(
            .message(
                handle,
                ReceivedMessage(
                    service: service, payload: message.payload, wasProtected: message.isEncrypted,
                    messageID: message.messageID, transport: transport)))
    }

    /// Dispatches a control frame by its frame info and the engine's role.
    mutating func handleControlFrame(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let info = ControlFrameInfo(rawValue: header.frameInfo)
        if let handle = self.sessionHandle(header.sessionID, on: transport), self.sessions.contains(handle) {
            // Only the primary's frames count towards the session's flood limit: a secondary
            // that another connection claimed must not get the session ended.
            self.touch(handle, countsAsMessage: transport == self.sessions[existing: handle].primary, now: now)
        } else if header.sessionID.rawValue == 0, self.transports[transport]?.sessionZeroFlood?.record(now: now) == true {
            let limit = self.transports[existing: transport].sessionZeroFlood!.limit
            self.anomaly(.floodDetected, transport: transport, "more than \(limit.count) session-0 control frames in \(limit.period)")
            self.close(transport, reason: .flood, now: now)
            return
        }
        guard self.transports.contains(transport) else { return }
        switch (info, self.role) {
        case (.heartbeat, _):
            self.receivedHeartbeat(frame, on: transport, now: now)
        case (.heartbeatACK, _):
            break  // any frame already reset the timer
        case (.startService, .headUnit):
            self.headUnitStartService(frame, on: transport, now: now)
        case (.startServiceACK, .app), (.startServiceNAK, .app):
            self.appStartServiceAnswer(frame, on: transport, now: now)
        case (.endService, _):
            self.peerEndService(frame, on: transport, now: now)
        case (.endServiceACK, _), (.endServiceNAK, _):
            self.endServiceAnswer(frame, on: transport, now: now)
        case (.registerSecondaryTransport, .headUnit):
            self.headUnitRegisterSecondary(frame, on: transport, now: now)
        case (.registerSecondaryTransportACK, .app), (.registerSecondaryTransportNAK, .app):
            self.appRegisterSecondaryAnswer(frame, on: transport, now: now)
        case (.transportEventUpdate, .app):
            self.appTransportEventUpdate(frame, on: transport, now: now)
        default:
            self.anomaly(
                .unexpectedControlFrame, transport: transport,
                "\(info) (service \(header.serviceType), session \(header.sessionID)) is not expected by a \(self.role); ignored")
        }
    }

    /// Heartbeat: answered for sessions at version 3 or later with the same session, message id and
    /// version (ARCHITECTURE.md, D-heartbeat); a session watched Core-style starts being watched.
    mutating func receivedHeartbeat(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let messageID = header.messageID?.rawValue ?? 0
        guard header.sessionID.rawValue != 0 else {
            self.anomaly(.heartbeatOnSessionZero, transport: transport, "heartbeat on session 0 (the spec's example)")
            if self.configuration.heartbeat.answerSessionZero {
                self.sendControl(.heartbeatACK, service: .control, session: header.sessionID, version: header.version, messageID: messageID, on: transport)
            }
            return
        }
        guard let handle = self.sessionHandle(header.sessionID, on: transport), let session = self.sessions[handle],
            session.isRunning
        else {
            self.foreignFrame(on: transport, "heartbeat for session \(header.sessionID), which does not run here", now: now)
            return
        }
        guard session.frameVersion.rawValue >= 3 else {
            self.anomaly(.heartbeatUnsupported, session: handle, transport: transport, "heartbeat on a version \(session.frameVersion.rawValue) session: not answered")
            return
        }
        self.sendControl(.heartbeatACK, service: .control, session: header.sessionID, version: header.version, messageID: messageID, on: transport)
        if self.configuration.heartbeat.origination == .afterPeerHeartbeat && !session.heartbeat.watched {
            self.startWatching(handle, now: now)
        }
    }

    mutating func startWatching(_ handle: SessionHandle, now: NIODeadline) {
        let deadline = now + self.configuration.heartbeat.timeout
        self.sessions[existing: handle].heartbeat = HeartbeatState(watched: true, probing: false, deadline: deadline)
        self.noteDeadline(deadline)
    }
}
