import NIOCore

/// Reassembles fragmented messages from their frames (protocol spec 5.4.1 §4.2), for one transport.
///
/// Messages are keyed by `MessageKey` (session id, service type, message id), so interleaved
/// messages of different sessions and services reassemble side by side. For each First frame the
/// declared total size and frame count are checked against `ProtocolLimits` (and the receive MTU
/// lent in `mtus`) before anything is allocated; then the whole message is reserved at once, so
/// the Consecutive frames are each copied exactly once. Sequence numbers must run 1…255, 1…, with
/// 0 on the last frame; every Consecutive frame must have its First frame's protocol version; the
/// final size must equal the declared one. A partial message is never delivered.
///
/// The reassembler owns no clock: `process(_:now:)` and `expire(now:)` take the time. Call
/// `expire(now:)` from a timer (`nextExpiry` says when); each message it drops is reported.
/// `discard(session:)`, `discard(session:service:)` and `discardAll()` drop pending messages
/// when a session, service or transport ends.
///
/// After an error the offending message is dropped and its memory released; its remaining
/// Consecutive frames are absorbed without further errors until its last frame (or expiry, or a
/// new First frame on the same key). Every reassembly error and expiry carries the message's
/// `messageKey`. The reassembler sees frames, not the stream, so its errors carry no offset: the
/// offending frame's stream offset is `FrameDecoder.lastFrameOffset`.
public struct Reassembler: Sendable {
    /// The limits in force. Changes apply to First frames that arrive afterwards.
    public var limits: ProtocolLimits

    typealias Key = MessageKey

    @usableFromInline
    struct Assembly: Sendable {
        var buffer: ByteBuffer
        var totalSize: Int
        /// The bytes of storage counted against `maxReassemblyBytes`: the buffer's capacity, which
        /// the allocator rounds up from `totalSize`.
        var reservedSize: Int
        var consecutiveFrames: Int
        var received: Int
        var version: ProtocolVersion
        var encrypted: Bool
        var lastActivity: NIODeadline
        /// When its First frame came.
        var started: NIODeadline
        /// Set after an error: the frames of the message are absorbed, nothing is kept.
        var discarding: Bool

        /// When it expires: `timeout` after its last frame, or `maxDuration` after its first.
        func expiry(_ limits: ProtocolLimits) -> NIODeadline {
            min(self.lastActivity + limits.reassemblyTimeout, self.started + limits.maxReassemblyDuration)
        }
    }

    /// Messages up to this size get their whole buffer at once; a larger one starts with this much
    /// and grows as its frames come, so that a peer that declares large messages and sends little
    /// of them holds little memory.
    static let eagerAllocationLimit = 1 << 20

    /// Internal, not private: the tests compare `reservedBytes` with the buffers' capacities.
    var assemblies: [Key: Assembly] = [:]
    private var perSession: [Int]
    private var reserved = 0

    /// Creates a reassembler.
    public init(limits: ProtocolLimits = ProtocolLimits()) {
        self.limits = limits
        self.perSession = [Int](repeating: 0, count: 256)
    }

    /// The number of messages in reassembly (including those whose remaining frames are being
    /// absorbed after an error).
    public var activeCount: Int { self.assemblies.count }

    /// The bytes of storage held for messages in reassembly: the capacities of their buffers, each
    /// the declared total size rounded up to the allocator's size class (a power of two).
    public var reservedBytes: Int { self.reserved }

    /// The number of messages of `session` in reassembly.
    public func activeCount(session: SessionID) -> Int { self.perSession[Int(session.rawValue)] }

    /// Takes a frame, with the version default MTUs (no negotiated MTUs). Returns the message it
    /// completes (a control or Single frame completes a message by itself), nil when the frame was
    /// stored, or throws for a frame that breaks the rules; the reassembler keeps working after an
    /// error.
    public mutating func process(_ frame: ProtocolFrame, now: NIODeadline) throws(SDLProtocolError) -> ProtocolMessage? {
        try self.process(frame, now: now, mtus: MTUTable())
    }

