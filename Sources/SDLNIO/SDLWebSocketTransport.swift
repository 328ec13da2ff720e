import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// WebSocket (`ws://`, RFC 6455) on SwiftNIO, as SDL Core's WebEngine and cloud-app transports use
/// it: SDL's frames ride in binary WebSocket messages, as Core and the JavaScript suite send them
/// (the frame layer does not care where one message ends: any split is read).
///
/// Either side may be the WebSocket server:
/// - an app that is a WebSocket client of a head unit's server (SDL Core's WebEngine server listens
///   on port 2020): `.webSocket(host:port:)` as an ``SDLAppTransport``;
/// - a head unit that is a WebSocket server: `.webSocket(host:port:)` as an ``SDLHeadUnitTransport``;
/// - and the reverse roles, as Core's cloud-app transport has them (Core connects to the app):
///   `SDLWebSocketTransport(role: .server(...))` for the app, which then waits for the head unit's
///   connection, and `SDLWebSocketTransport(role: .client(...))` for a head unit that connects to
///   an app.
///
/// ```swift
/// let connection = try await SDLAppConnection.connect(to: .webSocket(host: "127.0.0.1", port: 2020))
/// ```
public struct SDLWebSocketTransport: SDLAppTransport, SDLHeadUnitTransport {
    /// Which side opens the WebSocket.
    public enum Role: Sendable, Hashable {
        /// This side connects to a WebSocket server at `host`:`port`, asking for `path`.
        case client(host: String, port: Int, path: String)
        /// This side listens on `host`:`port` (0: a free port).
        case server(host: String, port: Int)
    }

    /// Which side opens the WebSocket.
    public var role: Role
    /// The largest WebSocket frame taken from the peer; a larger one closes the connection
    /// (1009, message too big). Default 1 MiB + 16 bytes: a frame of ``ProtocolLimits``'s largest
    /// payload and its header.
    public var maxFrameSize: Int = (1 << 20) + 16
    /// The event loops to run on when the runtime is given none. Default NIO's shared group.
    public var eventLoopGroup: any EventLoopGroup

    /// A transport of `role`.
    public init(role: Role, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.role = role
        self.eventLoopGroup = eventLoopGroup
    }

    /// `ws://HOST:PORT/PATH` (client) or `ws server HOST:PORT`.
    public var transportDescription: String {
        switch self.role {
        case .client(let host, let port, let path): "ws://\(host):\(port)\(path)"
        case .server(let host, let port): "ws server \(host):\(port)"
        }
    }

    /// See ``eventLoopGroup``.
    public var defaultEventLoopGroup: any EventLoopGroup { self.eventLoopGroup }

