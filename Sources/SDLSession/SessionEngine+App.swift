import NIOCore
import SDLBSON
import SDLProtocol

extension SessionEngine {
    // MARK: - Session start (protocol spec 5.4.1 §4.2; ARCHITECTURE.md, D-negotiation)

    /// Sends the session-0 StartService of the first pending session on the transport, unless one
    /// is already on its way: answers carry no correlation, so they are matched in order, one at a
    /// time (ARCHITECTURE.md, D-negotiation). A version 5 app sends a version 1 header with BSON
    /// `{protocolVersion}`; older ones send it without payload.
    mutating func sendNextSessionStart(on transport: TransportID, now: NIODeadline) {
        guard let record = self.transports[transport], !record.startSent, let handle = record.pendingStarts.first else { return }
        self.transports[existing: transport].startSent = true
        let ours = self.configuration.maxProtocolVersion
        var payload = ByteBuffer()
        if ours.major >= 5 {
            try! StartServicePayload(protocolVersion: ours.description).write(to: &payload)
        }
        self.sendControl(.startService, service: .rpc, session: SessionID(0), version: .v1, messageID: 0, payload: payload, on: transport)
        let deadline = now + self.configuration.app.sessionStartTimeout
        self.sessions[handle]?.phase = .starting(deadline: deadline)
        self.noteDeadline(deadline)
    }

    /// Forgets a session that has not started: before its StartService was sent it leaves the
    /// queue; after, it is remembered as cancelled and ended as soon as its ACK comes.
    mutating func failPendingStart(_ handle: SessionHandle, failure: SessionStartFailure?, now: NIODeadline) {
        guard let session = self.sessions[handle] else { return }
        let transport = session.primary
        guard var record = self.transports[transport], let index = record.pendingStarts.firstIndex(of: handle) else { return }
        let wasSent = index == record.pendingStarts.startIndex && record.startSent
        if wasSent && failure == nil {
            // Cancelled while its StartService is out: the ACK will be ended at once.
            self.sessions[existing: handle].phase = .ending(deadline: now + self.configuration.app.sessionStartTimeout)
            return
        }
        record.pendingStarts.remove(at: index)
        if wasSent { record.startSent = false }
        self.transports[transport] = record
        self.sessions[handle] = nil
        if let failure {
            self.emit(.sessionStartFailed(handle, failure))
        } else {
            self.emit(.sessionEnded(handle, .local))
        }
        self.sendNextSessionStart(on: transport, now: now)
    }

