import NIOCore
import Logging
import SDLProtocol
import SDLRPC
import SDLSession

/// The state of an ``SDLAppConnection`` on its event loop: the driver and engine, the session,
/// requests waiting for responses, notification subscribers, media services.
final class AppCore: SessionDriverDelegate, OutboundBudgetSender {
    let driver: SessionDriver
    let configuration: SDLAppConfiguration
    private let events: AsyncStream<SDLAppEvent>.Continuation
    var budget: OutboundBudget
    private(set) var statistics = SDLAppStatistics()

    private enum Phase {
        case idle
        case connecting(Completion<SessionInfo>)
        case running
        case ended
    }

    private var phase = Phase.idle

    private var hasEnded: Bool {
        if case .ended = self.phase { return true }
        return false
    }
    private(set) var handle: SessionHandle?
    private(set) var sessionInfo: SessionInfo?
    private var primary: TransportID?
    private var endWaiters: [Completion<Void>] = []

    private struct PendingRequest {
        var completion: Completion<AnyRPCMessage>
        var functionID: FunctionID
        var timer: Scheduled<Void>
    }

    private var pending: [UInt32: PendingRequest] = [:]
    private var nextCorrelationID: UInt32 = 1

    private struct Subscriber {
        var deliver: (AnyRPCMessage) -> Void
        /// Ends the subscriber's stream (the session ended).
        var finish: () -> Void
    }

    private var subscribers: [UInt32: [Int: Subscriber]] = [:]
    private var nextSubscriber = 0

    private(set) var registration: SDLRegisterAppInterfaceResponse?
    private(set) var registeredRPCVersion: SDLSyncMsgVersion?
    private(set) var hmiStatus: SDLOnHMIStatus?
    private(set) var permissions: SDLOnPermissionsChange?
    /// Why the head unit unregistered the app (OnAppInterfaceUnregistered), if it did.
    private(set) var unregisteredReason: SDLAppInterfaceUnregisteredReason?

    /// A reader of requests from the head unit: those of `functions` (all when nil).
    private struct RequestListener {
        var id: Int
        var functions: Set<UInt32>?
        var deliver: (SDLIncomingRequest) -> AsyncStreamYieldOutcome
        var finish: () -> Void
    }

    private var requestListeners: [RequestListener] = []
    /// Requests from the head unit handed to a listener and not answered yet: correlation id to
    /// function id. Bounded by ``maxUnansweredRequests``.
    private var unanswered: [UInt32: FunctionID] = [:]
    private static let maxUnansweredRequests = 1024

    private enum MediaState {
        case starting(Completion<ServiceInfo>)
        case running(ServiceInfo)
        /// Moving to the other transport of its list: writes wait for it to run again.
        case moving([OutboundBudget.Waiter])
        /// Ended by the app while its messages still wait in the engine: EndService goes once they
        /// have left (ending a service drops what it still queues).
        case finishing([Completion<ServiceEndReason>])
        case ending([Completion<ServiceEndReason>])
    }

    private var media: [ServiceType: MediaState] = [:]
    /// Bounds the wait of a start (``SDLAppConfiguration/mediaStartTimeout``).
    private var mediaTimers: [ServiceType: Scheduled<Void>] = [:]
    /// Streams opened from other threads (notification subscriptions, request listeners), added
    /// before the next message is handled.
    let preceding: PrecedingWork<AppCore>

    init(
        configuration: SDLAppConfiguration, eventLoop: any EventLoop, events: AsyncStream<SDLAppEvent>.Continuation, logger: Logger,
        preceding: PrecedingWork<AppCore>
    ) {
        self.preceding = preceding
        var session = configuration.session
        session.role = .app
        self.configuration = configuration
        self.events = events
        self.budget = OutboundBudget(limit: configuration.transport.maxQueuedBytesPerService)
        self.driver = SessionDriver(
            engine: SessionEngine(configuration: session), eventLoop: eventLoop, transportConfiguration: configuration.transport,
            logger: logger)
        self.driver.delegate = self
    }

