import NIOCore
import SDLBSON
import SDLProtocol

/// Whether a service is to be protected by the session's security provider (protocol spec 5.4.1 §7).
public enum ServiceProtection: Hashable, Sendable {
    /// Unprotected.
    case none
    /// Protected if the head unit agrees; an ACK with E=0 (a failed handshake SDL Core downgrades:
    /// ARCHITECTURE.md, D-security) starts it unprotected, with an anomaly.
    case preferred
    /// Protected or not at all: an unprotected ACK is followed at once by an EndService.
    case required
}

extension SessionEngine {
    // MARK: - Public service calls

    /// App role: starts a service of a running, registered session. Audio and video go where the
    /// head unit's service-transport lists put them (ARCHITECTURE.md, D-secondary), connecting the
    /// secondary transport first if needed; ``SessionEvent/serviceStarted(_:_:_:)``,
    /// ``SessionEvent/serviceStartFailed(_:_:_:)`` or ``SessionEvent/serviceWaiting(_:_:_:)``
    /// follows. `.rpc` with a protection asks to protect the RPC service (sent in the negotiated
    /// version, never 1: ARCHITECTURE.md, D-security).
    public mutating func startService(
        _ service: ServiceType, of handle: SessionHandle, video: VideoParameters? = nil,
        protection: ServiceProtection = .none, now: NIODeadline
    ) throws(SessionError) {
        guard self.role == .app else {
            throw SessionError(.wrongRole, "a head unit answers StartService, it does not send it")
        }
        guard let session = self.sessions[handle] else { throw SessionError(.unknownSession, "\(handle)") }
        guard session.isRunning else { throw SessionError(.sessionNotRunning, "\(handle) is not running") }
        let request = ServiceRequest(isProtected: protection != .none, requiresProtection: protection == .required, video: video)
        switch service {
        case .rpc:
            guard request.isProtected else {
                throw SessionError(.serviceActive, "the RPC service runs with the session")
            }
            guard !session.rpcProtected, !session.rpcUpgrade.isActive else {
                throw SessionError(.serviceActive, "the RPC service is already protected or being protected")
            }
            guard session.frameVersion.hasMessageID else {
                throw SessionError(.versionTooLow, "protection needs protocol version 2 or later")
            }
            self.sessions[existing: handle].rpcUpgrade = .wanted(request)
            self.placeService(.rpc, of: handle, now: now)
        case .audio, .video:
            guard session.frameVersion.rawValue >= 3 else {
                throw SessionError(.versionTooLow, "\(service) needs protocol version 3 or later; the session runs \(session.frameVersion)")
            }
            guard session.registered else {
                throw SessionError(.notRegistered, "\(service) starts after RegisterAppInterface succeeded")
            }
            guard !session[service: service].isActive else {
                throw SessionError(.serviceActive, "\(service) is already wanted, starting, running or ending")
            }
            self.sessions[existing: handle][service: service] = .wanted(request)
            self.placeService(service, of: handle, now: now)
        default:
            throw SessionError(.notAStartableService, "\(service) cannot be started")
        }
    }

    /// Ends a service. App role: EndService on the service's transport, and the service ends when
    /// it is answered (or after ``SessionConfiguration/serviceEndTimeout``); a service still
    /// waiting for a transport is simply dropped. Head unit role (audio, video): EndService, then
    /// the service's frames are dropped for ``HeadUnitSettings/streamingGracePeriod``.
    public mutating func endService(_ service: ServiceType, of handle: SessionHandle, now: NIODeadline) throws(SessionError) {
        guard let session = self.sessions[handle] else { throw SessionError(.unknownSession, "\(handle)") }
        guard service == .audio || service == .video else {
            throw SessionError(.notAStartableService, "end \(service) with endSession")
        }
        switch session[service: service] {
        case .wanted:
            self.sessions[existing: handle][service: service] = .stopped
        case .running(let running):
            self.sendEndService(service, of: handle, on: running.transport, now: now)
            if self.role == .headUnit {
                let until = now + self.configuration.headUnit.streamingGracePeriod
                self.sessions[existing: handle][service: service] = .draining(until: until, reported: false, transport: running.transport)
                self.noteDeadline(until)
            } else {
                let deadline = now + self.configuration.serviceEndTimeout
                self.sessions[existing: handle][service: service] = .ending(.init(running: running, deadline: deadline, restart: nil))
                self.noteDeadline(deadline)
            }
        default:
            throw SessionError(.serviceNotRunning, "\(service) is not running on \(handle)")
        }
    }

