import NIOCore

/// A streaming decoder that turns one direction of a byte stream into frames
/// (protocol spec 5.4.1 §3).
///
/// Feed bytes in any chunking with `append(_:)` and pull frames with `nextFrame()` (or
/// `nextFrame(mtus:)` once MTUs are negotiated):
/// - `nil` means more bytes are needed; nothing was consumed that a later call would miss;
/// - a thrown `SDLProtocolError` means a bad header at `error.offset`;
/// - a `ProtocolFrame` means progress.
/// When the stream ends, call `finish()` and pull until `nil`: frames held back for confirmation
/// come out, and an incomplete frame is reported as `truncatedFrame`.
///
/// Each header is validated (`FrameHeader.validate(against:mtus:)`) before any of its payload is
/// buffered, byte by byte as the header arrives, so garbage is refused as early as possible and a
/// hostile data size never makes the decoder wait for or reserve more than the receive limit of
/// the frame's session and service.
///
/// **Resynchronisation.** After a bad header the decoder either fails for good or (the default,
/// as SDL Core does) slides one byte at a time until a header passes validation again; one error
/// is reported per run of bad bytes. Inside such a garbage run a header that passes validation is
/// a *candidate*, and SDL Core's rule (take the first candidate) lets garbage bytes joined with a
/// good frame's first bytes swallow that frame and everything its bogus data size covers. Here a
/// candidate X is taken at once only if no other candidate starts inside X's own header bytes.
/// If one does (Y), the decoder looks at the bytes right after each frame: a candidate is
/// *confirmed* when its frame is followed by a header that passes validation (or by the end of
/// the stream), *refuted* when it is followed by bytes that fail. X wins only if X is confirmed
/// and every such Y is refuted; otherwise the decoder slides on to the later candidate. Until the
/// bytes that decide have arrived, `nextFrame()` returns nil (at most the frames concerned and 12
/// bytes after each). Outside a garbage run (the first frame of a stream, and every frame right
/// after a delivered one) a header that passes validation is taken at once, with no look-ahead.
/// What this guarantees is stated in the README ("Bad headers").
///
/// **Memory.** Payloads of frames that arrived inside one retained buffer are slices of it: no
/// copy. Buffers with few readable bytes, or whose storage is much larger than their readable
/// bytes, are copied into a buffer the decoder owns instead of being retained, and a front buffer
/// whose consumed part dominates is compacted, so `bufferedStorageBytes` stays within
/// 4 × `bufferedByteCount` + 4 KiB after every `append` and whenever `nextFrame()` returns nil.
/// The decoder's total work is linear in the bytes appended, whatever the chunking and whenever frames
/// are pulled.
public struct FrameDecoder: Sendable {
    /// What the decoder does after a bad header.
    public enum InvalidHeaderPolicy: Hashable, Sendable {
        /// Report the error, slide one byte and look for the next good header (SDL Core's
        /// behaviour, made stronger as the type's documentation describes).
        case resynchronize
        /// Report the error and refuse all further input; the connection should be closed.
        case fail
    }

    /// The limits headers are validated against (configuration only: negotiated MTUs are lent to
    /// `nextFrame(mtus:)`).
    public var limits: ProtocolLimits
    /// What happens after a bad header.
    public var invalidHeaderPolicy: InvalidHeaderPolicy

    /// A buffered segment after `front`, with the stream offset just past its last byte (so that
    /// a look-ahead finds its segment by binary search).
    private struct Segment {
        var buffer: ByteBuffer
        var end: Int
        /// `buffer.storageCapacity`, read once: every read of a `ByteBuffer`'s storage pays a
        /// dynamic exclusivity check, which costs more than the small reads' own work.
        var capacity: Int
    }

    /// The segments after `front`, oldest first. The first is kept apart from the others: with
    /// small reads there is nearly always one, and a ring buffer's append, copy out and removal
    /// cost more than the reads' own work.
    private struct SegmentQueue {
        private var first: Segment?
        private var others = CircularBuffer<Segment>(initialCapacity: 4)

        var isEmpty: Bool { if case .none = self.first { true } else { false } }
        var count: Int { self.isEmpty ? 0 : 1 &+ self.others.count }
        var last: Segment? { self.others.last ?? self.first }

        subscript(offset offset: Int) -> Segment {
            offset == 0 ? self.first.unsafelyUnwrapped : self.others[offset: offset &- 1]
        }

        mutating func append(_ segment: Segment) {
            if self.isEmpty {
                self.first = segment
            } else {
                self.others.append(segment)
            }
        }

        mutating func prepend(_ segment: Segment) {
            if let first = self.first.take() {
                self.others.prepend(first)
            }
            self.first = segment
        }

        mutating func popFirst() -> Segment? {
            self.isEmpty ? nil : self.removeFirst()
        }

        /// The first segment, moved out (the queue must not be empty).
        mutating func removeFirst() -> Segment {
            let first = self.first.take()!
            if !self.others.isEmpty {
                self.first = self.others.removeFirst()
            }
            return first
        }
    }

    /// The oldest unconsumed bytes; empty only when nothing is buffered. Kept apart from `rest`
    /// so that the common case, a whole frame at the front, is read in place.
    private var front: ByteBuffer
    /// `front.storageCapacity`, kept with it (see `Segment.capacity`).
    private var frontCapacity = 0
    /// Later segments, oldest first: retained received buffers and sealed owned buffers.
    private var rest = SegmentQueue()
    /// The owned buffer after `rest` into which small or storage-wasteful received buffers are
    /// copied; it is never sliced, so writing into it never copies its storage.
    private var tail: ByteBuffer
    /// Whether `front` is itself the open owned buffer (`rest` and `tail` are then empty): small
    /// received buffers are written into it until a payload slice of it is handed out (which
    /// seals it, since writing into shared storage would copy it).
    private var frontIsOpen = false
    private var bufferedBytes = 0
    /// The storage capacity of `front`, every segment of `rest` and `tail`, kept up to date.
    private var heldStorage = 0
    private var finished = false