    private func report(_ event: SDLAppEvent) {
        if case .dropped = self.events.yield(event) {
            self.statistics.droppedEvents += 1
        }
    }

    // MARK: - Connecting (protocol spec 5.4.1 §3.1.1: StartService RPC on session 0)

    func connect(to transport: any SDLAppTransport, completion: Completion<SessionInfo>) {
        guard !completion.isCompleted else { return }
        guard case .idle = self.phase else {
            completion.fail(.refused, "connect is called once per connection")
            return
        }
        self.phase = .connecting(completion)
        self.driver.secondaryTransport = { host, port in transport.secondaryTransport(host: host, port: port) }
        transport.connect(on: self.driver.eventLoop, configuration: self.configuration.transport, logger: self.driver.logger) { result in
            switch result {
            case .success(let connection):
                // Given up meanwhile (cancelled, closed): the driver is stopping and closes it.
                self.driver.adopt(connection, as: .primary)
            case .failure(let error):
                self.failConnect(error.code, error.detail)
            }
        }
    }

    /// Gives up a connection attempt (its caller was cancelled).
    func cancelConnect() {
        guard case .connecting = self.phase else { return }
        self.phase = .ended
        _ = self.driver.stop()
    }

    private func failConnect(_ code: SDLConnectionError.Code, _ detail: String) {
        guard case .connecting(let completion) = self.phase else { return }
        self.phase = .ended
        completion.fail(code, detail)
        self.driver.stop().assumeIsolated().whenComplete { _ in self.events.finish() }
    }

    func sessionDriver(_ driver: SessionDriver, didOpen transport: TransportID, as opening: TransportOpening) {
        guard opening == .primary else { return }
        self.primary = transport
        do {
            self.handle = try driver.perform { (engine, now) throws(SessionError) in try engine.startSession(on: transport, now: now) }
        } catch {
            self.failConnect(.refused, "\(error)")
        }
    }

    // MARK: - Engine events

    func sessionDriver(_ driver: SessionDriver, didReport event: SessionEvent) {
        switch event {
        case .sessionStarted(let handle, let info) where handle == self.handle:
            self.sessionInfo = info
            if case .connecting(let completion) = self.phase {
                self.phase = .running
                completion.succeed(info)
            }
        case .sessionStartFailed(let handle, let failure) where handle == self.handle:
            self.failConnect(.sessionRejected, "\(failure)")
        case .sessionEnded(let handle, let reason) where handle == self.handle:
            self.sessionEnded(reason)
        case .serviceStarted(let handle, let service, let info) where handle == self.handle:
            self.mediaStarted(service, info)
        case .serviceStartFailed(let handle, let service, let failure) where handle == self.handle:
            self.mediaStartFailed(service, "\(failure)")
        case .serviceWaiting(let handle, let service, .noSecondary) where handle == self.handle && !self.secondaryOffered:
            // The service may only run on a secondary transport and the head unit offers none: the
            // want is dropped rather than left waiting. (An offered one whose address has not come
            // yet is waited for, up to mediaStartTimeout.)
            if case .starting(let completion) = self.media[service] {
                self.dropWantedMedia(service)
                completion.fail(.serviceFailed, "\(service) may only run on a secondary transport and the head unit offers none")
            }
        case .serviceEnded(let handle, let service, let reason) where handle == self.handle:
            self.mediaEnded(service, reason)
        case .message(let handle, let message) where handle == self.handle:
            if message.service == .rpc || message.service == .hybrid {
                self.receivedRPC(message.payload)
            }
        case .transportClosed(let transport, _) where transport == self.primary:
            self.failConnect(.connectFailed, "the head unit closed the connection")
            self.report(.session(event))
        default:
            self.report(.session(event))
        }
    }