    // MARK: - Placement (app role, protocol spec 5.4.1 §4.6.3; ARCHITECTURE.md, D-secondary)

    /// Starts a wanted service where its list allows, or leaves it waiting for the secondary.
    mutating func placeService(_ service: ServiceType, of handle: SessionHandle, now: NIODeadline) {
        guard let session = self.sessions[handle], case .wanted(let request) = session[service: service] else { return }
        if request.isProtected && self.protectedStartPending(in: session, except: service) {
            // One protected start at a time per session (SDL-0322; ARCHITECTURE.md, D-security): it
            // waits its turn.
            return
        }
        if service == .rpc {
            self.sendServiceStart(.rpc, of: handle, request: request, slot: .primary, now: now)
            return
        }
        let list = self.slots(for: service, of: session)
        let secondaryReady = session.secondary != nil && session.secondaryMachine?.isRegistered == true
        let slot = list.first { $0 == .primary || secondaryReady }
        if list.first == .secondary && !secondaryReady {
            self.wantSecondary(handle, now: now)
        }
        if let slot {
            self.sendServiceStart(service, of: handle, request: request, slot: slot, now: now)
            return
        }
        let canComeUp = self.sessions[existing: handle].secondaryMachine?.canComeUp ?? false
        self.emit(.serviceWaiting(handle, service, canComeUp ? .waitingForSecondary : .noSecondary))
    }

    /// The ordered slots a service may use: the ACK's list, primary only when absent.
    func slots(for service: ServiceType, of session: SessionRecord) -> [TransportSlot] {
        let list = service == .audio ? session.info?.audioServiceTransports : session.info?.videoServiceTransports
        return list ?? [.primary]
    }

    func protectedStartPending(in session: SessionRecord, except service: ServiceType) -> Bool {
        for other in [ServiceType.rpc, .audio, .video] where other != service {
            if case .starting(let starting) = session[service: other], starting.request.isProtected { return true }
        }
        if case .handshaking = session.security.state { return true }
        return false
    }

    /// Sends the StartService of a service on a slot the session has.
    mutating func sendServiceStart(_ service: ServiceType, of handle: SessionHandle, request: ServiceRequest, slot: TransportSlot, now: NIODeadline) {
        let session = self.sessions[existing: handle]
        guard let transport = session.transport(for: slot) else { return }
        var payload = ByteBuffer()
        if session.frameVersion >= .v5, let video = request.video, service == .video {
            try! StartServicePayload(
                height: video.height, width: video.width, videoProtocol: video.videoProtocol, videoCodec: video.videoCodec
            ).write(to: &payload)
        }
        let messageID = self.sessions[existing: handle].takeMessageID()
        // The StartService of a protected service carries E=1 over a clear payload: Core never
        // decrypts incoming control frames (ARCHITECTURE.md, D-security).
        self.sendControl(
            .startService, service: service, session: session.id, version: session.frameVersion, messageID: messageID,
            payload: payload, eBit: request.isProtected, on: transport)
        let deadline = now + self.configuration.serviceStartTimeout
        self.sessions[existing: handle][service: service] = .starting(
            .init(request: request, transport: transport, slot: slot, deadline: deadline, messageID: messageID, handshaking: false))
        self.noteDeadline(deadline)
    }

    /// Starts waiting protected starts whose turn came, and services waiting for the secondary.
    mutating func placeWaitingServices(of handle: SessionHandle, now: NIODeadline) {
        for service in [ServiceType.rpc, .audio, .video] {
            if case .wanted = self.sessions[handle]?[service: service] {
                self.placeService(service, of: handle, now: now)
            }
        }
    }

    // MARK: - Answers to our StartService (app role)

