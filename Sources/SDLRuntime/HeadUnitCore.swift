import Logging
import NIOCore
import SDLProtocol
import SDLRPC
import SDLSession

/// The state of an ``SDLHeadUnitServer`` on its event loop: the driver and engine of every
/// connection, the apps (sessions), and the handler they are given to. Everything an app sends
/// is decoded here and given to the ``SDLHeadUnitLoopHandler`` synchronously; what the handler
/// sends is encoded and handed to the engine at once, in order.
///
/// Memory is bounded whatever an app does: its requests waiting for an answer are capped
/// (``SDLHeadUnitConfiguration/maxPendingRequestsPerApp``), notifications for an app that does
/// not read are dropped beyond ``SDLHeadUnitConfiguration/maxQueuedBytesPerApp``, and the driver
/// stops reading from a connection whose queue passed
/// ``SDLTransportConfiguration/maxQueuedBytesPerTransport`` and closes one whose peer has not
/// read for ``SDLTransportConfiguration/stalledReaderTimeout``.
final class HeadUnitCore: SessionDriverDelegate {
    let driver: SessionDriver
    let configuration: SDLHeadUnitConfiguration
    private(set) var handler: (any SDLHeadUnitLoopHandler)?
    private var apps: [SessionHandle: AppState] = [:]
    private var order: [SessionHandle] = []
    private var shutdownWaiters: [() -> Void] = []
    private var stopReported = false
    private var flushDeadline: Scheduled<Void>?
    private var endingAll = false
    private(set) lazy var context = SDLHeadUnitContext(core: self)

    private final class AppState {
        let info: SessionInfo
        var registered = false
        var registering = false
        /// Requests of the app given to the handler and not answered yet: correlation id to
        /// function. Bounded by ``SDLHeadUnitConfiguration/maxPendingRequestsPerApp``.
        var unanswered: [UInt32: FunctionID] = [:]
        /// Requests the head unit sent to the app, waiting for its response, by correlation id.
        var requestsToApp: [UInt32: RequestToApp] = [:]
        var nextCorrelationID: UInt32 = 1
        var droppedNotifications = 0
        /// Set once the app flooded: its session ends when what was sent to it has left.
        var floodDeadline: Scheduled<Void>?

        init(info: SessionInfo) { self.info = info }
    }

    private struct RequestToApp {
        var completion: (Result<AnyRPCMessage, SDLConnectionError>) -> Void
        var functionID: FunctionID
        var timer: Scheduled<Void>
    }

    init(configuration: SDLHeadUnitConfiguration, eventLoop: any EventLoop, logger: Logger) {
        var session = configuration.session
        session.role = .headUnit
        session.headUnit.approvesMediaStarts = true
        session.headUnit.endsFloodingSessions = false
        self.configuration = configuration
        self.driver = SessionDriver(
            engine: SessionEngine(configuration: session), eventLoop: eventLoop, transportConfiguration: configuration.transport,
            logger: logger)
        self.driver.delegate = self
    }

    /// Gives the core its handler; called once, on the loop, before any connection.
    func start(handler: any SDLHeadUnitLoopHandler) {
        self.handler = handler
        handler.serverStarted(self.context)
    }

    /// Offers the secondary transport once its listener is bound (its port may have been 0), at
    /// the address the configuration names or else the one the listener advertises.
    func offerSecondary(_ listener: any SDLTransportListener) {
        guard let address = listener.advertisedAddress else { return }
        var offer = SecondaryTransportOffer(
            tcpAddress: self.configuration.secondaryAddress ?? address.host,
            tcpPort: Int32(self.configuration.secondaryAdvertisedPort ?? address.port))
        offer.audioServiceTransports = self.configuration.audioServiceTransports
        offer.videoServiceTransports = self.configuration.videoServiceTransports
        try? self.driver.perform { (engine, now) throws(SessionError) in try engine.updateSecondaryTransport(offer, now: now) }
    }