    /// The StartServiceACK or NAK of the session-0 StartService on its way.
    mutating func sessionStartAnswered(_ frame: ProtocolFrame, isACK: Bool, on transport: TransportID, now: NIODeadline) {
        let header = frame.header
        let handle = self.transports[existing: transport].pendingStarts.removeFirst()
        self.transports[existing: transport].startSent = false
        defer { self.sendNextSessionStart(on: transport, now: now) }
        guard let pending = self.sessions[handle] else { return }
        var payload = LenientPayload(frame.payload)
        guard isACK else {
            // Any header version, with or without payload (Core sends a bare v1 NAK:
            // ARCHITECTURE.md, D-negotiation).
            let content = header.version >= .v5 || payload.isBSON ? payload.nakContent() : NAKContent()
            self.sessions[handle] = nil
            self.emit(.sessionStartFailed(handle, .rejected(content)))
            self.closePrimaryIfUnused(transport, now: now)
            return
        }
        let id = header.sessionID
        guard id.rawValue != 0, self.transports[existing: transport].sessions[id.rawValue] == nil else {
            self.anomaly(.unsolicitedAnswer, session: handle, transport: transport, "StartServiceACK with session id \(id), which is 0 or taken")
            self.sessions[handle] = nil
            self.emit(.sessionStartFailed(handle, .rejected(NAKContent(reason: "StartServiceACK with unusable session id \(id)"))))
            self.closePrimaryIfUnused(transport, now: now)
            return
        }
        let ours = self.configuration.maxProtocolVersion
        let frameMajor = min(Int(header.version.rawValue), Int(ours.major), 5)
        let frameVersion = ProtocolVersion(rawValue: UInt8(max(1, frameMajor)))
        var version = SDLVersion(major: UInt16(frameMajor))
        var hash: UInt32?
        var session = pending
        var info = SessionInfo(
            sessionID: id, version: version, frameVersion: frameVersion, hashID: nil, mtu: nil, transport: transport,
            secondaryTransports: [], audioServiceTransports: nil, videoServiceTransports: nil, vehicle: VehicleInfo(), authToken: nil)
        if frameMajor >= 5 {
            var peer = SDLVersion(major: 5)
            if let element = payload.document?["protocolVersion"] {
                if let text = element.stringValue, let parsed = SDLVersion(parsing: text) {
                    peer = parsed
                    if Int(parsed.major) != Int(header.version.rawValue) {
                        self.anomaly(
                            .versionMismatch, session: handle, transport: transport,
                            "header version \(header.version.rawValue), protocolVersion \"\(text)\": frames use \(header.version.rawValue)")
                    }
                } else {
                    self.anomaly(.unusableProtocolVersion, session: handle, transport: transport, "protocolVersion is \(element.type): read as 5.0.0")
                }
            }
            version = min(ours, peer)
            if Int(version.major) < frameMajor { version = SDLVersion(major: UInt16(frameMajor)) }
            hash = payload.integer("hashId").map { UInt32(truncatingIfNeeded: $0) }
            info.mtu = payload.integer("mtu")
            info.secondaryTransports = payload.strings("secondaryTransports") ?? []
            var listProblems: [String] = []
            info.audioServiceTransports = TransportSlot.list(payload.integers("audioServiceTransports"), key: "audioServiceTransports", problems: &listProblems)
            info.videoServiceTransports = TransportSlot.list(payload.integers("videoServiceTransports"), key: "videoServiceTransports", problems: &listProblems)
            if !listProblems.isEmpty {
                self.anomaly(.oddServiceTransportList, session: handle, transport: transport, listProblems.joined(separator: "; "))
            }
            info.vehicle = VehicleInfo(
                make: payload.string("make"), model: payload.string("model"), modelYear: payload.string("modelYear"),
                trim: payload.string("trim"), systemSoftwareVersion: payload.string("systemSoftwareVersion"),
                systemHardwareVersion: payload.string("systemHardwareVersion"))
            info.authToken = payload.string("authToken")
            if !payload.problems.isEmpty {
                self.anomaly(.malformedControlPayload, session: handle, transport: transport, "StartServiceACK: " + payload.problems.joined(separator: "; "))
            }
        } else if frameVersion.hasMessageID, frame.payload.readableBytes >= 4 {
            hash = try? RawHashID.read(frame.payload)
        }
        info.version = version
        info.hashID = hash
        session.id = id
        session.frameVersion = frameVersion
        session.version = version
        session.hashID = hash
        session.mtu = info.mtu
        session.info = info
        let cancelled: Bool
        if case .ending = pending.phase { cancelled = true } else { cancelled = false }
        session.phase = .running
        let usable = version >= .secondaryTransports && info.secondaryTransports.contains("TCP_WIFI")
        session.secondaryMachine = SecondaryMachine(offered: usable)
        self.sessions[handle] = session
        self.transports[existing: transport].sessions[id.rawValue] = handle
        // The RPC ACK's mtu bounds what we send on the primary's services until A/V ACKs say more.
        self.setMTU(info.mtu, session: id, services: [.control, .rpc, .hybrid, .audio, .video], direction: .send)
        self.emit(.sessionStarted(handle, info))
        if cancelled {
            try? self.endSession(handle, now: now)
            return
        }
        if usable {
            self.emit(.secondaryTransport(handle, session.secondaryMachine!.publicState))
        }
        if self.configuration.heartbeat.origination == .always && frameVersion.rawValue >= 3 {
            self.startWatching(handle, now: now)
        }
        if let early = self.transports[existing: transport].earlyTransportEvent, early.session == id {
            self.transports[existing: transport].earlyTransportEvent = nil
            self.receivedTransportEvent(early.payload, of: handle, on: transport, now: now)
        }
    }

    // MARK: - TransportEventUpdate (spec 5.4.1 §4.6.2; ARCHITECTURE.md, D-transport-events)