    mutating func appStartServiceAnswer(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let isACK = header.frameInfo == ControlFrameInfo.startServiceACK.rawValue
        if header.serviceType == .rpc {
            if let handle = self.sessionHandle(header.sessionID, on: transport), case .starting = self.sessions[handle]?.rpcUpgrade {
                self.serviceStartAnswered(.rpc, of: handle, frame: frame, isACK: isACK, on: transport, now: now)
            } else if self.transports[existing: transport].startSent, isACK || header.sessionID.rawValue == 0 {
                // A NAK of the session-0 StartService names session 0; one naming a session is a
                // late refusal of that session's start, never the answer to the one on its way.
                self.sessionStartAnswered(frame, isACK: isACK, on: transport, now: now)
            } else {
                self.anomaly(.unsolicitedAnswer, transport: transport, "\(isACK ? "ACK" : "NAK") for an RPC start nobody sent")
            }
            return
        }
        guard let handle = self.sessionHandle(header.sessionID, on: transport),
            case .starting(let starting) = self.sessions[handle]?[service: header.serviceType], starting.transport == transport
        else {
            self.anomaly(.unsolicitedAnswer, transport: transport, "\(isACK ? "ACK" : "NAK") for \(header.serviceType) of session \(header.sessionID), not starting here")
            return
        }
        self.serviceStartAnswered(header.serviceType, of: handle, frame: frame, isACK: isACK, on: transport, now: now)
    }

    /// The ACK or NAK of an audio or video StartService, or of an RPC protection upgrade.
    mutating func serviceStartAnswered(
        _ service: ServiceType, of handle: SessionHandle, frame: ProtocolFrame, isACK: Bool, on transport: TransportID, now: NIODeadline
    ) {
        guard case .starting(let starting) = self.sessions[existing: handle][service: service] else { return }
        var payload = self.readAnswerPayload(frame, of: handle)
        defer {
            if !payload.problems.isEmpty {
                self.anomaly(.malformedControlPayload, session: handle, transport: transport, "\(service) start answer: " + payload.problems.joined(separator: "; "))
            }
        }
        guard isACK else {
            self.sessions[existing: handle][service: service] = .stopped
            if case .handshaking = self.sessions[existing: handle].security.state {
                self.resetSecurity(of: handle)
            }
            self.emit(.serviceStartFailed(handle, service, .rejectedByPeer(payload.nakContent())))
            self.placeWaitingServices(of: handle, now: now)
            return
        }
        let isProtected = frame.header.isEncrypted && starting.request.isProtected
        if isProtected {
            self.sessions[existing: handle].security.state = .established
        } else if starting.request.isProtected {
            if case .handshaking = self.sessions[existing: handle].security.state { self.resetSecurity(of: handle) }
            self.anomaly(.protectionDowngraded, session: handle, transport: transport, "\(service) was started unprotected")
        }
        if service == .rpc {
            self.sessions[existing: handle].rpcUpgrade = .stopped
            self.sessions[existing: handle].rpcProtected = isProtected
            self.emit(.serviceStarted(handle, .rpc, self.serviceInfo(.rpc, of: handle)!))
            self.placeWaitingServices(of: handle, now: now)
            return
        }
        var video = starting.request.video
        if service == .video, payload.isBSON {
            video = VideoParameters(
                height: payload.integer("height").flatMap { Int32(exactly: $0) } ?? video?.height,
                width: payload.integer("width").flatMap { Int32(exactly: $0) } ?? video?.width,
                videoProtocol: payload.string("videoProtocol") ?? video?.videoProtocol,
                videoCodec: payload.string("videoCodec") ?? video?.videoCodec)
        }
        let running = ServiceState.Running(
            transport: transport, slot: starting.slot, isProtected: isProtected, mtu: payload.integer("mtu"), video: video)
        self.setMTU(running.mtu, session: self.sessions[existing: handle].id, services: [service], direction: .send)
        self.sessions[existing: handle][service: service] = .running(running)
        self.emit(
            .serviceStarted(
                handle, service,
                ServiceInfo(transport: transport, slot: running.slot, isProtected: isProtected, mtu: running.mtu, video: video)))
        if starting.request.requiresProtection && !isProtected {
            try? self.endService(service, of: handle, now: now)
        }
        self.placeWaitingServices(of: handle, now: now)
    }

    /// Reads a StartServiceACK/NAK payload; an E=1 payload that is not BSON is unprotected first
    /// (Core protects its StartServiceACK's payload: ARCHITECTURE.md, D-security).
    mutating func readAnswerPayload(_ frame: ProtocolFrame, of handle: SessionHandle) -> LenientPayload {
        var payload = LenientPayload(frame.payload)
        if frame.header.isEncrypted, !payload.isBSON, frame.payload.readableBytes > 0,
            self.sessions[handle]?.security.provider != nil,
            let clear = try? self.sessions[existing: handle].security.provider!.unprotect(frame.payload)
        {
            payload = LenientPayload(clear)
        }
        return payload
    }

