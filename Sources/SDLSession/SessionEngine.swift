import NIOCore
import SDLBSON
import SDLProtocol

/// The SDL session engine: the protocol's state machines for one endpoint, app or head unit, with
/// no I/O and no clock inside (protocol spec 5.4.1 §3–§7; where it is silent, the decisions of
/// ARCHITECTURE.md §3).
///
/// The layer that owns the sockets drives it:
/// - inputs are method calls: a transport opened or closed, bytes received on a transport, a
///   session or service to start or end, a message to send, a timer that fired; each takes the
///   current time;
/// - outputs are pulled: ``nextAction()`` returns the events, write requests, connections to
///   open or close and timers to arm that the inputs produced, in order; and
///   ``nextWrite(on:maxBytes:into:)`` hands out the next frames of a transport when its socket can
///   take them, so priorities hold at the socket, not in a queue in front of it
///   (ARCHITECTURE.md, D-scheduler).
///
/// One engine serves every transport of the endpoint: an app's primary link and the secondary
/// transports of its sessions (several sessions on one link for a router), or every connection a
/// head unit accepts, with session ids unique across all of them. The engine parses control
/// frames, never RPCs: the layer above says when a session is registered
/// (``sessionRegistered(_:now:)``).
public struct SessionEngine: Sendable {
    /// The settings the engine was made with.
    public let configuration: SessionConfiguration
    var transports = RecordTable<TransportID, TransportRecord>()
    var sessions = RecordTable<SessionHandle, SessionRecord>()
    /// Head unit role: live sessions by wire id.
    var sessionsByID = [SessionHandle?](repeating: nil, count: 256)
    var allocator: SessionIDAllocator
    var actions = CircularBuffer<SessionAction>(initialCapacity: 16)
    var nextHandle: UInt32 = 1
    var nextConnectRequest: UInt32 = 1
    /// App role: pending connections, by request.
    var connectRequests: [ConnectRequestID: SessionHandle] = [:]
    /// The deadline last handed out with `.armTimer`, if it has not fired yet.
    var armedDeadline: NIODeadline?
    /// Head unit role: the secondary transport offer currently in force.
    var secondaryOffer: SecondaryTransportOffer?
    /// The MTUs negotiated per session, service and direction: the one table every transport's
    /// decoder and reassembler is lent (a session's video may arrive on its secondary).
    var mtus = MTUTable()

    /// An engine with the given settings and no transports.
    public init(configuration: SessionConfiguration) {
        self.configuration = configuration
        self.allocator = SessionIDAllocator(
            policy: configuration.headUnit.sessionIDPolicy, maxSessions: configuration.headUnit.maxSessions,
            seed: configuration.headUnit.hashSeed)
        self.secondaryOffer = configuration.headUnit.secondaryTransport
    }

    var role: SessionRole { self.configuration.role }

    // MARK: - Outputs

    /// The next action the inputs produced, nil when there is none. Drain after every input.
    public mutating func nextAction() -> SessionAction? {
        self.actions.popFirst()
    }

    /// Whether frames wait on the transport.
    public func hasPendingWrites(on transport: TransportID) -> Bool {
        self.transports.contains(transport) && !self.transports[existing: transport].scheduler.isEmpty
    }

    /// The data messages of a service of a session that are queued and not yet wholly handed out
    /// by ``nextWrite(on:maxBytes:into:)`` (a message leaves the count with its last frame), on
    /// whichever transport of the session they wait. The layer above reads it after each write to
    /// bound what it queues: the engine takes every message it is given, so back-pressure is the
    /// caller's (SDLNIO queues the next video chunk only while few wait).
    public func queuedMessages(_ service: ServiceType, of handle: SessionHandle) -> Int {
        guard let session = self.sessions[handle] else { return 0 }
        var count = 0
        for transport in [session.primary, session.secondary] {
            guard let transport, self.transports.contains(transport) else { continue }
            count += self.transports[existing: transport].scheduler.queuedMessages(session: session.id, service: service)
        }
        return count
    }

    /// The bytes of a service's messages of a session that are queued and not yet wholly handed
    /// out (a message's bytes leave with its last frame), on whichever transport of the session
    /// they wait: what a sender bounds to keep its memory bounded.
    public func queuedBytes(_ service: ServiceType, of handle: SessionHandle) -> Int {
        guard let session = self.sessions[handle] else { return 0 }
        var bytes = 0
        for transport in [session.primary, session.secondary] {
            guard let transport, self.transports.contains(transport) else { continue }
            bytes += self.transports[existing: transport].scheduler.queuedBytes(session: session.id, service: service)
        }
        return bytes
    }

