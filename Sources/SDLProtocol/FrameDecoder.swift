import NIOCore

/// A streaming decoder that turns one direction of a byte stream into frames
/// (protocol spec 5.4.1 §3).
///
/// Feed bytes in any chunking with `append(_:)` and pull frames with `nextFrame()`:
/// - `nil` means more bytes are needed; nothing was consumed that a later call would miss;
/// - a thrown `SDLProtocolError` means a bad header at `error.offset`;
/// - a `Frame` means progress.
///
/// Each header is validated (`FrameHeader.validate(against:)`) before any of its payload is
/// buffered, byte by byte as the header arrives, so garbage is refused as early as possible and a
/// hostile data size never makes the decoder wait for or reserve more than the receive limit.
///
/// After a bad header the decoder either resynchronises, as SDL Core does, by sliding one byte and
/// validating again until a good header appears (one error is reported per run of bad bytes, and
/// every good frame after the garbage is still delivered), or fails for good; see
/// `InvalidHeaderPolicy`.
///
/// Payloads of frames that arrived inside one appended buffer are slices of that buffer: no copy.
/// Only a frame that spans appended buffers is gathered, and then only its own bytes are copied.
public struct FrameDecoder: Sendable {
    /// What the decoder does after a bad header.
    public enum InvalidHeaderPolicy: Hashable, Sendable {
        /// Report the error, slide one byte and look for the next good header (SDL Core's behaviour).
        case resynchronize
        /// Report the error and refuse all further input; the connection should be closed.
        case fail
    }

    /// The limits headers are validated against. Update `limits.negotiatedMTU` when a service
    /// negotiates its MTU.
    public var limits: ProtocolLimits
    /// What happens after a bad header.
    public var invalidHeaderPolicy: InvalidHeaderPolicy

    /// The oldest received bytes not yet consumed; empty only when nothing is buffered. Kept
    /// apart from `rest` so that the common case, a whole frame at the front, is read in place.
    private var front: ByteBuffer
    /// Later received buffers, oldest first.
    private var rest: CircularBuffer<ByteBuffer>
    /// Whether `front` is a buffer this decoder allocated to make a header or frame that spans
    /// received buffers contiguous. Its first `gatheredOwnBytes` readable bytes are the old front's;
    /// the rest are copies of the first bytes of `rest`, which keeps them: once the decoder moves
    /// past the old front's bytes it goes back to reading the received buffers in place, so a
    /// garbage run never crawls through a gathered buffer byte by byte.
    private var frontIsGathered = false
    private var gatheredOwnBytes = 0
    private var bufferedBytes = 0
    /// The stream offset of the first unconsumed byte.
    public private(set) var streamOffset = 0
    /// The stream offset at which the frame last returned by `nextFrame()` starts.
    public private(set) var lastFrameOffset = 0
    /// Whether the decoder is sliding through bytes after a bad header (errors are suppressed until
    /// a good header is found, so a garbage run is reported once).
    private var resynchronizing = false
    /// The number of bytes skipped while resynchronising, over the decoder's life. A garbage run
    /// is reported by one error; this count shows how long the runs were.
    public private(set) var skippedByteCount = 0
    private var failure: SDLProtocolError?

    /// Creates a decoder.
    public init(limits: ProtocolLimits = ProtocolLimits(), invalidHeaderPolicy: InvalidHeaderPolicy = .resynchronize) {
        self.limits = limits
        self.invalidHeaderPolicy = invalidHeaderPolicy
        self.front = Self.empty
        self.rest = CircularBuffer(initialCapacity: 4)
    }

    /// What `front` holds when nothing is buffered (so that consumed input is not kept alive).
    private static let empty = ByteBuffer()

    /// The number of received bytes not yet consumed.
    public var bufferedByteCount: Int { self.bufferedBytes }

    /// The storage the buffered chunks hold (for the tests' memory bounds).
    var storageCapacity: Int { self.rest.reduce(self.front.capacity) { $0 + $1.capacity } }

    /// Adds received bytes. The buffer is kept as is (not copied) until its frames are consumed.
    public mutating func append(_ bytes: ByteBuffer) {
        guard bytes.readableBytes > 0 else { return }
        if self.bufferedBytes == 0 {
            self.front = bytes
            self.frontIsGathered = false
            self.gatheredOwnBytes = 0
        } else {
            self.rest.append(bytes)
        }
        self.bufferedBytes += bytes.readableBytes
    }

