#if canImport(Network)
import Logging
import Network
import NIOCore
import NIOTransportServices

/// TCP through Network.framework (SwiftNIO Transport Services), for apps and head units on Apple
/// platforms: what an iOS app uses to reach a head unit over Wi-Fi, with the system's path
/// handling (a connection waits for a network instead of failing while there is none, up to the
/// connect timeout), both roles, and the secondary transport (TCP_WIFI) through it as well.
///
/// ```swift
/// let connection = try await SDLAppConnection.connect(to: SDLNetworkTransport(host: "192.168.1.10", port: 12345))
/// ```
///
/// The connections run on a `NIOTSEventLoopGroup` (default: its shared singleton); the runtimes
/// need nothing else of the platform.
@available(macOS 10.14, iOS 12.0, tvOS 12.0, watchOS 6.0, *)
public struct SDLNetworkTransport: SDLAppTransport, SDLHeadUnitTransport {
    /// The host to connect to, or the address to listen on.
    public var host: String
    /// The port to connect to, or to listen on (0 picks a free one).
    public var port: Int
    /// The event loops of Network.framework's connections.
    public var eventLoopGroup: NIOTSEventLoopGroup

    /// A transport to `host`:`port`.
    public init(host: String, port: Int, eventLoopGroup: NIOTSEventLoopGroup = .singleton) {
        self.host = host
        self.port = port
        self.eventLoopGroup = eventLoopGroup
    }

    /// `tcp HOST:PORT (Network.framework)`.
    public var transportDescription: String { "tcp \(self.host):\(self.port) (Network.framework)" }

    /// See ``eventLoopGroup``.
    public var defaultEventLoopGroup: any EventLoopGroup { self.eventLoopGroup }

    /// The secondary transport at the address a head unit offered: through Network.framework too.
    public func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)? {
        SDLNetworkTransport(host: host, port: port, eventLoopGroup: self.eventLoopGroup)
    }

    /// Connects on `eventLoop`, which must be one of a `NIOTSEventLoopGroup`'s.
    public func connect(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
    ) {
        let description = self.transportDescription
        let (host, port) = (self.host, self.port)
        guard let bootstrap = NIOTSConnectionBootstrap(validatingGroup: eventLoop) else {
            completion(.failure(SDLConnectionError(.connectFailed, "\(description): the event loop is not Network.framework's (NIOTSEventLoop)")))
            return
        }
        let connecting = bootstrap
            .connectTimeout(configuration.connectTimeout)
            .tcpOptions(Self.tcpOptions())
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, configuration)
                    try channel.pipeline.syncOperations.addHandler(SDLChannelConnection(description: description))
                }
            }
            .connect(host: host, port: port)
        handOver(connecting, on: eventLoop, failure: { "\(host):\(port): \($0)" }, completion: completion)
    }

    /// Listens; connections are accepted on `eventLoop`, which must be one of a
    /// `NIOTSEventLoopGroup`'s.
    public func listen(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        accept: @escaping @Sendable (any SDLTransportConnection) -> Void
    ) async throws(SDLConnectionError) -> any SDLTransportListener {
        guard let bootstrap = NIOTSListenerBootstrap(validatingGroup: eventLoop, childGroup: eventLoop) else {
            throw SDLConnectionError(.connectFailed, "cannot listen on \(self.host):\(self.port): the event loop is not Network.framework's (NIOTSEventLoop)")
        }
        do {
            let channel = try await bootstrap
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childTCPOptions(Self.tcpOptions())
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
            throw SDLConnectionError(.connectFailed, "cannot listen on \(self.host):\(self.port): \(error)")
        }
    }

    /// No Nagle delay: SDL's frames are small and answered one by one.
    static func tcpOptions() -> NWProtocolTCP.Options {
        let options = NWProtocolTCP.Options()
        options.noDelay = true
        return options
    }

    /// The write-buffer bounds, as the sockets transport sets them.
    static func configure(_ channel: any Channel, _ configuration: SDLTransportConfiguration) throws {
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: configuration.writeBufferLowWatermark, high: configuration.writeBufferHighWatermark)
        try channel.syncOptions?.setOption(.writeBufferWaterMark, value: watermark)
    }
}
#endif
