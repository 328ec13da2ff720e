import NIOCore
import Logging
import SDLProtocol
import SDLRPC
import SDLSession

/// What the server's handler task works through, in order.
enum HeadUnitWork: Sendable {
    case event(SDLHeadUnitEvent)
    case register(SDLConnectedApp, SDLRegisterAppInterfaceRequest, correlationID: UInt32)
    case request(SDLConnectedApp, AnyRPCMessage)
}

typealias WorkProducer = NIOAsyncSequenceProducer<
    HeadUnitWork, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, HeadUnitCore.WorkDelegate
>
typealias MediaProducer = NIOAsyncSequenceProducer<
    ByteBuffer, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, HeadUnitCore.MediaDelegate
>

/// The state of an ``SDLHeadUnitServer`` on its event loop: the driver and engine of every
/// connection, the listeners, the apps (sessions) and their media streams.
final class HeadUnitCore: SessionDriverDelegate, OutboundBudgetSender {
    let driver: SessionDriver
    let configuration: SDLHeadUnitConfiguration
    var budget: OutboundBudget
    private var work: WorkProducer.Source?
    private var workPaused = false
    private var apps: [SessionHandle: AppRecord] = [:]
    private var shutdownWaiters: [Completion<Void>] = []
    private var flushDeadline: Scheduled<Void>?
    private var endingAll = false

    private struct MediaSink {
        let source: MediaProducer.Source
        /// The transport whose reads this stream holds, if it does.
        var paused: TransportID?
        var terminated = false
    }

    private final class AppRecord {
        let app: SDLConnectedApp
        var registration: SDLRegisterAppInterfaceRequest?
        var registering = false
        /// Requests of the app given to the handler and not answered yet: correlation id to
        /// function. Bounded by ``SDLHeadUnitConfiguration/maxPendingRequestsPerApp``.
        var unanswered: [UInt32: FunctionID] = [:]
        var media: [ServiceType: MediaSink] = [:]
        /// Requests the head unit sent to the app, waiting for its response, by correlation id.
        var requestsToApp: [UInt32: RequestToApp] = [:]
        var nextCorrelationID: UInt32 = 1

        init(app: SDLConnectedApp) { self.app = app }
    }

    private struct RequestToApp {
        var completion: Completion<AnyRPCMessage>
        var functionID: FunctionID
        var timer: Scheduled<Void>
    }

    struct WorkDelegate: NIOAsyncSequenceProducerDelegate {
        let core: LoopBound<HeadUnitCore>
        func produceMore() { self.core.execute { $0.workDrained() } }
        func didTerminate() { self.core.execute { $0.workTerminated() } }
    }

    struct MediaDelegate: NIOAsyncSequenceProducerDelegate {
        let core: LoopBound<HeadUnitCore>
        let session: SessionHandle
        let service: ServiceType
        func produceMore() {
            let (session, service) = (self.session, self.service)
            self.core.execute { $0.mediaDrained(session, service) }
        }
        func didTerminate() {
            let (session, service) = (self.session, self.service)
            self.core.execute { $0.mediaTerminated(session, service) }
        }
    }

    init(configuration: SDLHeadUnitConfiguration, eventLoop: any EventLoop, logger: Logger) {
        var session = configuration.session
        session.role = .headUnit
        self.configuration = configuration
        self.budget = OutboundBudget(limit: configuration.transport.maxQueuedBytesPerService)
        self.driver = SessionDriver(
            engine: SessionEngine(configuration: session), eventLoop: eventLoop, transportConfiguration: configuration.transport,
            logger: logger)
        self.driver.delegate = self
    }

    /// Makes the sequence the handler task reads.
    func makeWorkSequence(_ bound: LoopBound<HeadUnitCore>) -> WorkProducer {
        let backlog = max(2, self.configuration.handlerBacklog)
        let result = WorkProducer.makeSequence(
            backPressureStrategy: .init(lowWatermark: backlog / 2, highWatermark: backlog), finishOnDeinit: false,
            delegate: WorkDelegate(core: bound))
        self.work = result.source
        return result.sequence
    }

    private func submit(_ item: HeadUnitWork) {
        guard let work = self.work else { return }
        if work.yield(item) == .stopProducing, !self.workPaused {
            self.workPaused = true
            self.driver.pauseAllReads()
        }
    }

    private func workDrained() {
        guard self.workPaused else { return }
        self.workPaused = false
        self.driver.resumeAllReads()
    }