    /// Takes a frame; a First frame's frame count is checked against the receive MTU of its
    /// session and service in `mtus` (clamped to `limits`).
    public mutating func process(
        _ frame: ProtocolFrame, now: NIODeadline, mtus: MTUTable
    ) throws(SDLProtocolError) -> ProtocolMessage? {
        switch frame.header.frameType {
        case .first:
            try self.startMessage(frame, now: now, mtus: mtus)
            return nil
        case .consecutive:
            return try self.continueMessage(frame, now: now)
        default:
            return ProtocolMessage(frame: frame)
        }
    }

    /// Drops every message that has seen no frame for `limits.reassemblyTimeout`, releasing its
    /// memory, and reports each with a `reassemblyExpired` error carrying its `messageKey`.
    public mutating func expire(now: NIODeadline) -> [SDLProtocolError] {
        var errors: [SDLProtocolError] = []
        for (key, assembly) in self.assemblies where assembly.expiry(self.limits) <= now {
            self.remove(key)
            if !assembly.discarding {
                errors.append(
                    SDLProtocolError(
                        .reassemblyExpired, key: key,
                        "\(key) expired with \(assembly.buffer.readableBytes) of \(assembly.totalSize) bytes, "
                            + "\(assembly.received) of \(assembly.consecutiveFrames) frames"))
            }
        }
        return errors
    }

    /// Drops the pending messages of a session (when it ends), releasing their memory and
    /// counts. Returns the keys of the messages that were still being reassembled (not those
    /// already failed and being absorbed).
    @discardableResult
    public mutating func discard(session: SessionID) -> [MessageKey] {
        self.discard { $0.sessionID == session }
    }

    /// Drops the pending messages of one service of a session (when the service ends).
    @discardableResult
    public mutating func discard(session: SessionID, service: ServiceType) -> [MessageKey] {
        self.discard { $0.sessionID == session && $0.serviceType == service }
    }

    /// Drops every pending message (when the transport closes).
    @discardableResult
    public mutating func discardAll() -> [MessageKey] {
        self.discard { _ in true }
    }

    private mutating func discard(where matches: (MessageKey) -> Bool) -> [MessageKey] {
        var dropped: [MessageKey] = []
        for (key, assembly) in self.assemblies where matches(key) {
            self.remove(key)
            if !assembly.discarding { dropped.append(key) }
        }
        return dropped
    }

    /// When the next incomplete message expires, nil if none is in reassembly.
    public var nextExpiry: NIODeadline? {
        self.assemblies.values.map { $0.expiry(self.limits) }.min()
    }