    /// Adds received bytes from a collection (copied once into a `ByteBuffer`).
    public mutating func append(contentsOf bytes: some Collection<UInt8>) {
        self.append(ByteBuffer(bytes: bytes))
    }

    /// Returns the next frame, nil if more bytes are needed, or throws for a bad header.
    ///
    /// With `.resynchronize` the decoder has already moved past the bad byte when it throws, so
    /// calling `nextFrame()` again continues with the rest of the stream. With `.fail` every later
    /// call throws `decoderFailed`.
    public mutating func nextFrame() throws(SDLProtocolError) -> Frame? {
        if let failure = self.failure {
            throw SDLProtocolError(.decoderFailed, offset: failure.offset, "decoder stopped after: \(failure)")
        }
        // The common case: a whole valid frame at the front of the front buffer.
        if let header = FrameHeader.peek(in: self.front), header.problem(against: self.limits) == nil,
            self.front.readableBytes >= header.frameSize
        {
            return self.takeFrame(header)
        }
        while true {
            switch self.inspectHeader() {
            case .needMoreBytes:
                return nil
            case .invalid(let header, let problem):
                let offset = self.streamOffset
                let wasResynchronizing = self.resynchronizing
                if self.invalidHeaderPolicy == .fail {
                    let error = header.error(for: problem, limits: self.limits, offset: offset)
                    self.failure = error
                    throw error
                }
                self.consume(1)
                self.skippedByteCount += 1
                self.skipInvalidHeaders()
                self.resynchronizing = true
                if !wasResynchronizing {
                    throw header.error(for: problem, limits: self.limits, offset: offset)
                }
            case .valid(let header):
                // A whole valid header ends a garbage run: the decoder is committed to this frame,
                // so bytes left at the end are a truncated frame, not more garbage.
                self.resynchronizing = false
                guard self.bufferedBytes >= header.frameSize else { return nil }
                self.gatherFront(header.frameSize)
                return self.takeFrame(header)
            }
        }
    }

    /// Hands out the frame at the front, whose bytes are all in `front`.
    private mutating func takeFrame(_ header: FrameHeader) -> Frame {
        self.resynchronizing = false
        self.lastFrameOffset = self.streamOffset
        let payload = self.front.getSlice(at: self.front.readerIndex &+ header.size, length: Int(header.dataSize))!
        self.consume(header.frameSize)
        return Frame(header: header, payload: payload)
    }

