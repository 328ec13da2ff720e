import NIOCore
import Logging
import SDLProtocol
import SDLRPC
import SDLSession

/// A head unit: listens on its transports (TCP, WebSocket, an in-memory network, any
/// ``SDLHeadUnitTransport``), accepts any number of apps, many sessions per connection, and hands
/// their registrations, requests and events to its logic: an ``SDLHeadUnitHandler`` written with
/// async/await, or an ``SDLHeadUnitLoopHandler`` run on the server's event loop.
///
/// ```swift
/// try await withSDLHeadUnitServer(transports: [.tcp(port: 12345)], handler: MyHandler()) { server in
///     print(server.primaryPort)
///     …
/// }
/// ```
///
/// RPCs from apps are read strictly; a request that breaks the spec is answered INVALID_DATA, an
/// unknown function UNSUPPORTED_REQUEST, a request before registration APPLICATION_NOT_REGISTERED,
/// as SDL Core answers. Every connection, the session engine and its timers run on one event loop.
public final class SDLHeadUnitServer: Sendable {
    /// The event loop the server runs on.
    public let eventLoop: any EventLoop
    /// The listeners apps connect to, in the order they were given.
    public let listeners: [any SDLTransportListener]
    /// The listener of the secondary transport, if one is offered.
    public let secondaryListener: (any SDLTransportListener)?
    private let core: LoopBound<HeadUnitCore>
    private let bridge: LoopBound<AsyncHandlerBridge>?
    private let handlerTask: Task<Void, Never>?

    /// The port of the first listener (for TCP and WebSocket listeners: the port it is bound to).
    public var primaryPort: Int { self.listeners.first?.advertisedAddress?.port ?? 0 }
    /// The port of the secondary transport, if one is offered.
    public var secondaryPort: Int? { self.secondaryListener?.advertisedAddress?.port }

    private init(
        core: LoopBound<HeadUnitCore>, bridge: LoopBound<AsyncHandlerBridge>?, listeners: [any SDLTransportListener],
        secondaryListener: (any SDLTransportListener)?, handlerTask: Task<Void, Never>?
    ) {
        self.core = core
        self.bridge = bridge
        self.eventLoop = core.eventLoop
        self.listeners = listeners
        self.secondaryListener = secondaryListener
        self.handlerTask = handlerTask
    }