    mutating func appTransportEventUpdate(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        let sid = frame.header.sessionID
        guard self.transports[existing: transport].kind == .primary else {
            self.anomaly(.oddTransportEventUpdate, transport: transport, "TransportEventUpdate on a secondary transport; ignored (primary only)")
            return
        }
        guard let handle = self.sessionHandle(sid, on: transport) else {
            if self.transports[existing: transport].startSent {
                // Before the ACK of the session it names (a reordering head unit): kept for after it.
                self.transports[existing: transport].earlyTransportEvent = (sid, frame.payload)
            } else {
                self.anomaly(.oddTransportEventUpdate, transport: transport, "TransportEventUpdate for unknown session \(sid)")
            }
            return
        }
        self.receivedTransportEvent(frame.payload, of: handle, on: transport, now: now)
    }

    /// Reads a TransportEventUpdate and holds it for the debounce interval: the last of a burst wins
    /// (Core's emulated adapters sent three in a row: ARCHITECTURE.md, D-transport-events).
    mutating func receivedTransportEvent(_ bytes: ByteBuffer, of handle: SessionHandle, on transport: TransportID, now: NIODeadline) {
        var payload = LenientPayload(bytes)
        let address = payload.string("tcpIpAddress")
        let port = payload.integer("tcpPort").flatMap { Int32(exactly: $0) }
        if !payload.problems.isEmpty {
            self.anomaly(.malformedControlPayload, session: handle, transport: transport, "TransportEventUpdate: " + payload.problems.joined(separator: "; "))
        }
        guard self.sessions[handle]?.secondaryMachine != nil, self.sessions[existing: handle].secondaryMachine!.state != .disabled else {
            return
        }
        if address == nil && port != nil {
            self.anomaly(.oddTransportEventUpdate, session: handle, transport: transport, "tcpPort without tcpIpAddress; ignored")
            return
        }
        let deadline = now + self.configuration.app.transportEventDebounce
        self.sessions[existing: handle].secondaryMachine!.pendingUpdate = (address, port, deadline)
        self.noteDeadline(deadline)
    }

    /// Acts on a TransportEventUpdate once the debounce interval is over.
    mutating func applyTransportEvent(_ handle: SessionHandle, address: String?, port: Int32?, now: NIODeadline) {
        guard var machine = self.sessions[handle]?.secondaryMachine else { return }
        let changed = machine.address != address || machine.port != port
        machine.address = address
        machine.port = port
        self.sessions[existing: handle].secondaryMachine = machine
        if address == "" {
            // TCP unavailable: end what runs on the secondary, close it, no retries
            // (ARCHITECTURE.md, D-transport-events).
            self.dropSecondary(handle, to: .unavailable, now: now)
            return
        }
        switch machine.state {
        case .registered, .registering, .connecting:
            guard changed else { return }
            // A new address: leave the old one and connect to the new one (ARCHITECTURE.md,
            // D-transport-events).
            self.dropSecondary(handle, to: .idle, now: now)
        case .rejected, .unavailable, .backoff:
            self.sessions[existing: handle].secondaryMachine!.state = .idle
            self.sessions[existing: handle].secondaryMachine!.rejections = 0
            self.sessions[existing: handle].secondaryMachine!.failures = 0
            self.emit(.secondaryTransport(handle, .configured(address: address, port: port)))
        case .idle:
            self.emit(.secondaryTransport(handle, .configured(address: address, port: port)))
        case .disabled:
            return
        }
        self.connectSecondaryIfNeeded(handle, now: now)
        self.placeWaitingServices(of: handle, now: now)
    }

