import NIOCore
import SDLProtocol
import SDLSession

/// What the harness knows of one session of one engine, from the calls it made and the events
/// the engine reported.
struct SessionTrack {
    var started = false
    var ended = false
    var failed = false
    /// App role: `endSession` was called (a session still starting then ends without starting).
    var endRequested = false
    /// Ended by the peer's EndService (not on this side's initiative).
    var endedByPeer = false
    var sessionID: SessionID?
    var transport: TransportID?
    /// Audio and video services reported running.
    var services: Set<UInt8> = []
    /// The transport each service (audio, video) last started on, kept after it ended.
    var serviceTransports: [UInt8: TransportID] = [:]

    var isLive: Bool { self.started && !self.ended }
}

/// One engine as an I/O layer drives it: actions drained after every input, writes pulled into
/// an outbox per transport (the bytes "on the wire" not yet handed to the peer), connection
/// requests, closes and the armed timer kept for the harness.
struct Side {
    let name: String
    var engine: SessionEngine
    var tracks: [SessionHandle: SessionTrack] = [:]
    /// Handles in the order they became known.
    var handles: [SessionHandle] = []
    var outbox: [TransportID: ByteBuffer] = [:]
    var wantsWrite: Set<TransportID> = []
    var connects: [ConnectRequest] = []
    /// Transports this engine closed, not yet reported to the peer.
    var closedByEngine: [TransportID] = []
    var timer: NIODeadline?
    /// Per sender handle and service, the last sequence number received (isolation checks).
    var lastSequence: [UInt64: UInt32] = [:]
    /// The peer's handle each of this side's handles received from, and the reverse.
    var boundFrom: [SessionHandle: SessionHandle] = [:]
    var boundTo: [SessionHandle: SessionHandle] = [:]

    init(name: String, configuration: SessionConfiguration) {
        self.name = name
        self.engine = SessionEngine(configuration: configuration)
    }

    func live(_ handle: SessionHandle) -> Bool { self.tracks[handle]?.isLive == true }

    /// Live sessions' handles whose primary transport is `transport` (all when nil).
    func liveHandles(on transport: TransportID? = nil) -> [SessionHandle] {
        self.handles.filter { handle in
            guard let track = self.tracks[handle], track.isLive else { return false }
            return transport == nil || track.transport == transport
        }
    }

    mutating func addHandle(_ handle: SessionHandle) {
        precondition(self.tracks[handle] == nil, "\(self.name): handle \(handle) reused")
        self.tracks[handle] = SessionTrack()
        self.handles.append(handle)
    }

    /// Pulls up to `maxBytes` of a transport's frames into its outbox. Returns what the frames
    /// count for in the engine's queue (their payloads and a header each, whatever its wire
    /// size), and whether any carried a payload protected as it was written.
    mutating func pull(_ transport: TransportID, maxBytes: Int) -> (counted: Int, protected: Bool) {
        var buffer = self.outbox[transport] ?? ByteBuffer()
        let start = buffer.writerIndex
        _ = self.engine.nextWrite(on: transport, maxBytes: maxBytes, into: &buffer)
        self.outbox[transport] = buffer
        if !self.engine.hasPendingWrites(on: transport) { self.wantsWrite.remove(transport) }
        // The engine writes whole frames: walk their headers.
        var counted = 0
        var protected = false
        var offset = start
        while offset < buffer.writerIndex, let first = buffer.getInteger(at: offset, as: UInt8.self),
            let size = buffer.getInteger(at: offset + 4, as: UInt32.self)
        {
            let version = first >> 4
            let headerSize = version == 1 ? 8 : 12
            counted += Int(size) + headerSize
            if version > 1 && first & 0x08 != 0 && first & 0x07 != 0 { protected = true }
            offset += headerSize + Int(size)
        }
        precondition(offset == buffer.writerIndex, "\(self.name): nextWrite wrote part of a frame on \(transport)")
        return (counted, protected)
    }

    /// Takes up to `count` bytes of a transport's outbox.
    mutating func take(_ transport: TransportID, upTo count: Int) -> ByteBuffer? {
        guard var buffer = self.outbox[transport], buffer.readableBytes > 0 else { return nil }
        let slice = buffer.readSlice(length: min(count, buffer.readableBytes))!
        self.outbox[transport] = buffer.readableBytes == 0 ? nil : buffer
        return slice
    }
}

/// The control frames one direction of a transport carried, counted by service and frame info,
/// read back by the harness's own decoder: the engine's output must be well-formed frames.
struct WireCount {
    var decoder: FrameDecoder
    var counts: [UInt16: Int] = [:]

    init() {
        var limits = ProtocolLimits()
        limits.maxFramePayloadSize = 1 << 24
        limits.maxMessageSize = 1 << 24
        self.decoder = FrameDecoder(limits: limits, invalidHeaderPolicy: .fail)
    }

    subscript(service: ServiceType, info: ControlFrameInfo) -> Int {
        self.counts[UInt16(service.rawValue) << 8 | UInt16(info.rawValue)] ?? 0
    }

    /// `controlOnly`: every frame must be a control frame, or audio and video when `mediaToo`.
    mutating func add(_ bytes: ByteBuffer, what: String, controlOnly: Bool = false, mediaToo: Bool = false) {
        self.decoder.append(bytes)
        while true {
            let frame: ProtocolFrame?
            do {
                frame = try self.decoder.nextFrame(mtus: wideMTUs)
            } catch {
                preconditionFailure("\(what): an engine wrote a malformed frame: \(error)")
            }
            guard let frame else { return }
            precondition(
                !controlOnly || frame.header.frameType == .control
                    || mediaToo && (frame.header.serviceType == .audio || frame.header.serviceType == .video),
                "\(what): a \(frame.header.frameType) frame of \(frame.header.serviceType)")
            if frame.header.frameType == .control {
                self.counts[UInt16(frame.header.serviceType.rawValue) << 8 | UInt16(frame.header.frameInfo), default: 0] += 1
            }
        }
    }
}

/// Every session's every service at the largest MTU: the harness reads what engines write
/// whatever they negotiated.
let wideMTUs: MTUTable = {
    var table = MTUTable()
    for session in 0...255 {
        for service in ServiceType.known {
            table[SessionID(UInt8(session)), service, .receive] = 1 << 24
        }
    }
    return table
}()