    /// Starts listening on `transports` (and `secondary`, offered to apps as their secondary
    /// transport in TransportEventUpdate) and serving `handler`, whose task the server runs until
    /// it stops. Runs on `eventLoop`, or on one of the first transport's
    /// ``SDLHeadUnitTransport/defaultEventLoopGroup``. Stop it with ``shutdown(graceful:)``;
    /// ``withSDLHeadUnitServer(transports:secondary:configuration:handler:eventLoop:logger:_:)``
    /// does it for you. Throws ``SDLConnectionError/Code/connectFailed`` when a listener cannot be
    /// bound.
    public static func start(
        transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)? = nil,
        configuration: SDLHeadUnitConfiguration = SDLHeadUnitConfiguration(), handler: some SDLHeadUnitHandler,
        eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger
    ) async throws(SDLConnectionError) -> SDLHeadUnitServer {
        let (server, work) = try await Self.startServing(
            transports: transports, secondary: secondary, configuration: configuration, handler: handler, eventLoop: eventLoop,
            logger: logger, detached: true)
        _ = work
        return server
    }

    /// Starts listening and serving a head unit whose logic runs on the event loop: `makeHandler`
    /// is called there once to make it. ``withLoopHandler(_:)`` reaches it afterwards.
    public static func start(
        transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)? = nil,
        configuration: SDLHeadUnitConfiguration = SDLHeadUnitConfiguration(), eventLoop: (any EventLoop)? = nil,
        logger: Logger = SDLAppConnection.silentLogger,
        makeHandler: @escaping @Sendable (any EventLoop) -> any SDLHeadUnitLoopHandler
    ) async throws(SDLConnectionError) -> SDLHeadUnitServer {
        let loop = try Self.loop(eventLoop, transports)
        let core: LoopBound<HeadUnitCore>
        do {
            core = try await loop.submit {
                let core = HeadUnitCore(configuration: configuration, eventLoop: loop, logger: logger)
                core.start(handler: makeHandler(loop))
                return LoopBound(core, eventLoop: loop)
            }.get()
        } catch {
            throw SDLConnectionError(.connectFailed, "the event loop is shut down: \(error)")
        }
        let (listeners, secondaryListener) = try await Self.listen(
            core, transports: transports, secondary: secondary, configuration: configuration, logger: logger)
        return SDLHeadUnitServer(core: core, bridge: nil, listeners: listeners, secondaryListener: secondaryListener, handlerTask: nil)
    }

    /// Starts the server for an async handler; `detached`: the handler's task is the server's own
    /// (else the caller runs the returned work).
    static func startServing(
        transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)?, configuration: SDLHeadUnitConfiguration,
        handler: some SDLHeadUnitHandler, eventLoop: (any EventLoop)?, logger: Logger, detached: Bool
    ) async throws(SDLConnectionError) -> (SDLHeadUnitServer, WorkProducer) {
        let loop = try Self.loop(eventLoop, transports)
        let made: (LoopBound<HeadUnitCore>, LoopBound<AsyncHandlerBridge>, WorkProducer)
        do {
            made = try await loop.submit {
                let core = LoopBound(HeadUnitCore(configuration: configuration, eventLoop: loop, logger: logger), eventLoop: loop)
                let bridge = AsyncHandlerBridge(configuration: configuration)
                let boundBridge = LoopBound(bridge, eventLoop: loop)
                bridge.selfBound = boundBridge
                let work = bridge.makeWorkSequence(boundBridge, core: core)
                core.value.start(handler: bridge)
                return (core, boundBridge, work)
            }.get()
        } catch {
            throw SDLConnectionError(.connectFailed, "the event loop is shut down: \(error)")
        }
        let (core, bridge, work) = made
        let handlerTask: Task<Void, Never>? = detached ? Task { await Self.serve(handler, work: work, bridge: bridge) } : nil
        do {
            let (listeners, secondaryListener) = try await Self.listen(
                core, transports: transports, secondary: secondary, configuration: configuration, logger: logger)
            return (
                SDLHeadUnitServer(core: core, bridge: bridge, listeners: listeners, secondaryListener: secondaryListener, handlerTask: handlerTask),
                work
            )
        } catch {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                core.execute { $0.shutdown(graceful: false) { continuation.resume() } }
            }
            await handlerTask?.value
            throw error
        }
    }

    /// Runs an async handler over the work the bridge produces, until the server stops: events
    /// one at a time, registrations and requests each in a child task.
    static func serve(_ handler: some SDLHeadUnitHandler, work: WorkProducer, bridge: LoopBound<AsyncHandlerBridge>) async {
        await withDiscardingTaskGroup { group in
            for await item in work {
                switch item {
                case .event(let event):
                    await handler.handle(event)
                case .register(let app, let request):
                    group.addTask {
                        guard let registration = request.message as? SDLRegisterAppInterfaceRequest else { return }
                        let response = await handler.registerApp(registration, from: app)
                        bridge.execute { $0.answerRegistration(response, to: request, of: app.handle) }
                    }
                case .request(let app, let request):
                    group.addTask {
                        let answer = await handler.answer(request, from: app)
                        bridge.execute { $0.answerRequest(answer, to: request, of: app.handle) }
                    }
                }
            }
            // The server stopped: answers still being worked out have nobody to go to.
            group.cancelAll()
        }
    }

    private static func loop(_ eventLoop: (any EventLoop)?, _ transports: [any SDLHeadUnitTransport]) throws(SDLConnectionError) -> any EventLoop {
        guard let first = transports.first else {
            throw SDLConnectionError(.connectFailed, "a head unit needs at least one transport to listen on")
        }
        return eventLoop ?? first.defaultEventLoopGroup.any()
    }

    private static func listen(
        _ core: LoopBound<HeadUnitCore>, transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)?,
        configuration: SDLHeadUnitConfiguration, logger: Logger
    ) async throws(SDLConnectionError) -> ([any SDLTransportListener], (any SDLTransportListener)?) {
        var bound: [any SDLTransportListener] = []
        do {
            let accept: @Sendable (any SDLTransportConnection) -> Void = { connection in core.value.accept(connection) }
            for transport in transports {
                bound.append(try await transport.listen(on: core.eventLoop, configuration: configuration.transport, logger: logger, accept: accept))
            }
            var secondaryListener: (any SDLTransportListener)?
            if let secondary {
                let listener = try await secondary.listen(
                    on: core.eventLoop, configuration: configuration.transport, logger: logger, accept: accept)
                secondaryListener = listener
                try? await core.eventLoop.submit { core.value.offerSecondary(listener) }.get()
            }
            return (bound, secondaryListener)
        } catch {
            for listener in bound { await listener.close() }
            throw error
        }
    }

    /// The apps with a running session, in the order they connected (for a server of an
    /// ``SDLHeadUnitHandler``; empty for a loop handler, which knows its apps).
    public var connectedApps: [SDLConnectedApp] {
        get async {
            guard let bridge = self.bridge else { return [] }
            return await withCheckedContinuation { continuation in
                bridge.execute { continuation.resume(returning: $0.connectedApps) }
            }
        }
    }

    /// Bytes queued in the session engine towards every app (responses, notifications, media,
    /// control frames such as heartbeat ACKs), not yet written to the transports.
    public var queuedBytes: Int {
        get async {
            await withCheckedContinuation { continuation in
                self.core.execute { core in
                    continuation.resume(returning: core.queuedBytesOnEveryTransport)
                }
            }
        }
    }

    /// Runs `body` on the event loop with the loop handler and its context (a server started with
    /// ``start(transports:secondary:configuration:eventLoop:logger:makeHandler:)``).
    public func withLoopHandler<Result: Sendable>(
        _ body: @escaping @Sendable (any SDLHeadUnitLoopHandler, SDLHeadUnitContext) -> Result
    ) async -> Result? {
        await withCheckedContinuation { continuation in
            self.core.execute { core in
                guard let handler = core.handler else { return continuation.resume(returning: nil) }
                continuation.resume(returning: body(handler, core.context))
            }
        }
    }

    /// Stops the server. Gracefully (the default): stops listening, ends every session with
    /// EndService(RPC), lets the frames reach the transports (at most
    /// ``SDLTransportConfiguration/closeTimeout``) and closes every connection; abruptly: closes
    /// every connection at once. Either way every session and service end is reported to the
    /// handler, which has seen every event when this returns.
    public func shutdown(graceful: Bool = true) async {
        for listener in self.listeners { await listener.close() }
        await self.secondaryListener?.close()
        // Waited for even by a cancelled task: what the server started ends before this returns.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.core.execute { core in
                core.shutdown(graceful: graceful) { continuation.resume() }
            }
        }
        await self.handlerTask?.value
    }
}

