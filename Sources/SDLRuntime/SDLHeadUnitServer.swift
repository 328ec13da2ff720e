import NIOCore
import Logging
import SDLProtocol
import SDLRPC
import SDLSession

/// A head unit over TCP: listens on a primary port (and a secondary one when offered), accepts
/// any number of apps, many sessions per connection, and hands their registrations, requests and
/// events to an ``SDLHeadUnitHandler`` (DESIGN.md §1, "Runtimes").
///
/// ```swift
/// var configuration = SDLHeadUnitConfiguration()
/// configuration.primaryPort = 0   // any free port
/// let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: MyHandler())
/// print(server.primaryPort)
/// …
/// await server.shutdown()
/// ```
///
/// RPCs from apps are read strictly; a request that breaks the spec is answered INVALID_DATA, an
/// unknown function UNSUPPORTED_REQUEST, a request before registration APPLICATION_NOT_REGISTERED,
/// as SDL Core answers (SESSION.md §C). Every connection, the session engine and its timers run on
/// one event loop.
public final class SDLHeadUnitServer: Sendable {
    /// The event loop the server runs on.
    public let eventLoop: any EventLoop
    /// The listeners apps connect to, in the order they were given.
    public let listeners: [any SDLTransportListener]
    /// The listener of the secondary transport, if one is offered.
    public let secondaryListener: (any SDLTransportListener)?
    private let core: LoopBound<HeadUnitCore>
    private let handlerTask: Task<Void, Never>

    /// The port of the first listener (for TCP and WebSocket listeners: the port it is bound to).
    public var primaryPort: Int { self.listeners.first?.advertisedAddress?.port ?? 0 }
    /// The port of the secondary transport, if one is offered.
    public var secondaryPort: Int? { self.secondaryListener?.advertisedAddress?.port }

    /// A server dropped without ``shutdown(graceful:)`` stops at once.
    deinit {
        self.core.execute { $0.shutdown(graceful: false, completion: nil) }
        let listeners = self.listeners + (self.secondaryListener.map { [$0] } ?? [])
        Task { for listener in listeners { await listener.close() } }
    }

    private init(
        core: LoopBound<HeadUnitCore>, listeners: [any SDLTransportListener], secondaryListener: (any SDLTransportListener)?,
        handlerTask: Task<Void, Never>
    ) {
        self.core = core
        self.eventLoop = core.eventLoop
        self.listeners = listeners
        self.secondaryListener = secondaryListener
        self.handlerTask = handlerTask
    }

    /// Starts listening on `transports` (and `secondary`, offered to apps as their secondary
    /// transport in TransportEventUpdate) and serving. Runs on `eventLoop`, or on one of the first
    /// transport's ``SDLHeadUnitTransport/defaultEventLoopGroup``. Throws
    /// ``SDLConnectionError/Code/connectFailed`` when a listener cannot be bound.
    public static func start(
        transports: [any SDLHeadUnitTransport], secondary: (any SDLHeadUnitTransport)? = nil,
        configuration: SDLHeadUnitConfiguration = SDLHeadUnitConfiguration(), handler: some SDLHeadUnitHandler,
        eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger
    ) async throws(SDLConnectionError) -> SDLHeadUnitServer {
        guard let first = transports.first else {
            throw SDLConnectionError(.connectFailed, "a head unit needs at least one transport to listen on")
        }
        let loop = eventLoop ?? first.defaultEventLoopGroup.any()
        let made: (LoopBound<HeadUnitCore>, WorkProducer)
        do {
            made = try await loop.submit {
                let core = LoopBound(HeadUnitCore(configuration: configuration, eventLoop: loop, logger: logger), eventLoop: loop)
                return (core, core.value.makeWorkSequence(core))
            }.get()
        } catch {
            throw SDLConnectionError(.connectFailed, "the event loop is shut down: \(error)")
        }
        let (core, work) = made
        let handlerTask = Task {
            for await item in work {
                switch item {
                case .event(let event):
                    await handler.handle(event)
                case .register(let app, let request, let correlationID):
                    Task {
                        let response = await handler.registerApp(request, from: app)
                        core.execute {
                            $0.answerRegistration(response, to: request, of: app.handle, correlationID: correlationID)
                        }
                    }
                case .request(let app, let request):
                    Task {
                        let answer = await handler.answer(request, from: app)
                        core.execute { $0.answerRequest(answer, to: request, of: app.handle) }
                    }
                }
            }
        }
        var bound: [any SDLTransportListener] = []
        do {
            let accept: @Sendable (any SDLTransportConnection) -> Void = { connection in core.value.accept(connection) }
            for transport in transports {
                bound.append(try await transport.listen(on: loop, configuration: configuration.transport, logger: logger, accept: accept))
            }
            var secondaryListener: (any SDLTransportListener)?
            if let secondary {
                let listener = try await secondary.listen(on: loop, configuration: configuration.transport, logger: logger, accept: accept)
                secondaryListener = listener
                bound.append(listener)
                try? await loop.submit { core.value.offerSecondary(listener) }.get()
            }
            return SDLHeadUnitServer(
                core: core, listeners: secondaryListener == nil ? bound : Array(bound.dropLast()),
                secondaryListener: secondaryListener, handlerTask: handlerTask)
        } catch {
            for listener in bound { await listener.close() }
            _ = try? await core.run { core, completion in core.shutdown(graceful: false, completion: completion) }
            await handlerTask.value
            throw error
        }
    }

