import Logging
import NIOConcurrencyHelpers
import NIOCore

/// A link to the peer that you reach through async reads and writes: what you implement to carry
/// SDL over a transport the package does not have, e.g. iAP (External Accessory's input and
/// output streams), USB AOA, Bluetooth RFCOMM or a serial port. The runtime reads only while it
/// can take more (back-pressure towards the peer) and writes one buffer at a time, waiting for
/// each write to return (back-pressure from the peer).
///
/// ```swift
/// struct AccessoryStream: SDLByteStream {
///     func read() async throws -> ByteBuffer? { … }      // nil: the accessory closed the session
///     func write(_ bytes: ByteBuffer) async throws { … }
///     func close() async { … }
/// }
/// let transport = SDLByteStreamTransport(eventLoopGroup: group) { try await AccessoryStream.open() }
/// let connection = try await SDLAppConnection.connect(to: transport)
/// ```
///
/// Calls never overlap with calls of the same kind: one `read` at a time, one `write` at a time;
/// a `read` and a `write` may run at once.
public protocol SDLByteStream: Sendable {
    /// Waits for bytes from the peer; nil once the peer closed the link. Throws when the link
    /// failed.
    func read() async throws -> ByteBuffer?

    /// Sends bytes; returns once the link took them (not necessarily once the peer read them).
    /// Throws when the link failed.
    func write(_ bytes: ByteBuffer) async throws

    /// Closes the link. A `read` waiting returns nil or throws; later calls fail.
    func close() async
}

/// An app's transport over ``SDLByteStream``s it opens itself (iAP, USB, Bluetooth): each
/// connection is one stream, `open` makes it.
public struct SDLByteStreamTransport: SDLAppTransport {
    /// The event loops the runtime runs on when given none.
    public let eventLoopGroup: any EventLoopGroup
    /// Opens a stream to the head unit.
    public let open: @Sendable () async throws -> any SDLByteStream
    /// See ``SDLAppTransport/transportDescription``.
    public let transportDescription: String
    /// The transport to a secondary transport the head unit offers (TCP over Wi-Fi beside an iAP
    /// or USB primary, as SDL Core offers it), or nil for none.
    public let secondary: @Sendable (_ host: String, _ port: Int) -> (any SDLAppTransport)?

    /// A transport whose connections `open` makes. `secondary` makes the transport to a secondary
    /// transport the head unit offers, e.g. `{ SDLTCPTransport(host: $0, port: $1) }` from SDLNIO;
    /// without it, audio and video stay on this transport where the head unit allows them there.
    public init(
        eventLoopGroup: any EventLoopGroup, description: String = "byte stream",
        secondary: @escaping @Sendable (_ host: String, _ port: Int) -> (any SDLAppTransport)? = { _, _ in nil },
        open: @escaping @Sendable () async throws -> any SDLByteStream
    ) {
        self.eventLoopGroup = eventLoopGroup
        self.open = open
        self.transportDescription = description
        self.secondary = secondary
    }

    /// See ``eventLoopGroup``.
    public var defaultEventLoopGroup: any EventLoopGroup { self.eventLoopGroup }

    /// See ``SDLAppTransport/secondaryTransport(host:port:)``: what `secondary` makes.
    public func secondaryTransport(host: String, port: Int) -> (any SDLAppTransport)? {
        self.secondary(host, port)
    }

    /// Opens a stream; its error becomes ``SDLConnectionError/Code/connectFailed``.
    public func connect(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        completion: @escaping (Result<any SDLTransportConnection, SDLConnectionError>) -> Void
    ) {
        let open = self.open
        let description = self.transportDescription
        let done = NIOLoopBound(completion, eventLoop: eventLoop)
        let task = Task {
            do {
                let stream = try await open()
                eventLoop.execute {
                    let connection = ByteStreamConnection(
                        stream: stream, eventLoop: eventLoop, configuration: configuration, description: description)
                    done.value(.success(connection))
                }
            } catch {
                eventLoop.execute { done.value(.failure(SDLConnectionError(.connectFailed, "\(description): \(error)"))) }
            }
        }
        _ = task
    }
}

