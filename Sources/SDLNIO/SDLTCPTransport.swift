@_exported import SDLRuntime
import Logging
import NIOCore
import NIOPosix

/// TCP on SwiftNIO's sockets (NIOPosix), both roles: an app connects to a head unit (SDL Core
/// listens on port 12345 by default), a head unit listens for apps; and the secondary transport
/// of protocol spec 5.4.1 §3.1.7 (TCP_WIFI), which the app reaches at the address of the head
/// unit's TransportEventUpdate.
///
/// ```swift
/// let connection = try await SDLAppConnection.connect(to: .tcp(host: "127.0.0.1", port: 12345))
/// ```
public struct SDLTCPTransport: SDLAppTransport, SDLHeadUnitTransport {
    /// The host to connect to, or the address to listen on.
    public var host: String
    /// The port to connect to, or to listen on (0 picks a free one).
    public var port: Int
    /// The event loops to run on when the runtime is given none. Default NIO's shared
    /// multi-threaded group.
    public var eventLoopGroup: any EventLoopGroup

    /// A transport to `host`:`port`.
    public init(host: String, port: Int, eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.host = host
        self.port = port
        self.eventLoopGroup = eventLoopGroup
    }

    /// `tcp HOST:PORT`.
    public var transportDescription: String { "tcp \(self.host):\(self.port)" }

    /// See ``eventLoopGroup``.
    public var defaultEventLoopGroup: any EventLoopGroup { self.eventLoopGroup }

    /// The secondary transport at the address a head unit offered: TCP as well.
    public func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)? {
        SDLTCPTransport(host: host, port: port, eventLoopGroup: self.eventLoopGroup)
    }

    /// Connects; the error names the cause (`connection refused`, `timed out`).
    public func connect(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
    ) {
        let description = self.transportDescription
        let (host, port) = (self.host, self.port)
        let connecting = ClientBootstrap(group: eventLoop)
            .connectTimeout(configuration.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, configuration)
                    try channel.pipeline.syncOperations.addHandler(SDLChannelConnection(description: description))
                }
            }
            .connect(host: host, port: port)
        handOver(connecting, on: eventLoop, failure: { "\(host):\(port): \(Self.describe($0))" }, completion: completion)
    }

    /// Listens; connections are accepted on `eventLoop`.
    public func listen(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        accept: @escaping @Sendable (any SDLTransportConnection) -> Void
    ) async throws(SDLConnectionError) -> any SDLTransportListener {
        do {
            let channel = try await ServerBootstrap(group: eventLoop, childGroup: eventLoop)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelInitializer { addAcceptBackoff(to: $0, configuration) }
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try Self.configure(channel, configuration)
                        try channel.pipeline.syncOperations.addHandler(SDLChannelConnection(description: "tcp") { accept($0) })
                    }
                }
                .bind(host: self.host, port: self.port)
                .get()
            let port = channel.localAddress?.port ?? self.port
            return SDLChannelListener(channel: channel, host: self.host, port: port, scheme: "tcp")
        } catch {
            throw SDLConnectionError(.connectFailed, "cannot listen on \(self.host):\(self.port): \(Self.describe(error))")
        }
    }

    /// Channel options every TCP connection gets: the write-buffer bounds, no Nagle delay.
    static func configure(_ channel: any Channel, _ configuration: SDLTransportConfiguration) throws {
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: configuration.writeBufferLowWatermark, high: configuration.writeBufferHighWatermark)
        try channel.syncOptions?.setOption(.writeBufferWaterMark, value: watermark)
        try channel.syncOptions?.setOption(.tcpOption(.tcp_nodelay), value: 1)
        if let size = configuration.socketSendBufferSize {
            try channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: SocketOptionValue(size))
        }
    }

    /// A socket error as a reader wants it: refused, timed out, unreachable, else NIO's words.
    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first {
                return Self.describe(first.error)
            }
            if error.dnsAAAAError != nil || error.dnsAError != nil {
                return "the host name could not be resolved"
            }
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return "connection refused (nothing listens there)"
            case ETIMEDOUT: return "timed out"
            case ENETUNREACH, EHOSTUNREACH: return "unreachable"
            case EADDRINUSE: return "the address is in use"
            case ECONNRESET: return "connection reset by the peer"
            default: return "\(error)"
            }
        }
        if error is ChannelError, case ChannelError.connectTimeout(let amount) = error as! ChannelError {
            return "timed out after \(amount)"
        }
        return "\(error)"
    }
}