    /// Slides over every offset of the front buffer where no valid header starts, in one pass over
    /// its raw bytes: a garbage byte costs a few nanoseconds instead of a trip through
    /// `inspectHeader`. Stops at a valid header, or where fewer than 12 bytes are left in `front`
    /// (those go the careful way, since a header there may span buffers).
    private mutating func skipInvalidHeaders() {
        let limits = self.limits
        let skipped = self.front.withUnsafeReadableBytes { raw -> Int in
            var offset = 0
            while offset &+ FrameHeader.v2Size <= raw.count {
                let word = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                let id = UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt32.self))
                if FrameHeader(word: word, messageID: id).problem(against: limits) == nil { break }
                offset &+= 1
            }
            return offset
        }
        if skipped > 0 {
            self.consume(skipped)
            self.skippedByteCount += skipped
        }
    }

    /// Replaces an emptied `front` with the next received buffer.
    private mutating func advanceFront() {
        self.front = self.rest.popFirst() ?? Self.empty
        self.frontIsGathered = false
        self.gatheredOwnBytes = 0
    }

    /// Reports bytes left over at the end of the stream: call when the stream has ended. Throws
    /// `truncatedFrame` with the offset of the incomplete frame (or garbage) if any byte is left.
    public func finish() throws(SDLProtocolError) {
        guard self.bufferedBytes > 0 else { return }
        if self.resynchronizing {
            // The remaining bytes are the tail of a garbage run that was already reported.
            return
        }
        throw SDLProtocolError(
            .truncatedFrame, offset: self.streamOffset,
            "stream ended with \(self.bufferedBytes) bytes of an incomplete frame")
    }

    private enum Inspection {
        case needMoreBytes
        case invalid(FrameHeader, FrameHeader.Problem)
        case valid(FrameHeader)
    }

    /// Validates the header at the front as far as the buffered bytes go.
    private mutating func inspectHeader() -> Inspection {
        guard self.bufferedBytes > 0 else { return .needMoreBytes }
        let byte0 = self.front.getInteger(at: self.front.readerIndex, as: UInt8.self)!
        let headerSize = ProtocolVersion(rawValue: byte0 >> 4).headerSize
        self.gatherFront(headerSize)
        let front = self.front
        if let header = FrameHeader.peek(in: front) {
            if let problem = header.problem(against: self.limits) {
                return .invalid(header, problem)
            }
            return .valid(header)
        }
        // Fewer bytes than a header: check the fields that are there, completing the missing
        // ones with values that pass if any would, so that garbage is refused at its first bad byte.
        let available = front.readableBytes
        var word: UInt64 = 0
        front.withUnsafeReadableBytes { raw in
            for i in 0..<min(available, 8) { word |= UInt64(raw[i]) << (56 - 8 * i) }
        }
        if available < 2 { word |= UInt64(ServiceType.rpc.rawValue) << 48 }
        if available < 8 {
            // The data size's known high bytes leave an interval of possible values; pick one
            // that passes if the interval holds one.
            let missingBits = 8 * (8 - max(available, 4))
            let low = UInt32(truncatingIfNeeded: word)
            let high = missingBits == 32 ? UInt32.max : low | (UInt32(1) << missingBits - 1)
            var value = low
            switch FrameType(rawValue: UInt8(truncatingIfNeeded: word >> 56) & 0x07) {
            case .first: if low <= 8 && 8 <= high { value = 8 }
            case .control: break
            default: if low == 0 && high >= 1 { value = 1 }
            }
            word = word & ~0xFFFF_FFFF | UInt64(value)
        }
        let header = FrameHeader(word: word, messageID: 0)
        if let problem = header.problem(against: self.limits) {
            return .invalid(header, problem)
        }
        return .needMoreBytes
    }

    /// Makes the first `count` buffered bytes (or all, if fewer are buffered) contiguous in
    /// `front`, copying only the bytes that are not there yet; `rest` keeps the bytes copied from it.
    private mutating func gatherFront(_ count: Int) {
        guard self.front.readableBytes < count, !self.rest.isEmpty else { return }
        let target = min(count, self.bufferedBytes)
        var gathered: ByteBuffer
        if self.frontIsGathered {
            // Keep the old front's bytes, drop the copies of `rest` (copied again below, as many
            // as now needed).
            gathered = self.front
            self.front = Self.empty
            gathered.moveWriterIndex(to: gathered.readerIndex &+ self.gatheredOwnBytes)
            gathered.discardReadBytes()
        } else {
            gathered = ByteBufferAllocator().buffer(capacity: target)
            gathered.writeImmutableBuffer(self.front)
            self.gatheredOwnBytes = self.front.readableBytes
        }
        gathered.reserveCapacity(target)
        for chunk in self.rest where gathered.readableBytes < target {
            let take = min(target &- gathered.readableBytes, chunk.readableBytes)
            gathered.writeImmutableBuffer(chunk.getSlice(at: chunk.readerIndex, length: take)!)
        }
        self.front = gathered
        self.frontIsGathered = true
    }

    /// Consumes `count` buffered bytes, from `front` and, past a gathered front's own bytes or
    /// the end of `front`, from `rest`.
    private mutating func consume(_ count: Int) {
        self.bufferedBytes -= count
        self.streamOffset += count
        var remaining = count
        if self.frontIsGathered {
            if remaining < self.gatheredOwnBytes {
                self.front.moveReaderIndex(forwardBy: remaining)
                self.gatheredOwnBytes -= remaining
                return
            }
            // Past the old front's bytes: what is left of the gathered buffer is a copy of what
            // `rest` holds, and reading goes on there, in place.
            remaining -= self.gatheredOwnBytes
            self.advanceFront()
        }
        while remaining > 0 && remaining >= self.front.readableBytes && !self.rest.isEmpty {
            remaining -= self.front.readableBytes
            self.advanceFront()
        }
        self.front.moveReaderIndex(forwardBy: min(remaining, self.front.readableBytes))
        if self.front.readableBytes == 0 {
            self.advanceFront()
        }
    }
}