/// A head unit's transport over ``SDLByteStream``s that arrive from elsewhere (a USB or Bluetooth
/// stack that hands over each app's link): every stream of `connections` is one app connection.
public struct SDLByteStreamListener<Connections: AsyncSequence & Sendable>: SDLHeadUnitTransport
where Connections.Element == any SDLByteStream {
    /// The event loops the server runs on when given none.
    public let eventLoopGroup: any EventLoopGroup
    /// The links of the apps, as they arrive.
    public let connections: Connections
    /// A short description for logs.
    public let transportDescription: String

    /// A transport taking the streams of `connections`.
    public init(eventLoopGroup: any EventLoopGroup, description: String = "byte stream", connections: Connections) {
        self.eventLoopGroup = eventLoopGroup
        self.connections = connections
        self.transportDescription = description
    }

    /// See ``eventLoopGroup``.
    public var defaultEventLoopGroup: any EventLoopGroup { self.eventLoopGroup }

    /// Takes the streams until `connections` ends or the listener is closed.
    public func listen(
        on eventLoop: any EventLoop, configuration: SDLTransportConfiguration, logger: Logger,
        accept: @escaping @Sendable (any SDLTransportConnection) -> Void
    ) async throws(SDLConnectionError) -> any SDLTransportListener {
        let connections = self.connections
        let description = self.transportDescription
        let task = Task {
            do {
                for try await stream in connections {
                    eventLoop.execute {
                        accept(ByteStreamConnection(stream: stream, eventLoop: eventLoop, configuration: configuration, description: description))
                    }
                }
            } catch {
                logger.debug("the byte-stream listener ended", metadata: ["error": "\(error)"])
            }
        }
        return ByteStreamListener(task: task, transportDescription: description)
    }
}

struct ByteStreamListener: SDLTransportListener {
    let task: Task<Void, Never>
    let transportDescription: String
    var advertisedAddress: (host: String, port: Int)? { nil }

    func close() async {
        self.task.cancel()
        await self.task.value
    }
}

/// An ``SDLByteStream`` as an ``SDLTransportConnection``: a reader task that reads only while the
/// runtime wants reads, a writer task that writes what the runtime flushed, one buffer at a time.
/// Both tasks end when the connection closes.
final class ByteStreamConnection: SDLTransportConnection {
    let eventLoop: any EventLoop
    let transportDescription: String
    private let stream: any SDLByteStream
    private let highWatermark: Int
    private let lowWatermark: Int
    private let closeTimeout: TimeAmount

    private var events: SDLTransportEvents?
    private var readsPaused = true
    /// The reader waiting for leave to read.
    private var reader: CheckedContinuation<Bool, Never>?
    private var writer: CheckedContinuation<[ByteBuffer]?, Never>?
    private var unflushed: [ByteBuffer] = []
    private var flushed: [ByteBuffer] = []
    private var queuedBytes = 0
    private var writable = true
    private var closing = false
    private var closed = false
    private var tasks: [Task<Void, Never>] = []
    private var closeDeadline: Scheduled<Void>?

    init(stream: any SDLByteStream, eventLoop: any EventLoop, configuration: SDLTransportConfiguration, description: String) {
        self.stream = stream
        self.eventLoop = eventLoop
        self.transportDescription = description
        self.highWatermark = max(1, configuration.writeBufferHighWatermark)
        self.lowWatermark = min(max(0, configuration.writeBufferLowWatermark), self.highWatermark - 1)
        self.closeTimeout = configuration.closeTimeout
    }

    func start(reportingTo events: SDLTransportEvents, readsPaused: Bool) {
        self.events = events
        self.readsPaused = readsPaused
        let bound = NIOLoopBound(self, eventLoop: self.eventLoop)
        let stream = self.stream
        let loop = self.eventLoop
        self.tasks.append(Task { await ByteStreamConnection.readLoop(bound, loop, stream) })
        self.tasks.append(Task { await ByteStreamConnection.writeLoop(bound, loop, stream) })
    }

    private static func readLoop(_ bound: NIOLoopBound<ByteStreamConnection>, _ loop: any EventLoop, _ stream: any SDLByteStream) async {
        while await Self.mayRead(bound, loop) {
            do {
                guard let bytes = try await stream.read() else {
                    loop.execute { bound.value.linkEnded(nil) }
                    return
                }
                loop.execute { bound.value.arrived(bytes) }
            } catch {
                loop.execute { bound.value.linkEnded(error) }
                return
            }
        }
    }