    /// The stream offset of the first unconsumed byte.
    public private(set) var streamOffset = 0
    /// The stream offset at which the frame last returned by `nextFrame()` starts.
    public private(set) var lastFrameOffset = 0
    /// Whether the decoder is in a garbage run: sliding through bytes after a bad header (errors
    /// are suppressed until a frame is taken, so a run is reported once).
    private var resynchronizing = false
    /// The number of bytes skipped while resynchronising, over the decoder's life. A garbage run
    /// is reported by one error; this count shows how long the runs were.
    public private(set) var skippedByteCount = 0
    private var failure: SDLProtocolError?
    /// The candidate the decoder waits on after weighing it, and the stream offset the buffered
    /// bytes must reach before weighing it again could change anything: without it, a candidate
    /// waiting for a long rival frame would be weighed again on every call.
    private var waiting: (candidate: Int, until: Int) = (-1, 0)
    /// Where `forEachFrame` last returned waiting on the front's bytes (a frame or header not yet
    /// all there, checked by `walk`): the stream offset and the front's readable bytes then. While
    /// both are unchanged the front holds those same bytes, and a later call goes straight to the
    /// frame they start in the next segment (which validates its header again, under the
    /// call's own MTUs) instead of walking them again.
    private var waitingFront: (offset: Int, count: Int) = (-1, 0)

    /// Counts the decoder's slow-path work (bytes copied or scanned, headers inspected, segments
    /// visited, candidates weighed), for the tests' complexity checks.
    private(set) var workCount = 0

    /// Received buffers with fewer readable bytes are copied into the decoder's own buffer.
    static let minimumRetainedBytes = 256
    /// The smallest buffer the decoder allocates for copied bytes.
    static let minimumOwnedCapacity = 64
    /// `front` is compacted when its storage exceeds this many times its readable bytes, plus
    /// `compactionSlack`. The other buffers hold at most 2.25 times their bytes + 64 (retained
    /// buffers at most twice theirs, owned ones at most twice theirs or 64, and at most one owned
    /// buffer per retained one of 256 bytes or more), so all together stay within 4 × the bytes
    /// + 4 KiB. The slack spares a typical read buffer (2 KiB of storage) a copy of the partial
    /// frame at its end, which the next read completes anyway.
    static let compactionRatio = 4
    static let compactionSlack = 3072

    /// Creates a decoder.
    public init(limits: ProtocolLimits = ProtocolLimits(), invalidHeaderPolicy: InvalidHeaderPolicy = .resynchronize) {
        self.limits = limits
        self.invalidHeaderPolicy = invalidHeaderPolicy
        self.front = Self.empty
        self.tail = Self.empty
    }

    /// What `front` and `tail` hold when empty (so that consumed input is not kept alive).
    private static let empty = ByteBuffer()

    /// The number of received bytes not yet consumed.
    public var bufferedByteCount: Int { self.bufferedBytes }

    /// The bytes of storage the decoder holds for its buffered bytes: the storage capacities of
    /// the buffers it keeps (a retained slice counts its whole storage). This is what the memory
    /// bound (4 × `bufferedByteCount` + 4 KiB) is stated against. O(1).
    public var bufferedStorageBytes: Int { self.heldStorage }

    /// `bufferedStorageBytes` summed afresh, for the tests to check the running count against.
    var recountedStorageBytes: Int {
        (0..<self.rest.count).reduce(self.front.storageCapacity + self.tail.storageCapacity) {
            $0 + self.rest[offset: $1].buffer.storageCapacity
        }
    }

    // MARK: Input

    /// Adds received bytes. A buffer with at least 256 readable bytes whose storage is at most
    /// twice that is kept as is (frames inside it are handed out as slices); any other buffer is
    /// copied into the decoder's own buffer, so that the memory held follows the bytes held.
    public mutating func append(_ bytes: ByteBuffer) {
        precondition(!self.finished, "FrameDecoder.append(_:) after finish()")
        let count = bytes.readableBytes
        guard count > 0 else { return }
        let wasEmpty = self.bufferedBytes == 0
        self.bufferedBytes += count
        let capacity = bytes.storageCapacity
        if count >= Self.minimumRetainedBytes && capacity <= 2 * count {
            self.heldStorage += capacity
            if wasEmpty {
                self.front = bytes
                self.frontCapacity = capacity
                self.frontIsOpen = false
            } else {
                self.frontIsOpen = false
                self.sealTail()
                self.rest.append(Segment(buffer: bytes, end: self.streamOffset + self.bufferedBytes, capacity: capacity))
            }
        } else if wasEmpty {
            var owned = ByteBufferAllocator().buffer(capacity: max(Self.minimumOwnedCapacity, count))
            owned.writeImmutableBuffer(bytes)
            self.frontCapacity = owned.storageCapacity
            self.heldStorage += self.frontCapacity
            self.front = owned
            self.frontIsOpen = true
            self.workCount += count
        } else if self.frontIsOpen {
            self.frontCapacity = Self.write(bytes, into: &self.front, held: &self.heldStorage)
            self.workCount += count
        } else {
            Self.write(bytes, into: &self.tail, held: &self.heldStorage)
            self.workCount += count
        }
        self.compactFrontIfWasteful()
    }