    // MARK: - EndService

    /// Sends our EndService: for RPC with the hash per version (BSON `hashId` at v5, the raw
    /// big-endian 4 bytes at v2–v4, nothing at v1: ARCHITECTURE.md, D-hash). The service's queued
    /// data frames are dropped: nothing of it follows the EndService.
    mutating func sendEndService(_ service: ServiceType, of handle: SessionHandle, on transport: TransportID, now: NIODeadline) {
        let session = self.sessions[existing: handle]
        var payload = ByteBuffer()
        if service == .rpc, self.role == .app, let hash = session.hashID {
            if session.frameVersion >= .v5 {
                try! EndServicePayload(hashID: Int32(bitPattern: hash)).write(to: &payload)
            } else if session.frameVersion.hasMessageID {
                RawHashID.write(hash, to: &payload)
            }
        }
        self.transports[transport]?.scheduler.removeStream(session: session.id, service: service)
        if service == .rpc {
            // Bulk data (0x0F) belongs to the RPC service: nothing of the session may follow its
            // EndService, or a head unit that hands the id out again delivers it to the next app.
            self.transports[transport]?.scheduler.removeStream(session: session.id, service: .hybrid)
        }
        self.sendControl(
            .endService, service: service, session: session.id, version: session.frameVersion,
            messageID: self.sessions[existing: handle].takeMessageID(), payload: payload, on: transport)
    }

    /// A peer's EndService: always answered, exactly once (ARCHITECTURE.md, D-answers). A head unit
    /// checks the RPC hash and NAKs what it cannot end; an app ACKs everything, on the transport it
    /// arrived on, with or without a hash.
    mutating func peerEndService(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let service = header.serviceType
        let messageID = header.messageID?.rawValue ?? 0
        let handle = self.role == .headUnit
            ? self.sessionsByID[Int(header.sessionID.rawValue)].flatMap { self.sessions[$0]?.isRunning == true ? $0 : nil }
            : self.sessionHandle(header.sessionID, on: transport)
        let session = handle.flatMap { self.sessions[$0] }
        let ack = { (engine: inout SessionEngine) in
            engine.sendControl(.endServiceACK, service: service, session: header.sessionID, version: header.version, messageID: messageID, on: transport)
        }
        if self.role == .headUnit {
            let refuse = { (engine: inout SessionEngine, refusal: Refusal) in
                engine.sendNAK(
                    .endServiceNAK, service: service, session: header.sessionID, version: session?.frameVersion ?? min(header.version, .v5),
                    fullVersion: session?.version, messageID: messageID, rejectedParams: refusal.rejectedParams,
                    reason: refusal == .wrongHashID ? "Wrong hash_id for session \(header.sessionID)" : refusal.description, on: transport)
            }
            guard let handle, let session, transport == session.primary || transport == session.secondary else {
                refuse(&self, .unknownSession)
                return
            }
            switch service {
            case .rpc:
                // The RPC service runs on the primary: its end may come only there, so that a
                // connection that registered itself as another app's secondary cannot end it.
                guard transport == session.primary else {
                    self.foreignFrame(on: transport, "EndService(RPC) of session \(header.sessionID) on a connection that is not its primary", now: now)
                    refuse(&self, .notAllowedOnTransport)
                    return
                }
                guard self.endServiceHashMatches(frame, session: session) else {
                    refuse(&self, .wrongHashID)
                    return
                }
                self.refuseHeldStarts(of: handle)
                ack(&self)
                self.endSessionNow(handle, reason: .peer, now: now)
            case .audio, .video:
                // Ended only on the transport it runs (or starts) on, or on the session's primary.
                var serviceTransport: TransportID?
                switch session[service: service] {
                case .running(let running): serviceTransport = running.transport
                case .starting(let starting): serviceTransport = starting.transport
                case .draining(_, _, let ranOn): serviceTransport = ranOn
                default: serviceTransport = nil
                }
                if let serviceTransport, transport != serviceTransport, transport != session.primary {
                    self.foreignFrame(on: transport, "EndService(\(service)) of session \(header.sessionID) on a transport it does not run on", now: now)
                    refuse(&self, .notAllowedOnTransport)
                    return
                }
                switch session[service: service] {
                case .running, .starting:
                    self.refuseHeldStarts(of: handle, services: [service])
                    ack(&self)
                    self.stopService(service, of: handle, reason: .peer, now: now)
                case .draining(let until, let reported, let ranOn):
                    // Crossing EndServices: ours is answered by theirs.
                    ack(&self)
                    if !reported {
                        self.sessions[existing: handle][service: service] = .draining(until: until, reported: true, transport: ranOn)
                        self.emit(.serviceEnded(handle, service, .peer))
                    }
                default:
                    refuse(&self, .serviceNotRunning)
                }
            default:
                refuse(&self, .cannotEnd)
            }
            return
        }
        ack(&self)
        guard let handle, let session else {
            self.anomaly(.endForStoppedService, transport: transport, "EndService(\(service)) for session \(header.sessionID), unknown here; ACKed")
            return
        }
        switch service {
        case .rpc:
            self.endSessionNow(handle, reason: .peer, now: now)
        case .audio, .video:
            if session[service: service].isActive {
                self.stopService(service, of: handle, reason: .peer, now: now)
            } else {
                self.anomaly(.endForStoppedService, session: handle, transport: transport, "EndService(\(service)), which is not running; ACKed")
            }
        default:
            self.anomaly(.endForStoppedService, session: handle, transport: transport, "EndService(\(service)); ACKed")
        }
    }