    private static func writeLoop(_ bound: NIOLoopBound<ByteStreamConnection>, _ loop: any EventLoop, _ stream: any SDLByteStream) async {
        while let batch = await Self.nextBatch(bound, loop) {
            for bytes in batch {
                do {
                    try await stream.write(bytes)
                } catch {
                    loop.execute { bound.value.linkEnded(error) }
                    return
                }
                let count = bytes.readableBytes
                loop.execute { bound.value.wrote(count) }
            }
        }
    }

    private static func mayRead(_ bound: NIOLoopBound<ByteStreamConnection>, _ loop: any EventLoop) async -> Bool {
        await withCheckedContinuation { continuation in
            loop.execute {
                let connection = bound.value
                if connection.closed || connection.closing {
                    continuation.resume(returning: false)
                } else if connection.readsPaused {
                    connection.reader = continuation
                } else {
                    continuation.resume(returning: true)
                }
            }
        }
    }

    private static func nextBatch(_ bound: NIOLoopBound<ByteStreamConnection>, _ loop: any EventLoop) async -> [ByteBuffer]? {
        await withCheckedContinuation { continuation in
            loop.execute {
                let connection = bound.value
                if !connection.flushed.isEmpty {
                    let batch = connection.flushed
                    connection.flushed = []
                    continuation.resume(returning: batch)
                } else if connection.closed || connection.closing {
                    continuation.resume(returning: nil)
                    connection.writerDone()
                } else {
                    connection.writer = continuation
                }
            }
        }
    }

    var isWritable: Bool { !self.closed && !self.closing && self.queuedBytes < self.highWatermark }

    func write(_ bytes: ByteBuffer) {
        guard !self.closed, !self.closing else { return }
        self.unflushed.append(bytes)
        self.queuedBytes += bytes.readableBytes
        if self.queuedBytes >= self.highWatermark { self.writable = false }
    }

    func flush() {
        guard !self.unflushed.isEmpty else { return }
        self.flushed += self.unflushed
        self.unflushed = []
        if let writer = self.writer {
            self.writer = nil
            let batch = self.flushed
            self.flushed = []
            writer.resume(returning: batch)
        }
    }

    func setReadsPaused(_ paused: Bool) {
        self.readsPaused = paused
        if !paused, let reader = self.reader {
            self.reader = nil
            reader.resume(returning: true)
        }
    }

    func close(_ mode: SDLTransportCloseMode) {
        guard !self.closed, !self.closing else { return }
        switch mode {
        case .now:
            self.finish(nil)
        case .afterFlushing(let timeout):
            self.flush()
            self.closing = true
            self.reader?.resume(returning: false)
            self.reader = nil
            if let writer = self.writer {
                // Nothing left to write.
                self.writer = nil
                writer.resume(returning: nil)
                self.writerDone()
            } else {
                self.closeDeadline = self.eventLoop.assumeIsolated().scheduleTask(in: timeout) { self.finish(nil) }
            }
        }
    }

    // MARK: - From the tasks

    private func arrived(_ bytes: ByteBuffer) {
        guard !self.closed, !self.closing else { return }
        self.events?.received(bytes)
    }

    private func wrote(_ count: Int) {
        self.queuedBytes -= count
        if !self.writable, self.queuedBytes <= self.lowWatermark {
            self.writable = true
            if !self.closed, !self.closing { self.events?.becameWritable() }
        }
    }

    private func writerDone() {
        guard self.closing else { return }
        self.finish(nil)
    }

    private func linkEnded(_ error: (any Error)?) {
        self.finish(error)
    }

    /// Closes the stream, ends both tasks and reports the close, once.
    private func finish(_ error: (any Error)?) {
        guard !self.closed else { return }
        self.closed = true
        self.closing = false
        self.closeDeadline?.cancel()
        self.reader?.resume(returning: false)
        self.reader = nil
        self.writer?.resume(returning: nil)
        self.writer = nil
        self.unflushed = []
        self.flushed = []
        let stream = self.stream
        let tasks = self.tasks
        self.tasks = []
        for task in tasks { task.cancel() }
        Task { await stream.close() }
        self.events?.closed(error)
    }
}
