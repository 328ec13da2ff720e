import Logging
import NIOCore
import SDLSession

/// One open connection between an app and a head unit, as the runtimes see it: an ordered,
/// reliable byte stream with back-pressure both ways. TCP, the binary messages of a WebSocket,
/// iAP (External Accessory), USB AOA, Bluetooth RFCOMM and an in-memory pipe all fit it.
///
/// A connection is confined to its ``eventLoop``: the runtime makes every call below on that
/// loop, and the connection reports to its ``SDLTransportEvents`` on it. The runtime owns a
/// connection from the moment a transport hands it over until it reports ``SDLTransportEvents/closed(_:)``.
///
/// Implement it only for a kind of link the package does not carry: channels of SwiftNIO (any
/// `Channel` whose pipeline reads and writes `ByteBuffer`) become connections through
/// ``SDLChannelConnection``, and a link reached through async reads and writes (an iAP session's
/// streams, a serial port) through ``SDLByteStream``.
public protocol SDLTransportConnection: AnyObject {
    /// The loop every call is made on and every event is reported on.
    var eventLoop: any EventLoop { get }

    /// Starts reporting: bytes read, writability regained, the close. Called once, before any
    /// other call. Bytes that arrived before are reported now; reads start paused when
    /// `readsPaused` is true.
    func start(reportingTo events: SDLTransportEvents, readsPaused: Bool)

    /// Whether the connection takes more bytes without growing its buffer past its bound. While
    /// it is false the runtime writes nothing more, and waits for
    /// ``SDLTransportEvents/becameWritable()``.
    var isWritable: Bool { get }

    /// Queues bytes to send, in order; ``flush()`` sends what was queued.
    func write(_ bytes: ByteBuffer)

    /// Sends what was written.
    func flush()

    /// Stops or resumes reading from the peer. While paused nothing more is read, so the peer's
    /// writes stop once the link's buffers fill (back-pressure to the peer).
    func setReadsPaused(_ paused: Bool)

    /// Closes the connection: after sending what was written (bounded by `timeout`), or at once.
    /// ``SDLTransportEvents/closed(_:)`` follows, once.
    func close(_ mode: SDLTransportCloseMode)

    /// A short description for logs and transcripts, e.g. `tcp 127.0.0.1:53422`.
    var transportDescription: String { get }
}

/// How a connection closes.
public enum SDLTransportCloseMode: Sendable, Hashable {
    /// After what was written has been sent, or after `timeout`, whichever comes first.
    case afterFlushing(timeout: TimeAmount)
    /// At once; what was written and not sent is lost.
    case now
}

/// Where a connection reports, on its event loop. Made by the runtime; a connection keeps it from
/// ``SDLTransportConnection/start(reportingTo:readsPaused:)`` on.
public struct SDLTransportEvents {
    let driver: SessionDriver
    let transport: TransportID

    /// Bytes arrived from the peer, in order.
    public func received(_ bytes: ByteBuffer) {
        self.driver.transportReceived(bytes, on: self.transport)
    }

    /// ``SDLTransportConnection/isWritable`` turned true after it was false.
    public func becameWritable() {
        self.driver.transportWritable(self.transport)
    }

    /// The connection closed (by either side, or because it failed: `error`). Reported once; the
    /// connection makes no more reports.
    public func closed(_ error: (any Error)?) {
        self.driver.transportClosed(self.transport, error: error)
    }
}

/// How an app reaches a head unit: opens the connection its session starts on. TCP
/// (`SDLNIO`'s `.tcp(host:port:)`), WebSocket (`.webSocket(...)`), an in-memory pair
/// (``SDLInMemoryNetwork``), or a byte stream of the app's own (``SDLByteStreamTransport``).
public protocol SDLAppTransport: Sendable {
    /// Opens a connection confined to `eventLoop`, with the buffer bounds and timeouts of
    /// `configuration`. Called on `eventLoop`; `completion` is called there once, with the open
    /// connection or an error that names the cause (refused, timed out, unreachable:
    /// ``SDLConnectionError/Code/connectFailed``).
    func connect(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void)

    /// The transport for a secondary transport the head unit offered at `host`:`port` in a
    /// TransportEventUpdate (protocol spec 5.4.1 §3.1.7: TCP_WIFI), or nil when this transport
    /// cannot reach one (the app then keeps audio and video on the primary where the head unit
    /// allows it).
    func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)?

    /// The event loops to run on when the caller names none.
    var defaultEventLoopGroup: any EventLoopGroup { get }

    /// A short description for logs, e.g. `tcp 127.0.0.1:12345`.
    var transportDescription: String { get }
}

extension SDLAppTransport {
    /// No secondary transport.
    public func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)? { nil }
}

/// Where a head unit takes apps: a listener that hands over each connection it accepts. TCP
/// (`SDLNIO`'s `.tcp(host:port:)`), WebSocket, an in-memory network (``SDLInMemoryNetwork``).
public protocol SDLHeadUnitTransport: Sendable {
    /// Starts listening; every accepted connection, confined to `eventLoop` and bounded by
    /// `configuration`, goes to `accept` (called on `eventLoop`). Returns once the listener is
    /// bound. Throws when it cannot listen.
    func listen(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        accept: @escaping @Sendable (any SDLTransportConnection) -> Void
    ) async throws(SDLConnectionError) -> any SDLTransportListener

    /// The event loops to run on when the caller names none.
    var defaultEventLoopGroup: any EventLoopGroup { get }
}

/// A bound listener of an ``SDLHeadUnitTransport``.
public protocol SDLTransportListener: Sendable {
    /// The address apps reach it at, for a TransportEventUpdate (protocol spec 5.4.1 §3.1.7), or
    /// nil when it has none apps could use.
    var advertisedAddress: (host: String, port: Int)? { get }

    /// A short description for logs, e.g. `tcp 127.0.0.1:12345`.
    var transportDescription: String { get }

    /// Stops accepting; connections already accepted stay open.
    func close() async
}