    /// Whether an EndService(RPC) carries the session's hash (Core's checks, stricter at version 1:
    /// ARCHITECTURE.md, D-hash): version 5 needs BSON `hashId`; versions 2–4 need 4 raw big-endian
    /// bytes, 0 being wrong; version 1 passes only for a session without a hash.
    func endServiceHashMatches(_ frame: ProtocolFrame, session: SessionRecord) -> Bool {
        guard let hash = session.hashID else { return true }
        switch frame.header.version.rawValue {
        case 1:
            // A version 1 header carries no hash: accepted only for a session that has none (it
            // negotiated version 1). Otherwise it is a way around the hash, not an old app.
            return false
        case 5...:
            var payload = LenientPayload(frame.payload)
            guard let value = payload.integer("hashId") else { return false }
            return UInt32(truncatingIfNeeded: value) == hash
        default:
            guard frame.payload.readableBytes >= 4, let value = try? RawHashID.read(frame.payload) else { return false }
            return value != 0 && value == hash
        }
    }

    /// The ACK or NAK of our EndService.
    mutating func endServiceAnswer(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let service = header.serviceType
        guard let handle = self.role == .headUnit ? self.sessionsByID[Int(header.sessionID.rawValue)] : self.sessionHandle(header.sessionID, on: transport),
            self.sessions.contains(handle)
        else {
            // A head unit forgets a session when it sends EndService(RPC); its answer comes later.
            if !(self.role == .headUnit && service == .rpc) {
                self.anomaly(.unsolicitedAnswer, transport: transport, "EndService answer for session \(header.sessionID), unknown here")
            }
            return
        }
        if service == .rpc {
            if case .ending = self.sessions[existing: handle].phase {
                self.endSessionNow(handle, reason: .local, now: now)
            } else if self.role == .app {
                self.anomaly(.unsolicitedAnswer, session: handle, transport: transport, "EndService(RPC) answer without our EndService")
            }
            return
        }
        switch self.sessions[existing: handle][service: service] {
        case .ending(let ending):
            self.sessions[existing: handle][service: service] = .stopped
            self.emit(.serviceEnded(handle, service, ending.restart?.reason ?? .local))
            if let request = ending.restart?.request {
                self.sessions[existing: handle][service: service] = .wanted(request)
                self.placeService(service, of: handle, now: now)
            }
            self.closeIdleRetiringTransports(now: now)
        case .draining(let until, false, let ranOn):
            // Our EndService went on the service's transport; its answer comes from there (or
            // the primary), not from another app's connection.
            guard transport == ranOn || transport == self.sessions[existing: handle].primary else {
                self.anomaly(.unsolicitedAnswer, session: handle, transport: transport, "EndService(\(service)) answer on a transport the service did not run on")
                return
            }
            self.sessions[existing: handle][service: service] = .draining(until: until, reported: true, transport: ranOn)
            self.emit(.serviceEnded(handle, service, .local))
        default:
            // Already stopped (a crossing peer EndService): the late answer changes nothing
            // (ARCHITECTURE.md, D-ending).
            break
        }
    }