    private func workTerminated() {
        self.work = nil
        self.workDrained()
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

    /// A connection one of the listeners accepted.
    func accept(_ connection: any SDLTransportConnection) {
        self.driver.adopt(connection, as: .accepted)
    }

    var connectedApps: [SDLConnectedApp] {
        self.apps.values.map(\.app).sorted { $0.handle.rawValue < $1.handle.rawValue }
    }

    func registration(of handle: SessionHandle) -> SDLRegisterAppInterfaceRequest? {
        self.apps[handle]?.registration
    }

    // MARK: - Engine events

    func sessionDriver(_ driver: SessionDriver, didOpen transport: TransportID, as opening: TransportOpening) {}

    func sessionDriver(_ driver: SessionDriver, didReport event: SessionEvent) {
        switch event {
        case .sessionStarted(let handle, let info):
            let app = SDLConnectedApp(core: LoopBound(self, eventLoop: driver.eventLoop), handle: handle, sessionInfo: info)
            self.apps[handle] = AppRecord(app: app)
            self.submit(.event(.appConnected(app)))
        case .sessionEnded(let handle, let reason):
            guard let record = self.apps.removeValue(forKey: handle) else { return }
            for service in Array(record.media.keys) {
                self.finishMedia(record, service)
            }
            let error = SDLConnectionError(.disconnected, "the session ended: \(reason)")
            for waiter in self.budget.remove(session: handle) { waiter(.failure(error)) }
            for (_, request) in record.requestsToApp {
                request.timer.cancel()
                request.completion.complete(.failure(error))
            }
            record.requestsToApp.removeAll()
            self.submit(.event(.appDisconnected(record.app, reason)))
        case .serviceStarted(let handle, let service, let info) where service == .audio || service == .video:
            guard let record = self.apps[handle] else { return }
            let backlog = max(4, self.configuration.mediaBacklog)
            let delegate = MediaDelegate(core: LoopBound(self, eventLoop: driver.eventLoop), session: handle, service: service)
            let made = MediaProducer.makeSequence(
                backPressureStrategy: .init(lowWatermark: backlog / 4, highWatermark: backlog), finishOnDeinit: false,
                delegate: delegate)
            if let old = record.media[service] { old.source.finish() }
            record.media[service] = MediaSink(source: made.source)
            self.submit(.event(.serviceStarted(record.app, service, info, SDLMediaStream(made.sequence))))
        case .serviceEnded(let handle, let service, let reason):
            guard let record = self.apps[handle] else { return }
            self.finishMedia(record, service)
            let error = SDLConnectionError(.serviceFailed, "\(service) ended: \(reason)")
            for waiter in self.budget.remove(session: handle, service: service) { waiter(.failure(error)) }
            self.submit(.event(.serviceEnded(record.app, service, reason)))
        case .message(let handle, let message):
            guard let record = self.apps[handle] else { return }
            switch message.service {
            case .rpc, .hybrid:
                self.receivedRPC(message.payload, from: record)
            case .audio, .video:
                self.receivedMedia(message, of: record)
            default:
                self.submit(.event(.session(event)))
            }
        default:
            self.submit(.event(.session(event)))
        }
    }

    func sessionDriver(_ driver: SessionDriver, didWriteOn transport: TransportID) {
        self.budget.refresh(driver.engine)
        while let waiter = self.budget.takeReady() {
            waiter(.success(()))
        }
        if !self.shutdownWaiters.isEmpty && !self.endingAll {
            self.finishShutdownIfFlushed()
        }
    }

    // MARK: - Media

    private func receivedMedia(_ message: ReceivedMessage, of record: AppRecord) {
        guard var sink = record.media[message.service], !sink.terminated else { return }
        if sink.source.yield(message.payload) == .stopProducing, sink.paused == nil {
            sink.paused = message.transport
            record.media[message.service] = sink
            self.driver.pauseReads(on: message.transport)
        }
    }

    private func finishMedia(_ record: AppRecord, _ service: ServiceType) {
        guard let sink = record.media.removeValue(forKey: service) else { return }
        sink.source.finish()
        if let paused = sink.paused {
            self.driver.resumeReads(on: paused)
        }
    }

    private func mediaDrained(_ session: SessionHandle, _ service: ServiceType) {
        guard let record = self.apps[session], let paused = record.media[service]?.paused else { return }
        record.media[service]!.paused = nil
        self.driver.resumeReads(on: paused)
    }

    /// The reader dropped the stream: later messages are discarded.
    private func mediaTerminated(_ session: SessionHandle, _ service: ServiceType) {
        guard let record = self.apps[session], record.media[service] != nil else { return }
        self.mediaDrained(session, service)
        record.media[service]!.terminated = true
    }

    // MARK: - RPCs from apps (read strictly, SESSION.md §C)

    private func receivedRPC(_ payload: ByteBuffer, from record: AppRecord) {
        let header: RPCBinaryHeader
        do {
            header = try RPCPayload(parsing: payload).header
        } catch {
            self.submit(.event(.unreadableMessage(record.app, RPCError(.invalidPayload, offset: error.offset, error.detail))))
            return
        }
        if header.rpcType == .response || header.rpcType == .erroneousResponse {
            self.receivedResponse(payload, header: header, from: record)
            return
        }
        let message: AnyRPCMessage
        do {
            message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
        } catch {
            if header.rpcType == .request {
                let code: SDLResult = error.code == .unknownFunction ? .unsupportedRequest : .invalidData
                self.answer(record, functionID: header.functionID, correlationID: header.correlationID, failure: code, info: error.description)
            }
            self.submit(.event(.unreadableMessage(record.app, error)))
            return
        }
        switch header.rpcType {
        case .request:
            self.receivedRequest(message, from: record)
        case .notification:
            self.submit(.event(.notification(record.app, message)))
        default:
            self.submit(.event(.unreadableMessage(record.app, RPCError(.invalidPayload, "a \(header.rpcType) from an app, \(message.functionName)"))))
        }
    }

    /// An app's answer to a request of ours (``SDLConnectedApp/send(_:timeout:)``), read as the
    /// server reads requests; one no request waits for is reported unreadable.
    private func receivedResponse(_ payload: ByteBuffer, header: RPCBinaryHeader, from record: AppRecord) {
        guard let request = record.requestsToApp.removeValue(forKey: header.correlationID) else {
            self.submit(.event(.unreadableMessage(record.app, RPCError(
                .invalidPayload, "a response no request waits for: function \(header.functionID), correlation id \(header.correlationID)"))))
            return
        }
        request.timer.cancel()
        do {
            let message = try AnyRPCMessage(payload: payload, options: self.configuration.receiveOptions)
            guard message.functionID == request.functionID else {
                request.completion.fail(.invalidResponse, "the response to \(request.functionID) #\(header.correlationID) is a \(message.functionName) response")
                return
            }
            request.completion.succeed(message)
        } catch {
            request.completion.fail(.invalidResponse, "\(error)")
        }
    }

    /// A request to an app (e.g. a forwarded PerformAppServiceInteraction); completes with the
    /// app's response, or fails after `timeout` or when the session ends.
    func sendRequest(_ message: any RPCMessage, to handle: SessionHandle, timeout: TimeAmount, completion: Completion<AnyRPCMessage>) {
        guard !completion.isCompleted else { return }
        guard let record = self.apps[handle] else {
            completion.fail(.disconnected, "the session ended")
            return
        }
        let messageType = type(of: message)
        guard messageType.rpcType == .request else {
            completion.fail(.invalidMessage, "\(messageType.functionName) \(messageType.rpcType) is not a request")
            return
        }
        var correlationID = record.nextCorrelationID
        while correlationID == 0 || correlationID == .max || record.requestsToApp[correlationID] != nil { correlationID &+= 1 }
        record.nextCorrelationID = correlationID &+ 1
        let payload: ByteBuffer
        do {
            payload = try RPCWire.payload(
                message, correlationID: correlationID, bulkData: ByteBuffer(), format: .json, options: self.configuration.sendOptions)
        } catch {
            completion.complete(.failure(error))
            return
        }
        let timer = self.driver.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak record] in
            guard let request = record?.requestsToApp.removeValue(forKey: correlationID) else { return }
            request.completion.fail(.timeout, "no response to \(messageType.functionName) #\(correlationID) within \(timeout)")
        }
        record.requestsToApp[correlationID] = RequestToApp(completion: completion, functionID: messageType.functionID, timer: timer)
        self.enqueue(payload, of: handle) { [weak record] result in
            guard case .failure(let error) = result, let request = record?.requestsToApp.removeValue(forKey: correlationID) else { return }
            request.timer.cancel()
            request.completion.complete(.failure(error))
        }
    }

    /// Forgets a request to an app whose caller was cancelled.
    func cancelRequest(_ completion: Completion<AnyRPCMessage>, of handle: SessionHandle) {
        guard let record = self.apps[handle],
            let (correlationID, request) = record.requestsToApp.first(where: { $0.value.completion === completion })
        else { return }
        request.timer.cancel()
        record.requestsToApp[correlationID] = nil
    }

    private func receivedRequest(_ message: AnyRPCMessage, from record: AppRecord) {
        let functionID = message.functionID.rawValue
        let correlationID = message.correlationID
        if let register = message.message as? SDLRegisterAppInterfaceRequest {
            guard record.registration == nil, !record.registering else {
                self.answer(record, functionID: functionID, correlationID: correlationID, failure: .applicationRegisteredAlready, info: nil)
                return
            }
            record.registering = true
            self.submit(.register(record.app, register, correlationID: correlationID))
            return
        }
        guard record.registration != nil else {
            self.answer(record, functionID: functionID, correlationID: correlationID, failure: .applicationNotRegistered, info: nil)
            return
        }
        if message.message is SDLUnregisterAppInterfaceRequest {
            // The server's own: the session stays, the app may register again (as Core does).
            record.registration = nil
            self.sendResponse(
                SDLUnregisterAppInterfaceResponse(success: true, resultCode: .success), functionID: functionID,
                correlationID: correlationID, of: record)
            self.submit(.event(.appUnregistered(record.app)))
            return
        }
        guard record.unanswered[correlationID] == nil else {
            // Two answers with one correlation id could not be told apart (SDL-0162).
            self.answer(
                record, functionID: functionID, correlationID: correlationID, failure: .invalidId,
                info: "correlation id \(correlationID) belongs to a request still waiting for its answer")
            return
        }
        guard record.unanswered.count < self.configuration.maxPendingRequestsPerApp else {
            self.answer(record, functionID: functionID, correlationID: correlationID, failure: .tooManyPendingRequests, info: nil)
            return
        }
        record.unanswered[correlationID] = message.functionID
        self.submit(.request(record.app, message))
    }

    private func answer(_ record: AppRecord, functionID: UInt32, correlationID: UInt32, failure: SDLResult, info: String?) {
        let payload = RPCWire.failureResponse(functionID: functionID, correlationID: correlationID, resultCode: failure, info: info)
        self.enqueue(payload, of: record.app.handle) { _ in }
    }

    // MARK: - Answers from the handler

    /// The handler's answer to a RegisterAppInterface.
    func answerRegistration(
        _ response: SDLRegisterAppInterfaceResponse, to request: SDLRegisterAppInterfaceRequest, of handle: SessionHandle,
        correlationID: UInt32
    ) {
        guard let record = self.apps[handle] else { return }
        record.registering = false
        guard self.sendResponse(response, functionID: FunctionID.registerAppInterface.rawValue, correlationID: correlationID, of: record),
            response.success
        else { return }
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.sessionRegistered(handle, now: now) }
        } catch {
            return
        }
        record.registration = request
        self.submit(.event(.appRegistered(record.app, request)))
    }

    /// The handler's answer to any other request, returned by ``SDLHeadUnitHandler/answer(_:from:)``.
    func answerRequest(_ answer: SDLRequestAnswer, to request: AnyRPCMessage, of handle: SessionHandle) {
        guard let record = self.apps[handle] else { return }
        let response: (any RPCMessage)?
        switch answer {
        case .answeredSeparately: return
        case .unsupported: response = nil
        case .response(let given): response = given
        }
        do {
            try self.takeUnanswered(request, of: record)
        } catch {
            self.submit(.event(.handlerError(record.app, error)))
            return
        }
        guard let response else {
            self.answer(record, functionID: request.functionID.rawValue, correlationID: request.correlationID, failure: .unsupportedRequest, info: nil)
            return
        }
        self.sendResponse(response, functionID: request.functionID.rawValue, correlationID: request.correlationID, of: record)
    }

    /// A response the handler sends itself (``SDLConnectedApp/respond(_:to:)``); completes once
    /// the engine has it, in order with what else is sent to the app.
    func respond(_ response: any RPCMessage, to request: AnyRPCMessage, of handle: SessionHandle, completion: Completion<Void>) {
        guard !completion.isCompleted else { return }
        guard let record = self.apps[handle] else {
            completion.fail(.disconnected, "the session ended")
            return
        }
        do {
            try self.takeUnanswered(request, of: record)
        } catch {
            completion.complete(.failure(error))
            return
        }
        self.sendResponse(response, functionID: request.functionID.rawValue, correlationID: request.correlationID, of: record) {
            completion.complete($0)
        }
    }

    /// Marks a request of the app answered; throws ``SDLConnectionError/Code/alreadyAnswered``
    /// when it is not waiting for an answer.
    private func takeUnanswered(_ request: AnyRPCMessage, of record: AppRecord) throws(SDLConnectionError) {
        guard record.unanswered[request.correlationID] == request.functionID else {
            throw SDLConnectionError(
                .alreadyAnswered, "\(request.functionName) #\(request.correlationID) of \(record.app) is answered already, or was not received")
        }
        record.unanswered[request.correlationID] = nil
    }

    /// Sends a response of the handler; one that is not of the request's function or breaks the
    /// spec is replaced by GENERIC_ERROR and reported, and `done` gets its error. Returns whether
    /// the handler's was sent.
    @discardableResult
    private func sendResponse(
        _ response: any RPCMessage, functionID: UInt32, correlationID: UInt32, of record: AppRecord,
        done: @escaping (Result<Void, SDLConnectionError>) -> Void = { _ in }
    ) -> Bool {
        do {
            let payload = try RPCWire.responsePayload(
                response, answering: FunctionID(rawValue: functionID), correlationID: correlationID, format: .json,
                options: self.configuration.sendOptions)
            self.enqueue(payload, of: record.app.handle, done: done)
            return true
        } catch {
            self.answer(record, functionID: functionID, correlationID: correlationID, failure: .genericError, info: nil)
            self.submit(.event(.handlerError(record.app, error)))
            done(.failure(error))
            return false
        }
    }

    // MARK: - Sending

    private func enqueue(_ payload: ByteBuffer, of handle: SessionHandle, done: @escaping (Result<Void, SDLConnectionError>) -> Void) {
        guard self.apps[handle] != nil else {
            done(.failure(SDLConnectionError(.disconnected, "the session ended")))
            return
        }
        self.enqueue(payload, on: OutboundBudget.StreamKey(session: handle, service: .rpc), refusal: .disconnected, done: done)
    }

    /// A notification to an app; completes once the engine has it (after waiting for room).
    func sendNotification(_ message: any RPCMessage, to handle: SessionHandle, completion: Completion<Void>) {
        guard !completion.isCompleted else { return }
        do {
            // SDL Core's notifications carry 0xFFFFFFFF (DESIGN.md §3).
            let payload = try RPCWire.notificationPayload(message, correlationID: .max, format: .json, options: self.configuration.sendOptions)
            self.enqueue(payload, of: handle) { completion.complete($0) }
        } catch {
            completion.complete(.failure(error))
        }
    }

    func endService(_ service: ServiceType, of handle: SessionHandle, completion: Completion<Void>) {
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.endService(service, of: handle, now: now) }
            completion.succeed(())
        } catch {
            completion.fail(error.code == .unknownSession ? .disconnected : .refused, "\(error)")
        }
    }

    func endSession(_ handle: SessionHandle, completion: Completion<Void>) {
        do {
            try self.driver.perform { (engine, now) throws(SessionError) in try engine.endSession(handle, now: now) }
            completion.succeed(())
        } catch {
            completion.fail(.disconnected, "\(error)")
        }
    }

    func queuedBytes() -> Int {
        self.budget.refresh(self.driver.engine)
        return self.budget.totalQueuedBytes
    }

    // MARK: - Shutdown

    /// Stops listening; gracefully: ends every session (EndService RPC), waits for the frames to
    /// reach the sockets (at most ``SDLTransportConfiguration/closeTimeout``), then closes every
    /// connection; abruptly: closes them at once. Every session and service ended is reported.
    func shutdown(graceful: Bool, completion: Completion<Void>?) {
        self.shutdownWaiters.append(completion ?? Completion())
        guard graceful, !self.driver.isStopping else {
            self.stopDriver()
            return
        }
        // Not closed before every session was ended: writes of the first would otherwise finish
        // the shutdown.
        self.endingAll = true
        for handle in self.apps.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
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
            self.work?.finish()
            self.work = nil
            for waiter in waiters { waiter.succeed(()) }
        }
    }
}
