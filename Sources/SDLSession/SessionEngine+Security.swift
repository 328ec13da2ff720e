import NIOCore
import SDLProtocol

extension SessionEngine {
    /// Head unit role (the TLS client): first handshake message, as a "Send Handshake Data"
    /// request (protocol spec 5.4.1 §7.2).
    mutating func beginHandshake(of handle: SessionHandle, for service: ServiceType, now: NIODeadline) {
        let sequence = self.sessions[existing: handle].security.nextSequence
        self.sessions[existing: handle].security.nextSequence &+= 1
        self.sessions[existing: handle].security.state = .handshaking(service: service, sequence: sequence)
        self.stepHandshake(of: handle, input: nil, sequence: sequence, now: now)
    }

    /// Feeds the provider and sends what it produces; a finished client ACKs the services that
    /// waited for it.
    mutating func stepHandshake(of handle: SessionHandle, input: ByteBuffer?, sequence: UInt32, now: NIODeadline) {
        let step: HandshakeStep
        do {
            step = try self.sessions[existing: handle].security.provider!.handshake(input)
        } catch {
            self.sendInternalError(error.code, error.detail, of: handle, sequence: sequence)
            self.handshakeFailed(handle, now: now)
            return
        }
        let type: SecurityQueryType = self.role == .headUnit ? .request : .response
        switch step {
        case .send(let bytes):
            self.sendSecurityQuery(type, id: .sendHandshakeData, sequence: sequence, binary: bytes, of: handle)
        case .finished(let bytes):
            if let bytes, bytes.readableBytes > 0 {
                self.sendSecurityQuery(type, id: .sendHandshakeData, sequence: sequence, binary: bytes, of: handle)
            }
            if self.role == .headUnit {
                self.sessions[existing: handle].security.state = .established
                self.answerProtectedStarts(of: handle, protected: true, now: now)
            }
        }
    }

    /// A query on the control service (a Single frame of service 0): handshake data or an internal
    /// error (protocol spec 5.4.1 §7).
    mutating func handleSecurityQuery(_ message: ProtocolMessage, of handle: SessionHandle, on transport: TransportID, now: NIODeadline) {
        let query: SecurityQuery
        do {
            query = try SecurityQuery(parsing: message.payload)
        } catch {
            self.emit(.protocolError(transport, error))
            return
        }
        let header = query.header
        if header.queryID == .sendInternalError {
            self.anomaly(.unexpectedSecurityQuery, session: handle, transport: transport, "peer's internal error: \(String(buffer: query.json))")
            if case .handshaking = self.sessions[existing: handle].security.state {
                self.handshakeFailed(handle, now: now)
            } else {
                self.securityFailed(handle, now: now)
            }
            return
        }
        guard header.queryID == .sendHandshakeData else {
            self.anomaly(.unexpectedSecurityQuery, session: handle, transport: transport, "query id \(header.queryID)")
            self.sendInternalError(.invalidQueryID, "unknown query id \(header.queryID)", of: handle, sequence: header.sequenceNumber)
            return
        }
        switch self.role {
        case .app:
            // The head unit's request; Core before 8.0 sent it as a notification (protocol
            // spec 5.4.1 §5.1.1.3.1).
            guard header.queryType == .request || header.queryType == .notification else {
                self.anomaly(.unexpectedSecurityQuery, session: handle, transport: transport, "handshake data of type \(header.queryType)")
                return
            }
            guard let factory = self.configuration.makeSecurityProvider else {
                self.sendInternalError(.notSupported, "security is not supported", of: handle, sequence: header.sequenceNumber)
                return
            }
            if self.sessions[existing: handle].security.provider == nil {
                self.sessions[existing: handle].security.provider = factory(handle)
            }
            if case .none = self.sessions[existing: handle].security.state {
                self.sessions[existing: handle].security.state = .handshaking(service: .control, sequence: header.sequenceNumber)
            }
            // The answer echoes the request's sequential number (protocol spec 5.4.1 §5.1.1.2.1).
            self.stepHandshake(of: handle, input: query.binaryData, sequence: header.sequenceNumber, now: now)
        case .headUnit:
            guard case .handshaking = self.sessions[existing: handle].security.state, header.queryType == .response else {
                self.anomaly(.unexpectedSecurityQuery, session: handle, transport: transport, "handshake data with no handshake running")
                return
            }
            let sequence = self.sessions[existing: handle].security.nextSequence
            self.sessions[existing: handle].security.nextSequence &+= 1
            self.stepHandshake(of: handle, input: query.binaryData, sequence: sequence, now: now)
        }
    }

    /// Head unit role: answers every start that waited for the handshake.
    mutating func answerProtectedStarts(of handle: SessionHandle, protected: Bool, now: NIODeadline) {
        for service in [ServiceType.rpc, .audio, .video] {
            guard case .starting(let starting) = self.sessions[handle]?[service: service], starting.handshaking else { continue }
            if protected {
                self.headUnitAnswerStart(service, of: handle, starting: starting, protected: true, now: now)
            } else {
                self.headUnitProtectionFailed(service, of: handle, starting: starting, now: now)
            }
        }
    }

    /// The handshake failed: the provider is reset; a head unit answers the waiting starts (E=0 or
    /// NAK), an app waits for the head unit's answer.
    mutating func handshakeFailed(_ handle: SessionHandle, now: NIODeadline) {
        self.resetSecurity(of: handle)
        if self.role == .headUnit {
            self.answerProtectedStarts(of: handle, protected: false, now: now)
        }
    }

