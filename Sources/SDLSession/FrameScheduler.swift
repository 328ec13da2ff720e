import NIOCore
import SDLProtocol

/// A message queued for sending, cut into frames only as they are written.
struct OutgoingMessage: Sendable {
    var frames: MessageFragmenter.Iterator
    /// Frames not yet taken.
    var remainingFrames: Int
    /// Whether the Single and Consecutive frames are protected when they are written.
    var isProtected: Bool
    /// The message's bytes with its frame headers (12 bytes each, 8 at version 1) and a First
    /// frame's 8 bytes: what it holds in the queue until its last frame is taken, and what its
    /// frames take on the wire unless they are protected as they are written (a control frame
    /// without payload counts its header, so that a queue of heartbeat ACKs a peer never reads
    /// shows).
    var size: Int

    init(_ fragmenter: MessageFragmenter, isProtected: Bool) {
        self.frames = fragmenter.makeIterator()
        self.remainingFrames = fragmenter.frameCount
        self.isProtected = isProtected
        self.size = fragmenter.payload.readableBytes + fragmenter.version.headerSize * fragmenter.frameCount
            + (fragmenter.consecutiveFrameCount > 0 ? 8 : 0)
    }
}

/// A frame chosen for writing.
struct ScheduledFrame: Sendable {
    var frame: ProtocolFrame
    /// Whether its payload must go through the session's security provider first.
    var needsProtection: Bool
}

/// The outgoing frames of one transport, chosen when the transport can write (ARCHITECTURE.md,
/// D-scheduler).
///
/// Frames are queued per stream: the control frames of a session (whatever their service byte:
/// StartServiceACK, TransportEventUpdate, heartbeats, security queries), and the data messages of
/// each (session, service). Streams belong to lanes in priority order: control, RPC, audio, video,
/// bulk (hybrid and unknown services), the order SDL Core gives service types (spec: lower service
/// type, higher priority). Each write picks one frame:
/// - control before everything, then RPC, so an RPC waits at most for the frame being written;
/// - among the data lanes the highest waiting one, except that a lane passed over
///   `agingThreshold` times in a row is served next, so bulk data always progresses under
///   continuous video;
/// - within a lane, streams take turns frame by frame (a long message of one session does not
///   hold up another session), and within a stream messages go out whole and in order (peers
///   break on interleaved messages of one service).
struct FrameScheduler: Sendable {
    enum Lane: Int, CaseIterable {
        case control = 0, rpc, audio, video, bulk
    }

    private struct Stream: Sendable {
        /// The message being written, kept apart from the queue so that taking a frame changes
        /// it in place (a ring buffer's subscript copies the element out and back).
        var current: OutgoingMessage?
        var waiting = CircularBuffer<OutgoingMessage>(initialCapacity: 2)
        /// The sizes of the messages queued, the current one included.
        var bytes = 0

        var isEmpty: Bool { self.current == nil }

        var count: Int { (self.current == nil ? 0 : 1) + self.waiting.count }

        mutating func append(_ message: OutgoingMessage) {
            self.bytes += message.size
            if self.current == nil {
                self.current = message
            } else {
                self.waiting.append(message)
            }
        }

        /// Takes the next frame of the first message; `finished`: the size of the message whose
        /// last frame that was.
        mutating func takeFrame() -> (frame: ProtocolFrame, isProtected: Bool, finished: Int?) {
            let frame = self.current!.frames.next()!
            let isProtected = self.current!.isProtected
            self.current!.remainingFrames -= 1
            guard self.current!.remainingFrames == 0 else { return (frame, isProtected, nil) }
            let size = self.current!.size
            self.bytes -= size
            self.current = self.waiting.popFirst()
            return (frame, isProtected, size)
        }
    }

    /// Streams keyed by session id << 8 | service byte (0 for the control stream of a session).
    private var streams = RecordTable<UInt16, Stream>()
    /// Per lane, the streams with frames waiting, in turn order.
    private var active: [CircularBuffer<UInt16>]
    /// Per lane, how many times in a row it was passed over while it had frames (data lanes).
    private var skips: [Int]
    let agingThreshold: Int
    /// The number of queued messages (a message leaves when its last frame is taken).
    private(set) var queuedMessages = 0
    /// The bytes of the queued messages (a message's leave with its last frame).
    private(set) var queuedBytes = 0

    init(agingThreshold: Int) {
        self.agingThreshold = max(0, agingThreshold)
        self.active = Lane.allCases.map { _ in CircularBuffer(initialCapacity: 4) }
        self.skips = [Int](repeating: 0, count: Lane.allCases.count)
    }