    /// Leaves the secondary transport on purpose: EndService for what runs on it (best effort),
    /// then the transport closes; the services wait or move (ARCHITECTURE.md, D-secondary).
    mutating func dropSecondary(_ handle: SessionHandle, to state: SecondaryMachine.State, now: NIODeadline) {
        guard var machine = self.sessions[handle]?.secondaryMachine else { return }
        switch machine.state {
        case .connecting(let request):
            self.connectRequests[request] = nil
        case .registered(let transport), .registering(let transport, _):
            // Best effort: EndService for each service on it, answered within a second, and only
            // then may the service start elsewhere (never two of a kind at once on the head unit).
            let session = self.sessions[existing: handle]
            let deadline = now + min(.seconds(1), self.configuration.serviceEndTimeout)
            var ending = false
            for service in [ServiceType.audio, .video] {
                guard case .running(let running) = session[service: service], running.transport == transport else { continue }
                self.sendEndService(service, of: handle, on: transport, now: now)
                let request = ServiceRequest(isProtected: running.isProtected, video: running.video)
                let reason: ServiceEndReason = self.slots(for: service, of: session).contains(.primary) ? .moving(to: .primary) : .transportLost
                self.sessions[existing: handle][service: service] = .ending(.init(running: running, deadline: deadline, restart: (request, reason)))
                ending = true
            }
            self.sessions[existing: handle].secondary = nil
            if ending {
                self.transports[transport]?.retiring = deadline
                self.noteDeadline(deadline)
            } else {
                self.transports[transport]?.sessions[session.id.rawValue] = nil
                self.closeAfterFlush(transport, reason: .secondaryNotUsable, now: now)
            }
        default:
            break
        }
        machine = self.sessions[existing: handle].secondaryMachine!
        machine.state = state
        self.sessions[existing: handle].secondaryMachine = machine
        self.emit(.secondaryTransport(handle, machine.publicState))
        self.placeWaitingServices(of: handle, now: now)
    }

    // MARK: - Connecting and registering the secondary transport

    /// A service wants the secondary transport: connect if the machine is idle with an address.
    mutating func wantSecondary(_ handle: SessionHandle, now: NIODeadline) {
        guard let machine = self.sessions[handle]?.secondaryMachine, machine.state == .idle, machine.hasUsableAddress else { return }
        self.connectSecondary(handle, now: now)
    }

    /// Eager policy, or a wanted service: connect when idle with an address.
    mutating func connectSecondaryIfNeeded(_ handle: SessionHandle, now: NIODeadline) {
        guard let session = self.sessions[handle], let machine = session.secondaryMachine, machine.state == .idle,
            machine.hasUsableAddress
        else { return }
        if self.configuration.app.secondaryConnection == .eager || self.wantsSecondary(session) {
            self.connectSecondary(handle, now: now)
        }
    }

    /// Whether a service waits for the secondary or runs on the primary while preferring it.
    func wantsSecondary(_ session: SessionRecord) -> Bool {
        for service in [ServiceType.audio, .video] {
            let list = self.slots(for: service, of: session)
            guard list.contains(.secondary) else { continue }
            switch session[service: service] {
            case .wanted: return true
            case .running(let running) where running.slot == .primary && list.first == .secondary: return true
            case .starting(let starting) where starting.slot == .primary && list.first == .secondary: return true
            default: continue
            }
        }
        return false
    }

    mutating func connectSecondary(_ handle: SessionHandle, now: NIODeadline) {
        let machine = self.sessions[existing: handle].secondaryMachine!
        let request = ConnectRequestID(rawValue: self.nextConnectRequest)
        self.nextConnectRequest &+= 1
        self.connectRequests[request] = handle
        self.sessions[existing: handle].secondaryMachine!.state = .connecting(request)
        self.actions.append(.connect(ConnectRequest(id: request, session: handle, host: machine.address!, port: machine.port!)))
        self.emit(.secondaryTransport(handle, .connecting))
    }

    /// The secondary transport is open: RegisterSecondaryTransport goes first on it, with the
    /// session's id, version and message id 1 (protocol spec 5.4.1 §3.1.6).
    mutating func secondaryOpened(_ transport: TransportID, for handle: SessionHandle, request: ConnectRequestID, now: NIODeadline) {
        guard let session = self.sessions[handle], session.isRunning,
            case .connecting(request) = session.secondaryMachine?.state
        else {
            self.close(transport, reason: .secondaryNotUsable, now: now)
            return
        }
        self.transports[existing: transport].sessions[session.id.rawValue] = handle
        let deadline = now + self.configuration.app.secondaryRegisterTimeout
        self.sessions[existing: handle].secondaryMachine!.state = .registering(transport, deadline: deadline)
        self.noteDeadline(deadline)
        // The session's hash id proves to the head unit that this connection belongs to the app
        // that owns the session (a head unit that does not read it, SDL Core's, ignores it).
        var payload = ByteBuffer()
        if session.frameVersion >= .v5, let hash = session.hashID {
            try! EndServicePayload(hashID: Int32(bitPattern: hash)).write(to: &payload)
        }
        self.sendControl(
            .registerSecondaryTransport, service: .control, session: session.id, version: session.frameVersion, messageID: 1, payload: payload,
            on: transport)
        self.emit(.secondaryTransport(handle, .registering(transport)))
    }