    private mutating func startMessage(_ frame: ProtocolFrame, now: NIODeadline, mtus: MTUTable) throws(SDLProtocolError) {
        let header = frame.header
        let key = MessageKey(of: header)
        guard let (declaredTotal, declaredCount) = frame.firstFramePayload else {
            throw SDLProtocolError(
                .invalidFirstFrameDataSize, key: key, "First frame payload of \(frame.payload.readableBytes) bytes, must be 8")
        }
        if let existing = self.assemblies[key] {
            if existing.discarding {
                // The earlier message already failed and was reported; a new First frame on its
                // key starts a new message (in version 1, whose message id is always 0, every
                // message of a service shares the key).
                self.remove(key)
            } else {
                // The earlier message cannot be completed reliably any more: drop it, absorb the rest.
                self.release(key)
                throw SDLProtocolError(
                    .duplicateFirstFrame, key: key,
                    "second First frame for message \(key.messageID) of session \(key.sessionID) service \(header.serviceType)")
            }
        }
        // Compared as UInt32 first: where Int is 32 bits wide, a hostile total would not fit.
        guard declaredTotal <= UInt32(clamping: self.limits.maxMessageSize) else {
            throw SDLProtocolError(
                .messageTooLarge, key: key, "First frame declares \(declaredTotal) bytes, above the limit of \(self.limits.maxMessageSize)")
        }
        let total = Int(declaredTotal)
        let count = Int(clamping: declaredCount)
        guard total >= 1 else {
            throw SDLProtocolError(.frameCountMismatch, key: key, "First frame declares a message of 0 bytes")
        }
        // Each Consecutive frame carries between 1 byte and the receive limit.
        let perFrame = max(1, Int(
            mtus.receivePayloadLimit(
                version: header.version, session: header.sessionID, service: header.serviceType, limits: self.limits)))
        let minimumCount = (total + perFrame - 1) / perFrame
        guard count >= minimumCount, count <= total else {
            throw SDLProtocolError(
                .frameCountMismatch, key: key,
                "First frame declares \(count) Consecutive frames for \(total) bytes; "
                    + "\(minimumCount)...\(total) frames of at most \(perFrame) bytes could carry them")
        }
        let session = Int(key.sessionID.rawValue)
        let reservation = Self.storageSize(forCapacity: total)
        guard self.perSession[session] < self.limits.maxReassembliesPerSession,
            self.assemblies.count < self.limits.maxReassembliesPerTransport,
            self.reserved + reservation <= self.limits.maxReassemblyBytes
        else {
            throw self.tooManyReassemblies(key, reservation: reservation)
        }
        let buffer = ByteBufferAllocator().buffer(capacity: min(total, Self.eagerAllocationLimit))
        // The declared size counts against the limit from the start, although a large message's
        // buffer grows only as its frames come: the limit bounds what the peer can make us hold.
        let reserved = max(buffer.capacity, reservation)
        guard self.reserved + reserved <= self.limits.maxReassemblyBytes else {
            throw self.tooManyReassemblies(key, reservation: reserved)
        }
        self.assemblies[key] = Assembly(
            buffer: buffer, totalSize: total, reservedSize: reserved, consecutiveFrames: count,
            received: 0, version: header.version, encrypted: false, lastActivity: now, started: now, discarding: false)
        self.perSession[session] += 1
        self.reserved += reserved
    }

    private func tooManyReassemblies(_ key: Key, reservation: Int) -> SDLProtocolError {
        let session = Int(key.sessionID.rawValue)
        return SDLProtocolError(
            .tooManyReassemblies, key: key,
            "cannot start message \(key.messageID) of session \(key.sessionID): \(self.perSession[session]) of "
                + "\(self.limits.maxReassembliesPerSession) per session, \(self.assemblies.count) of "
                + "\(self.limits.maxReassembliesPerTransport) per transport, \(self.reserved) + \(reservation) of "
                + "\(self.limits.maxReassemblyBytes) bytes in use")
    }

    /// The storage a buffer of `capacity` bytes takes: NIO's allocator rounds capacities up to a
    /// power of two, so a message one byte above 8 MiB costs 16 MiB.
    static func storageSize(forCapacity capacity: Int) -> Int {
        capacity <= 1 ? capacity : 1 << (Int.bitWidth - (capacity - 1).leadingZeroBitCount)
    }