    /// The bytes of every message queued on a transport, control frames included (heartbeat and
    /// other ACKs): how far a peer that does not read has let our queue grow.
    public func queuedBytes(on transport: TransportID) -> Int {
        guard self.transports.contains(transport) else { return 0 }
        return self.transports[existing: transport].scheduler.queuedBytes
    }

    /// Writes the next frames of `transport` into `buffer`, highest priority first, until at least
    /// `maxBytes` were written or nothing waits; returns the number of bytes written. Frames are
    /// whole: the last one may go past `maxBytes`. Protected frames are protected here, at write
    /// time, by their session's security provider.
    public mutating func nextWrite(on transport: TransportID, maxBytes: Int, into buffer: inout ByteBuffer) -> Int {
        self.nextWrite(on: transport, maxBytes: maxBytes, into: &buffer, handingOutPayloadsFrom: .max) { _ in }
    }

    /// ``nextWrite(on:maxBytes:into:)`` without copying large payloads: a frame whose payload has
    /// at least `threshold` bytes has its header written into `buffer`, then `buffer` and the
    /// payload (a slice of the message sent) are handed to `handOut` in that order, and `buffer`
    /// starts anew. The bytes on the wire are `handOut`'s pieces in order, then what is left in
    /// `buffer`. For transports that gather writes (a socket's `writev`): audio and video then go
    /// from the sender's buffer to the kernel without a copy.
    public mutating func nextWrite(
        on transport: TransportID, maxBytes: Int, into buffer: inout ByteBuffer, handingOutPayloadsFrom threshold: Int,
        _ handOut: (ByteBuffer) -> Void
    ) -> Int {
        guard self.transports.contains(transport) else { return 0 }
        var written = 0
        while written < maxBytes, let scheduled = self.transports[existing: transport].scheduler.next() {
            var frame = scheduled.frame
            if scheduled.needsProtection {
                guard let protected = self.protectOutgoing(frame, on: transport) else { continue }
                frame.payload = protected
            }
            let before = buffer.writerIndex
            if frame.payload.readableBytes >= threshold {
                FrameEncoder.writeHeader(frame, to: &buffer)
                written += buffer.writerIndex - before + frame.payload.readableBytes
                handOut(buffer)
                handOut(frame.payload)
                buffer = ByteBuffer()
            } else {
                FrameEncoder.write(frame, to: &buffer)
                written += buffer.writerIndex - before
            }
        }
        if self.transports.contains(transport), self.transports[existing: transport].scheduler.isEmpty {
            self.transports[existing: transport].writeRequested = false
            self.transportFlushed(transport)
        }
        return written
    }

    // MARK: - Transports

    /// A transport is open. App role: `.primary` for the link to the head unit,
    /// `.secondary(request)` for a ``SessionAction/connect(_:)``; head unit role: `.accepted`.
    public mutating func transportOpened(_ transport: TransportID, as opening: TransportOpening, now: NIODeadline) throws(SessionError) {
        guard !self.transports.contains(transport) else {
            throw SessionError(.unknownTransport, "\(transport) is already open")
        }
        switch (self.role, opening) {
        case (.headUnit, .accepted):
            self.transports[transport] = TransportRecord(id: transport, kind: .unbound, configuration: self.configuration)
        case (.app, .primary):
            self.transports[transport] = TransportRecord(id: transport, kind: .primary, configuration: self.configuration)
        case (.app, .secondary(let request)):
            guard let handle = self.connectRequests.removeValue(forKey: request) else {
                throw SessionError(.unknownTransport, "no pending connection request \(request)")
            }
            var record = TransportRecord(id: transport, kind: .secondary, configuration: self.configuration)
            record.connectRequest = request
            self.transports[transport] = record
            self.secondaryOpened(transport, for: handle, request: request, now: now)
        default:
            throw SessionError(.wrongRole, "a \(self.role) engine does not take \(opening)")
        }
    }

    /// App role: the connection asked for by a ``SessionAction/connect(_:)`` could not be opened.
    public mutating func connectFailed(_ request: ConnectRequestID, now: NIODeadline) {
        guard let handle = self.connectRequests.removeValue(forKey: request) else { return }
        self.secondaryFailed(handle, request: request, now: now)
    }