    /// Whether nothing waits.
    var isEmpty: Bool { self.queuedMessages == 0 }

    static func lane(frameType: FrameType, service: ServiceType) -> Lane {
        if frameType == .control { return .control }
        switch service {
        case .control: return .control
        case .rpc: return .rpc
        case .audio: return .audio
        case .video: return .video
        default: return .bulk
        }
    }

    private static func key(session: SessionID, lane: Lane, service: ServiceType) -> UInt16 {
        UInt16(session.rawValue) << 8 | UInt16(lane == .control ? 0 : service.rawValue)
    }

    /// Queues a message behind the others of its stream.
    mutating func enqueue(_ message: OutgoingMessage, session: SessionID, service: ServiceType, frameType: FrameType) {
        let lane = Self.lane(frameType: frameType, service: service)
        let key = Self.key(session: session, lane: lane, service: service)
        self.queuedMessages += 1
        self.queuedBytes += message.size
        // A stream stays once made (its buffer is reused); it is active while it has messages.
        if !self.streams.contains(key) {
            self.streams[key] = Stream()
        }
        if self.streams[existing: key].isEmpty {
            self.active[lane.rawValue].append(key)
        }
        self.streams[existing: key].append(message)
    }

    /// The next frame to write, or nil when nothing waits.
    mutating func next() -> ScheduledFrame? {
        guard let lane = self.pickLane() else { return nil }
        let key = self.active[lane.rawValue].removeFirst()
        // In place: the stream record is not moved out of the table and back.
        let (frame, isProtected, finished) = self.streams[existing: key].takeFrame()
        if let size = finished {
            self.queuedMessages -= 1
            self.queuedBytes -= size
        }
        if !self.streams[existing: key].isEmpty {
            self.active[lane.rawValue].append(key)
        }
        // First frames are never protected (protocol spec 5.4.1 §3.1.1).
        return ScheduledFrame(frame: frame, needsProtection: isProtected && frame.header.frameType != .first)
    }

    private mutating func pickLane() -> Lane? {
        if !self.active[Lane.control.rawValue].isEmpty { return .control }
        if !self.active[Lane.rpc.rawValue].isEmpty { return .rpc }
        var chosen: Lane?
        for lane in [Lane.audio, .video, .bulk] where !self.active[lane.rawValue].isEmpty {
            if chosen == nil {
                chosen = lane
            } else if self.skips[lane.rawValue] >= self.agingThreshold
                && self.skips[lane.rawValue] > self.skips[chosen!.rawValue]
            {
                chosen = lane
            }
        }
        guard let chosen else { return nil }
        for lane in [Lane.audio, .video, .bulk] where !self.active[lane.rawValue].isEmpty {
            self.skips[lane.rawValue] = lane == chosen ? 0 : self.skips[lane.rawValue] + 1
        }
        return chosen
    }

    /// Drops the queued messages of a service of a session (it ended): none of its frames is
    /// written afterwards, even the rest of a message already begun.
    mutating func removeStream(session: SessionID, service: ServiceType) {
        let lane = Self.lane(frameType: .single, service: service)
        self.remove(key: Self.key(session: session, lane: lane, service: service), lane: lane)
    }

    /// Drops everything queued for a session, control frames included.
    mutating func removeSession(_ session: SessionID) {
        for key in self.streams.keys where key >> 8 == UInt16(session.rawValue) {
            let service = ServiceType(rawValue: UInt8(truncatingIfNeeded: key))
            self.remove(key: key, lane: service == .control ? .control : Self.lane(frameType: .single, service: service))
        }
    }

    private mutating func remove(key: UInt16, lane: Lane) {
        guard let stream = self.streams.removeValue(forKey: key) else { return }
        self.queuedMessages -= stream.count
        self.queuedBytes -= stream.bytes
        if let index = self.active[lane.rawValue].firstIndex(of: key) {
            self.active[lane.rawValue].remove(at: index)
        }
    }

    /// The number of messages queued for a session's service (control frames: service `.control`).
    func queuedMessages(session: SessionID, service: ServiceType, frameType: FrameType = .single) -> Int {
        let lane = Self.lane(frameType: frameType, service: service)
        return self.streams[Self.key(session: session, lane: lane, service: service)]?.count ?? 0
    }

    /// The bytes of the messages queued for a session's service (control frames: service `.control`).
    func queuedBytes(session: SessionID, service: ServiceType, frameType: FrameType = .single) -> Int {
        let lane = Self.lane(frameType: frameType, service: service)
        return self.streams[Self.key(session: session, lane: lane, service: service)]?.bytes ?? 0
    }
}
