import NIOCore
import SDLBSON
import SDLProtocol

extension SessionEngine {
    // MARK: - Inputs only a head unit takes

    /// Head unit role: changes the secondary transport offer (an address came up or went away) and
    /// sends a TransportEventUpdate to every session at 5.1.0 or later (protocol spec 5.4.1 §4.6.2;
    /// ARCHITECTURE.md, D-transport-events). nil withdraws the offer: sessions get an empty
    /// address.
    public mutating func updateSecondaryTransport(_ offer: SecondaryTransportOffer?, now: NIODeadline) throws(SessionError) {
        guard self.role == .headUnit else { throw SessionError(.wrongRole, "only a head unit offers secondary transports") }
        self.secondaryOffer = offer
        for handle in self.sessions.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let session = self.sessions[handle], session.isRunning, session.version >= .secondaryTransports else { continue }
            self.sendTransportEventUpdate(to: session, offer: offer ?? SecondaryTransportOffer(tcpAddress: "", tcpPort: nil))
        }
    }

    // MARK: - StartService

    mutating func headUnitStartService(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let messageID = header.messageID?.rawValue ?? 0
        if header.serviceType == .rpc && header.sessionID.rawValue == 0 {
            self.headUnitStartSession(frame, on: transport, now: now)
            return
        }
        let service = header.serviceType
        guard let handle = self.sessionsByID[Int(header.sessionID.rawValue)], let session = self.sessions[handle], session.isRunning
        else {
            self.sendStartServiceNAK(
                service: service, session: header.sessionID, version: min(header.version, .v5), fullVersion: nil,
                messageID: messageID, refusal: .unknownSession, on: transport)
            return
        }
        let refuse = { (engine: inout SessionEngine, refusal: Refusal) in
            engine.sendStartServiceNAK(
                service: service, session: session.id, version: session.frameVersion, fullVersion: session.version,
                messageID: messageID, refusal: refusal, on: transport)
            if refusal == .alreadyStarted {
                // The service runs (or starts) all the same: the layer above hears of no failure.
                engine.anomaly(.unexpectedControlFrame, session: handle, transport: transport, "StartService(\(service)), which is already started; refused")
            } else {
                engine.emit(.serviceStartFailed(handle, service, .refused(refusal)))
            }
        }
        // A start on a connection that does not carry the session, or of the RPC service
        // anywhere but on its primary, is answered on that connection and counted against it;
        // nothing of it reaches the session (another app's connection may be naming it).
        let foreign = { (engine: inout SessionEngine, refusal: Refusal) in
            engine.foreignFrame(on: transport, "StartService(\(service)) of session \(header.sessionID) on a transport that may not start it", now: now)
            guard engine.transports.contains(transport) else { return }
            engine.sendStartServiceNAK(
                service: service, session: session.id, version: session.frameVersion, fullVersion: session.version,
                messageID: messageID, refusal: refusal, on: transport)
        }
        let slot: TransportSlot
        if transport == session.primary {
            slot = .primary
        } else if transport == session.secondary {
            slot = .secondary
        } else {
            foreign(&self, .transportNotRegistered)
            return
        }
        // E on a version 1 header means "compressed"; Core ignores it there (ARCHITECTURE.md,
        // D-security).
        let wantsProtection = header.isEncrypted
        switch service {
        case .rpc:
            guard slot == .primary else {
                foreign(&self, .notAllowedOnTransport)
                return
            }
            guard wantsProtection, !session.rpcProtected, !session.rpcUpgrade.isActive else {
                refuse(&self, .alreadyStarted)
                return
            }
            self.headUnitAcceptStart(
                .rpc, of: handle, starting: .init(
                    request: ServiceRequest(isProtected: true), transport: transport, slot: slot, deadline: nil,
                    messageID: messageID, handshaking: false), now: now)
        case .audio, .video:
            if session.frameVersion.rawValue < 3 {
                refuse(&self, .versionTooLow)
            } else if !session.registered {
                refuse(&self, .notRegistered)
            } else if session[service: service].isActive {
                refuse(&self, .alreadyStarted)
            } else if !self.headUnitAllows(service, on: slot, session: session) {
                refuse(&self, .notAllowedOnTransport)
            } else {
                var video: VideoParameters?
                if service == .video {
                    var payload = LenientPayload(frame.payload)
                    video = VideoParameters(
                        height: payload.integer("height").flatMap { Int32(exactly: $0) },
                        width: payload.integer("width").flatMap { Int32(exactly: $0) },
                        videoProtocol: payload.string("videoProtocol"), videoCodec: payload.string("videoCodec"))
                    var rejected: [String] = []
                    if let value = video?.videoProtocol, !self.configuration.headUnit.videoProtocols.contains(value) {
                        rejected.append("videoProtocol")
                    }
                    if let value = video?.videoCodec, !self.configuration.headUnit.videoCodecs.contains(value) {
                        rejected.append("videoCodec")
                    }
                    if !rejected.isEmpty {
                        refuse(&self, .rejectedParameters(rejected))
                        return
                    }
                }
                var starting = ServiceState.Starting(
                    request: ServiceRequest(isProtected: wantsProtection, video: video), transport: transport, slot: slot,
                    deadline: nil, messageID: messageID, handshaking: false)
                guard self.configuration.headUnit.approvesMediaStarts else {
                    self.headUnitAcceptStart(service, of: handle, starting: starting, now: now)
                    return
                }
                starting.awaitingApproval = true
                starting.deadline = now + self.configuration.serviceStartTimeout
                self.sessions[existing: handle][service: service] = .starting(starting)
                self.noteDeadline(starting.deadline!)
                self.emit(.serviceStartRequested(handle, service, video))
            }
        default:
            refuse(&self, .unsupportedService)
        }
    }

    /// Ends the running session that has waited longest without registering, if it has waited
    /// at least ``HeadUnitSettings/unregisteredSessionGrace``.
    mutating func reclaimIdleSession(now: NIODeadline) {
        let grace = self.configuration.headUnit.unregisteredSessionGrace
        let timeout = self.configuration.headUnit.registrationTimeout ?? .zero
        var oldest: (handle: SessionHandle, started: NIODeadline)?
        for (handle, session) in self.sessions where session.isRunning && !session.registered {
            guard let deadline = session.registrationDeadline else { continue }
            let started = deadline - timeout
            if started + grace <= now, oldest.map({ started < $0.started }) ?? true {
                oldest = (handle, started)
            }
        }
        guard let oldest else { return }
        self.anomaly(.sessionReclaimed, session: oldest.handle, "every session id was taken: the oldest unregistered session gives its id up")
        self.endSessionByHeadUnit(oldest.handle, reason: .registrationTimeout, now: now)
    }

    /// Head unit role: starts an audio or video service that waits for approval
    /// (``SessionEvent/serviceStartRequested(_:_:_:)``): the ACK goes out now, or after the
    /// protection handshake for a protected start.
    public mutating func approveServiceStart(_ service: ServiceType, of handle: SessionHandle, now: NIODeadline) throws(SessionError) {
        guard self.role == .headUnit else { throw SessionError(.wrongRole, "only a head unit approves service starts") }
        guard let session = self.sessions[handle] else { throw SessionError(.unknownSession, "\(handle)") }
        guard case .starting(var starting) = session[service: service], starting.awaitingApproval else {
            throw SessionError(.serviceNotRunning, "no \(service) start of \(handle) waits for approval")
        }
        starting.awaitingApproval = false
        starting.deadline = nil
        self.headUnitAcceptStart(service, of: handle, starting: starting, now: now)
    }

    /// Head unit role: refuses an audio or video start that waits for approval: StartServiceNAK
    /// with `reason` (from protocol 5.3.0), and ``SessionEvent/serviceStartFailed(_:_:_:)``.
    public mutating func refuseServiceStart(
        _ service: ServiceType, of handle: SessionHandle, reason: String, now: NIODeadline
    ) throws(SessionError) {
        guard self.role == .headUnit else { throw SessionError(.wrongRole, "only a head unit refuses service starts") }
        guard let session = self.sessions[handle] else { throw SessionError(.unknownSession, "\(handle)") }
        guard case .starting(let starting) = session[service: service], starting.awaitingApproval else {
            throw SessionError(.serviceNotRunning, "no \(service) start of \(handle) waits for approval")
        }
        self.refuseAwaitingStart(service, of: handle, starting: starting, reason: reason)
    }

    mutating func refuseAwaitingStart(_ service: ServiceType, of handle: SessionHandle, starting: ServiceState.Starting, reason: String) {
        let session = self.sessions[existing: handle]
        self.sessions[existing: handle][service: service] = .stopped
        let refusal = Refusal.refusedByHeadUnit(String(reason.prefix(1000)))
        if self.transports.contains(starting.transport) {
            self.sendStartServiceNAK(
                service: service, session: session.id, version: session.frameVersion, fullVersion: session.version,
                messageID: starting.messageID, refusal: refusal, on: starting.transport)
        }
        self.emit(.serviceStartFailed(handle, service, .refused(refusal)))
    }

    /// Whether the offer lets `service` run on `slot` for this session: without an offer, or below
    /// 5.1.0, only the primary.
    func headUnitAllows(_ service: ServiceType, on slot: TransportSlot, session: SessionRecord) -> Bool {
        guard let offer = self.secondaryOffer, session.version >= .secondaryTransports else { return slot == .primary }
        let list = service == .audio ? offer.audioServiceTransports : offer.videoServiceTransports
        return list.contains(slot)
    }

    /// Starts a service the head unit accepted: at once, or after a protection handshake.
    mutating func headUnitAcceptStart(_ service: ServiceType, of handle: SessionHandle, starting: ServiceState.Starting, now: NIODeadline) {
        guard starting.request.isProtected else {
            self.headUnitAnswerStart(service, of: handle, starting: starting, protected: false, now: now)
            return
        }
        switch self.sessions[existing: handle].security.state {
        case .established:
            self.headUnitAnswerStart(service, of: handle, starting: starting, protected: true, now: now)
        case .handshaking:
            // A second protected start joins the running handshake, as in SDL Core
            // (ARCHITECTURE.md, D-security).
            var joined = starting
            joined.handshaking = true
            joined.deadline = now + self.configuration.serviceStartTimeout
            self.sessions[existing: handle][service: service] = .starting(joined)
            self.noteDeadline(joined.deadline!)
        case .none:
            guard let factory = self.configuration.makeSecurityProvider else {
                self.anomaly(.unprotectFailed, session: handle, "a protected \(service) start without a security provider")
                self.headUnitProtectionFailed(service, of: handle, starting: starting, now: now)
                return
            }
            if self.sessions[existing: handle].security.provider == nil {
                self.sessions[existing: handle].security.provider = factory(handle)
            }
            var handshaking = starting
            handshaking.handshaking = true
            handshaking.deadline = now + self.configuration.serviceStartTimeout
            self.sessions[existing: handle][service: service] = .starting(handshaking)
            self.noteDeadline(handshaking.deadline!)
            self.beginHandshake(of: handle, for: service, now: now)
        }
    }

    /// The handshake for a protected start failed: RPC and a forced service are refused, any other
    /// one starts unprotected (ACK with E=0), as Core does (ARCHITECTURE.md, D-security).
    mutating func headUnitProtectionFailed(_ service: ServiceType, of handle: SessionHandle, starting: ServiceState.Starting, now: NIODeadline) {
        guard let session = self.sessions[handle] else { return }
        if self.configuration.headUnit.forceProtectedServices.contains(service) || service == .rpc {
            self.sessions[existing: handle][service: service] = .stopped
            self.sendStartServiceNAK(
                service: service, session: session.id, version: session.frameVersion, fullVersion: session.version,
                messageID: starting.messageID, refusal: .protectionFailed, on: starting.transport)
            self.emit(.serviceStartFailed(handle, service, .refused(.protectionFailed)))
        } else {
            self.anomaly(.protectionDowngraded, session: handle, "\(service) starts unprotected after a failed handshake")
            self.headUnitAnswerStart(service, of: handle, starting: starting, protected: false, now: now)
        }
    }

    /// Sends the StartServiceACK of a started service and reports it.
    mutating func headUnitAnswerStart(
        _ service: ServiceType, of handle: SessionHandle, starting: ServiceState.Starting, protected: Bool, now: NIODeadline
    ) {
        let session = self.sessions[existing: handle]
        // As for the session: the MTU is advertised, and so in force, from version 5 only.
        let mtu = session.frameVersion >= .v5 ? self.configuration.headUnit.advertisedMTU : nil
        var payload = ByteBuffer()
        if session.frameVersion >= .v5 {
            let video = starting.request.video
            let ack = StartServiceACKPayload(
                mtu: mtu, height: video?.height, width: video?.width, videoProtocol: video?.videoProtocol,
                videoCodec: video?.videoCodec)
            try! ack.write(to: &payload)
        }
        // An E=1 control frame never carries a clear payload (ARCHITECTURE.md, D-security).
        self.sendControl(
            .startServiceACK, service: service, session: session.id, version: session.frameVersion,
            messageID: starting.messageID, payload: payload, eBit: protected, protectPayload: protected,
            on: starting.transport)
        if service == .rpc {
            self.sessions[existing: handle].rpcProtected = protected
            self.sessions[existing: handle].rpcUpgrade = .stopped
            self.emit(.serviceStarted(handle, .rpc, self.serviceInfo(.rpc, of: handle)!))
            return
        }
        let running = ServiceState.Running(
            transport: starting.transport, slot: starting.slot, isProtected: protected, mtu: mtu, video: starting.request.video)
        self.sessions[existing: handle][service: service] = .running(running)
        self.emit(
            .serviceStarted(
                handle, service,
                ServiceInfo(transport: running.transport, slot: running.slot, isProtected: protected, mtu: mtu, video: running.video)))
    }

    // MARK: - Negotiation (protocol spec 5.4.1 §4.2; ARCHITECTURE.md, D-negotiation)

    mutating func headUnitStartSession(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let messageID = header.messageID?.rawValue ?? 0
        guard self.transports[existing: transport].kind != .secondary else {
            self.sendStartServiceNAK(
                service: .rpc, session: SessionID(0), version: min(header.version, .v5), fullVersion: nil,
                messageID: messageID, refusal: .notAllowedOnTransport, on: transport)
            return
        }
        let ours = self.configuration.maxProtocolVersion
        // What the app offers: a version 5 offer is a BSON protocolVersion ≥ 5.0.0 (v1 header, the
        // spec's way) or a header of version 5 or more (the JavaScript suite's way, Core accepts it).
        var offered: SDLVersion?
        var payload = LenientPayload(frame.payload)
        var unusable = false
        if let text = payload.string("protocolVersion") {
            if let version = SDLVersion(parsing: text), version.major >= 5 {
                offered = version
            } else {
                unusable = true
            }
        } else if frame.payload.readableBytes > 0 {
            // BSON without a usable protocolVersion, or bytes that are not BSON: "not supplied".
            unusable = true
        }
        if offered == nil && header.version.rawValue >= 5 {
            // A version 5 header counts as version 5 support, as in SDL Core 8.2 (ARCHITECTURE.md,
            // D-negotiation).
            offered = ours
        }
        if !payload.problems.isEmpty {
            self.anomaly(.malformedControlPayload, transport: transport, "StartService(RPC): " + payload.problems.joined(separator: "; "))
        }
        let coreCompatible = self.configuration.headUnit.negotiationPolicy == .coreCompatible
        if unusable && offered == nil && coreCompatible {
            // Core: ParseFullVersion fails → NAK in the request's header version, without payload.
            self.sendControl(.startServiceNAK, service: .rpc, session: SessionID(0), version: header.version, messageID: messageID, on: transport)
            return
        }
        let speaksV5 = offered != nil && ours.major >= 5
        let perConnection = self.configuration.headUnit.maxSessionsPerConnection
        if self.transports[existing: transport].sessions.count >= perConnection {
            // One connection may not take every session id: others must still find one.
            self.anomaly(.sessionsPerConnectionLimit, transport: transport, "more than \(perConnection) sessions on one connection")
            self.sendStartServiceNAK(
                service: .rpc, session: SessionID(0), version: speaksV5 ? .v5 : .v4, fullVersion: offered,
                messageID: messageID, refusal: .tooManySessionsOnConnection, on: transport)
            return
        }
        if self.allocator.isExhausted {
            // Every id is taken: the session that has waited longest without registering gives its
            // id up, so that an app can always start one however many idle sessions others hold.
            self.reclaimIdleSession(now: now)
        }
        guard let (id, hash) = self.allocator.allocate() else {
            self.emit(.sessionLimitReached(transport))
            if coreCompatible {
                self.sendControl(.startServiceNAK, service: .rpc, session: SessionID(0), version: .v1, messageID: 0, on: transport)
            } else {
                self.sendStartServiceNAK(
                    service: .rpc, session: SessionID(0), version: speaksV5 ? .v5 : .v4, fullVersion: offered,
                    messageID: messageID, refusal: .noFreeSessionID, on: transport)
            }
            return
        }
        let negotiated = speaksV5 ? min(offered!, ours) : SDLVersion(major: min(4, ours.major))
        let frameVersion = ProtocolVersion(rawValue: UInt8(min(speaksV5 ? 5 : 4, Int(ours.major))))
        let handle = self.makeHandle()
        var session = SessionRecord(handle: handle, phase: .running, primary: transport, frameVersion: frameVersion, version: negotiated)
        session.id = id
        session.hashID = hash
        session.versionFromFirstFrame = !speaksV5
        // Only a version 5 ACK tells the app our MTU (its BSON `mtu`); below it the app sends at
        // its version's default MTU, so that is what we accept.
        session.mtu = speaksV5 ? self.configuration.headUnit.advertisedMTU : nil
        session.flood = self.configuration.headUnit.floodLimit.map(RateMeter.init)
        if let timeout = self.configuration.headUnit.registrationTimeout {
            session.registrationDeadline = now + timeout
            self.noteDeadline(now + timeout)
        }
        let offer = negotiated >= .secondaryTransports ? self.secondaryOffer : nil
        let vehicle = negotiated >= .vehicleType ? self.configuration.headUnit.vehicleInfo : VehicleInfo()
        session.info = SessionInfo(
            sessionID: id, version: negotiated, frameVersion: frameVersion, hashID: hash, mtu: session.mtu, transport: transport,
            secondaryTransports: offer?.transportTypes ?? [], audioServiceTransports: offer?.audioServiceTransports,
            videoServiceTransports: offer?.videoServiceTransports, vehicle: vehicle, authToken: nil)
        self.sessions[handle] = session
        self.sessionsByID[Int(id.rawValue)] = handle
        // What we advertise is what we accept, on every service of the session.
        self.setMTU(session.mtu, session: id, services: [.control, .rpc, .hybrid, .audio, .video], direction: .receive)
        self.transports[existing: transport].kind = .primary
        self.transports[existing: transport].sessions[id.rawValue] = handle

        var ackPayload = ByteBuffer()
        if speaksV5 {
            let ack = StartServiceACKPayload(
                protocolVersion: negotiated.description, hashID: Int32(bitPattern: hash),
                mtu: self.configuration.headUnit.advertisedMTU,
                secondaryTransports: negotiated >= .secondaryTransports && offer != nil ? offer!.transportTypes : nil,
                audioServiceTransports: offer?.audioServiceTransports.map(\.rawValue),
                videoServiceTransports: offer?.videoServiceTransports.map(\.rawValue),
                make: vehicle.make, model: vehicle.model, modelYear: vehicle.modelYear, trim: vehicle.trim,
                systemSoftwareVersion: vehicle.systemSoftwareVersion, systemHardwareVersion: vehicle.systemHardwareVersion)
            try! ack.write(to: &ackPayload)
        } else if frameVersion.hasMessageID {
            RawHashID.write(hash, to: &ackPayload)
        }
        self.sendControl(.startServiceACK, service: .rpc, session: id, version: frameVersion, messageID: messageID, payload: ackPayload, on: transport)
        if let offer {
            // After the ACK in the session's control queue, so never ahead of it (ARCHITECTURE.md,
            // D-scheduler).
            self.sendTransportEventUpdate(to: self.sessions[existing: handle], offer: offer)
        }
        if self.configuration.heartbeat.origination == .always && frameVersion.rawValue >= 3 {
            self.startWatching(handle, now: now)
        }
        self.emit(.sessionStarted(handle, session.info!))
    }

    mutating func sendTransportEventUpdate(to session: SessionRecord, offer: SecondaryTransportOffer) {
        var payload = ByteBuffer()
        let update = TransportEventUpdatePayload(
            tcpIPAddress: offer.tcpAddress, tcpPort: offer.tcpAddress.isEmpty ? nil : offer.tcpPort)
        try! update.write(to: &payload)
        self.sendControl(
            .transportEventUpdate, service: .control, session: session.id, version: session.frameVersion,
            messageID: self.sessions[existing: session.handle].takeMessageID(), payload: payload, on: session.primary)
    }

    /// A StartServiceNAK: BSON `{rejectedParams, reason}` at version 5 (`reason` from 5.3.0),
    /// no payload below.
    mutating func sendStartServiceNAK(
        service: ServiceType, session: SessionID, version: ProtocolVersion, fullVersion: SDLVersion?, messageID: UInt32,
        refusal: Refusal, on transport: TransportID
    ) {
        self.sendNAK(
            .startServiceNAK, service: service, session: session, version: version, fullVersion: fullVersion,
            messageID: messageID, rejectedParams: refusal.rejectedParams, reason: refusal.description, on: transport)
    }

    mutating func sendNAK(
        _ info: ControlFrameInfo, service: ServiceType, session: SessionID, version: ProtocolVersion, fullVersion: SDLVersion?,
        messageID: UInt32, rejectedParams: [String], reason: String, on transport: TransportID
    ) {
        var payload = ByteBuffer()
        if version >= .v5 {
            let withReason = (fullVersion ?? .nakReason) >= .nakReason
            let nak = ServiceNAKPayload(
                rejectedParams: rejectedParams.isEmpty ? nil : rejectedParams, reason: withReason ? reason : nil)
            try! nak.write(to: &payload)
        }
        self.sendControl(info, service: service, session: session, version: version, messageID: messageID, payload: payload, on: transport)
    }

    // MARK: - RegisterSecondaryTransport (spec 5.4.1 §4.6.1; ARCHITECTURE.md, D-secondary)

    /// Takes a secondary transport away from a session: its services there end, and the
    /// connection closes when it carries no other session.
    mutating func detachSecondary(_ handle: SessionHandle, from transport: TransportID, now: NIODeadline) {
        guard let session = self.sessions[handle] else { return }
        for service in [ServiceType.audio, .video] {
            if let running = session[service: service].running, running.transport == transport {
                self.stopService(service, of: handle, reason: .transportLost, now: now)
            }
        }
        self.sessions[existing: handle].secondary = nil
        self.sessions[existing: handle].secondaryProven = false
        guard self.transports.contains(transport) else { return }
        self.transports[existing: transport].sessions[session.id.rawValue] = nil
        if self.transports[existing: transport].sessions.isEmpty {
            self.close(transport, reason: .requested, now: now)
        }
    }

    mutating func headUnitRegisterSecondary(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let sid = frame.header.sessionID
        let refuse = { (engine: inout SessionEngine, version: ProtocolVersion, reason: String) in
            var payload = ByteBuffer()
            try! RegisterSecondaryTransportNAKPayload(reason: reason).write(to: &payload)
            engine.sendControl(.registerSecondaryTransportNAK, service: .control, session: sid, version: version, messageID: 2, payload: payload, on: transport)
        }
        guard sid.rawValue != 0 else {
            refuse(&self, .v5, "RegisterSecondaryTransport MUST include a non-zero session ID")
            return
        }
        guard let handle = self.sessionsByID[Int(sid.rawValue)], let session = self.sessions[handle], session.isRunning else {
            refuse(&self, .v5, "RegisterSecondaryTransport session ID not found")
            return
        }
        if transport == session.primary {
            // A running SDL Core 8.2 wedges on this (ARCHITECTURE.md, D-secondary); refuse it and
            // keep serving.
            refuse(&self, session.frameVersion, "RegisterSecondaryTransport must be sent on a secondary transport")
            return
        }
        if self.transports[existing: transport].kind == .primary {
            refuse(&self, session.frameVersion, "RegisterSecondaryTransport on a connection that is another session's primary")
            return
        }
        guard session.version >= .secondaryTransports, self.secondaryOffer != nil else {
            refuse(&self, session.frameVersion, "secondary transport not enabled for this session")
            return
        }
        // Proof of ownership: the session's hash id, which only its app learned (in the
        // StartServiceACK on its primary). Without one a registration is taken only where the
        // settings allow it, and gives way to a proven one.
        var payload = LenientPayload(frame.payload)
        let offered = payload.integer("hashId").map { UInt32(truncatingIfNeeded: $0) }
        if let offered, offered != session.hashID {
            self.foreignFrame(on: transport, "RegisterSecondaryTransport for session \(sid) with a wrong hash id", now: now)
            refuse(&self, session.frameVersion, "Wrong hash_id for session \(sid)")
            return
        }
        let proven = offered != nil
        guard proven || self.configuration.headUnit.secondaryTransportProof == .hashIDWhenGiven else {
            self.foreignFrame(on: transport, "RegisterSecondaryTransport for session \(sid) without its hash id", now: now)
            refuse(&self, session.frameVersion, "RegisterSecondaryTransport must carry the session's hashId")
            return
        }
        if let registered = session.secondary {
            guard proven, !session.secondaryProven else {
                refuse(&self, session.frameVersion, "RegisterSecondaryTransport session ID has already been registered")
                return
            }
            // An unproven registration (perhaps another connection claiming the session) gives
            // way: what ran on it ends, and it no longer carries the session. The same
            // connection proving itself keeps what runs on it (detaching it would close it
            // under this very registration).
            if registered != transport {
                self.detachSecondary(handle, from: registered, now: now)
            }
        }
        self.sessions[existing: handle].secondaryProven = proven
        self.sessions[existing: handle].secondary = transport
        self.transports[existing: transport].kind = .secondary
        self.transports[existing: transport].sessions[sid.rawValue] = handle
        self.sendControl(.registerSecondaryTransportACK, service: .control, session: sid, version: session.frameVersion, messageID: 2, on: transport)
    }

    // MARK: - Ending sessions from the head unit

    /// Ends a session on the head unit's initiative (flood, timeouts, violations): EndService(RPC)
    /// on its primary, then everything is released at once.
    mutating func endSessionByHeadUnit(_ handle: SessionHandle, reason: SessionEndReason, now: NIODeadline) {
        guard let session = self.sessions[handle], session.isRunning else { return }
        self.refuseHeldStarts(of: handle)
        self.sendEndService(.rpc, of: handle, on: session.primary, now: now)
        self.endSessionNow(handle, reason: reason, now: now)
    }

    /// Starts held for a protection handshake still get their one answer (ARCHITECTURE.md,
    /// D-answers) when their service or session ends first: a NAK, queued before the EndService or
    /// EndServiceACK that ends them, so that the app reads the answers in the order of its requests
    /// (its session id may be given out again right after). Whoever ends the service reports it.
    /// Head unit role only: an app's starts are its own requests.
    mutating func refuseHeldStarts(of handle: SessionHandle, services: [ServiceType] = [.rpc, .audio, .video]) {
        guard self.role == .headUnit, let session = self.sessions[handle] else { return }
        for service in services {
            guard case .starting(let starting) = session[service: service] else { continue }
            self.sendStartServiceNAK(
                service: service, session: session.id, version: session.frameVersion, fullVersion: session.version,
                messageID: starting.messageID, refusal: .protectionFailed, on: starting.transport)
        }
    }
}
