import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Apps and head units joined in memory, without sockets: for tests, yours included. A head unit
/// listens on a port of the network, an app connects to it, and bytes move between their event
/// loops with the same back-pressure as a socket (a writer stops once its peer holds
/// ``SDLTransportConfiguration/writeBufferHighWatermark`` bytes unread). A head unit's secondary
/// transport is another port of the same network, reached through its TransportEventUpdate as
/// over TCP.
///
/// ```swift
/// let network = SDLInMemoryNetwork(eventLoopGroup: group)
/// let server = try await SDLHeadUnitServer.start(transports: [network.transport(port: 12345)], handler: handler)
/// let app = try await SDLAppConnection.connect(to: network.transport(port: 12345))
/// ```
public final class SDLInMemoryNetwork: Sendable {
    /// The event loops runtimes on this network run on when they are given none.
    public let eventLoopGroup: any EventLoopGroup
    private let state = NIOLockedValueBox(State())

    private struct State {
        var listeners: [Int: Listener] = [:]
        var nextFreePort = 49152
        var connectionsMade = 0
        var openEnds = 0
    }

    struct Listener: Sendable {
        let id: Int
        let eventLoop: any EventLoop
        let configuration: SDLTransportConfiguration
        let accept: @Sendable (any SDLTransportConnection) -> Void
    }

    /// A network whose runtimes run on `eventLoopGroup` unless told otherwise.
    public init(eventLoopGroup: any EventLoopGroup) {
        self.eventLoopGroup = eventLoopGroup
    }

    /// The transport of `port`: an app connects to it, a head unit listens on it (0: a free port).
    public func transport(port: Int = 12345) -> SDLInMemoryTransport {
        SDLInMemoryTransport(network: self, port: port)
    }

    /// How many connections were made so far.
    public var connectionsMade: Int {
        self.state.withLockedValue { $0.connectionsMade }
    }

    /// The ends of connections not closed yet, both sides counted (an open connection has two):
    /// what a test counts to see that nothing it started was left open.
    public var openConnectionEnds: Int {
        self.state.withLockedValue { $0.openEnds }
    }

    /// The ports something listens on.
    public var listeningPorts: Int {
        self.state.withLockedValue { $0.listeners.count }
    }

    func endOpened() { self.state.withLockedValue { $0.openEnds += 1 } }
    func endClosed() { self.state.withLockedValue { $0.openEnds -= 1 } }

    func bind(port: Int, _ listener: (Int) -> Listener) throws(SDLConnectionError) -> Int {
        let result: Int? = self.state.withLockedValue { state in
            var chosen = port
            if chosen == 0 {
                while state.listeners[state.nextFreePort] != nil { state.nextFreePort += 1 }
                chosen = state.nextFreePort
                state.nextFreePort += 1
            }
            guard state.listeners[chosen] == nil else { return nil }
            state.listeners[chosen] = listener(chosen)
            return chosen
        }
        guard let result else { throw SDLConnectionError(.connectFailed, "cannot listen on in-memory port \(port): the address is in use") }
        return result
    }

    func unbind(port: Int, id: Int) {
        self.state.withLockedValue { state in
            if state.listeners[port]?.id == id { state.listeners[port] = nil }
        }
    }

    func listener(at port: Int) -> Listener? {
        self.state.withLockedValue { state in
            let listener = state.listeners[port]
            if listener != nil { state.connectionsMade += 1 }
            return listener
        }
    }
}

/// One port of an ``SDLInMemoryNetwork``, as a transport of either role.
public struct SDLInMemoryTransport: SDLAppTransport, SDLHeadUnitTransport {
    /// The network.
    public let network: SDLInMemoryNetwork
    /// The port.
    public let port: Int

    /// `memory PORT`.
    public var transportDescription: String { "memory \(self.port)" }

    /// The network's group.
    public var defaultEventLoopGroup: any EventLoopGroup { self.network.eventLoopGroup }

    /// Another port of the same network (the host is not looked at).
    public func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)? {
        SDLInMemoryTransport(network: self.network, port: port)
    }

    /// Connects to the listener of the port; refused when nothing listens there.
    public func connect(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
    ) {
        guard let listener = self.network.listener(at: self.port) else {
            completion(.failure(SDLConnectionError(.connectFailed, "memory \(self.port): connection refused (nothing listens there)")))
            return
        }
        let client = InMemoryConnection(
            network: self.network, eventLoop: eventLoop, configuration: configuration, description: "memory \(self.port) (app side)")
        let server = InMemoryConnection(
            network: self.network, eventLoop: listener.eventLoop, configuration: listener.configuration, description: "memory \(self.port)")
        client.peer = InMemoryConnection.Peer(server)
        server.peer = InMemoryConnection.Peer(client)
        // Made here, used only on the listener's loop from now on.
        let handOver = InMemoryConnection.Peer(server)
        listener.eventLoop.execute { listener.accept(handOver.connection) }
        completion(.success(client))
    }

    /// Listens on the port.
    public func listen(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        accept: @escaping @Sendable (any SDLTransportConnection) -> Void
    ) async throws(SDLConnectionError) -> any SDLTransportListener {
        let id = InMemoryListener.nextID.withLockedValue { value in
            value += 1
            return value
        }
        let port = try self.network.bind(port: self.port) { _ in
            SDLInMemoryNetwork.Listener(id: id, eventLoop: eventLoop, configuration: configuration, accept: accept)
        }
        return InMemoryListener(network: self.network, port: port, id: id)
    }
}