    /// The I/O layer saw the transport close (the peer hung up, or an error). Every session that
    /// ran on it as its primary ends; services on it as a secondary end. Ignored for a transport
    /// the engine closed itself.
    public mutating func transportClosed(_ transport: TransportID, now: NIODeadline) {
        guard self.transports.contains(transport) else { return }
        self.forgetTransport(transport, closure: .closedByPeer, now: now)
    }

    /// Whether any session uses the transport (started on it, or registered on it as a
    /// secondary).
    public func hasSessions(on transport: TransportID) -> Bool {
        guard self.transports.contains(transport) else { return false }
        return !self.transports[existing: transport].sessions.isEmpty
    }

    /// Closes a transport on the layer above's request, ending what runs on it as
    /// ``transportClosed(_:now:)`` would, and emits ``SessionAction/close(_:_:)``.
    public mutating func closeTransport(_ transport: TransportID, now: NIODeadline) {
        self.closeTransport(transport, reason: .requested, now: now)
    }

    /// ``closeTransport(_:now:)`` for a reason the layer above names (a peer that stopped
    /// reading, a connection dropped to make room), reported with it.
    public mutating func closeTransport(_ transport: TransportID, reason: TransportCloseReason, now: NIODeadline) {
        guard self.transports.contains(transport) else { return }
        self.close(transport, reason: reason, now: now)
    }

    /// Bytes arrived on a transport: they are decoded, reassembled and acted on at once.
    public mutating func received(_ bytes: ByteBuffer, on transport: TransportID, now: NIODeadline) {
        guard self.transports.contains(transport) else { return }
        self.transports[existing: transport].decoder.append(bytes)
        while self.transports.contains(transport) {
            let frame: ProtocolFrame?
            do {
                frame = try self.transports[existing: transport].decoder.nextFrame(mtus: self.mtus)
            } catch {
                self.malformedInput(error, on: transport, now: now)
                continue
            }
            guard let frame else { break }
            self.handleFrame(frame, on: transport, now: now)
        }
    }

    // MARK: - Sessions

    /// App role: starts a session on the primary transport. Its session-0 StartService is sent
    /// once every session started before it on the transport was answered (ARCHITECTURE.md,
    /// D-negotiation).
    /// ``SessionEvent/sessionStarted(_:_:)`` or ``SessionEvent/sessionStartFailed(_:_:)`` follows.
    public mutating func startSession(on transport: TransportID, now: NIODeadline) throws(SessionError) -> SessionHandle {
        guard self.role == .app else { throw SessionError(.wrongRole, "only an app starts sessions") }
        guard let record = self.transports[transport], record.kind == .primary else {
            throw SessionError(.unknownTransport, "\(transport) is not an open primary transport")
        }
        let handle = self.makeHandle()
        let max = self.configuration.maxProtocolVersion
        self.sessions[handle] = SessionRecord(
            handle: handle, phase: .starting(deadline: nil), primary: transport,
            frameVersion: ProtocolVersion(rawValue: UInt8(min(5, Int(max.major)))), version: max)
        self.transports[existing: transport].pendingStarts.append(handle)
        self.sendNextSessionStart(on: transport, now: now)
        return handle
    }

    /// Ends a session: app role, EndService(RPC) with the session's hash, and the session ends
    /// when it is answered (or after ``SessionConfiguration/serviceEndTimeout``); head unit role,
    /// EndService(RPC) and the session ends at once (a start held for its protection handshake is
    /// NAKed first: every StartService gets its answer).
    public mutating func endSession(_ handle: SessionHandle, now: NIODeadline) throws(SessionError) {
        guard let session = self.sessions[handle] else { throw SessionError(.unknownSession, "\(handle)") }
        switch session.phase {
        case .running:
            break
        case .starting:
            // Not on the wire yet, or not answered: forget it; a late ACK is ended then.
            self.failPendingStart(handle, failure: nil, now: now)
            return
        case .ending:
            return
        }
        self.refuseHeldStarts(of: handle)
        self.sendEndService(.rpc, of: handle, on: session.primary, now: now)
        if self.role == .headUnit {
            self.endSessionNow(handle, reason: .local, now: now)
        } else {
            self.sessions[existing: handle].phase = .ending(deadline: now + self.configuration.serviceEndTimeout)
            self.noteDeadline(now + self.configuration.serviceEndTimeout)
        }
    }