    /// SDL Core offers its secondary transport over TCP (TCP_WIFI), also to WebSocket apps.
    public func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)? {
        SDLTCPTransport(host: host, port: port, eventLoopGroup: self.eventLoopGroup)
    }

    // MARK: - App

    /// As a client, connects and upgrades; as a server, listens until the head unit connects,
    /// then takes that one connection and stops listening.
    public func connect(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
    ) {
        switch self.role {
        case .client(let host, let port, let path):
            self.connectAsClient(host: host, port: port, path: path, on: eventLoop, configuration: configuration, completion: completion)
        case .server(let host, let port):
            let done = NIOLoopBound(Once(completion), eventLoop: eventLoop)
            let maxFrameSize = self.maxFrameSize
            let description = self.transportDescription
            let server = Self.bind(
                host: host, port: port, maxFrameSize: maxFrameSize, on: eventLoop, configuration: configuration, description: description
            ) { connection, serverChannel in
                if !done.value.call(.success(connection)) {
                    connection.close(.now)
                }
                serverChannel?.close(promise: nil)
            }
            server.assumeIsolated().whenFailure { error in
                done.value.call(.failure(SDLConnectionError(.connectFailed, "cannot listen on \(host):\(port): \(SDLTCPTransport.describe(error))")))
            }
        }
    }

    private func connectAsClient(
        host: String, port: Int, path: String, on eventLoop: any EventLoop, configuration: SDLTransportConfiguration,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
    ) {
        let done = NIOLoopBound(Once(completion), eventLoop: eventLoop)
        let description = "ws://\(host):\(port)\(path)"
        let maxFrameSize = self.maxFrameSize
        let fail: @Sendable (String) -> Void = { reason in
            eventLoop.execute { done.value.call(.failure(SDLConnectionError(.connectFailed, "\(description): \(reason)"))) }
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(configuration.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try SDLTCPTransport.configure(channel, configuration)
                    let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: maxFrameSize) { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            let connection = SDLChannelConnection(description: description) { connection in
                                if !done.value.call(.success(connection)) { connection.close(.now) }
                            }
                            try channel.pipeline.syncOperations.addHandlers(
                                WebSocketBinaryBridge(isClient: true), connection)
                        }
                    }
                    let request = WebSocketUpgradeRequest(host: host, port: port, path: path, fail: fail)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(
                        withClientUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.syncOperations.removeHandler(request, promise: nil)
                        }))
                    try channel.pipeline.syncOperations.addHandler(request)
                }
            }
            .connect(host: host, port: port)
            .whenFailure { error in fail(SDLTCPTransport.describe(error)) }
    }

    // MARK: - Head unit

    /// As a server, listens for apps; as a client, connects to the app (Core's cloud-app
    /// transport) and hands over that one connection.
    public func listen(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        accept: @escaping @Sendable (any SDLTransportConnection) -> Void
    ) async throws(SDLConnectionError) -> any SDLTransportListener {
        switch self.role {
        case .server(let host, let port):
            do {
                let channel = try await Self.bind(
                    host: host, port: port, maxFrameSize: self.maxFrameSize, on: eventLoop, configuration: configuration,
                    description: "ws"
                ) { connection, _ in accept(connection) }.get()
                return SDLChannelListener(channel: channel, host: host, port: channel.localAddress?.port ?? port, scheme: "ws")
            } catch {
                throw SDLConnectionError(.connectFailed, "cannot listen on \(host):\(port): \(SDLTCPTransport.describe(error))")
            }
        case .client:
            let description = self.transportDescription
            let result: Result<Void, SDLConnectionError> = await withCheckedContinuation { continuation in
                eventLoop.execute {
                    self.connect(on: eventLoop, configuration: configuration, logger: logger) { result in
                        switch result {
                        case .success(let connection):
                            accept(connection)
                            continuation.resume(returning: .success(()))
                        case .failure(let error):
                            continuation.resume(returning: .failure(error))
                        }
                    }
                }
            }
            try result.get()
            return OutgoingListener(transportDescription: description)
        }
    }

    /// A WebSocket server channel whose upgraded connections go to `accept`, on `eventLoop`.
    private static func bind(
        host: String, port: Int, maxFrameSize: Int, on eventLoop: any EventLoop, configuration: SDLTransportConfiguration,
        description: String, accept: @escaping @Sendable (SDLChannelConnection, (any Channel)?) -> Void
    ) -> EventLoopFuture<any Channel> {
        let serverChannel = NIOLockedServerChannel()
        // Every connection is accepted on `eventLoop`, where the pending upgrades are counted.
        let pending = NIOLoopBoundBox.makeBoxSendingValue(PendingHandshakes(limit: configuration.maxPendingHandshakes), eventLoop: eventLoop)
        let future = ServerBootstrap(group: eventLoop, childGroup: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { addAcceptBackoff(to: $0, configuration) }
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try SDLTCPTransport.configure(channel, configuration)
                    let deadline = HandshakeDeadline(timeout: configuration.handshakeTimeout, pending: pending)
                    try channel.pipeline.syncOperations.addHandler(deadline)
                    let refusal = PlainHTTPRefusal()
                    let upgrader = NIOWebSocketServerUpgrader(
                        maxFrameSize: maxFrameSize,
                        shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                let connection = SDLChannelConnection(description: description) { accept($0, serverChannel.channel) }
                                try channel.pipeline.syncOperations.addHandlers(WebSocketBinaryBridge(isClient: false), connection)
                            }
                        })
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.syncOperations.removeHandler(refusal, promise: nil)
                            context.pipeline.syncOperations.removeHandler(deadline, promise: nil)
                        }))
                    try channel.pipeline.syncOperations.addHandler(refusal)
                }
            }
            .bind(host: host, port: port)
        future.whenSuccess { serverChannel.channel = $0 }
        return future
    }
}

extension SDLAppTransport where Self == SDLWebSocketTransport {
    /// A WebSocket client of the head unit's server at `ws://host:port/path` (SDL Core's
    /// WebEngine server: port 2020).
    public static func webSocket(host: String, port: Int = 2020, path: String = "/") -> SDLWebSocketTransport {
        SDLWebSocketTransport(role: .client(host: host, port: port, path: path))
    }
}

extension SDLHeadUnitTransport where Self == SDLWebSocketTransport {
    /// A WebSocket server on `host`:`port` (0: a free port).
    public static func webSocket(host: String = "127.0.0.1", port: Int = 2020) -> SDLWebSocketTransport {
        SDLWebSocketTransport(role: .server(host: host, port: port))
    }
}