    private func sessionEnded(_ reason: SessionEndReason) {
        self.phase = .ended
        let why = self.unregisteredReason.map { ", after the head unit unregistered the app (\($0.wireName))" } ?? ""
        let error = SDLConnectionError(.disconnected, "the session ended: \(reason)\(why)")
        for (_, request) in self.pending {
            request.timer.cancel()
            request.completion.complete(.failure(error))
        }
        self.pending.removeAll()
        if let handle = self.handle {
            for waiter in self.budget.remove(session: handle) { waiter(.failure(error)) }
        }
        for service in Array(self.media.keys) {
            self.mediaEnded(service, .sessionEnded)
        }
        self.registration = nil
        // Notification streams and the event stream end with the session: readers' loops finish.
        let subscribers = self.subscribers.values.flatMap(\.values)
        self.subscribers.removeAll()
        for subscriber in subscribers { subscriber.finish() }
        let listeners = self.requestListeners
        self.requestListeners.removeAll()
        self.unanswered.removeAll()
        for listener in listeners { listener.finish() }
        self.report(.sessionEnded(reason))
        let waiters = self.endWaiters
        self.endWaiters = []
        self.driver.stop().assumeIsolated().whenComplete { _ in
            self.events.finish()
            for waiter in waiters { waiter.succeed(()) }
        }
    }

    func sessionDriver(_ driver: SessionDriver, didWriteOn transport: TransportID) {
        self.budget.refresh(driver.engine)
        while let waiter = self.budget.takeReady() {
            waiter(.success(()))
        }
        for (service, state) in self.media {
            guard case .finishing(let completions) = state, let handle = self.handle,
                driver.engine.queuedMessages(service, of: handle) == 0
            else { continue }
            self.media[service] = .ending(completions)
            do {
                try driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
            } catch {
                self.mediaEnded(service, .local)
            }
        }
    }

    // MARK: - Sending

    /// Queues a payload on a service of the session once its stream has room.
    private func enqueue(_ payload: ByteBuffer, on service: ServiceType, done: @escaping (Result<Void, SDLConnectionError>) -> Void) {
        guard case .running = self.phase, let handle = self.handle else {
            done(.failure(SDLConnectionError(.disconnected, "the session is not running")))
            return
        }
        self.enqueue(payload, on: OutboundBudget.StreamKey(session: handle, service: service), refusal: .refused, done: done)
    }

    private func takeCorrelationID() -> UInt32 {
        repeat {
            defer { self.nextCorrelationID &+= 1 }
            // 0xFFFFFFFF is what Core's notifications carry; 0 the JS suite's.
            if self.nextCorrelationID != 0 && self.nextCorrelationID != .max && self.pending[self.nextCorrelationID] == nil {
                return self.nextCorrelationID
            }
        } while true
    }