struct InMemoryListener: SDLTransportListener {
    static let nextID = NIOLockedValueBox(0)
    let network: SDLInMemoryNetwork
    let port: Int
    let id: Int

    var advertisedAddress: (host: String, port: Int)? { ("127.0.0.1", self.port) }

    var transportDescription: String { "memory \(self.port)" }

    func close() async {
        self.network.unbind(port: self.port, id: self.id)
    }
}

/// One end of an in-memory connection. Confined to its loop; it reaches its peer by hopping to
/// the peer's loop, so bytes, acknowledgements and the close arrive in the order they were sent.
final class InMemoryConnection: SDLTransportConnection {
    let eventLoop: any EventLoop
    let transportDescription: String
    private let highWatermark: Int
    private let lowWatermark: Int
    var peer: Peer?

    /// The other end, reachable from any thread: every call hops to its loop.
    struct Peer: @unchecked Sendable {
        // Only used on `connection.eventLoop`, through `execute`.
        let connection: InMemoryConnection

        init(_ connection: InMemoryConnection) { self.connection = connection }

        func execute(_ body: @escaping @Sendable (InMemoryConnection) -> Void) {
            let connection = self.connection
            connection.eventLoop.execute { body(connection) }
        }
    }

    private var events: SDLTransportEvents?
    private var readsPaused = true
    private var inbound = CircularBuffer<ByteBuffer>()
    private var pending: [ByteBuffer] = []
    /// Bytes written and not yet read by the peer's runtime.
    private var unacknowledged = 0
    private var writable = true
    private var peerClosed = false
    private var closed = false
    private var closeReported = false

    private let network: SDLInMemoryNetwork

    init(network: SDLInMemoryNetwork, eventLoop: any EventLoop, configuration: SDLTransportConfiguration, description: String) {
        self.network = network
        network.endOpened()
        self.eventLoop = eventLoop
        self.transportDescription = description
        self.highWatermark = max(1, configuration.writeBufferHighWatermark)
        self.lowWatermark = min(max(0, configuration.writeBufferLowWatermark), self.highWatermark - 1)
    }

    func start(reportingTo events: SDLTransportEvents, readsPaused: Bool) {
        self.events = events
        self.readsPaused = readsPaused
        self.deliver()
    }

    var isWritable: Bool { !self.closed && self.unacknowledged < self.highWatermark }

    func write(_ bytes: ByteBuffer) {
        guard !self.closed else { return }
        self.pending.append(bytes)
        self.unacknowledged += bytes.readableBytes
        if self.unacknowledged >= self.highWatermark { self.writable = false }
    }

    func flush() {
        guard !self.closed, !self.pending.isEmpty, let peer = self.peer else { return }
        let batch = self.pending
        self.pending.removeAll(keepingCapacity: true)
        peer.execute { $0.arrived(batch) }
    }

    func setReadsPaused(_ paused: Bool) {
        self.readsPaused = paused
        if !paused { self.deliver() }
    }

    func close(_ mode: SDLTransportCloseMode) {
        guard !self.closed else { return }
        if case .afterFlushing = mode { self.flush() }
        self.closed = true
        self.network.endClosed()
        self.pending = []
        self.inbound.removeAll()
        self.peer?.execute { $0.peerDidClose() }
        self.peer = nil
        // Reported on a later turn of the loop, as a socket's close is.
        let bound = NIOLoopBound(self, eventLoop: self.eventLoop)
        self.eventLoop.execute { bound.value.reportClosed() }
    }

    // MARK: - From the peer

    private func arrived(_ batch: [ByteBuffer]) {
        guard !self.closed else { return }
        for bytes in batch { self.inbound.append(bytes) }
        self.deliver()
    }

    private func peerDidClose() {
        self.peerClosed = true
        self.peer = nil
        self.deliver()
    }

    private func acknowledged(_ count: Int) {
        self.unacknowledged -= count
        if !self.writable, self.unacknowledged <= self.lowWatermark {
            self.writable = true
            if !self.closed { self.events?.becameWritable() }
        }
    }

    /// Hands what arrived to the runtime while it wants reads; the peer's close is reported once
    /// everything before it was read, as a socket's end of file is.
    private func deliver() {
        guard let events = self.events, !self.closed else { return }
        var consumed = 0
        while !self.readsPaused, let bytes = self.inbound.popFirst() {
            consumed += bytes.readableBytes
            events.received(bytes)
            if self.closed { return }
        }
        if consumed > 0, let peer = self.peer {
            let count = consumed
            peer.execute { $0.acknowledged(count) }
        }
        if self.peerClosed, self.inbound.isEmpty, !self.readsPaused {
            self.closed = true
            self.network.endClosed()
            self.reportClosed()
        }
    }

    private func reportClosed() {
        guard !self.closeReported, let events = self.events else { return }
        self.closeReported = true
        events.closed(nil)
    }
}