/// Runs a head unit for the duration of `body`: listens on `transports`, serves `handler` (its
/// task is a child of this call), gives `body` the running server, and stops it gracefully when
/// `body` returns, throws, or the calling task is cancelled. Nothing the server started outlives
/// this call.
public func withSDLHeadUnitServer<Result: Sendable>(
    transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)? = nil,
    configuration: SDLHeadUnitConfiguration = SDLHeadUnitConfiguration(), handler: some SDLHeadUnitHandler,
    eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger,
    _ body: (SDLHeadUnitServer) async throws -> Result
) async throws -> Result {
    let (server, work) = try await SDLHeadUnitServer.startServing(
        transports: transports, secondary: secondary, configuration: configuration, handler: handler, eventLoop: eventLoop,
        logger: logger, detached: false)
    guard let bridge = server.bridgeForServing else { preconditionFailure("an async handler's server has a bridge") }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await SDLHeadUnitServer.serve(handler, work: work, bridge: bridge) }
        let result: Result
        do {
            result = try await body(server)
        } catch {
            await server.shutdown()
            try await group.waitForAll()
            throw error
        }
        await server.shutdown()
        try await group.waitForAll()
        return result
    }
}

extension SDLHeadUnitServer {
    var bridgeForServing: LoopBound<AsyncHandlerBridge>? { self.bridge }
}

/// One app connected to an ``SDLHeadUnitServer``: its session, and what the head unit can do to it.
public final class SDLConnectedApp: Sendable, Hashable, CustomStringConvertible {
    /// The session's handle in the server's engine.
    public let handle: SessionHandle
    /// The session as it was started: id, negotiated version, hash, transport.
    public let sessionInfo: SessionInfo
    private let core: LoopBound<HeadUnitCore>

    init(core: LoopBound<HeadUnitCore>, handle: SessionHandle, sessionInfo: SessionInfo) {
        self.core = core
        self.handle = handle
        self.sessionInfo = sessionInfo
    }

    /// `app S#n (session id)`.
    public var description: String { "app \(self.handle) (session \(self.sessionInfo.sessionID))" }

    /// Compares handles.
    public static func == (lhs: SDLConnectedApp, rhs: SDLConnectedApp) -> Bool { lhs.handle == rhs.handle }
    /// Hashes the handle.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.handle) }

    /// The app's RegisterAppInterface, once answered with success.
    public var registration: SDLRegisterAppInterfaceRequest? {
        get async {
            let handle = self.handle
            return try? await self.onLoop { core throws(SDLConnectionError) in
                (core.handler as? AsyncHandlerBridge)?.registration(of: handle)
            }
        }
    }

    /// Runs `body` on the server's loop and returns what it returns.
    private func onLoop<Value: Sendable>(
        _ body: @escaping @Sendable (HeadUnitCore) throws(SDLConnectionError) -> Value
    ) async throws(SDLConnectionError) -> Value {
        try await self.core.run { core, completion in
            completion.complete(Result { () throws(SDLConnectionError) in try body(core) })
        }
    }