    /// The connection could not be opened: back off.
    mutating func secondaryFailed(_ handle: SessionHandle, request: ConnectRequestID, now: NIODeadline) {
        guard case .connecting(request) = self.sessions[handle]?.secondaryMachine?.state else { return }
        self.backOffSecondary(handle, now: now)
    }

    mutating func appRegisterSecondaryAnswer(_ frame: ProtocolFrame, on transport: TransportID, now: NIODeadline) {
        guard let handle = self.sessionHandle(frame.header.sessionID, on: transport),
            case .registering(transport, _) = self.sessions[handle]?.secondaryMachine?.state
        else {
            self.anomaly(.unsolicitedAnswer, transport: transport, "RegisterSecondaryTransport answer nobody waits for")
            return
        }
        if frame.header.frameInfo == ControlFrameInfo.registerSecondaryTransportACK.rawValue {
            self.sessions[existing: handle].secondaryMachine!.state = .registered(transport)
            self.sessions[existing: handle].secondaryMachine!.failures = 0
            self.sessions[existing: handle].secondaryMachine!.rejections = 0
            self.sessions[existing: handle].secondary = transport
            self.emit(.secondaryTransport(handle, .registered(transport)))
            self.secondaryRegistered(handle, now: now)
            return
        }
        var payload = LenientPayload(frame.payload)
        let reason = payload.string("reason")
        self.sessions[existing: handle].secondaryMachine!.rejections += 1
        self.emit(.secondaryTransport(handle, .rejected(reason: reason)))
        // No frame goes on a refused transport (protocol spec 5.4.1 §3.1.6).
        self.transports[transport]?.sessions[frame.header.sessionID.rawValue] = nil
        if self.sessions[existing: handle].secondaryMachine!.rejections > self.configuration.app.secondaryMaxRejections {
            self.sessions[existing: handle].secondaryMachine!.state = .rejected(reason: reason)
        } else {
            self.backOffSecondary(handle, now: now)
        }
        self.close(transport, reason: .secondaryNotUsable, now: now)
        self.placeWaitingServices(of: handle, now: now)
    }

    /// Registered: waiting services start on it, and services that prefer it move to it
    /// (EndService on the primary, then StartService on the secondary: never two at once).
    mutating func secondaryRegistered(_ handle: SessionHandle, now: NIODeadline) {
        for service in [ServiceType.audio, .video] {
            let session = self.sessions[existing: handle]
            guard case .running(let running) = session[service: service], running.slot == .primary,
                self.slots(for: service, of: session).first == .secondary
            else { continue }
            self.sendEndService(service, of: handle, on: running.transport, now: now)
            let deadline = now + self.configuration.serviceEndTimeout
            let request = ServiceRequest(isProtected: running.isProtected, video: running.video)
            self.sessions[existing: handle][service: service] = .ending(.init(running: running, deadline: deadline, restart: (request, .moving(to: .secondary))))
            self.noteDeadline(deadline)
        }
        self.placeWaitingServices(of: handle, now: now)
    }

    /// The session's secondary transport closed or failed.
    mutating func appSecondaryLost(_ handle: SessionHandle, now: NIODeadline) {
        guard let machine = self.sessions[handle]?.secondaryMachine else { return }
        switch machine.state {
        case .registered, .registering, .connecting:
            self.backOffSecondary(handle, now: now)
        default:
            break
        }
    }

    /// Waits before the next attempt: the delay doubles per failure, up to the cap.
    mutating func backOffSecondary(_ handle: SessionHandle, now: NIODeadline) {
        guard var machine = self.sessions[handle]?.secondaryMachine else { return }
        machine.failures += 1
        let attempt = max(machine.failures, machine.rejections)
        let settings = self.configuration.app
        var delay = settings.secondaryRetryDelay
        for _ in 1..<attempt where delay < settings.secondaryRetryCap { delay = delay + delay }
        delay = min(delay, settings.secondaryRetryCap)
        machine.state = .backoff(attempt: attempt, until: now + delay)
        self.sessions[existing: handle].secondaryMachine = machine
        self.noteDeadline(now + delay)
        self.emit(.secondaryTransport(handle, .backoff(attempt: attempt)))
    }
}