/// A head unit's "listener" that connected out to an app: nothing to stop.
struct OutgoingListener: SDLTransportListener {
    let transportDescription: String
    var advertisedAddress: (host: String, port: Int)? { nil }
    func close() async {}
}

/// The server channel, set once bound; read from child channels' loops.
final class NIOLockedServerChannel: @unchecked Sendable {
    private let lock = NIOLock()
    private var _channel: (any Channel)?
    var channel: (any Channel)? {
        get { self.lock.withLock { self._channel } }
        set { self.lock.withLock { self._channel = newValue } }
    }
}

/// A completion called at most once.
final class Once<Value> {
    private var completion: ((Value) -> Void)?
    init(_ completion: @escaping (Value) -> Void) { self.completion = completion }
    /// Calls the completion; false when it was called before.
    @discardableResult
    func call(_ value: Value) -> Bool {
        guard let completion = self.completion else { return false }
        self.completion = nil
        completion(value)
        return true
    }
}

/// Turns the WebSocket frames of an upgraded channel into the byte stream SDL's frame layer reads,
/// and the bytes the runtime writes into binary messages (masked from a client, RFC 6455 §5.3).
/// Pings are answered, a Close is answered and closes, text is refused (1003). The empty write
/// the runtime makes before closing (to learn when earlier writes left) becomes the Close frame.
final class WebSocketBinaryBridge: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private let isClient: Bool
    private var closeSent = false
    private var generator = SystemRandomNumberGenerator()

    init(isClient: Bool) { self.isClient = isClient }

    private func maskKey() -> WebSocketMaskingKey? {
        guard self.isClient else { return nil }
        return WebSocketMaskingKey.random(using: &self.generator)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        switch frame.opcode {
        case .binary, .continuation:
            let bytes = frame.unmaskedData
            if bytes.readableBytes > 0 { context.fireChannelRead(self.wrapInboundOut(bytes)) }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: self.maskKey(), data: frame.unmaskedData)
            context.writeAndFlush(self.wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            self.sendClose(context, code: .normalClosure, promise: nil)
            context.close(promise: nil)
        case .text:
            self.sendClose(context, code: .unacceptableData, promise: nil)
            context.close(promise: nil)
        default:
            self.sendClose(context, code: .protocolError, promise: nil)
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = self.unwrapOutboundIn(data)
        guard bytes.readableBytes > 0 else {
            self.sendClose(context, code: .normalClosure, promise: promise)
            return
        }
        guard !self.closeSent else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        let frame = WebSocketFrame(fin: true, opcode: .binary, maskKey: self.maskKey(), data: bytes)
        context.write(self.wrapOutboundOut(frame), promise: promise)
    }

    private func sendClose(_ context: ChannelHandlerContext, code: WebSocketErrorCode, promise: EventLoopPromise<Void>?) {
        guard !self.closeSent else {
            promise?.succeed(())
            return
        }
        self.closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: self.maskKey(), data: data)
        context.writeAndFlush(self.wrapOutboundOut(frame), promise: promise)
    }
}

/// Sends the client's upgrade request once the socket is up, and reports a server that answers
/// anything but the upgrade.
final class WebSocketUpgradeRequest: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let port: Int
    private let path: String
    private let fail: @Sendable (String) -> Void

    init(host: String, port: Int, path: String, fail: @escaping @Sendable (String) -> Void) {
        self.host = host
        self.port = port
        self.path = path
        self.fail = fail
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { self.sendRequest(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.sendRequest(context)
        context.fireChannelActive()
    }

    private var sent = false

    private func sendRequest(_ context: ChannelHandlerContext) {
        guard !self.sent else { return }
        self.sent = true
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "\(self.host):\(self.port)")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: self.path, headers: headers)
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A response the upgrader did not take: the server refused the WebSocket.
        if case .head(let head) = self.unwrapInboundIn(data) {
            self.fail("the server answered \(head.status.code) \(head.status.reasonPhrase) instead of upgrading to WebSocket")
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail("the WebSocket upgrade failed: \(error)")
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail("the server closed the connection before the WebSocket upgrade")
        context.fireChannelInactive()
    }
}

/// Answers a plain HTTP request (not an upgrade) with 426 and closes, instead of leaving it
/// waiting. Removed once the connection upgrades.
final class PlainHTTPRefusal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = self.unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Upgrade", value: "websocket")
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPResponseHead(version: .http1_1, status: .upgradeRequired, headers: headers)
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}
