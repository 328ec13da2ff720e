import NIOCore
import SDLProtocol

extension SessionEngine {
    /// Runs everything due at `now`, in a fixed order (transports, then sessions by handle) so the
    /// same inputs always give the same actions.
    mutating func runTimers(now: NIODeadline) {
        for transport in self.transports.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard self.transports.contains(transport) else { continue }
            if let next = self.transports[existing: transport].reassembler.nextExpiry, next <= now {
                for error in self.transports[existing: transport].reassembler.expire(now: now) {
                    self.emit(.protocolError(transport, error))
                }
            }
            if let (reason, deadline) = self.transports[existing: transport].closeAfterFlush, deadline <= now {
                self.close(transport, reason: reason, now: now)
            } else if let deadline = self.transports[existing: transport].retiring, deadline <= now {
                self.close(transport, reason: .secondaryNotUsable, now: now)
            }
        }
        for handle in self.sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            self.runSessionTimers(handle, now: now)
        }
    }

    mutating func runSessionTimers(_ handle: SessionHandle, now: NIODeadline) {
        guard let session = self.sessions[handle] else { return }
        switch session.phase {
        case .starting(let deadline?) where deadline <= now:
            self.sessionStartTimedOut(on: session.primary, now: now)
            return
        case .ending(let deadline) where deadline <= now:
            if self.role == .app, self.transports[session.primary]?.pendingStarts.first == handle {
                // Cancelled while its StartService was out, and still unanswered: as for any
                // unanswered start, the transport goes. Kept open, a late ACK would start a
                // session on the head unit that nothing here knows or ends.
                self.sessions[handle] = nil
                self.emit(.sessionEnded(handle, .local))
                self.sessionStartTimedOut(on: session.primary, now: now)
                return
            }
            self.endSessionNow(handle, reason: .local, now: now)
            return
        default:
            break
        }
        if let deadline = session.registrationDeadline, deadline <= now {
            self.endSessionByHeadUnit(handle, reason: .registrationTimeout, now: now)
            return
        }
        if let deadline = session.heartbeat.deadline, deadline <= now {
            if session.heartbeat.probing {
                if self.role == .headUnit {
                    self.endSessionByHeadUnit(handle, reason: .heartbeatTimeout, now: now)
                } else {
                    self.sendEndService(.rpc, of: handle, on: session.primary, now: now)
                    self.endSessionNow(handle, reason: .heartbeatTimeout, now: now)
                }
                return
            }
            self.sendControl(
                .heartbeat, service: .control, session: session.id, version: session.frameVersion,
                messageID: self.sessions[existing: handle].takeMessageID(), on: session.primary)
            self.sessions[existing: handle].heartbeat.probing = true
            self.sessions[existing: handle].heartbeat.deadline = now + self.configuration.heartbeat.timeout
        }
        for service in [ServiceType.rpc, .audio, .video] {
            self.runServiceTimer(service, of: handle, now: now)
        }
        self.runSecondaryTimers(handle, now: now)
    }

    mutating func runServiceTimer(_ service: ServiceType, of handle: SessionHandle, now: NIODeadline) {
        guard let state = self.sessions[handle]?[service: service] else { return }
        switch state {
        case .starting(let starting) where (starting.deadline.map { $0 <= now } ?? false):
            if self.role == .headUnit && starting.awaitingApproval {
                self.refuseAwaitingStart(service, of: handle, starting: starting, reason: "the head unit did not decide in time")
            } else if self.role == .headUnit {
                // The handshake did not finish in time.
                self.handshakeFailed(handle, now: now)
            } else {
                self.sessions[existing: handle][service: service] = .stopped
                if starting.request.isProtected, case .handshaking = self.sessions[existing: handle].security.state {
                    self.resetSecurity(of: handle)
                }
                if service != .rpc, self.transports.contains(starting.transport) {
                    // The StartService may still be answered: a late ACK would leave the service
                    // running on the head unit alone. The EndService withdraws it; its answer, ACK
                    // or NAK, finds the service stopped and changes nothing.
                    self.sendEndService(service, of: handle, on: starting.transport, now: now)
                }
                self.emit(.serviceStartFailed(handle, service, .timeout))
                self.placeWaitingServices(of: handle, now: now)
            }
        case .ending(let ending) where ending.deadline <= now:
            self.sessions[existing: handle][service: service] = .stopped
            self.emit(.serviceEnded(handle, service, ending.restart?.reason ?? .endTimedOut))
            if let request = ending.restart?.request {
                self.sessions[existing: handle][service: service] = .wanted(request)
                self.placeService(service, of: handle, now: now)
            }
            self.closeIdleRetiringTransports(now: now)
        case .draining(let until, false, let ranOn) where until <= now:
            // The grace is over without an ACK: ended all the same, as Core 8.0 does
            // (ARCHITECTURE.md, D-ending).
            self.sessions[existing: handle][service: service] = .draining(until: until, reported: true, transport: ranOn)
            self.emit(.serviceEnded(handle, service, .local))
        default:
            break
        }
    }

    mutating func runSecondaryTimers(_ handle: SessionHandle, now: NIODeadline) {
        guard let machine = self.sessions[handle]?.secondaryMachine else { return }
        if let update = machine.pendingUpdate, update.deadline <= now {
            self.sessions[existing: handle].secondaryMachine!.pendingUpdate = nil
            self.applyTransportEvent(handle, address: update.address, port: update.port, now: now)
        }
        guard let machine = self.sessions[handle]?.secondaryMachine else { return }
        switch machine.state {
        case .registering(let transport, let deadline) where deadline <= now:
            self.transports[transport]?.sessions[self.sessions[existing: handle].id.rawValue] = nil
            self.backOffSecondary(handle, now: now)
            self.close(transport, reason: .secondaryNotUsable, now: now)
            self.placeWaitingServices(of: handle, now: now)
        case .backoff(_, let until) where until <= now:
            self.sessions[existing: handle].secondaryMachine!.state = .idle
            self.emit(.secondaryTransport(handle, .configured(address: machine.address, port: machine.port)))
            self.connectSecondaryIfNeeded(handle, now: now)
        default:
            break
        }
    }

    /// No answer to the session-0 StartService: every session waiting on the transport fails and
    /// the transport is closed; the StartService is never sent twice (sdl_ios#1783;
    /// ARCHITECTURE.md, D-negotiation).
    mutating func sessionStartTimedOut(on transport: TransportID, now: NIODeadline) {
        guard let record = self.transports[transport] else { return }
        for handle in record.pendingStarts where self.sessions.removeValue(forKey: handle) != nil {
            self.emit(.sessionStartFailed(handle, .timeout))
        }
        self.transports[existing: transport].pendingStarts.removeAll()
        self.transports[existing: transport].startSent = false
        self.close(transport, reason: .noSessionsLeft, now: now)
    }

    /// The earliest deadline of any timer, nil when nothing waits.
    func earliestDeadline() -> NIODeadline? {
        var earliest: NIODeadline?
        func consider(_ deadline: NIODeadline?) {
            guard let deadline else { return }
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        for record in self.transports.values {
            consider(record.reassembler.nextExpiry)
            consider(record.closeAfterFlush?.deadline)
            consider(record.retiring)
        }
        for session in self.sessions.values {
            switch session.phase {
            case .starting(let deadline): consider(deadline)
            case .ending(let deadline): consider(deadline)
            case .running: break
            }
            consider(session.registrationDeadline)
            consider(session.heartbeat.deadline)
            for service in [ServiceType.rpc, .audio, .video] {
                switch session[service: service] {
                case .starting(let starting): consider(starting.deadline)
                case .ending(let ending): consider(ending.deadline)
                case .draining(let until, false, _): consider(until)
                default: break
                }
            }
            consider(session.secondaryMachine?.deadline)
        }
        return earliest
    }
}