    /// Stops a service at once: its queued frames are dropped, and it is reported.
    mutating func stopService(_ service: ServiceType, of handle: SessionHandle, reason: ServiceEndReason, now: NIODeadline) {
        guard let session = self.sessions[handle] else { return }
        let state = session[service: service]
        self.sessions[existing: handle][service: service] = .stopped
        switch state {
        case .running(let running):
            self.transports[running.transport]?.scheduler.removeStream(session: session.id, service: service)
            _ = self.transports[running.transport]?.reassembler.discard(session: session.id, service: service)
            self.emit(.serviceEnded(handle, service, reason))
        case .ending(let ending):
            self.transports[ending.running.transport]?.scheduler.removeStream(session: session.id, service: service)
            _ = self.transports[ending.running.transport]?.reassembler.discard(session: session.id, service: service)
            self.emit(.serviceEnded(handle, service, reason))
        case .starting:
            let failure: ServiceStartFailure = reason == .transportLost ? .transportLost : .sessionEnded
            self.emit(.serviceStartFailed(handle, service, failure))
        case .draining(_, false, _):
            self.emit(.serviceEnded(handle, service, reason))
        default:
            break
        }
    }

    // MARK: - Ending sessions

    /// Ends a session now: every service is reported ended, its queued data frames are dropped
    /// (control frames, such as the EndService or EndServiceACK just queued, still go out), the
    /// id is freed (head unit), and a secondary transport no other session uses is closed.
    mutating func endSessionNow(_ handle: SessionHandle, reason: SessionEndReason, now: NIODeadline) {
        guard let session = self.sessions[handle] else { return }
        let serviceReason: ServiceEndReason = reason == .transportLost ? .transportLost : .sessionEnded
        for service in [ServiceType.audio, .video, .rpc] {
            if service == .rpc, case .starting = session.rpcUpgrade {
                self.emit(.serviceStartFailed(handle, .rpc, reason == .transportLost ? .transportLost : .sessionEnded))
                continue
            }
            if service != .rpc { self.stopService(service, of: handle, reason: serviceReason, now: now) }
        }
        for service in [ServiceType.rpc, .hybrid] {
            self.transports[session.primary]?.scheduler.removeStream(session: session.id, service: service)
        }
        self.transports[session.primary]?.sessions[session.id.rawValue] = nil
        // Half-received messages of the session go, and so does its MTU table row.
        _ = self.transports[session.primary]?.reassembler.discard(session: session.id)
        if let secondary = session.secondary { _ = self.transports[secondary]?.reassembler.discard(session: session.id) }
        // An app may still hold a session of this id on another transport: the head unit gave the
        // id out again (Core's lowest-free order) before the app read this session's end. The
        // table is keyed by id, and that session's MTUs are the ones in it now.
        if !self.sessions.keys.contains(where: { $0 != handle && self.sessions[$0]?.id == session.id }) {
            self.mtus.removeAll(session: session.id)
        }
        if case .connecting(let request) = session.secondaryMachine?.state {
            self.connectRequests[request] = nil
        }
        if let secondary = session.secondary ?? session.secondaryMachine?.transport {
            self.unbindSecondary(secondary, from: session, immediately: reason == .transportLost, now: now)
        }
        if self.role == .headUnit {
            self.sessionsByID[Int(session.id.rawValue)] = nil
            if let hash = session.hashID { self.allocator.release(session.id, hash: hash) }
        }
        self.sessions[handle] = nil
        self.emit(.sessionEnded(handle, reason))
        if self.role == .app, reason != .transportLost {
            self.closePrimaryIfUnused(session.primary, now: now)
        }
    }

    /// Removes a session from its secondary transport; the transport closes (after its queued
    /// frames) when no session uses it any more.
    mutating func unbindSecondary(_ transport: TransportID, from session: SessionRecord, immediately: Bool, now: NIODeadline) {
        guard self.transports.contains(transport) else { return }
        self.transports[existing: transport].sessions[session.id.rawValue] = nil
        guard self.transports[existing: transport].sessions.isEmpty else { return }
        if immediately {
            // The primary is gone: nothing on the secondary is worth waiting for (ARCHITECTURE.md,
            // D-secondary).
            self.close(transport, reason: .primaryClosed, now: now)
        } else {
            self.closeAfterFlush(transport, reason: self.role == .app ? .secondaryNotUsable : .noSessionsLeft, now: now)
        }
    }