    /// Head unit role: ends a session for `reason` (``SessionEndReason/flood`` after
    /// ``SessionEvent/sessionFlooded(_:)``, say): EndService(RPC), then the session ends at once.
    /// `closingItsConnection`: its connection closes too, once the EndService is written, when no
    /// other session uses it (SDL Core closes a flooding app's connection).
    public mutating func endSession(
        _ handle: SessionHandle, reason: SessionEndReason, closingItsConnection: Bool = false, now: NIODeadline
    ) throws(SessionError) {
        guard self.role == .headUnit else { throw SessionError(.wrongRole, "an app ends its session with endSession(_:now:)") }
        guard let session = self.sessions[handle], session.isRunning else { throw SessionError(.unknownSession, "\(handle)") }
        self.endSessionByHeadUnit(handle, reason: reason, now: now)
        if closingItsConnection, let record = self.transports[session.primary], record.sessions.isEmpty {
            self.closeAfterFlush(session.primary, reason: .noSessionsLeft, now: now)
        }
    }

    /// The layer above saw the session register (RegisterAppInterface succeeded). App role: audio
    /// and video may start from now on. Head unit role: the registration timeout stops.
    public mutating func sessionRegistered(_ handle: SessionHandle, now: NIODeadline) throws(SessionError) {
        guard self.sessions[handle]?.isRunning == true else {
            throw SessionError(.sessionNotRunning, "\(handle) is not running")
        }
        self.sessions[existing: handle].registered = true
        self.sessions[existing: handle].registrationDeadline = nil
    }

    /// The session's state, if the engine still knows it.
    public func sessionInfo(_ handle: SessionHandle) -> SessionInfo? {
        self.sessions[handle]?.info
    }

    /// The service's state as the layer above sees it.
    public func serviceInfo(_ service: ServiceType, of handle: SessionHandle) -> ServiceInfo? {
        guard let session = self.sessions[handle] else { return nil }
        if service == .rpc || service == .hybrid {
            guard session.isRunning else { return nil }
            return ServiceInfo(
                transport: session.primary, slot: .primary, isProtected: session.rpcProtected, mtu: session.mtu, video: nil)
        }
        guard let running = session[service: service].running else { return nil }
        return ServiceInfo(
            transport: running.transport, slot: running.slot, isProtected: running.isProtected, mtu: running.mtu,
            video: running.video)
    }

    /// The handles of the sessions the engine knows (running, starting or ending).
    public var sessionHandles: [SessionHandle] { Array(self.sessions.keys) }

    // MARK: - Messages

    /// Queues a data message (RPC, hybrid, audio or video) of a running service. It is fragmented
    /// at the service's MTU (less the security provider's overhead when protected) as it is
    /// written. Returns the message id the frames carry.
    @discardableResult
    public mutating func send(
        _ payload: ByteBuffer, on service: ServiceType, of handle: SessionHandle, now: NIODeadline
    ) throws(SessionError) -> MessageID {
        guard self.sessions.contains(handle) else { throw SessionError(.unknownSession, "\(handle)") }
        // The record is read in place, field by field: copying it costs more than the rest of a send.
        let route = try self.sessions[existing: handle].sendRoute(for: service)
        guard payload.readableBytes > 0, payload.readableBytes <= self.configuration.protocolLimits.maxMessageSize else {
            throw SessionError(
                .invalidMessage,
                "a message of \(payload.readableBytes) bytes (1...\(self.configuration.protocolLimits.maxMessageSize) allowed)")
        }
        let messageID = self.sessions[existing: handle].takeMessageID()
        var limit = self.mtus.sendPayloadLimit(
            version: route.version, session: route.id, service: service, limits: self.configuration.protocolLimits)
        if route.isProtected, let provider = self.sessions[existing: handle].security.provider {
            limit = max(1, provider.maxPlaintextSize(fittingIn: limit))
        }
        do {
            let fragmenter = try MessageFragmenter(
                payload: payload, version: route.version, serviceType: service, sessionID: route.id,
                messageID: MessageID(messageID), encrypted: route.isProtected, maxPayloadPerFrame: limit)
            self.enqueue(
                OutgoingMessage(fragmenter, isProtected: route.isProtected), session: route.id, service: service, frameType: .single,
                on: route.transport)
        } catch {
            throw SessionError(.invalidMessage, "\(error)")
        }
        return MessageID(messageID)
    }

    // MARK: - Timers

