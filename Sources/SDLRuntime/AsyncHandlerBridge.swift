import NIOCore
import SDLProtocol
import SDLRPC
import SDLSession

/// What the server's task for an ``SDLHeadUnitHandler`` works through, in order.
enum HeadUnitWork: Sendable {
    case event(SDLHeadUnitEvent)
    case register(SDLConnectedApp, AnyRPCMessage)
    case request(SDLConnectedApp, AnyRPCMessage)
}

typealias WorkProducer = NIOAsyncSequenceProducer<
    HeadUnitWork, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, AsyncHandlerBridge.WorkDelegate
>
typealias MediaProducer = NIOAsyncSequenceProducer<
    ByteBuffer, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, AsyncHandlerBridge.MediaDelegate
>

/// Serves an ``SDLHeadUnitHandler`` (async/await) from the loop: events, registrations and
/// requests go to the handler's task through a bounded sequence (a handler that lags stops the
/// reads of every connection), media through a bounded stream per service (a reader that lags
/// stops the reads of the transport carrying it). The handler's answers come back to the loop.
final class AsyncHandlerBridge: SDLHeadUnitLoopHandler {
    let configuration: SDLHeadUnitConfiguration
    private var context: SDLHeadUnitContext?
    private var core: LoopBound<HeadUnitCore>?
    private var work: WorkProducer.Source?
    private var workPaused = false
    private var apps: [SessionHandle: App] = [:]

    private final class App {
        let app: SDLConnectedApp
        var registration: SDLRegisterAppInterfaceRequest?
        var media: [ServiceType: MediaSink] = [:]

        init(app: SDLConnectedApp) { self.app = app }
    }

    private struct MediaSink {
        let source: MediaProducer.Source
        /// The transport whose reads this stream holds, if it does.
        var paused: TransportID?
        var terminated = false
    }

    struct WorkDelegate: NIOAsyncSequenceProducerDelegate {
        let bridge: LoopBound<AsyncHandlerBridge>
        func produceMore() { self.bridge.execute { $0.workDrained() } }
        func didTerminate() { self.bridge.execute { $0.workTerminated() } }
    }

    struct MediaDelegate: NIOAsyncSequenceProducerDelegate {
        let bridge: LoopBound<AsyncHandlerBridge>
        let session: SessionHandle
        let service: ServiceType
        func produceMore() {
            let (session, service) = (self.session, self.service)
            self.bridge.execute { $0.mediaDrained(session, service) }
        }
        func didTerminate() {
            let (session, service) = (self.session, self.service)
            self.bridge.execute { $0.mediaTerminated(session, service) }
        }
    }

    init(configuration: SDLHeadUnitConfiguration) {
        self.configuration = configuration
    }

    /// The sequence the handler's task reads; made on the loop, before the server starts.
    func makeWorkSequence(_ bound: LoopBound<AsyncHandlerBridge>, core: LoopBound<HeadUnitCore>) -> WorkProducer {
        self.core = core
        let backlog = max(2, self.configuration.handlerBacklog)
        let result = WorkProducer.makeSequence(
            backPressureStrategy: .init(lowWatermark: backlog / 2, highWatermark: backlog), finishOnDeinit: false,
            delegate: WorkDelegate(bridge: bound))
        self.work = result.source
        return result.sequence
    }

    private func submit(_ item: HeadUnitWork) {
        guard let work = self.work else { return }
        if work.yield(item) == .stopProducing, !self.workPaused {
            self.workPaused = true
            self.context?.core.driver.pauseAllReads()
        }
    }

    private func workDrained() {
        guard self.workPaused else { return }
        self.workPaused = false
        self.context?.core.driver.resumeAllReads()
    }

    private func workTerminated() {
        self.work = nil
        self.workDrained()
    }

    func registration(of handle: SessionHandle) -> SDLRegisterAppInterfaceRequest? {
        self.apps[handle]?.registration
    }

    var connectedApps: [SDLConnectedApp] {
        (self.context?.connectedApps ?? []).compactMap { self.apps[$0]?.app }
    }

    // MARK: - SDLHeadUnitLoopHandler

    func serverStarted(_ context: SDLHeadUnitContext) {
        self.context = context
    }

    func decideServiceStart(_ service: ServiceType, of app: SessionHandle, parameters: VideoParameters?) -> SDLServiceStartDecision {
        .accept
    }