    /// App role: closes the primary when its last session is gone (``AppSettings/closePrimaryWithLastSession``).
    mutating func closePrimaryIfUnused(_ transport: TransportID, now: NIODeadline) {
        guard self.configuration.app.closePrimaryWithLastSession, let record = self.transports[transport],
            record.kind == .primary, record.sessions.isEmpty, record.pendingStarts.isEmpty
        else { return }
        self.closeAfterFlush(transport, reason: .noSessionsLeft, now: now)
    }

    /// Closes a transport once its queued frames are written, or after the end timeout.
    mutating func closeAfterFlush(_ transport: TransportID, reason: TransportCloseReason, now: NIODeadline) {
        guard let record = self.transports[transport] else { return }
        if record.scheduler.isEmpty {
            self.close(transport, reason: reason, now: now)
            return
        }
        let deadline = now + self.configuration.serviceEndTimeout
        self.transports[existing: transport].closeAfterFlush = (reason, deadline)
        self.noteDeadline(deadline)
    }

    /// The last queued frame of a transport was written.
    mutating func transportFlushed(_ transport: TransportID) {
        guard let (reason, deadline) = self.transports[transport]?.closeAfterFlush else { return }
        // The time only matters for the events of what closes with it; the deadline is as good as any.
        self.close(transport, reason: reason, now: deadline)
    }

    /// Forgets a transport that closed: sessions whose primary it was end, services on it as a
    /// secondary end (and may move or wait, app role), pending session starts fail.
    mutating func forgetTransport(_ transport: TransportID, closure: TransportClosure, now: NIODeadline) {
        guard let record = self.transports.removeValue(forKey: transport) else { return }
        for handle in record.pendingStarts {
            if self.sessions.removeValue(forKey: handle) != nil {
                self.emit(.sessionStartFailed(handle, .transportLost))
            }
        }
        for handle in record.sessions.values.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let session = self.sessions[handle] else { continue }
            if session.primary == transport {
                self.endSessionNow(handle, reason: .transportLost, now: now)
            } else {
                self.secondaryLost(handle, transport: transport, now: now)
            }
        }
        if let request = record.connectRequest {
            self.connectRequests[request] = nil
        }
        self.emit(.transportClosed(transport, closure))
    }

    /// A session lost its secondary transport: the services on it end; head unit role, the
    /// registration is cleared for every session bound to it (ARCHITECTURE.md, D-secondary); app
    /// role, the secondary machine backs off and the services wait or move.
    mutating func secondaryLost(_ handle: SessionHandle, transport: TransportID, now: NIODeadline) {
        if self.sessions[existing: handle].secondary == transport { self.sessions[existing: handle].secondary = nil }
        for service in [ServiceType.audio, .video] {
            let state = self.sessions[existing: handle][service: service]
            var request: ServiceRequest?
            switch state {
            case .running(let running) where running.transport == transport:
                request = ServiceRequest(isProtected: running.isProtected, video: running.video)
            case .ending(let ending) where ending.running.transport == transport:
                request = ending.restart?.request
            case .starting(let starting) where starting.transport == transport:
                request = starting.request
            default:
                continue
            }
            self.stopService(service, of: handle, reason: .transportLost, now: now)
            if self.role == .app, let request {
                // Still wanted: it waits for the secondary or moves to the primary
                // (ARCHITECTURE.md, D-secondary).
                self.sessions[existing: handle][service: service] = .wanted(request)
            }
        }
        if self.role == .app {
            if self.sessions[existing: handle].secondaryMachine?.transport == transport {
                self.appSecondaryLost(handle, now: now)
            }
            self.placeWaitingServices(of: handle, now: now)
        }
    }

    /// Closes the secondary transports being left once no service of any session runs on them.
    mutating func closeIdleRetiringTransports(now: NIODeadline) {
        for (transport, record) in self.transports where record.retiring != nil {
            let busy = record.sessions.values.contains { handle in
                guard let session = self.sessions[handle] else { return false }
                return [ServiceType.audio, .video].contains { service in
                    switch session[service: service] {
                    case .running(let running): return running.transport == transport
                    case .ending(let ending): return ending.running.transport == transport
                    case .starting(let starting): return starting.transport == transport
                    default: return false
                    }
                }
            }
            if !busy { self.closeAfterFlush(transport, reason: .secondaryNotUsable, now: now) }
        }
    }
}
