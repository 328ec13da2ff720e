import NIOCore

/// How a runtime moves bytes between its transports and the session engine: chunk sizes and the
/// bounds that keep a slow peer from making us hold more memory. Every transport honours them.
public struct SDLTransportConfiguration: Hashable, Sendable {
    /// How many bytes of frames are pulled from the engine per socket write while the socket is
    /// writable (whole frames: a pull may exceed it by one frame). Frames are chosen at write
    /// time, so a smaller value keeps priorities sharper at the socket and a larger one costs
    /// fewer writes. Default 64 KiB.
    public var writeChunkSize: Int = 64 * 1024

    /// A connection's write buffer watermarks: above `high` bytes written and not yet taken by the
    /// link (the kernel, for a socket) the connection is not writable and no frame is pulled from the engine until it drains
    /// below `low`. What a transport holds in its channel is at most `high` plus one chunk.
    /// Default 32 KiB / 64 KiB (NIO's).
    public var writeBufferLowWatermark: Int = 32 * 1024
    /// See ``writeBufferLowWatermark``.
    public var writeBufferHighWatermark: Int = 64 * 1024

    /// How many bytes of one service's messages (RPC, audio, video) may wait in the engine's queue
    /// for one session before a sender is suspended: a sender that writes faster than the peer
    /// reads waits instead of queueing without bound. A single message larger than this is still
    /// sent, alone. Default 256 KiB.
    public var maxQueuedBytesPerService: Int = 256 * 1024

    /// How many bytes of frames may wait in the engine for one connection before the connection is
    /// no longer read: a peer that does not read what it is sent (responses, heartbeat ACKs) is
    /// throttled, its requests no longer taken, instead of making our queue grow. Reads resume
    /// below half of it. Default 512 KiB.
    public var maxQueuedBytesPerTransport: Int = 512 * 1024

    /// How long a peer may leave unread what waits for it (the connection not writable, frames
    /// waiting) before the connection is closed (``SessionEvent/transportClosed(_:_:)`` with
    /// `peerStoppedReading`); nil: never. Default 30 s.
    public var stalledReaderTimeout: TimeAmount? = .seconds(30)

    /// How many messages of one connection's input are handled in one go: past it, or past
    /// ``maxInputBytesPerTurn`` bytes, the rest of what was read waits (the connection no longer
    /// read meanwhile) while the event loop serves the other connections, so that one peer that
    /// sends thousands of requests in one write delays another peer's request by at most this many
    /// messages' work. A single message is always handled whole. Default 64.
    public var maxInputMessagesPerTurn: Int = 64

    /// See ``maxInputMessagesPerTurn``: the bytes of one connection's input handed to the session
    /// engine in one go. Default 256 KiB (a read cycle of a socket: large media messages go
    /// through unhindered).
    public var maxInputBytesPerTurn: Int = 256 * 1024

    /// The kernel's send buffer of each socket (SO_SNDBUF), for transports over sockets; nil: the
    /// system's default (Linux grows it up to megabytes). A smaller one makes a peer that stops
    /// reading show sooner, at some cost in throughput. Default nil.
    public var socketSendBufferSize: Int?

    /// How long a connection attempt may take (the app's primary and secondary transports).
    /// Default 10 s.
    public var connectTimeout: TimeAmount = .seconds(10)

    /// How long a transport closed on purpose may take to hand its last frames (an EndService, an
    /// ACK) to the link before it is closed anyway. Default 2 s.
    public var closeTimeout: TimeAmount = .seconds(2)

    /// How long a listener waits before accepting again after accepting failed (out of file
    /// descriptors: EMFILE, ENFILE; out of memory: ENOBUFS, ENOMEM), instead of retrying at once
    /// and spinning a core while the condition lasts. Default 250 ms.
    public var acceptBackoff: TimeAmount = .milliseconds(250)

    /// How long a connection a listener accepted may take over a handshake of its link's own (the
    /// WebSocket upgrade) before it is closed. Until its handshake is done a connection is not the
    /// runtime's, so the runtime's own limits (``SDLHeadUnitConfiguration/maxConnections``,
    /// ``SDLHeadUnitConfiguration/connectionStartTimeout``) do not see it yet. Default 10 s.
    public var handshakeTimeout: TimeAmount = .seconds(10)

    /// How many accepted connections may be in their link's handshake at once, per listener:
    /// beyond it the one waiting longest is closed for the new one, so that connections that never
    /// finish their handshake cannot hold the descriptors. Default 64.
    public var maxPendingHandshakes: Int = 64

    /// The defaults.
    public init() {}
}