    func send(_ message: any RPCMessage, bulkData: ByteBuffer, timeout: TimeAmount, completion: Completion<AnyRPCMessage>) {
        guard !completion.isCompleted else { return }
        guard case .running = self.phase else {
            completion.fail(.disconnected, "the session is not running")
            return
        }
        let messageType = type(of: message)
        guard messageType.rpcType == .request else {
            completion.fail(.invalidMessage, "\(messageType.functionName) \(messageType.rpcType) is not a request")
            return
        }
        let correlationID = self.takeCorrelationID()
        let payload: ByteBuffer
        do {
            payload = try RPCWire.payload(
                message, correlationID: correlationID, bulkData: bulkData, format: self.configuration.parameterFormat,
                options: self.configuration.sendOptions)
        } catch {
            completion.complete(.failure(error))
            return
        }
        let timer = self.driver.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            guard let request = self.pending.removeValue(forKey: correlationID) else { return }
            request.completion.fail(.timeout, "no response to \(messageType.functionName) #\(correlationID) within \(timeout)")
        }
        self.pending[correlationID] = PendingRequest(completion: completion, functionID: messageType.functionID, timer: timer)
        self.enqueue(payload, on: .rpc) { [self] result in
            guard case .failure(let error) = result, let request = self.pending.removeValue(forKey: correlationID) else { return }
            request.timer.cancel()
            request.completion.complete(.failure(error))
        }
    }

    func sendNotification(_ message: any RPCMessage, completion: Completion<Void>) {
        guard !completion.isCompleted else { return }
        do {
            let payload = try RPCWire.notificationPayload(
                message, correlationID: 0, format: self.configuration.parameterFormat, options: self.configuration.sendOptions)
            self.enqueue(payload, on: .rpc) { completion.complete($0) }
        } catch {
            completion.complete(.failure(error))
        }
    }

    /// Forgets a request whose caller was cancelled; a response that comes later is unmatched.
    func cancel(_ completion: Completion<AnyRPCMessage>) {
        guard let (correlationID, request) = self.pending.first(where: { $0.value.completion === completion }) else { return }
        request.timer.cancel()
        self.pending[correlationID] = nil
    }

    // MARK: - Receiving

    private func receivedRPC(_ payload: ByteBuffer) {
        // A stream opened before this message arrived sees it.
        self.preceding.drain(self)
        let header: RPCBinaryHeader
        do {
            header = try RPCPayload(parsing: payload).header
        } catch {
            self.statistics.unreadableMessages += 1
            self.report(.unreadableMessage(RPCError(.invalidPayload, offset: error.offset, error.detail)))
            return
        }
        if Int(header.jsonSize) > self.configuration.maxRPCParametersSize {
            // Not parsed: a head unit cannot make the app chew on megabytes of JSON.
            let detail = "parameters of \(header.jsonSize) bytes, above the \(self.configuration.maxRPCParametersSize) this app reads"
            self.statistics.unreadableMessages += 1
            if header.rpcType == .request {
                self.answer(functionID: header.functionID, correlationID: header.correlationID, failure: .invalidData, info: detail)
            } else if header.rpcType == .response || header.rpcType == .erroneousResponse,
                let request = self.pending.removeValue(forKey: header.correlationID)
            {
                request.timer.cancel()
                request.completion.fail(.invalidResponse, detail)
            }
            self.report(.unreadableMessage(RPCError(.invalidPayload, detail)))
            return
        }
        switch header.rpcType {
        case .response, .erroneousResponse:
            guard let request = self.pending.removeValue(forKey: header.correlationID) else {
                self.statistics.unmatchedResponses += 1
                self.report(.unmatchedResponse(functionID: FunctionID(rawValue: header.functionID), correlationID: header.correlationID))
                return
            }
            request.timer.cancel()
            do {
                let message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
                guard message.functionID == request.functionID else {
                    request.completion.fail(
                        .invalidResponse, "the response to \(request.functionID) #\(header.correlationID) is a \(message.functionName) response")
                    return
                }
                self.reportViolations(of: message)
                request.completion.succeed(message)
            } catch {
                request.completion.fail(.invalidResponse, "\(error)")
            }
        case .notification:
            let message: AnyRPCMessage
            do {
                message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
            } catch {
                self.statistics.unreadableMessages += 1
                self.report(.unreadableMessage(error))
                return
            }
            self.reportViolations(of: message)
            if let permissions = message.message as? SDLOnPermissionsChange {
                self.permissions = permissions
            }
            if let status = message.message as? SDLOnHMIStatus, status.windowID == nil || status.windowID == 0 {
                self.hmiStatus = status
            }
            if let unregistered = message.message as? SDLOnAppInterfaceUnregistered {
                self.registration = nil
                self.unregisteredReason = unregistered.reason
                self.report(.unregistered(unregistered.reason))
            }
            for (_, subscriber) in self.subscribers[header.functionID] ?? [:] {
                subscriber.deliver(message)
            }
        case .request:
            self.receivedRequest(payload, header: header)
        default:
            self.statistics.unreadableMessages += 1
            self.report(.unreadableMessage(RPCError(.invalidPayload, "a \(header.rpcType) from the head unit, function \(header.functionID)")))
        }
    }

    /// What lenient reading found wrong with a message, if anything (the message itself was kept).
    private func reportViolations(of message: AnyRPCMessage) {
        guard !message.violations.isEmpty else { return }
        self.statistics.messagesWithViolations += 1
        self.report(.violations(functionName: message.functionName, rpcType: message.rpcType, correlationID: message.correlationID, message.violations))
    }

    // MARK: - Requests from the head unit

    /// A request of the head unit (an app-service provider is asked for its data, an interaction,
    /// or an RPC it handles). It goes to the first listener that takes its function; one nobody
    /// listens for is answered UNSUPPORTED_REQUEST, one that cannot be read INVALID_DATA, as SDL
    /// Core answers: never silence.
    private func receivedRequest(_ payload: ByteBuffer, header: RPCBinaryHeader) {
        let message: AnyRPCMessage
        do {
            message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
        } catch {
            self.statistics.unreadableMessages += 1
            let code: SDLResult = error.code == .unknownFunction ? .unsupportedRequest : .invalidData
            self.answer(functionID: header.functionID, correlationID: header.correlationID, failure: code, info: error.description)
            self.report(.unreadableMessage(error))
            return
        }
        self.reportViolations(of: message)
        guard self.unanswered.count < Self.maxUnansweredRequests, self.unanswered[message.correlationID] == nil else {
            self.answer(functionID: header.functionID, correlationID: header.correlationID, failure: .tooManyPendingRequests, info: nil)
            return
        }
        let request = SDLIncomingRequest(message: message)
        var index = 0
        while index < self.requestListeners.count {
            let listener = self.requestListeners[index]
            guard listener.functions?.contains(header.functionID) ?? true else {
                index += 1
                continue
            }
            switch listener.deliver(request) {
            case .delivered:
                self.unanswered[message.correlationID] = message.functionID
                return
            case .dropped:
                // The listener's buffer is full: the newest is refused rather than held.
                self.answer(functionID: header.functionID, correlationID: header.correlationID, failure: .tooManyPendingRequests, info: nil)
                return
            case .terminated:
                self.requestListeners.remove(at: index)
            }
        }
        self.answer(functionID: header.functionID, correlationID: header.correlationID, failure: .unsupportedRequest, info: nil)
    }

    private func answer(functionID: UInt32, correlationID: UInt32, failure: SDLResult, info: String?) {
        let payload = RPCWire.failureResponse(functionID: functionID, correlationID: correlationID, resultCode: failure, info: info)
        self.enqueue(payload, on: .rpc) { _ in }
    }

    /// Adds a reader of requests; returns its id, nil when the session has ended.
    func listenForRequests(
        functions: Set<UInt32>?, finish: @escaping () -> Void, _ deliver: @escaping (SDLIncomingRequest) -> AsyncStreamYieldOutcome
    ) -> Int? {
        guard let id = self.takeSubscriberID(orFinish: finish) else { return nil }
        self.requestListeners.append(RequestListener(id: id, functions: functions, deliver: deliver, finish: finish))
        return id
    }

    func stopListeningForRequests(_ id: Int) {
        self.requestListeners.removeAll { $0.id == id }
    }

    /// Answers a request of the head unit, once.
    func respond(_ response: any RPCMessage, to request: SDLIncomingRequest, completion: Completion<Void>) {
        guard !completion.isCompleted else { return }
        guard case .running = self.phase else {
            completion.fail(.disconnected, "the session is not running")
            return
        }
        guard self.unanswered[request.correlationID] == request.message.functionID else {
            completion.fail(.alreadyAnswered, "\(request.message.functionName) #\(request.correlationID) is answered already, or was not received")
            return
        }
        do {
            let payload = try RPCWire.responsePayload(
                response, answering: request.message.functionID, correlationID: request.correlationID,
                format: self.configuration.parameterFormat, options: self.configuration.sendOptions)
            // Not answered until now: the caller may correct a response that was refused.
            self.unanswered[request.correlationID] = nil
            self.enqueue(payload, on: .rpc) { completion.complete($0) }
        } catch {
            completion.complete(.failure(error))
        }
    }

    /// Adds a notification subscriber; returns its id for ``unsubscribe(_:functionID:)``.
    func subscribe(
        functionID: FunctionID, functionName: String, finish: @escaping () -> Void,
        _ yield: @escaping (AnyRPCMessage) -> AsyncStreamYieldOutcome
    ) -> Int? {
        guard let id = self.takeSubscriberID(orFinish: finish) else { return nil }
        self.subscribers[functionID.rawValue, default: [:]][id] = Subscriber(deliver: { [self] message in
            switch yield(message) {
            case .delivered:
                break
            case .dropped:
                self.statistics.droppedNotifications += 1
                self.report(.notificationsDropped(functionName: functionName, total: self.statistics.droppedNotifications))
            case .terminated:
                self.unsubscribe(id, functionID: functionID)
            }
        }, finish: finish)
        return id
    }

    /// A new subscriber id; nil (and the subscriber finished) once the session has ended.
    private func takeSubscriberID(orFinish finish: () -> Void) -> Int? {
        guard !self.hasEnded else {
            finish()
            return nil
        }
        defer { self.nextSubscriber += 1 }
        return self.nextSubscriber
    }

    func unsubscribe(_ id: Int, functionID: FunctionID) {
        self.subscribers[functionID.rawValue]?[id] = nil
        if self.subscribers[functionID.rawValue]?.isEmpty == true {
            self.subscribers[functionID.rawValue] = nil
        }
    }

    // MARK: - Registration

    func registered(_ response: SDLRegisterAppInterfaceResponse, requested: SDLSyncMsgVersion, completion: Completion<Void>) {
        guard let handle = self.handle, case .running = self.phase else {
            completion.fail(.disconnected, "the session ended")
            return
        }
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.sessionRegistered(handle, now: now) }
        } catch {
            completion.fail(.disconnected, "\(error)")
            return
        }
        self.registration = response
        self.registeredRPCVersion = min(requested, response.syncMsgVersion ?? requested)
        completion.succeed(())
    }

    func unregistered() {
        self.permissions = nil
        self.registration = nil
        self.registeredRPCVersion = nil
    }


    // MARK: - Audio and video

    func startMedia(_ service: ServiceType, video: VideoParameters?, protection: ServiceProtection, completion: Completion<ServiceInfo>) {
        guard !completion.isCompleted else { return }
        guard case .running = self.phase, let handle = self.handle else {
            completion.fail(.disconnected, "the session is not running")
            return
        }
        guard self.registration != nil else {
            completion.fail(.notRegistered, "\(service) starts after RegisterAppInterface succeeded")
            return
        }
        guard self.media[service] == nil else {
            completion.fail(.refused, "\(service) is already started")
            return
        }
        // Set first: the engine may answer at once (a service that cannot be placed).
        self.media[service] = .starting(completion)
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in
                try engine.startService(service, of: handle, video: video, protection: protection, now: now)
            }
        } catch {
            self.media[service] = nil
            completion.fail(error.code == .notRegistered ? .notRegistered : .refused, "\(error)")
            return
        }
        guard case .starting(let waiting) = self.media[service], waiting === completion else { return }
        let timeout = self.configuration.mediaStartTimeout
        self.mediaTimers[service] = self.driver.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.mediaTimers[service] = nil
            guard case .starting(let waiting) = self.media[service], waiting === completion else { return }
            self.dropWantedMedia(service)
            completion.fail(.serviceFailed, "\(service) did not start within \(timeout)")
        }
    }

    /// Forgets a start that has not succeeded: the engine drops the want, or ends the service if
    /// its StartService is already out.
    private func dropWantedMedia(_ service: ServiceType) {
        self.media[service] = nil
        self.mediaTimers.removeValue(forKey: service)?.cancel()
        guard let handle = self.handle else { return }
        try? self.driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
    }

    /// The caller of a start was cancelled: the service is ended or its start dropped.
    func cancelStart(_ service: ServiceType, _ completion: Completion<ServiceInfo>) {
        guard case .starting(let waiting) = self.media[service], waiting === completion else { return }
        self.dropWantedMedia(service)
    }

    /// Whether the head unit offers a secondary transport this app can use (TCP, from 5.1.0).
    private var secondaryOffered: Bool {
        guard let info = self.sessionInfo else { return false }
        return info.version >= .secondaryTransports && info.secondaryTransports.contains("TCP_WIFI")
    }

    private func mediaStarted(_ service: ServiceType, _ info: ServiceInfo) {
        self.mediaTimers.removeValue(forKey: service)?.cancel()
        switch self.media[service] {
        case .starting(let completion):
            self.media[service] = .running(info)
            completion.succeed(info)
        case .moving(let waiters):
            self.media[service] = .running(info)
            for waiter in waiters { waiter(.success(())) }
        default:
            // Started without a caller (a cancelled start answered anyway): not wanted.
            if let handle = self.handle {
                try? self.driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
            }
        }
    }

    private func mediaStartFailed(_ service: ServiceType, _ detail: String) {
        self.mediaTimers.removeValue(forKey: service)?.cancel()
        switch self.media[service] {
        case .starting(let completion):
            self.media[service] = nil
            completion.fail(.serviceFailed, detail)
        case .moving(let waiters):
            // The restart on the other transport failed: the service is gone for its writer.
            self.media[service] = nil
            let error = SDLConnectionError(.serviceFailed, "\(service) did not restart: \(detail)")
            for waiter in waiters { waiter(.failure(error)) }
            self.report(.serviceEnded(service, .transportLost))
        default:
            break
        }
    }

    private func mediaEnded(_ service: ServiceType, _ reason: ServiceEndReason) {
        self.mediaTimers.removeValue(forKey: service)?.cancel()
        let state = self.media[service]
        if case .moving(to: _) = reason, case .running = state {
            self.media[service] = .moving([])
            return
        }
        self.media[service] = nil
        if reason == .transportLost, let handle = self.handle {
            // The engine keeps a service lost with its transport wanted, to restart it when the
            // secondary returns (ARCHITECTURE.md, D-secondary). Its writer fails instead: bytes in
            // flight were lost and a decoder needs a fresh start (a new key frame). The app starts
            // it again with startVideo/startAudio, which waits for the secondary's return.
            try? self.driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
        }
        let error = SDLConnectionError(.serviceFailed, "\(service) ended: \(reason)")
        if let handle = self.handle {
            for waiter in self.budget.remove(session: handle, service: service) { waiter(.failure(error)) }
        }
        switch state {
        case .starting(let completion):
            completion.complete(.failure(error))
        case .moving(let waiters):
            for waiter in waiters { waiter(.failure(error)) }
        case .ending(let completions), .finishing(let completions):
            for completion in completions { completion.succeed(reason) }
        case .running, nil:
            break
        }
        if state != nil {
            self.report(.serviceEnded(service, reason))
        }
    }

    /// Queues a media write as messages of at most `maxMessageSize` bytes, one after another while
    /// the service's stream has room and without a hop per message; when it has none, the rest
    /// waits for room. Completes when the engine has the last message; a write whose task was
    /// cancelled stops before its next message.
    func writeMedia(_ service: ServiceType, _ bytes: ByteBuffer, maxMessageSize: Int, completion: Completion<Void>) {
        var remaining = bytes
        while !completion.isCompleted {
            guard remaining.readableBytes > 0 else {
                completion.succeed(())
                return
            }
            let message = remaining.readSlice(length: min(maxMessageSize, remaining.readableBytes))!
            let rest = remaining
            var waited = false
            var queued = false
            self.writeMediaMessage(service, message) { [self] result in
                switch result {
                case .failure(let error):
                    completion.complete(.failure(error))
                case .success where waited:
                    self.writeMedia(service, rest, maxMessageSize: maxMessageSize, completion: completion)
                case .success:
                    queued = true
                }
            }
            waited = true
            // Failed, or waiting for room: the callback goes on from there.
            guard queued else { return }
        }
    }

    /// Queues one media message once the service's stream has room; `done` is called when the
    /// engine has it.
    private func writeMediaMessage(_ service: ServiceType, _ payload: ByteBuffer, done: @escaping (Result<Void, SDLConnectionError>) -> Void) {
        let send: OutboundBudget.Waiter = { [self] result in
            if case .failure = result {
                done(result)
                return
            }
            self.enqueue(payload, on: service, done: done)
        }
        switch self.media[service] {
        case .running:
            send(.success(()))
        case .moving(var waiters):
            waiters.append(send)
            self.media[service] = .moving(waiters)
        default:
            done(.failure(SDLConnectionError(.serviceFailed, "\(service) is not running")))
        }
    }

    func endMedia(_ service: ServiceType, completion: Completion<ServiceEndReason>) {
        guard let handle = self.handle else {
            completion.succeed(.sessionEnded)
            return
        }
        switch self.media[service] {
        case .running, .moving:
            if self.driver.engine.queuedMessages(service, of: handle) > 0 {
                // What the writer handed over is sent first.
                self.media[service] = .finishing([completion])
                return
            }
            fallthrough
        case .starting:
            do {
                try self.driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
            } catch {
                // Not running in the engine (a start that was only wanted): nothing to end.
                self.mediaEnded(service, .local)
                completion.succeed(.local)
                return
            }
            if self.media[service] == nil {
                completion.succeed(.local)
            } else {
                if case .starting(let waiting) = self.media[service] {
                    waiting.fail(.serviceFailed, "\(service) was ended while starting")
                }
                self.media[service] = .ending([completion])
            }
        case .ending(var completions):
            completions.append(completion)
            self.media[service] = .ending(completions)
        case .finishing(var completions):
            completions.append(completion)
            self.media[service] = .finishing(completions)
        case nil:
            completion.succeed(.sessionEnded)
        }
    }

    // MARK: - Ending

    /// Ends the session gracefully (EndService(RPC), answered or timed out), then closes the
    /// transports.
    func disconnect(completion: Completion<Void>) {
        switch self.phase {
        case .running:
            self.endWaiters.append(completion)
            guard let handle = self.handle else { return }
            do {
                try self.driver.perform { (engine, now) throws(SessionError) in try engine.endSession(handle, now: now) }
            } catch {
                self.close(completion: nil)
            }
        case .connecting:
            self.failConnect(.disconnected, "disconnected while connecting")
            completion.succeed(())
        case .idle, .ended:
            self.driver.stop().assumeIsolated().whenComplete { _ in completion.succeed(()) }
        }
    }

    /// Closes every transport at once, without EndService: the session ends as transport lost.
    func close(completion: Completion<Void>?) {
        if case .connecting = self.phase {
            self.failConnect(.disconnected, "closed while connecting")
        }
        self.driver.stop().assumeIsolated().whenComplete { _ in completion?.succeed(()) }
    }

    func snapshotStatistics() -> SDLAppStatistics {
        var statistics = self.statistics
        self.budget.refresh(self.driver.engine)
        statistics.queuedBytes = self.driver.queuedBytesOnEveryTransport
        return statistics
    }
}