    /// A connection one of the listeners accepted. Beyond ``SDLHeadUnitConfiguration/maxConnections``
    /// the oldest connection that carries no registered app makes room (idle connections cannot
    /// keep a new app out); when every connection carries one, the new one is refused. A
    /// connection that starts no session within ``SDLHeadUnitConfiguration/connectionStartTimeout``
    /// is closed.
    func accept(_ connection: any SDLTransportConnection) {
        if self.connections.count >= max(1, self.configuration.maxConnections) {
            let registered = Set(self.apps.values.filter(\.registered).map(\.info.transport))
            guard let idle = self.connections.first(where: { !registered.contains($0.transport) }) else {
                self.driver.logger.debug("connection refused: every connection carries a registered app")
                connection.start(reportingTo: SDLTransportEvents(driver: self.driver, transport: TransportID(0)), readsPaused: true)
                connection.close(.now)
                return
            }
            self.dropConnection(idle.transport, reason: .tooManyConnections)
        }
        guard let transport = self.driver.adopt(connection, as: .accepted) else { return }
        var timer: Scheduled<Void>?
        if let timeout = self.configuration.connectionStartTimeout {
            timer = self.driver.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
                guard !self.driver.engine.hasSessions(on: transport) else { return }
                self.dropConnection(transport, reason: .noSessionsLeft)
            }
        }
        self.connections.append(Connection(transport: transport, startTimer: timer))
    }

    private struct Connection {
        var transport: TransportID
        var startTimer: Scheduled<Void>?
    }

    /// The accepted connections, oldest first.
    private var connections: [Connection] = []

    private func dropConnection(_ transport: TransportID, reason: TransportCloseReason) {
        try? self.driver.perform { (engine, now) throws(SessionError) in engine.closeTransport(transport, reason: reason, now: now) }
    }

    private func connectionClosed(_ transport: TransportID) {
        guard let index = self.connections.firstIndex(where: { $0.transport == transport }) else { return }
        self.connections[index].startTimer?.cancel()
        self.connections.remove(at: index)
    }

    var connectedHandles: [SessionHandle] { self.order }

    func sessionInfo(of handle: SessionHandle) -> SessionInfo? { self.apps[handle]?.info }

    func isRegistered(_ handle: SessionHandle) -> Bool { self.apps[handle]?.registered ?? false }

    var queuedBytesOnEveryTransport: Int { self.driver.queuedBytesOnEveryTransport }

    func queuedBytes(of handle: SessionHandle) -> Int {
        [ServiceType.rpc, .hybrid, .audio, .video].reduce(0) { $0 + self.driver.engine.queuedBytes($1, of: handle) }
    }

    private func report(_ event: SDLHeadUnitLoopEvent) {
        self.handler?.handle(event)
    }

    // MARK: - Engine events

    func sessionDriver(_ driver: SessionDriver, didOpen transport: TransportID, as opening: TransportOpening) {}

    func sessionDriver(_ driver: SessionDriver, didReport event: SessionEvent) {
        switch event {
        case .sessionStarted(let handle, let info):
            self.apps[handle] = AppState(info: info)
            self.order.append(handle)
            self.report(.appConnected(handle, info))
        case .sessionEnded(let handle, let reason):
            guard let state = self.apps.removeValue(forKey: handle) else { return }
            self.order.removeAll { $0 == handle }
            state.floodDeadline?.cancel()
            let error = SDLConnectionError(.disconnected, "the session ended: \(reason)")
            let requests = state.requestsToApp
            state.requestsToApp.removeAll()
            for (_, request) in requests {
                request.timer.cancel()
                request.completion(.failure(error))
            }
            self.report(.appDisconnected(handle, reason))
        case .sessionFlooded(let handle):
            self.flooded(handle)
        case .unprotectedMessageRefused(let handle, let service, let payload) where service == .rpc:
            // A request marked protected on a session without protection: answered all the same.
            var bytes = payload
            if self.apps[handle] != nil, let header = try? RPCBinaryHeader.read(from: &bytes), header.rpcType == .request {
                self.answer(
                    handle, functionID: header.functionID, correlationID: header.correlationID, failure: .invalidData,
                    info: "the message is marked encrypted, and the session has set no encryption up")
            }
            self.report(.session(event))
        case .serviceStartRequested(let handle, let service, let parameters):
            let decision = self.handler?.decideServiceStart(service, of: handle, parameters: parameters) ?? .accept
            try? self.driver.perform { (engine, now) throws(SessionError) in
                switch decision {
                case .accept: try engine.approveServiceStart(service, of: handle, now: now)
                case .refuse(let reason): try engine.refuseServiceStart(service, of: handle, reason: reason, now: now)
                }
            }
        case .serviceStarted(let handle, let service, let info) where service == .audio || service == .video:
            guard self.apps[handle] != nil else { return }
            self.report(.serviceStarted(handle, service, info))
        case .serviceEnded(let handle, let service, let reason) where service == .audio || service == .video:
            guard self.apps[handle] != nil else { return }
            self.report(.serviceEnded(handle, service, reason))
        case .message(let handle, let message):
            guard let state = self.apps[handle] else { return }
            switch message.service {
            case .rpc, .hybrid:
                // A flooded app's messages after the one that crossed the limit are not handled
                // (what was read with it and after): its session is ending.
                guard state.floodDeadline == nil else { return }
                self.receivedRPC(message.payload, from: handle, state)
            case .audio, .video:
                self.report(.media(message.payload, message.service, from: handle, transport: message.transport))
            default:
                self.report(.session(event))
            }
        case .transportClosed(let transport, _):
            self.connectionClosed(transport)
            self.report(.session(event))
        default:
            self.report(.session(event))
        }
    }

    func sessionDriver(_ driver: SessionDriver, didWriteOn transport: TransportID) {
        for (handle, state) in self.apps where state.floodDeadline != nil && self.queuedBytes(of: handle) == 0 {
            self.endFloodedSession(handle)
        }
        if !self.shutdownWaiters.isEmpty && !self.endingAll {
            self.finishShutdownIfFlushed()
        }
    }

    // MARK: - Flood (SDL Core: the app is told TOO_MANY_REQUESTS, then its session ends)

    private func flooded(_ handle: SessionHandle) {
        guard let state = self.apps[handle], state.floodDeadline == nil else { return }
        // Nothing more of it is read: what it sent next is not the head unit's business.
        self.driver.pauseReads(on: state.info.transport)
        state.floodDeadline = self.driver.eventLoop.assumeIsolated().scheduleTask(in: self.configuration.transport.closeTimeout) {
            self.endFloodedSession(handle)
        }
        self.report(.appFlooded(handle))
        if self.queuedBytes(of: handle) == 0 {
            self.endFloodedSession(handle)
        }
    }

    private func endFloodedSession(_ handle: SessionHandle) {
        guard let state = self.apps[handle], let deadline = state.floodDeadline else { return }
        deadline.cancel()
        try? self.driver.perform { (engine, now) throws(SessionError) in
            // The connection goes too when no other session uses it, as SDL Core closes it.
            try engine.endSession(handle, reason: .flood, closingItsConnection: true, now: now)
        }
    }

    // MARK: - RPCs from apps (read strictly, as SDL Core reads them)

    private func receivedRPC(_ payload: ByteBuffer, from handle: SessionHandle, _ state: AppState) {
        let header: RPCBinaryHeader
        do {
            header = try RPCPayload(parsing: payload).header
        } catch {
            // A binary header that reads but whose JSON size runs past the payload: a request is
            // still answered, as Core answers it.
            var bytes = payload
            if let header = try? RPCBinaryHeader.read(from: &bytes), header.rpcType == .request {
                self.answer(handle, functionID: header.functionID, correlationID: header.correlationID, failure: .invalidData, info: error.detail)
            }
            self.report(.unreadableMessage(handle, RPCError(.invalidPayload, offset: error.offset, error.detail)))
            return
        }
        if Int(header.jsonSize) > self.configuration.maxRPCParametersSize {
            // Refused before it is parsed: one app's huge request never holds up the others.
            let detail = "parameters of \(header.jsonSize) bytes, above the \(self.configuration.maxRPCParametersSize) this head unit reads"
            if header.rpcType == .request {
                self.answer(handle, functionID: header.functionID, correlationID: header.correlationID, failure: .invalidData, info: detail)
            } else if let request = state.requestsToApp.removeValue(forKey: header.correlationID) {
                request.timer.cancel()
                request.completion(.failure(SDLConnectionError(.invalidResponse, detail)))
            }
            self.report(.unreadableMessage(handle, RPCError(.invalidPayload, detail)))
            return
        }
        if header.rpcType == .response || header.rpcType == .erroneousResponse {
            self.receivedResponse(payload, header: header, from: handle, state)
            return
        }
        let message: AnyRPCMessage
        do {
            message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
        } catch {
            if header.rpcType == .request {
                let code: SDLResult = error.code == .unknownFunction ? .unsupportedRequest : .invalidData
                self.answer(handle, functionID: header.functionID, correlationID: header.correlationID, failure: code, info: error.description)
            }
            self.report(.unreadableMessage(handle, error))
            return
        }
        switch header.rpcType {
        case .request:
            self.receivedRequest(message, from: handle, state)
        case .notification:
            guard state.registered else { return }
            self.report(.notification(message, from: handle))
        default:
            self.report(.unreadableMessage(handle, RPCError(.invalidPayload, "a \(header.rpcType) from an app, \(message.functionName)")))
        }
    }

    /// An app's answer to a request of ours, read as requests are; one no request waits for is
    /// reported unreadable.
    private func receivedResponse(_ payload: ByteBuffer, header: RPCBinaryHeader, from handle: SessionHandle, _ state: AppState) {
        guard let request = state.requestsToApp.removeValue(forKey: header.correlationID) else {
            self.report(.unreadableMessage(handle, RPCError(
                .invalidPayload, "a response no request waits for: function \(header.functionID), correlation id \(header.correlationID)")))
            return
        }
        request.timer.cancel()
        do {
            let message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
            guard message.functionID == request.functionID else {
                request.completion(.failure(SDLConnectionError(
                    .invalidResponse, "the response to \(request.functionID) #\(header.correlationID) is a \(message.functionName) response")))
                return
            }
            request.completion(.success(message))
        } catch {
            request.completion(.failure(SDLConnectionError(.invalidResponse, "\(error)")))
        }
    }

    private func receivedRequest(_ message: AnyRPCMessage, from handle: SessionHandle, _ state: AppState) {
        let functionID = message.functionID.rawValue
        let correlationID = message.correlationID
        if message.message is SDLRegisterAppInterfaceRequest {
            guard !state.registered, !state.registering else {
                self.answer(handle, functionID: functionID, correlationID: correlationID, failure: .applicationRegisteredAlready, info: nil)
                return
            }
            state.registering = true
        } else if !state.registered {
            self.answer(handle, functionID: functionID, correlationID: correlationID, failure: .applicationNotRegistered, info: nil)
            return
        }
        guard state.unanswered[correlationID] == nil else {
            // Two answers with one correlation id could not be told apart (SDL-0162).
            self.answer(
                handle, functionID: functionID, correlationID: correlationID, failure: .invalidId,
                info: "correlation id \(correlationID) belongs to a request still waiting for its answer")
            return
        }
        guard state.unanswered.count < self.configuration.maxPendingRequestsPerApp else {
            self.answer(handle, functionID: functionID, correlationID: correlationID, failure: .tooManyPendingRequests, info: nil)
            return
        }
        state.unanswered[correlationID] = message.functionID
        self.report(.request(message, from: handle))
    }

    private func answer(_ handle: SessionHandle, functionID: UInt32, correlationID: UInt32, failure: SDLResult, info: String?) {
        let payload = RPCWire.failureResponse(functionID: functionID, correlationID: correlationID, resultCode: failure, info: info)
        try? self.enqueue(payload, to: handle)
    }

    // MARK: - What the handler does

    func respond(_ response: any RPCMessage, to request: AnyRPCMessage, of handle: SessionHandle) throws(SDLConnectionError) {
        guard let state = self.apps[handle] else { throw SDLConnectionError(.disconnected, "\(handle): the session ended") }
        guard state.unanswered[request.correlationID] == request.functionID else {
            throw SDLConnectionError(
                .alreadyAnswered, "\(request.functionName) #\(request.correlationID) of \(handle) is answered already, or was not received")
        }
        state.unanswered[request.correlationID] = nil
        let payload: ByteBuffer
        do {
            payload = try RPCWire.responsePayload(
                response, answering: request.functionID, correlationID: request.correlationID, format: .json,
                options: self.configuration.sendOptions)
        } catch {
            self.answer(handle, functionID: request.functionID.rawValue, correlationID: request.correlationID, failure: .genericError, info: nil)
            if request.message is SDLRegisterAppInterfaceRequest { state.registering = false }
            throw error
        }
        try self.enqueue(payload, to: handle)
        let success = (response as? any RPCResponse)?.success ?? false
        switch request.message {
        case is SDLRegisterAppInterfaceRequest:
            state.registering = false
            guard success else { return }
            state.registered = true
            try? self.driver.perform { (engine, now) throws(SessionError) in try engine.sessionRegistered(handle, now: now) }
        case is SDLUnregisterAppInterfaceRequest where success:
            state.registered = false
        default:
            break
        }
    }

    func sendNotification(_ message: any RPCMessage, to handle: SessionHandle) throws(SDLConnectionError) -> Bool {
        guard let state = self.apps[handle] else { throw SDLConnectionError(.disconnected, "\(handle): the session ended") }
        // SDL Core's notifications carry 0xFFFFFFFF.
        let payload = try RPCWire.notificationPayload(message, correlationID: .max, format: .json, options: self.configuration.sendOptions)
        if self.driver.engine.queuedBytes(.rpc, of: handle) + payload.readableBytes > self.configuration.maxQueuedBytesPerApp {
            state.droppedNotifications += 1
            self.report(.notificationsDropped(handle, total: state.droppedNotifications))
            return false
        }
        try self.enqueue(payload, to: handle)
        return true
    }

    func sendRequest(
        _ message: any RPCMessage, to handle: SessionHandle, timeout: TimeAmount,
        completion: @escaping (Result<AnyRPCMessage, SDLConnectionError>) -> Void
    ) {
        guard let state = self.apps[handle] else {
            completion(.failure(SDLConnectionError(.disconnected, "\(handle): the session ended")))
            return
        }
        let messageType = type(of: message)
        guard messageType.rpcType == .request else {
            completion(.failure(SDLConnectionError(.invalidMessage, "\(messageType.functionName) \(messageType.rpcType) is not a request")))
            return
        }
        var correlationID = state.nextCorrelationID
        while correlationID == 0 || correlationID == .max || state.requestsToApp[correlationID] != nil { correlationID &+= 1 }
        state.nextCorrelationID = correlationID &+ 1
        let payload: ByteBuffer
        do {
            payload = try RPCWire.payload(
                message, correlationID: correlationID, bulkData: ByteBuffer(), format: .json, options: self.configuration.sendOptions)
        } catch {
            completion(.failure(error))
            return
        }
        let timer = self.driver.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak state] in
            guard let request = state?.requestsToApp.removeValue(forKey: correlationID) else { return }
            request.completion(.failure(SDLConnectionError(
                .timeout, "no response to \(messageType.functionName) #\(correlationID) within \(timeout)")))
        }
        state.requestsToApp[correlationID] = RequestToApp(completion: completion, functionID: messageType.functionID, timer: timer)
        do {
            try self.enqueue(payload, to: handle)
        } catch {
            timer.cancel()
            state.requestsToApp[correlationID] = nil
            completion(.failure(error))
        }
    }

    /// Forgets a request to an app whose caller gave up.
    func forgetRequest(_ correlationID: UInt32, of handle: SessionHandle) {
        guard let request = self.apps[handle]?.requestsToApp.removeValue(forKey: correlationID) else { return }
        request.timer.cancel()
    }

    func endService(_ service: ServiceType, of handle: SessionHandle) throws(SDLConnectionError) {
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
        } catch {
            throw SDLConnectionError(error.code == .unknownSession ? .disconnected : .refused, "\(error)")
        }
    }

    func endSession(_ handle: SessionHandle) throws(SDLConnectionError) {
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.endSession(handle, now: now) }
        } catch {
            throw SDLConnectionError(.disconnected, "\(error)")
        }
    }

    private func enqueue(_ payload: ByteBuffer, to handle: SessionHandle) throws(SDLConnectionError) {
        guard self.apps[handle] != nil else { throw SDLConnectionError(.disconnected, "\(handle): the session ended") }
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.send(payload, on: .rpc, of: handle, now: now) }
        } catch {
            throw SDLConnectionError(.disconnected, "\(handle): \(error)")
        }
    }

    // MARK: - Shutdown

    /// Gracefully: ends every session (EndService RPC), waits for the frames to reach the
    /// transports (at most ``SDLTransportConfiguration/closeTimeout``), then closes every
    /// connection; abruptly: closes them at once. Every session and service ended is reported.
    func shutdown(graceful: Bool, done: @escaping () -> Void = {}) {
        self.shutdownWaiters.append(done)
        guard graceful, !self.driver.isStopping else {
            self.stopDriver()
            return
        }
        // Not closed before every session was ended: writes of the first would otherwise finish
        // the shutdown.
        self.endingAll = true
        for handle in self.order {
            try? self.driver.perform { (engine, now) throws(SessionError) in try engine.endSession(handle, now: now) }
        }
        self.endingAll = false
        if self.flushDeadline == nil {
            self.flushDeadline = self.driver.eventLoop.assumeIsolated().scheduleTask(in: self.configuration.transport.closeTimeout) {
                self.stopDriver()
            }
        }
        self.finishShutdownIfFlushed()
    }

    private func finishShutdownIfFlushed() {
        guard !self.driver.hasPendingWrites else { return }
        self.stopDriver()
    }

    private func stopDriver() {
        self.flushDeadline?.cancel()
        self.flushDeadline = nil
        let waiters = self.shutdownWaiters
        guard !waiters.isEmpty else { return }
        self.shutdownWaiters = []
        self.driver.stop().assumeIsolated().whenComplete { _ in
            // Once, however many times the server is shut down (a service group's shutdown
            // after the program's own, say).
            if !self.stopReported {
                self.stopReported = true
                self.handler?.handle(.serverStopped)
            }
            for waiter in waiters { waiter() }
        }
    }
}