    func handle(_ event: SDLHeadUnitLoopEvent) {
        switch event {
        case .appConnected(let handle, let info):
            guard let core = self.core else { return }
            let app = App(app: SDLConnectedApp(core: core, handle: handle, sessionInfo: info))
            self.apps[handle] = app
            self.submit(.event(.appConnected(app.app)))
        case .request(let message, let handle):
            guard let app = self.apps[handle] else { return }
            switch message.message {
            case is SDLRegisterAppInterfaceRequest:
                self.submit(.register(app.app, message))
            case is SDLUnregisterAppInterfaceRequest:
                // The server's own: the session stays, the app may register again (as Core does).
                try? self.context?.respond(SDLUnregisterAppInterfaceResponse(success: true, resultCode: .success), to: message, of: handle)
                app.registration = nil
                self.submit(.event(.appUnregistered(app.app)))
            default:
                self.submit(.request(app.app, message))
            }
        case .notification(let message, let handle):
            guard let app = self.apps[handle] else { return }
            self.submit(.event(.notification(app.app, message)))
        case .media(let bytes, let service, let handle, let transport):
            self.receivedMedia(bytes, service, of: handle, on: transport)
        case .serviceStarted(let handle, let service, let info):
            guard let app = self.apps[handle], let bound = self.selfBound else { return }
            let backlog = max(4, self.configuration.mediaBacklog)
            let delegate = MediaDelegate(bridge: bound, session: handle, service: service)
            let made = MediaProducer.makeSequence(
                backPressureStrategy: .init(lowWatermark: backlog / 4, highWatermark: backlog), finishOnDeinit: false,
                delegate: delegate)
            if let old = app.media[service] { old.source.finish() }
            app.media[service] = MediaSink(source: made.source)
            self.submit(.event(.serviceStarted(app.app, service, info, SDLMediaStream(made.sequence))))
        case .serviceEnded(let handle, let service, let reason):
            guard let app = self.apps[handle] else { return }
            self.finishMedia(app, service)
            self.submit(.event(.serviceEnded(app.app, service, reason)))
        case .appFlooded(let handle):
            // What SDL Core tells a flooding app before it ends the session.
            _ = try? self.context?.sendNotification(SDLOnAppInterfaceUnregistered(reason: .tooManyRequests), to: handle)
        case .appDisconnected(let handle, let reason):
            guard let app = self.apps.removeValue(forKey: handle) else { return }
            for service in Array(app.media.keys) {
                self.finishMedia(app, service)
            }
            self.submit(.event(.appDisconnected(app.app, reason)))
        case .unreadableMessage(let handle, let error):
            guard let app = self.apps[handle] else { return }
            self.submit(.event(.unreadableMessage(app.app, error)))
        case .notificationsDropped(let handle, let total):
            guard let app = self.apps[handle] else { return }
            self.submit(.event(.notificationsDropped(app.app, total: total)))
        case .session(let event):
            self.submit(.event(.session(event)))
        case .serverStopped:
            for (_, app) in self.apps {
                for service in Array(app.media.keys) { self.finishMedia(app, service) }
            }
            self.apps = [:]
            self.work?.finish()
            self.work = nil
        }
    }

    /// The bridge as reachable from other tasks; set by the server once made.
    var selfBound: LoopBound<AsyncHandlerBridge>?

    // MARK: - Answers of the handler

    /// The handler's answer to a RegisterAppInterface.
    func answerRegistration(_ response: SDLRegisterAppInterfaceResponse, to request: AnyRPCMessage, of handle: SessionHandle) {
        guard let app = self.apps[handle], let context = self.context else { return }
        do {
            try context.respond(response, to: request, of: handle)
        } catch {
            self.submit(.event(.handlerError(app.app, error)))
            return
        }
        guard response.success, let registration = request.message as? SDLRegisterAppInterfaceRequest else { return }
        app.registration = registration
        self.submit(.event(.appRegistered(app.app, registration)))
    }

    /// The handler's answer to any other request.
    func answerRequest(_ answer: SDLRequestAnswer, to request: AnyRPCMessage, of handle: SessionHandle) {
        guard let app = self.apps[handle], let context = self.context else { return }
        let response: any RPCMessage
        switch answer {
        case .later: return
        case .unsupported:
            response = RPCRegistry.failureResponse(functionID: request.functionID, resultCode: .unsupportedRequest, info: nil)
        case .response(let given): response = given
        }
        do {
            try context.respond(response, to: request, of: handle)
        } catch {
            self.submit(.event(.handlerError(app.app, error)))
        }
    }

    // MARK: - Media

    private func receivedMedia(_ bytes: ByteBuffer, _ service: ServiceType, of handle: SessionHandle, on transport: TransportID) {
        guard let app = self.apps[handle], var sink = app.media[service], !sink.terminated else { return }
        if sink.source.yield(bytes) == .stopProducing, sink.paused == nil {
            sink.paused = transport
            app.media[service] = sink
            self.context?.holdReads(on: transport)
        }
    }

    private func finishMedia(_ app: App, _ service: ServiceType) {
        guard let sink = app.media.removeValue(forKey: service) else { return }
        sink.source.finish()
        if let paused = sink.paused {
            self.context?.releaseReads(on: paused)
        }
    }

    private func mediaDrained(_ session: SessionHandle, _ service: ServiceType) {
        guard let app = self.apps[session], let paused = app.media[service]?.paused else { return }
        app.media[service]!.paused = nil
        self.context?.releaseReads(on: paused)
    }

    /// The reader dropped the stream: later messages are discarded.
    private func mediaTerminated(_ session: SessionHandle, _ service: ServiceType) {
        guard let app = self.apps[session], app.media[service] != nil else { return }
        self.mediaDrained(session, service)
        app.media[service]!.terminated = true
    }
}