    /// The apps with a running session, in the order they connected.
    public var connectedApps: [SDLConnectedApp] {
        get async {
            await withCheckedContinuation { continuation in
                self.core.execute { continuation.resume(returning: $0.connectedApps) }
            }
        }
    }

    /// Bytes of responses and notifications queued in the session engine, not yet written to the
    /// sockets.
    public var queuedBytes: Int {
        get async {
            await withCheckedContinuation { continuation in
                self.core.execute { continuation.resume(returning: $0.queuedBytes()) }
            }
        }
    }

    /// Stops the server. Gracefully (the default): stops listening, ends every session with
    /// EndService(RPC), lets the frames reach the sockets (at most
    /// ``SDLTransportConfiguration/closeTimeout``) and closes every connection; abruptly: closes
    /// every connection at once. Either way every session and service end is reported to the
    /// handler, which has seen every event when this returns.
    public func shutdown(graceful: Bool = true) async {
        for listener in self.listeners { await listener.close() }
        await self.secondaryListener?.close()
        _ = try? await self.core.run { core, completion in
            core.shutdown(graceful: graceful, completion: completion)
        }
        await self.handlerTask.value
    }
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
            return await withCheckedContinuation { continuation in
                self.core.execute { continuation.resume(returning: $0.registration(of: handle)) }
            }
        }
    }

    /// Sends a notification (validated strictly; correlation id 0xFFFFFFFF, as SDL Core's). Returns
    /// once the session engine has it, after waiting while the app's RPC queue is full
    /// (``SDLTransportConfiguration/maxQueuedBytesPerService``). Throws
    /// ``SDLConnectionError/Code/disconnected`` when the session has ended.
    public func sendNotification(_ notification: any RPCMessage) async throws(SDLConnectionError) {
        let handle = self.handle
        try await self.core.run { core, completion in
            core.sendNotification(notification, to: handle, completion: completion)
        }
    }

    /// Answers a request of the app that the handler took with
    /// ``SDLRequestAnswer/answeredSeparately`` (``SDLHeadUnitHandler/answer(_:from:)``), with a
    /// response of its function and its correlation id, in order with everything else sent to the
    /// app: a notification sent after this returns reaches the app after the response, as SDL
    /// Core orders them. Returns once the session engine has it (after waiting while the app's
    /// RPC queue is full). Throws ``SDLConnectionError/Code/alreadyAnswered`` when the request is
    /// answered already or is not one of this app's (nothing is sent);
    /// ``SDLConnectionError/Code/invalidMessage`` for a response of another function or one that
    /// breaks the spec (the app is answered GENERIC_ERROR instead, as for a returned response);
    /// ``SDLConnectionError/Code/disconnected`` when the session has ended.
    public func respond(_ response: any RPCMessage, to request: AnyRPCMessage) async throws(SDLConnectionError) {
        let handle = self.handle
        try await self.core.run { core, completion in
            core.respond(response, to: request, of: handle, completion: completion)
        }
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
            core.sendRequest(request, to: handle, timeout: timeout, completion: completion)
        } onCancel: { core, completion in
            core.cancelRequest(completion, of: handle)
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
        try await self.core.run { core, completion in
            core.endService(service, of: handle, completion: completion)
        }
    }

    /// Ends the app's session: EndService(RPC); the session ends at once.
    public func endSession() async throws(SDLConnectionError) {
        let handle = self.handle
        try await self.core.run { core, completion in
            core.endSession(handle, completion: completion)
        }
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