    private mutating func continueMessage(_ frame: ProtocolFrame, now: NIODeadline) throws(SDLProtocolError) -> ProtocolMessage? {
        let header = frame.header
        let key = MessageKey(of: header)
        guard var assembly = self.assemblies.removeValue(forKey: key) else {
            throw SDLProtocolError(
                .consecutiveWithoutFirst, key: key,
                "Consecutive frame \(header.frameInfo) for message \(key.messageID) of session \(key.sessionID) "
                    + "service \(header.serviceType) without a First frame")
        }
        if assembly.discarding {
            if header.frameInfo == 0 {
                self.forget(key, assembly)
            } else {
                assembly.lastActivity = now
                self.assemblies[key] = assembly
            }
            return nil
        }
        let index = assembly.received + 1
        guard header.version == assembly.version else {
            self.fail(key, assembly, lastFrameSeen: header.frameInfo == 0)
            throw SDLProtocolError(
                .versionMismatch, key: key,
                "Consecutive frame \(index) of \(assembly.consecutiveFrames) for message \(key.messageID) of session "
                    + "\(key.sessionID) has protocol version \(header.version), its First frame \(assembly.version)")
        }
        let expected = MessageFragmenter.sequenceNumber(ofConsecutiveFrame: index, count: assembly.consecutiveFrames)
        guard header.frameInfo == expected else {
            self.fail(key, assembly, lastFrameSeen: header.frameInfo == 0)
            throw SDLProtocolError(
                .unexpectedSequenceNumber, key: key,
                "Consecutive frame \(index) of \(assembly.consecutiveFrames) for message \(key.messageID) of session "
                    + "\(key.sessionID) has sequence number \(header.frameInfo), expected \(expected)")
        }
        let size = frame.payload.readableBytes
        let isLast = index == assembly.consecutiveFrames
        guard assembly.buffer.readableBytes + size <= assembly.totalSize,
            !isLast || assembly.buffer.readableBytes + size == assembly.totalSize
        else {
            self.fail(key, assembly, lastFrameSeen: isLast)
            throw SDLProtocolError(
                .messageSizeMismatch, key: key,
                "message \(key.messageID) of session \(key.sessionID): \(assembly.buffer.readableBytes + size) bytes "
                    + "after frame \(index) of \(assembly.consecutiveFrames), First frame declared \(assembly.totalSize)")
        }
        if assembly.buffer.writableBytes < size {
            // Doubling up to the declared size: a large message is copied about once more in all.
            let needed = assembly.buffer.readableBytes + size
            assembly.buffer.reserveCapacity(min(assembly.totalSize, max(needed, assembly.buffer.capacity * 2)))
        }
        assembly.buffer.writeImmutableBuffer(frame.payload)
        assembly.received = index
        assembly.encrypted = assembly.encrypted || header.isEncrypted
        assembly.lastActivity = now
        guard isLast else {
            self.assemblies[key] = assembly
            return nil
        }
        self.forget(key, assembly)
        return ProtocolMessage(
            version: assembly.version, serviceType: header.serviceType, sessionID: header.sessionID,
            messageID: header.messageID, frameType: .single, isEncrypted: assembly.encrypted,
            payload: assembly.buffer, frameCount: assembly.consecutiveFrames + 1)
    }

    /// Drops a message after an error; unless its last frame was the one that failed, keeps an
    /// empty entry that absorbs the rest of its frames.
    private mutating func fail(_ key: Key, _ assembly: Assembly, lastFrameSeen: Bool) {
        self.forget(key, assembly)
        if !lastFrameSeen {
            self.assemblies[key] = Assembly(
                buffer: ByteBuffer(), totalSize: 0, reservedSize: 0, consecutiveFrames: assembly.consecutiveFrames,
                received: assembly.received, version: assembly.version, encrypted: false,
                lastActivity: assembly.lastActivity, started: assembly.started, discarding: true)
            self.perSession[Int(key.sessionID.rawValue)] += 1
        }
    }

    private mutating func release(_ key: Key) {
        guard let assembly = self.assemblies.removeValue(forKey: key) else { return }
        self.fail(key, assembly, lastFrameSeen: false)
    }

    private mutating func remove(_ key: Key) {
        guard let assembly = self.assemblies.removeValue(forKey: key) else { return }
        self.forget(key, assembly)
    }

    /// Updates the counters for an entry that was removed from `assemblies`.
    private mutating func forget(_ key: Key, _ assembly: Assembly) {
        self.perSession[Int(key.sessionID.rawValue)] -= 1
        self.reserved -= assembly.reservedSize
    }
}