    /// Adds received bytes from a collection (copied once into a `ByteBuffer`).
    public mutating func append(contentsOf bytes: some Collection<UInt8>) {
        self.append(ByteBuffer(bytes: bytes))
    }

    /// Declares the end of the stream. Afterwards `nextFrame()` delivers the frames still held
    /// back, throws `truncatedFrame` once if the stream ended inside a frame (not inside garbage
    /// already reported), and then returns nil. Appending after `finish()` is a programming error.
    public mutating func finish() {
        self.finished = true
    }

    // MARK: Output

    /// Returns the next frame, nil if more bytes are needed, or throws for a bad header; receive
    /// limits are the version defaults clamped to `limits` (no negotiated MTUs).
    @inlinable
    public mutating func nextFrame() throws(SDLProtocolError) -> ProtocolFrame? {
        try self.nextFrame(mtus: MTUTable())
    }

    /// Returns the next frame, nil if more bytes are needed, or throws for a bad header; each
    /// header's data size is checked against the receive MTU of its session and service in
    /// `mtus`, clamped to `limits`.
    ///
    /// With `.resynchronize` the decoder has already moved past the bad byte when it throws, so
    /// calling `nextFrame(mtus:)` again continues with the rest of the stream. With `.fail` every
    /// later call throws `decoderFailed`.
    public mutating func nextFrame(mtus: MTUTable) throws(SDLProtocolError) -> ProtocolFrame? {
        let ceiling = self.limits.receivePayloadCeiling
        // The common case: a whole valid frame at the front of the front buffer, its header read
        // in one access to the storage.
        if !self.resynchronizing, let header = Self.peekWholeHeader(in: self.front),
            header.problem(maxVersion: self.limits.maxVersion, mtus: mtus, ceiling: ceiling) == nil,
            self.front.readableBytes >= header.frameSize
        {
            return self.takeFrame(header)
        }
        return try self.nextFrameSlowly(mtus: mtus, ceiling: ceiling)
    }

    /// Visits every frame that can be decoded now, in order, lending `body` each frame's header
    /// and payload bytes for the duration of the call, and returns how many it visited. It
    /// decodes exactly what `nextFrame(mtus:)` would (same validation, resynchronisation, limits
    /// and errors): it returns when more bytes are needed, and throws for a bad header after
    /// visiting the frames before it (with `.resynchronize`, calling it again continues after
    /// the bad byte).
    ///
    /// This is the decoder without allocation or reference counting per frame: frames lying
    /// whole in the front buffer are read in one pass over its bytes, with no `ByteBuffer` slice
    /// made for their payloads (a slice costs a retain and a release, and the front buffer stays
    /// open for small reads to be copied into). Use it where frames are inspected, forwarded or
    /// copied rather than kept, as a router or a dissector does; keep a payload by copying it,
    /// since the bytes are only valid inside `body`.
    @discardableResult
    public mutating func forEachFrame(
        mtus: MTUTable = MTUTable(), _ body: (FrameHeader, UnsafeRawBufferPointer) -> Void
    ) throws(SDLProtocolError) -> Int {
        var visited = 0
        let ceiling = self.limits.receivePayloadCeiling
        while true {
            guard !self.resynchronizing && self.failure == nil else {
                // A garbage run, or a decoder that failed: the careful way, one step at a time.
                guard let frame = try self.nextFrame(mtus: mtus) else { return visited }
                frame.payload.withUnsafeReadableBytes { body(frame.header, $0) }
                visited &+= 1
                continue
            }
            var waits = true
            if self.waitingFront != (self.streamOffset, self.front.readableBytes) || self.rest.isEmpty {
                let (count, frontWaits) = self.visitWholeFrames(mtus: mtus, body)
                visited &+= count
                waits = frontWaits
            }
            // Small reads: the front ends inside a frame that nearly always ends in the next
            // read; that frame and the whole frames after it in that read are visited in one
            // access to each of the two buffers.
            if waits && !self.rest.isEmpty, let across = self.visitAcrossNextSegment(mtus: mtus, body) {
                visited &+= across.count
                waits = across.waits
                guard self.bufferedBytes == self.front.readableBytes else { continue }
            }
            // Nothing buffered after the front, and its bytes are a frame (or header) not yet all
            // there: `nextFrame` would wait too, as the walk has already checked its header.
            if waits && self.bufferedBytes == self.front.readableBytes && !self.finished {
                self.compactFrontIfWasteful()
                self.waitingFront = (self.streamOffset, self.front.readableBytes)
                return visited
            }
            // What is left at the front is a frame spanning buffers, a bad header, a frame not
            // yet all there, or nothing. A valid frame that is all there is what `nextFrame`
            // would take at once (outside a garbage run there is no look-ahead); its payload
            // is gathered into temporary memory (the stack when it has room) instead of a new
            // buffer, so a frame spanning reads costs no allocation either.
            switch self.inspectHeader(at: 0, mtus: mtus, ceiling: ceiling) {
            case .valid(let header):
                guard self.bufferedBytes >= header.frameSize else {
                    // Not all there: what `nextFrame` does with it (wait, or report the truncation
                    // at the end of the stream), without reading the header again.
                    _ = try self.waitOrEnd()
                    return visited
                }
                self.visitGathered(header, body)
                visited &+= 1
                continue
            case .incomplete:
                // Fewer bytes than a header, none of them bad so far: `nextFrame` would wait too.
                _ = try self.waitOrEnd()
                return visited
            case .invalid:
                break
            }
            guard let frame = try self.nextFrame(mtus: mtus) else { return visited }
            frame.payload.withUnsafeReadableBytes { body(frame.header, $0) }
            visited &+= 1
        }
    }