    /// Sends a notification (validated strictly; correlation id 0xFFFFFFFF, as SDL Core's). It is
    /// dropped and counted (``SDLHeadUnitEvent/notificationsDropped(_:total:)``) when the app has
    /// not read ``SDLHeadUnitConfiguration/maxQueuedBytesPerApp`` bytes sent to it: an app that
    /// does not read never makes the head unit hold more. Throws
    /// ``SDLConnectionError/Code/disconnected`` when the session has ended.
    public func sendNotification(_ notification: any RPCMessage) async throws(SDLConnectionError) {
        let handle = self.handle
        _ = try await self.onLoop { core throws(SDLConnectionError) in try core.sendNotification(notification, to: handle) }
    }

    /// Answers a request of the app that the handler took with ``SDLRequestAnswer/later``
    /// (``SDLHeadUnitHandler/answer(_:from:)``), with a response of its function and its
    /// correlation id, in order with everything else sent to the app: a notification sent after
    /// this returns reaches the app after the response, as SDL Core orders them. Throws
    /// ``SDLConnectionError/Code/alreadyAnswered`` when the request is answered already or is not
    /// one of this app's (nothing is sent); ``SDLConnectionError/Code/invalidMessage`` for a
    /// response of another function or one that breaks the spec (the app is answered
    /// GENERIC_ERROR instead, as for a returned response); ``SDLConnectionError/Code/disconnected``
    /// when the session has ended.
    public func respond(_ response: any RPCMessage, to request: AnyRPCMessage) async throws(SDLConnectionError) {
        let handle = self.handle
        try await self.onLoop { core throws(SDLConnectionError) in try core.respond(response, to: request, of: handle) }
    }

    /// Sends a request to the app and waits for its response, e.g. a PerformAppServiceInteraction
    /// or GetAppServiceData forwarded to the app that provides the service. The request is
    /// validated strictly and gets a correlation id of the server's, per app; the response is read
    /// as requests are (``SDLHeadUnitConfiguration/receiveOptions``). Throws
    /// ``SDLConnectionError/Code/timeout`` after `timeout` (default 10 s, what SDL Core allows),
    /// ``SDLConnectionError/Code/cancelled`` when the calling task is cancelled,
    /// ``SDLConnectionError/Code/disconnected`` when the session ends first,
    /// ``SDLConnectionError/Code/invalidResponse`` when the answer cannot be read or is of another
    /// function.
    public func send(_ request: any RPCMessage, timeout: TimeAmount = .seconds(10)) async throws(SDLConnectionError) -> AnyRPCMessage {
        let handle = self.handle
        return try await self.core.run { core, completion in
            guard !completion.isCompleted else { return }
            core.sendRequest(request, to: handle, timeout: timeout) { result in completion.complete(result) }
        }
    }

    /// Sends a request and returns its response as the response type of the request's function.
    public func send<Response: RPCMessage>(
        _ request: some RPCMessage, timeout: TimeAmount = .seconds(10), as responseType: Response.Type = Response.self
    ) async throws(SDLConnectionError) -> Response {
        let message = try await self.send(request as any RPCMessage, timeout: timeout)
        guard let response = message.message as? Response else {
            throw SDLConnectionError(.invalidResponse, "expected \(Response.self), got \(type(of: message.message))")
        }
        return response
    }

    /// Ends an audio or video service of the app: EndService, then its frames are dropped for
    /// ``HeadUnitSettings/streamingGracePeriod``.
    public func endService(_ service: ServiceType) async throws(SDLConnectionError) {
        let handle = self.handle
        try await self.onLoop { core throws(SDLConnectionError) in try core.endService(service, of: handle) }
    }

    /// Ends the app's session: EndService(RPC); the session ends at once.
    public func endSession() async throws(SDLConnectionError) {
        let handle = self.handle
        try await self.onLoop { core throws(SDLConnectionError) in try core.endSession(handle) }
    }
}

/// The audio or video messages of one service of an app, in order, each the payload of one data
/// message, until the service ends. Back-pressured: while more than
/// ``SDLHeadUnitConfiguration/mediaBacklog`` messages wait unread the transport carrying them is
/// not read. Dropping the stream discards the service's messages from then on.
public struct SDLMediaStream: AsyncSequence, Sendable {
    /// One message's payload.
    public typealias Element = ByteBuffer

    private let base: MediaProducer

    init(_ base: MediaProducer) {
        self.base = base
    }

    /// Iterates the messages.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator())
    }

    /// Iterates the messages of an ``SDLMediaStream``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: MediaProducer.AsyncIterator

        /// The next message, nil once the service has ended.
        public mutating func next() async -> ByteBuffer? {
            await self.base.next()
        }
    }
}