    /// An established context failed (a frame that does not unprotect, a peer's internal error):
    /// every protected service stops (protocol spec 5.4.1 §7.3), the RPC service goes on
    /// unprotected.
    mutating func securityFailed(_ handle: SessionHandle, now: NIODeadline) {
        guard self.sessions.contains(handle) else { return }
        self.resetSecurity(of: handle)
        if self.sessions[existing: handle].rpcProtected {
            self.sessions[existing: handle].rpcProtected = false
            self.emit(.serviceEnded(handle, .rpc, .securityFailure))
        }
        for service in [ServiceType.audio, .video] {
            guard let running = self.sessions[existing: handle][service: service].running, running.isProtected else { continue }
            self.sendEndService(service, of: handle, on: running.transport, now: now)
            self.stopService(service, of: handle, reason: .securityFailure, now: now)
        }
    }

    mutating func resetSecurity(of handle: SessionHandle) {
        self.sessions[existing: handle].security.state = .none
        self.sessions[existing: handle].security.provider?.reset()
    }

    mutating func sendSecurityQuery(
        _ type: SecurityQueryType, id: SecurityQueryID, sequence: UInt32, json: ByteBuffer = ByteBuffer(), binary: ByteBuffer,
        of handle: SessionHandle
    ) {
        let session = self.sessions[existing: handle]
        let query = SecurityQuery(
            header: SecurityQueryHeader(queryType: type, queryID: id, sequenceNumber: sequence, jsonSize: UInt32(json.readableBytes)),
            json: json, binaryData: binary)
        var payload = ByteBuffer()
        try! query.write(to: &payload)
        // Handshake queries are Single frames of the control service, never protected (protocol
        // spec 5.4.1 §7.2).
        let fragmenter = try! MessageFragmenter(
            payload: payload, version: session.frameVersion, serviceType: .control, sessionID: session.id,
            messageID: MessageID(self.sessions[existing: handle].takeMessageID()), maxPayloadPerFrame: Int(UInt32.max))
        self.enqueue(OutgoingMessage(fragmenter, isProtected: false), session: session.id, service: .control, frameType: .single, on: session.primary)
    }

    /// "Send Internal Error": a notification with JSON `{"id": code, "text": …}` and the code as
    /// one binary byte (protocol spec 5.4.1 §7.3).
    mutating func sendInternalError(_ code: InternalErrorCode, _ text: String, of handle: SessionHandle, sequence: UInt32) {
        var json = ByteBuffer()
        json.writeString("{\"id\":\(code.rawValue),\"text\":\"")
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": json.writeString("\\\"")
            case "\\": json.writeString("\\\\")
            case _ where scalar.value < 0x20: json.writeString("\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16))
            default: json.writeString(String(scalar))
            }
        }
        json.writeString("\"}")
        self.sendSecurityQuery(.notification, id: .sendInternalError, sequence: sequence, json: json, binary: ByteBuffer(bytes: [code.rawValue]), of: handle)
    }

    /// Protects an outgoing frame's payload; a failure ends the session's protected services.
    mutating func protectOutgoing(_ frame: ProtocolFrame, on transport: TransportID) -> ByteBuffer? {
        self.protect(frame.payload, session: frame.header.sessionID, on: transport)
    }

    /// Protects a payload of a session with its security provider; nil, reported, when it has
    /// none or protecting fails.
    mutating func protect(_ payload: ByteBuffer, session id: SessionID, on transport: TransportID) -> ByteBuffer? {
        guard let handle = self.sessionHandle(id, on: transport),
            self.sessions[handle]?.security.provider != nil
        else {
            self.anomaly(.unprotectFailed, transport: transport, "a protected frame for session \(id) without a security context; dropped")
            return nil
        }
        do {
            return try self.sessions[existing: handle].security.provider!.protect(payload)
        } catch {
            self.anomaly(.unprotectFailed, session: handle, transport: transport, "protect failed: \(error)")
            self.sendInternalError(.encryptionFailed, error.detail, of: handle, sequence: 0)
            return nil
        }
    }

    /// Unprotects an incoming frame's payload. Without an established context, or when it fails,
    /// the frame is dropped, the peer is told with Internal Error 6 (or 3 without a provider) and
    /// the session's protected services stop (protocol spec 5.4.1 §7.3; ARCHITECTURE.md,
    /// D-security: never a crash).
    mutating func unprotectIncoming(_ payload: ByteBuffer, of handle: SessionHandle, on transport: TransportID, now: NIODeadline) -> ByteBuffer? {
        if self.role == .headUnit, transport != self.sessions[existing: handle].primary, !self.sessions[existing: handle].secondaryProven {
            // A secondary registered without the session's hash id may be another connection's:
            // what it cannot unprotect is dropped and counted against it, and the session's
            // protection stays as it is.
            guard self.sessions[existing: handle].security.provider != nil, case .established = self.sessions[existing: handle].security.state,
                let clear = try? self.sessions[existing: handle].security.provider!.unprotect(payload)
            else {
                self.anomaly(.unprotectFailed, session: handle, transport: transport, "a protected frame on an unproven secondary transport that does not unprotect; dropped")
                self.countMalformed(on: transport, now: now)
                return nil
            }
            return clear
        }
        guard self.sessions[existing: handle].security.provider != nil, case .established = self.sessions[existing: handle].security.state else {
            self.anomaly(.unprotectFailed, session: handle, transport: transport, "a protected frame without a security context; dropped")
            self.sendInternalError(
                self.configuration.makeSecurityProvider == nil ? .notSupported : .serviceNotProtected,
                "no security context", of: handle, sequence: 0)
            return nil
        }
        do {
            return try self.sessions[existing: handle].security.provider!.unprotect(payload)
        } catch {
            self.anomaly(.unprotectFailed, session: handle, transport: transport, "unprotect failed: \(error)")
            self.sendInternalError(.decryptionFailed, error.detail, of: handle, sequence: 0)
            self.securityFailed(handle, now: now)
            return nil
        }
    }
}