    /// The frame that starts in `front` and ends in the next segment, as a frame cut by the end
    /// of a small read does, then the valid frames lying whole in that segment after it: lent to
    /// `body` and consumed, with one access to each buffer's bytes and without the look-ahead's
    /// search over the segments. Returns how many frames it visited and whether the segment's
    /// remaining bytes (now the front) are a frame or header not yet all there (`waits`, as
    /// `walk` says); nil, having consumed nothing, in every other case (a bad or short header, a
    /// frame that ends further on), which the general path then decides.
    private mutating func visitAcrossNextSegment(
        mtus: MTUTable, _ body: (FrameHeader, UnsafeRawBufferPointer) -> Void
    ) -> (count: Int, waits: Bool)? {
        let maxVersion = self.limits.maxVersion
        let ceiling = self.limits.receivePayloadCeiling
        // Taken out of `rest` (put back if the general path must decide): reading it in place
        // would copy the segment, with a retain and a release of its storage.
        var next = self.rest.removeFirst()
        let outcome = self.front.withUnsafeReadableBytes { front in
            next.buffer.withUnsafeReadableBytes { next -> (dataSize: Int, walk: Walk)? in
                let frontCount = front.count
                guard frontCount > 0, frontCount &+ next.count >= FrameHeader.v2Size else { return nil }
                let header: FrameHeader
                if frontCount >= FrameHeader.v2Size {
                    header = FrameHeader(
                        word: UInt64(bigEndian: front.loadUnaligned(as: UInt64.self)),
                        messageID: UInt32(bigEndian: front.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
                } else {
                    header = Self.header(joining: front, next)
                }
                guard header.problem(maxVersion: maxVersion, mtus: mtus, ceiling: ceiling) == nil else { return nil }
                // Validated: the data size is within the receive ceiling, so this cannot overflow.
                let frameSize = header.size &+ Int(header.dataSize)
                guard frameSize > frontCount, frameSize &- frontCount <= next.count else { return nil }
                let dataSize = Int(header.dataSize)
                withUnsafeTemporaryAllocation(byteCount: max(dataSize, 1), alignment: 1) { scratch in
                    let target = scratch.baseAddress.unsafelyUnwrapped
                    // The payload's part in the front (none when the front ends inside the header).
                    let inFront = max(frontCount &- header.size, 0)
                    if inFront > 0 {
                        target.copyMemory(from: front.baseAddress.unsafelyUnwrapped.advanced(by: header.size), byteCount: inFront)
                    }
                    let nextStart = max(header.size &- frontCount, 0)
                    target.advanced(by: inFront).copyMemory(
                        from: next.baseAddress.unsafelyUnwrapped.advanced(by: nextStart), byteCount: dataSize &- inFront)
                    body(header, UnsafeRawBufferPointer(rebasing: scratch[..<dataSize]))
                }
                let walk = Self.walk(
                    next, from: frameSize &- frontCount, maxVersion: maxVersion, mtus: mtus, ceiling: ceiling, body)
                return (dataSize, walk)
            }
        }
        guard let (dataSize, walk) = outcome else {
            self.rest.prepend(next)
            return nil
        }
        // The front is consumed whole and the segment up to where the walk stopped: the segment
        // becomes the front (what `consume` does, without its general loop).
        let frontCount = self.front.readableBytes
        let consumed = frontCount &+ walk.end
        self.workCount &+= dataSize
        self.lastFrameOffset = self.streamOffset &+ (walk.count > 0 ? frontCount &+ walk.lastStart : 0)
        self.bufferedBytes &-= consumed
        self.streamOffset &+= consumed
        self.heldStorage &-= self.frontCapacity
        // Swapped, not assigned: the segment's buffer moves in without a retain, and the old
        // front goes out with `next`.
        swap(&self.front, &next.buffer)
        self.frontCapacity = next.capacity
        self.frontIsOpen = false
        if walk.end < self.front.readableBytes {
            self.front.moveReaderIndex(forwardBy: walk.end)
        } else {
            self.advanceFront()
        }
        return (walk.count &+ 1, walk.waits)
    }

    /// The 12 header bytes that start in `front` (fewer than 12 there) and go on in `next`.
    private static func header(joining front: UnsafeRawBufferPointer, _ next: UnsafeRawBufferPointer) -> FrameHeader {
        var headerBytes: (UInt64, UInt32) = (0, 0)
        withUnsafeMutableBytes(of: &headerBytes) { destination in
            let fromFront = front.count
            destination.baseAddress.unsafelyUnwrapped.copyMemory(from: front.baseAddress.unsafelyUnwrapped, byteCount: fromFront)
            destination.baseAddress.unsafelyUnwrapped.advanced(by: fromFront).copyMemory(
                from: next.baseAddress.unsafelyUnwrapped, byteCount: FrameHeader.v2Size &- fromFront)
        }
        return FrameHeader(word: UInt64(bigEndian: headerBytes.0), messageID: UInt32(bigEndian: headerBytes.1))
    }

    /// Lends the payload of the whole frame at the front, gathered from the buffers it spans,
    /// and consumes the frame.
    private mutating func visitGathered(
        _ header: FrameHeader, _ body: (FrameHeader, UnsafeRawBufferPointer) -> Void
    ) {
        self.lastFrameOffset = self.streamOffset
        let dataSize = Int(header.dataSize)
        withUnsafeTemporaryAllocation(byteCount: max(dataSize, 1), alignment: 1) { scratch in
            self.copyBuffered(from: header.size, count: dataSize, to: scratch.baseAddress.unsafelyUnwrapped)
            self.workCount &+= dataSize
            self.consume(header.frameSize)
            body(header, UnsafeRawBufferPointer(rebasing: scratch[..<dataSize]))
        }
    }

    /// Visits the valid frames lying whole at the start of `front`, within one access to its
    /// bytes, and consumes them; `waits` as `walk` says.
    private mutating func visitWholeFrames(
        mtus: MTUTable, _ body: (FrameHeader, UnsafeRawBufferPointer) -> Void
    ) -> (count: Int, waits: Bool) {
        let maxVersion = self.limits.maxVersion
        let ceiling = self.limits.receivePayloadCeiling
        let walk = self.front.withUnsafeReadableBytes { raw in
            Self.walk(raw, from: 0, maxVersion: maxVersion, mtus: mtus, ceiling: ceiling, body)
        }
        if walk.count > 0 {
            self.lastFrameOffset = self.streamOffset &+ walk.lastStart
            self.consume(walk.end)
        }
        return (walk.count, walk.waits)
    }

    /// What `walk` did: where it stopped, how many frames it visited, where the last one starts,
    /// and whether the bytes from `end` on are a frame or header not yet all there.
    private struct Walk {
        var end: Int
        var count: Int
        var lastStart: Int
        /// The bytes from `end` to the end of the buffer are none, a valid header whose frame
        /// ends past the buffer, or fewer bytes than a header that could still start a valid one:
        /// with nothing buffered after them, `nextFrame` would wait (outside a garbage run).
        var waits: Bool
    }

    /// Visits the valid frames lying whole in `raw` from `start` on, in one pass over its bytes.
    /// Not inlined: called once per buffer, and within it the header check is (inlined into a
    /// caller's closure it was called out of line for every frame).
    @inline(never)
    private static func walk(
        _ raw: UnsafeRawBufferPointer, from start: Int, maxVersion: ProtocolVersion, mtus: MTUTable, ceiling: UInt32,
        _ body: (FrameHeader, UnsafeRawBufferPointer) -> Void
    ) -> Walk {
        var offset = start
        var count = 0
        var lastStart = 0
        while raw.count &- offset >= FrameHeader.v2Size {
            let word = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let id = UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt32.self))
            let header = FrameHeader(word: word, messageID: id)
            guard header.problem(maxVersion: maxVersion, mtus: mtus, ceiling: ceiling) == nil else {
                return Walk(end: offset, count: count, lastStart: lastStart, waits: false)
            }
            // Validated: the data size is within the receive ceiling, so this cannot overflow.
            let end = offset &+ header.size &+ Int(header.dataSize)
            guard end <= raw.count else {
                return Walk(end: offset, count: count, lastStart: lastStart, waits: true)
            }
            body(header, UnsafeRawBufferPointer(rebasing: raw[(offset &+ header.size)..<end]))
            lastStart = offset
            offset = end
            count &+= 1
        }
        // Fewer bytes than a v2 header left: none, a short v1 frame, or the start of a header.
        let left = raw.count &- offset
        guard left > 0 else { return Walk(end: offset, count: count, lastStart: lastStart, waits: true) }
        var bytes: (UInt64, UInt32) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) {
            $0.baseAddress.unsafelyUnwrapped.copyMemory(from: raw.baseAddress.unsafelyUnwrapped + offset, byteCount: left)
        }
        let waits: Bool
        switch Self.inspect(
            word: UInt64(bigEndian: bytes.0), id: UInt32(bigEndian: bytes.1), available: left, maxVersion: maxVersion,
            mtus: mtus, ceiling: ceiling)
        {
        case .incomplete: waits = true
        case .valid(let header): waits = header.frameSize > left
        case .invalid: waits = false
        }
        return Walk(end: offset, count: count, lastStart: lastStart, waits: waits)
    }

    /// The header at the reader index if 12 bytes are readable (a version 1 header in fewer
    /// bytes goes the slow way).
    private static func peekWholeHeader(in buffer: ByteBuffer) -> FrameHeader? {
        buffer.withUnsafeReadableBytes { raw -> FrameHeader? in
            guard raw.count >= FrameHeader.v2Size else { return nil }
            let word = UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self))
            let id = UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            return FrameHeader(word: word, messageID: id)
        }
    }

    private mutating func nextFrameSlowly(mtus: MTUTable, ceiling: UInt32) throws(SDLProtocolError) -> ProtocolFrame? {
        if let failure = self.failure {
            throw SDLProtocolError(.decoderFailed, offset: failure.offset, "decoder stopped after: \(failure)")
        }
        while true {
            switch self.inspectHeader(at: 0, mtus: mtus, ceiling: ceiling) {
            case .incomplete:
                return try self.waitOrEnd()
            case .invalid(let header, let problem):
                let offset = self.streamOffset
                // With fewer than 8 bytes buffered, inspectHeader completed the data size from
                // its high bytes: the detail may only name a lower bound.
                let error = self.resynchronizing
                    ? nil
                    : header.error(
                        for: problem, limits: self.limits, mtus: mtus, offset: offset, sizeIsLowerBound: self.bufferedBytes < 8)
                if let error, self.invalidHeaderPolicy == .fail {
                    self.failure = error
                    throw error
                }
                self.skip(mtus: mtus, ceiling: ceiling)
                self.resynchronizing = true
                if let error { throw error }
            case .valid(let header):
                if self.resynchronizing {
                    if !self.finished && self.waiting.candidate == self.streamOffset
                        && self.streamOffset + self.bufferedBytes < self.waiting.until
                    {
                        return try self.waitOrEnd()
                    }
                    switch self.weigh(header, mtus: mtus, ceiling: ceiling) {
                    case .take:
                        self.resynchronizing = false
                    case .reject:
                        self.skip(mtus: mtus, ceiling: ceiling)
                        continue
                    case .wait:
                        return try self.waitOrEnd()
                    }
                }
                guard self.bufferedBytes >= header.frameSize else { return try self.waitOrEnd() }
                return self.takeFrame(header)
            }
        }
    }

    /// Returns nil to wait for more bytes or, after `finish()`, disposes of what is left: the
    /// tail of a reported garbage run silently, an incomplete frame as `truncatedFrame`.
    private mutating func waitOrEnd() throws(SDLProtocolError) -> ProtocolFrame? {
        guard self.finished else {
            self.compactFrontIfWasteful()
            return nil
        }
        let left = self.bufferedBytes
        guard left > 0 else { return nil }
        let offset = self.streamOffset
        self.consume(left)
        if self.resynchronizing {
            self.skippedByteCount += left
            return nil
        }
        throw SDLProtocolError(.truncatedFrame, offset: offset, "stream ended with \(left) bytes of an incomplete frame")
    }

    /// Hands out the frame at the front: a slice of `front` if it is all there, else a copy of
    /// its bytes gathered from the segments it spans.
    private mutating func takeFrame(_ header: FrameHeader) -> ProtocolFrame {
        self.lastFrameOffset = self.streamOffset
        let size = header.frameSize
        if self.front.readableBytes >= size {
            let payload = self.front.getSlice(at: self.front.readerIndex &+ header.size, length: Int(header.dataSize))!
            // The payload shares `front`'s storage now: writing into it would copy it.
            self.frontIsOpen = false
            if size < self.front.readableBytes {
                self.front.moveReaderIndex(forwardBy: size)
                self.bufferedBytes &-= size
                self.streamOffset &+= size
            } else {
                self.consume(size)
            }
            return ProtocolFrame(header: header, payload: payload)
        }
        // The payload alone, copied straight from each buffer it lies in into the new one: one
        // access to each buffer's bytes (every access pays a dynamic exclusivity check).
        let dataSize = Int(header.dataSize)
        var payload = ByteBufferAllocator().buffer(capacity: dataSize)
        payload.writeWithUnsafeMutableBytes(minimumWritableBytes: dataSize) { target in
            self.copyBuffered(from: header.size, count: dataSize, to: target.baseAddress.unsafelyUnwrapped)
            return dataSize
        }
        self.workCount += dataSize + 1
        self.consume(size)
        return ProtocolFrame(header: header, payload: payload)
    }

    // MARK: Garbage runs

    /// Slides one byte past a bad header or a refuted candidate, then over every following offset
    /// of `front` where no valid header starts, in one pass over its raw bytes: a garbage byte
    /// costs a few nanoseconds instead of a trip through `inspectHeader`. Stops at a valid header,
    /// or where fewer than 12 bytes are left in `front` (those go the careful way, since a header
    /// there may span buffers).
    private mutating func skip(mtus: MTUTable, ceiling: UInt32) {
        self.consume(1)
        self.skippedByteCount += 1
        let maxVersion = self.limits.maxVersion
        let skipped = self.front.withUnsafeReadableBytes { raw -> Int in
            var offset = 0
            while offset &+ FrameHeader.v2Size <= raw.count {
                let word = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                let id = UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt32.self))
                if FrameHeader(word: word, messageID: id).problem(maxVersion: maxVersion, mtus: mtus, ceiling: ceiling) == nil {
                    break
                }
                offset &+= 1
            }
            return offset
        }
        if skipped > 0 {
            self.consume(skipped)
            self.skippedByteCount += skipped
            self.workCount += skipped
        }
    }

    private enum Verdict {
        case take, reject, wait
    }

    /// How the bytes right after a candidate's frame speak for it.
    private enum Confirmation {
        case confirmed, refuted, pending
    }

    /// Decides on a candidate at the front during a garbage run (see the type's documentation):
    /// taken at once if no other candidate starts inside its header; otherwise taken only if it
    /// is confirmed and every such candidate is refuted.
    private mutating func weigh(_ candidate: FrameHeader, mtus: MTUTable, ceiling: UInt32) -> Verdict {
        self.workCount += 1
        var rivals: [Confirmation] = []
        var undetermined = false
        // How many bytes must be buffered before a pending answer can change.
        var needed = Int.max
        for distance in 1..<candidate.size {
            switch self.inspectHeader(at: distance, mtus: mtus, ceiling: ceiling) {
            case .invalid:
                continue
            case .incomplete:
                // A header cut short by the end of the stream can never become a frame.
                if !self.finished && self.bufferedBytes > distance {
                    undetermined = true
                    needed = self.bufferedBytes + 1
                }
            case .valid(let rival):
                let (answer, bytes) = self.confirmation(of: rival, at: distance, mtus: mtus, ceiling: ceiling)
                rivals.append(answer)
                if answer == .pending { needed = min(needed, bytes) }
            }
        }
        if rivals.isEmpty && !undetermined { return .take }
        // The later candidate wins unless this one is confirmed and the later one refuted.
        if rivals.contains(.confirmed) { return .reject }
        let (own, bytes) = self.confirmation(of: candidate, at: 0, mtus: mtus, ceiling: ceiling)
        if own == .refuted && !rivals.isEmpty { return .reject }
        if own == .confirmed && !undetermined && rivals.allSatisfy({ $0 == .refuted }) { return .take }
        if own == .pending { needed = min(needed, bytes) }
        self.waiting = (self.streamOffset, self.streamOffset + needed)
        return .wait
    }

    /// Whether the candidate at `distance` is followed by a header that passes validation (or a
    /// prefix of one cut short by the end of the stream, or the end itself), and, while that is
    /// pending, how many buffered bytes it takes before the answer can change.
    private mutating func confirmation(
        of header: FrameHeader, at distance: Int, mtus: MTUTable, ceiling: UInt32
    ) -> (Confirmation, Int) {
        let (end, overflow) = distance.addingReportingOverflow(header.frameSize)
        if overflow || self.bufferedBytes < end {
            return (self.finished ? .refuted : .pending, end)
        }
        if self.bufferedBytes == end {
            return (self.finished ? .confirmed : .pending, end + 1)
        }
        switch self.inspectHeader(at: end, mtus: mtus, ceiling: ceiling) {
        case .valid: return (.confirmed, 0)
        case .invalid: return (.refuted, 0)
        case .incomplete: return (self.finished ? .confirmed : .pending, self.bufferedBytes + 1)
        }
    }

    // MARK: Headers

    private enum Inspection {
        /// Fewer bytes than a header, and those there could still start a valid one.
        case incomplete
        case invalid(FrameHeader, FrameHeader.Problem)
        case valid(FrameHeader)
    }

    /// Validates the header `distance` bytes past the front as far as the buffered bytes go.
    private mutating func inspectHeader(at distance: Int, mtus: MTUTable, ceiling: UInt32) -> Inspection {
        self.workCount += 1
        let (word, id, available) = self.peekHeaderBytes(at: distance)
        return Self.inspect(word: word, id: id, available: available, maxVersion: self.limits.maxVersion, mtus: mtus, ceiling: ceiling)
    }

    /// Validates a header of which `available` bytes are buffered (`word` and `id` as
    /// `peekHeaderBytes` gives them, missing bytes 0) as far as they go.
    private static func inspect(
        word: UInt64, id: UInt32, available: Int, maxVersion: ProtocolVersion, mtus: MTUTable, ceiling: UInt32
    ) -> Inspection {
        guard available > 0 else { return .incomplete }
        let headerSize = ProtocolVersion(rawValue: UInt8(truncatingIfNeeded: word >> 60)).headerSize
        if available >= headerSize {
            let header = FrameHeader(word: word, messageID: headerSize == FrameHeader.v2Size ? id : 0)
            if let problem = header.problem(maxVersion: maxVersion, mtus: mtus, ceiling: ceiling) {
                return .invalid(header, problem)
            }
            return .valid(header)
        }
        // Fewer bytes than a header: check the fields that are there, completing the missing
        // ones with values that pass if any would, so that garbage is refused at its first bad byte.
        var completed = word
        if available < 2 { completed |= UInt64(ServiceType.rpc.rawValue) << 48 }
        if available < 8 {
            // The data size's known high bytes leave an interval of possible values; pick one
            // that passes if the interval holds one.
            let missingBits = 8 * (8 - max(available, 4))
            let low = UInt32(truncatingIfNeeded: completed)
            let high = missingBits == 32 ? UInt32.max : low | (UInt32(1) << missingBits - 1)
            var value = low
            switch FrameType(rawValue: UInt8(truncatingIfNeeded: completed >> 56) & 0x07) {
            case .first: if low <= 8 && 8 <= high { value = 8 }
            case .control: break
            default: if low == 0 && high >= 1 { value = 1 }
            }
            completed = completed & ~0xFFFF_FFFF | UInt64(value)
        }
        let header = FrameHeader(word: completed, messageID: 0)
        if let problem = header.problem(maxVersion: maxVersion, mtus: mtus, ceiling: ceiling) {
            return .invalid(header, problem)
        }
        return .incomplete
    }

    /// Up to 12 buffered bytes starting `distance` bytes past the front: the first 8 as a
    /// big-endian word and the next 4 as a big-endian integer (missing bytes are 0), and how many
    /// are buffered.
    private mutating func peekHeaderBytes(at distance: Int) -> (word: UInt64, id: UInt32, available: Int) {
        let available = min(FrameHeader.v2Size, self.bufferedBytes - distance)
        guard available > 0 else { return (0, 0, 0) }
        if distance + FrameHeader.v2Size <= self.front.readableBytes {
            let index = self.front.readerIndex + distance
            let (word, id) = self.front.getMultipleIntegers(at: index, endianness: .big, as: (UInt64, UInt32).self)!
            return (word, id, FrameHeader.v2Size)
        }
        var bytes: (UInt64, UInt32) = (0, 0)
        var copied = 0
        withUnsafeMutableBytes(of: &bytes) { destination in
            self.forEachSegment(from: distance, count: available) { segment, index, count in
                segment.withUnsafeReadableBytes { source in
                    let start = index - segment.readerIndex
                    destination.baseAddress!.advanced(by: copied)
                        .copyMemory(from: source.baseAddress!.advanced(by: start), byteCount: count)
                }
                copied += count
            }
        }
        // The bytes were copied in wire order: read the two integers back as big-endian.
        let word = UInt64(bigEndian: bytes.0)
        let id = UInt32(bigEndian: bytes.1)
        return (word, id, available)
    }

    /// Copies the `count` buffered bytes that start `distance` bytes past the front to `target`,
    /// with one access to each buffer's bytes.
    private mutating func copyBuffered(from distance: Int, count: Int, to target: UnsafeMutableRawPointer) {
        var copied = 0
        self.forEachSegment(from: distance, count: count) { segment, index, count in
            guard count > 0 else { return }
            segment.withUnsafeReadableBytes { source in
                target.advanced(by: copied).copyMemory(
                    from: source.baseAddress.unsafelyUnwrapped.advanced(by: index &- segment.readerIndex), byteCount: count)
            }
            copied &+= count
        }
    }

    /// Calls `body` with each buffered piece of the `count` bytes that start `distance` bytes past
    /// the front: the segment, the index of the piece in it, and its length. Finds the first
    /// segment by binary search, so a look-ahead costs O(log segments) however far it looks.
    private mutating func forEachSegment(from distance: Int, count: Int, _ body: (ByteBuffer, Int, Int) -> Void) {
        var remaining = count
        var position = distance
        let frontBytes = self.front.readableBytes
        if position < frontBytes {
            let take = min(remaining, frontBytes - position)
            body(self.front, self.front.readerIndex + position, take)
            remaining -= take
            position += take
        }
        self.workCount += 1
        guard remaining > 0 else { return }
        let absolute = self.streamOffset + position
        var segmentIndex = self.firstSegment(endingAfter: absolute)
        var segmentStart = segmentIndex == 0 ? self.streamOffset + frontBytes : self.rest[offset: segmentIndex - 1].end
        var cursor = absolute
        while remaining > 0 && segmentIndex < self.rest.count {
            let segment = self.rest[offset: segmentIndex]
            let local = cursor - segmentStart
            let take = min(remaining, segment.end - cursor)
            body(segment.buffer, segment.buffer.readerIndex + local, take)
            remaining -= take
            cursor += take
            segmentStart = segment.end
            segmentIndex += 1
            self.workCount += 1
        }
        if remaining > 0 {
            let local = cursor - segmentStart
            body(self.tail, self.tail.readerIndex + local, remaining)
        }
    }

    /// The index in `rest` of the first segment whose end lies after stream offset `absolute`
    /// (`rest.count` if none: the offset is in `tail`).
    private mutating func firstSegment(endingAfter absolute: Int) -> Int {
        var low = 0
        var high = self.rest.count
        while low < high {
            let middle = (low + high) / 2
            if self.rest[offset: middle].end > absolute {
                high = middle
            } else {
                low = middle + 1
            }
            self.workCount += 1
        }
        return low
    }

    // MARK: Buffers

    /// Copies received bytes into an owned buffer, making room by dropping its consumed bytes
    /// first when they dominate (the buffer is never shared, so that moves bytes in place).
    @discardableResult
    private static func write(_ bytes: ByteBuffer, into buffer: inout ByteBuffer, held: inout Int) -> Int {
        let before = buffer.storageCapacity
        if buffer.storageCapacity == 0 {
            buffer = ByteBufferAllocator().buffer(capacity: max(Self.minimumOwnedCapacity, bytes.readableBytes))
        } else if buffer.writableBytes < bytes.readableBytes && buffer.readerIndex >= buffer.readableBytes {
            buffer.discardReadBytes()
        }
        buffer.writeImmutableBuffer(bytes)
        let after = buffer.storageCapacity
        held += after - before
        return after
    }

    /// Moves the open tail into `rest`, where nothing is written any more.
    @inline(__always)
    private mutating func sealTail() {
        if self.tail.readableBytes > 0 {
            self.sealNonEmptyTail()
        }
    }

    @inline(never)
    private mutating func sealNonEmptyTail() {
        let end = (self.rest.last?.end ?? (self.streamOffset + self.front.readableBytes)) + self.tail.readableBytes
        self.rest.append(Segment(buffer: self.tail, end: end, capacity: self.tail.storageCapacity))
        self.tail = Self.empty
    }

    /// Copies the front's unconsumed bytes into a right-sized buffer when its storage is mostly
    /// consumed bytes. Each copy moves fewer bytes than were consumed from that storage since it
    /// was last sized, so the copies add up to a fraction of the bytes appended.
    @inline(__always)
    private mutating func compactFrontIfWasteful() {
        if self.frontCapacity > Self.compactionRatio &* self.front.readableBytes &+ Self.compactionSlack {
            self.compactFront()
        }
    }

    @inline(never)
    private mutating func compactFront() {
        let storage = self.frontCapacity
        let readable = self.front.readableBytes
        var compacted = ByteBufferAllocator().buffer(capacity: max(Self.minimumOwnedCapacity, readable))
        compacted.writeImmutableBuffer(self.front)
        self.frontCapacity = compacted.storageCapacity
        self.heldStorage += self.frontCapacity - storage
        self.front = compacted
        self.frontIsOpen = self.rest.isEmpty && self.tail.readableBytes == 0
        self.workCount += readable + 1
    }

    /// Consumes `count` buffered bytes from the front, moving on to later segments as `front`
    /// empties (every segment holds at least one byte, so `front` is empty only when nothing is
    /// buffered).
    private mutating func consume(_ count: Int) {
        self.bufferedBytes -= count
        self.streamOffset += count
        var remaining = count
        while remaining > 0 {
            let available = self.front.readableBytes
            if remaining < available {
                self.front.moveReaderIndex(forwardBy: remaining)
                return
            }
            remaining -= available
            self.advanceFront()
        }
    }

    /// Replaces `front` with the next segment, the open tail, or nothing.
    private mutating func advanceFront() {
        self.heldStorage -= self.frontCapacity
        if let next = self.rest.popFirst() {
            self.front = next.buffer
            self.frontCapacity = next.capacity
            self.frontIsOpen = false
        } else if self.tail.readableBytes > 0 {
            self.front = self.tail
            self.frontCapacity = self.tail.storageCapacity
            self.tail = Self.empty
            self.frontIsOpen = true
        } else {
            self.front = Self.empty
            self.frontCapacity = 0
            self.frontIsOpen = false
        }
    }
}