    /// The timer armed by the last ``SessionAction/armTimer(_:)`` fired (or any time: an early call
    /// is harmless). Runs whatever is due at `now`.
    public mutating func timerFired(now: NIODeadline) {
        self.armedDeadline = nil
        self.runTimers(now: now)
        if let next = self.earliestDeadline() {
            self.noteDeadline(next)
        }
    }

    // MARK: - Internal helpers shared by the roles

    mutating func makeHandle() -> SessionHandle {
        defer { self.nextHandle &+= 1 }
        return SessionHandle(rawValue: self.nextHandle)
    }

    mutating func emit(_ event: SessionEvent) {
        self.actions.append(.event(event))
    }

    mutating func anomaly(
        _ code: Anomaly.Code, session: SessionHandle? = nil, transport: TransportID? = nil, _ detail: String
    ) {
        self.emit(.anomaly(Anomaly(code, session: session, transport: transport, detail)))
    }

    /// Arms the timer for `deadline` unless an earlier one is armed.
    mutating func noteDeadline(_ deadline: NIODeadline) {
        if let armed = self.armedDeadline, armed <= deadline { return }
        self.armedDeadline = deadline
        self.actions.append(.armTimer(deadline))
    }

    mutating func enqueue(_ message: OutgoingMessage, session: SessionID, service: ServiceType, frameType: FrameType, on transport: TransportID) {
        guard self.transports.contains(transport) else { return }
        self.transports[existing: transport].scheduler.enqueue(message, session: session, service: service, frameType: frameType)
        if !self.transports[existing: transport].writeRequested {
            self.transports[existing: transport].writeRequested = true
            self.actions.append(.write(transport))
        }
    }

    /// Queues a control frame (never fragmented). `eBit` sets the header's E bit (a protected
    /// start, or its ACK); `protectPayload` passes the payload through the session's security
    /// provider as it is queued (only a head unit's StartServiceACK with E=1: an E=1 control frame
    /// never carries a clear payload, ARCHITECTURE.md, D-security).
    mutating func sendControl(
        _ info: ControlFrameInfo, service: ServiceType, session: SessionID, version: ProtocolVersion, messageID: UInt32,
        payload: ByteBuffer = ByteBuffer(), eBit: Bool = false, protectPayload: Bool = false, on transport: TransportID
    ) {
        var payload = payload
        if protectPayload && payload.readableBytes > 0 {
            // Now, not at write time: the session may end before the frame is written, taking its
            // security context, and the answer must still go out (ARCHITECTURE.md, D-answers).
            // Control frames go ahead of everything queued, so protecting them now keeps the
            // records in wire order.
            guard let protected = self.protect(payload, session: session, on: transport) else { return }
            payload = protected
        }
        let fragmenter = try! MessageFragmenter(
            payload: payload, version: version, serviceType: service, sessionID: session, messageID: MessageID(messageID),
            control: info, encrypted: eBit && version.hasMessageID,
            maxPayloadPerFrame: Int(UInt32.max))
        self.enqueue(
            OutgoingMessage(fragmenter, isProtected: false), session: session,
            service: service, frameType: .control, on: transport)
    }

    /// The largest payload per frame the session sends on a service: the MTU its peer gave,
    /// less the header (send conservatively, protocol spec 5.4.1 §2.4.1).
    func sendPayloadLimit(service: ServiceType, session: SessionRecord) -> Int {
        self.mtus.sendPayloadLimit(
            version: session.frameVersion, session: session.id, service: service, limits: self.configuration.protocolLimits)
    }

    /// Records an MTU a StartServiceACK gave (app role: what we may send) or one we advertised
    /// (head unit role: what we accept), for the services it covers.
    mutating func setMTU(_ mtu: Int64?, session: SessionID, services: [ServiceType], direction: MTUTable.Direction) {
        guard let mtu, mtu > 0 else { return }
        for service in services {
            self.mtus[session, service, direction] = Int(clamping: mtu)
        }
    }

    /// The session that owns frames with this wire id on this transport.
    func sessionHandle(_ id: SessionID, on transport: TransportID) -> SessionHandle? {
        guard self.transports.contains(transport) else { return nil }
        return self.transports[existing: transport].sessions[id.rawValue]
    }

    /// Closes a transport the engine gave up on: forgets it, ends what ran on it, and asks the
    /// I/O layer to close it.
    mutating func close(_ transport: TransportID, reason: TransportCloseReason, now: NIODeadline) {
        guard self.transports.contains(transport) else { return }
        self.actions.append(.close(transport, reason))
        self.forgetTransport(transport, closure: .closedByEngine(reason), now: now)
    }
}