/// Gives `completion` the ``SDLChannelConnection`` of a channel being connected once it is, or
/// ``SDLConnectionError/Code/connectFailed`` with `failure`'s words: the end of every channel
/// transport's connect.
func handOver(
    _ connecting: EventLoopFuture<any Channel>, on eventLoop: any EventLoop, failure: @escaping (any Error) -> String,
    completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
) {
    connecting
        .flatMapThrowing { channel -> NIOLoopBound<SDLChannelConnection> in
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: SDLChannelConnection.self), eventLoop: eventLoop)
        }
        .assumeIsolated()
        .whenComplete { result in
            switch result {
            case .success(let bound):
                completion(.success(bound.value))
            case .failure(let error):
                completion(.failure(SDLConnectionError(.connectFailed, failure(error))))
            }
        }
}

/// A bound server channel as an ``SDLTransportListener``.
struct SDLChannelListener: SDLTransportListener {
    let channel: any Channel
    let host: String
    let port: Int
    let scheme: String

    var advertisedAddress: (host: String, port: Int)? { (self.host, self.port) }

    var transportDescription: String { "\(self.scheme) \(self.host):\(self.port)" }

    func close() async {
        try? await self.channel.close()
    }
}

extension SDLAppTransport where Self == SDLTCPTransport {
    /// TCP to `host`:`port` (SDL Core: 12345).
    public static func tcp(host: String, port: Int = 12345) -> SDLTCPTransport {
        SDLTCPTransport(host: host, port: port)
    }
}

extension SDLHeadUnitTransport where Self == SDLTCPTransport {
    /// TCP on `host`:`port` (0: any free port).
    public static func tcp(host: String = "127.0.0.1", port: Int = 12345) -> SDLTCPTransport {
        SDLTCPTransport(host: host, port: port)
    }
}

extension SDLAppConnection {
    /// Connects over TCP to `host`:`port`: ``SDLAppConnection/connect(to:configuration:eventLoop:logger:)``
    /// with ``SDLTCPTransport``.
    public static func connect(
        host: String, port: Int = 12345, configuration: SDLAppConfiguration = SDLAppConfiguration(),
        eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger
    ) async throws(SDLConnectionError) -> SDLAppConnection {
        try await Self.connect(to: SDLTCPTransport(host: host, port: port), configuration: configuration, eventLoop: eventLoop, logger: logger)
    }
}

extension SDLHeadUnitServer {
    /// Listens over TCP on the configuration's ``SDLHeadUnitConfiguration/host`` and
    /// ``SDLHeadUnitConfiguration/primaryPort`` (and ``SDLHeadUnitConfiguration/secondaryPort``
    /// for the secondary transport, when set) and serves.
    public static func start(
        configuration: SDLHeadUnitConfiguration = SDLHeadUnitConfiguration(), handler: some SDLHeadUnitHandler,
        eventLoop: (any EventLoop)? = nil, logger: Logger = SDLAppConnection.silentLogger
    ) async throws(SDLConnectionError) -> SDLHeadUnitServer {
        try await Self.start(
            transports: [SDLTCPTransport(host: configuration.host, port: configuration.primaryPort)],
            secondary: configuration.secondaryPort.map { SDLTCPTransport(host: configuration.host, port: $0) },
            configuration: configuration, handler: handler, eventLoop: eventLoop, logger: logger)
    }
}
