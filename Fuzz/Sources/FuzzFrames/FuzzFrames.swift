import FuzzSupport
import NIOCore
import SDLProtocol

// Frame decoder + reassembler + payload headers over arbitrary bytes. Invariants:
// - every frame the decoder returns re-encodes to exactly the bytes it was read from, and frames
//   come in stream order without overlapping;
// - the decoder consumes the whole input once the stream is finished (frames, reported garbage,
//   or a reported truncation), and holds at most 4 × its buffered bytes + 4 KiB of storage after
//   every append and whenever it waits for bytes;
// - no frame exceeds the receive limit of its session and service (the lent MTUs, clamped to
//   the ceilings);
// - the reassembler never reserves more than its limits, every message it delivers has the size
//   its frames declared, and discarding or expiring leaves nothing behind;
// - a second decoder given the same appends but visited with `forEachFrame` (payloads lent, not
//   sliced) yields the same frames, byte for byte, the same errors at the same offsets and the
//   same skipped bytes, within the same storage bound.

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    let input = ByteBuffer(bytes: bytes)
    var limits = ProtocolLimits()
    limits.maxMessageSize = 1 << 20
    limits.maxFramePayloadSize = 1 << 18
    limits.maxReassemblyBytes = 2 << 20
    limits.maxReassembliesPerTransport = 8
    limits.maxReassembliesPerSession = 4
    // Negotiated MTUs above and below the ceiling, for a few sessions and services.
    var mtus = MTUTable()
    mtus[SessionID(1), .video, .receive] = 1 << 30
    mtus[SessionID(1), .rpc, .receive] = 64
    mtus[SessionID(2), .audio, .receive] = 200_000
    var decoder = FrameDecoder(limits: limits)
    var visitor = FrameDecoder(limits: limits)
    var pulled: [ProtocolFrame] = []
    var visited: [ProtocolFrame] = []
    var pulledErrors: [String] = []
    var visitedErrors: [String] = []
    var reassembler = Reassembler(limits: limits)
    let now = NIODeadline.uptimeNanoseconds(0)
    var consumed = 0

    func storageIsBounded() {
        precondition(decoder.bufferedStorageBytes <= 4 * decoder.bufferedByteCount + 4096, "storage out of bounds")
        precondition(visitor.bufferedStorageBytes <= 4 * visitor.bufferedByteCount + 4096, "visitor storage out of bounds")
    }

    func visit() {
        while true {
            do {
                try visitor.forEachFrame(mtus: mtus) { header, payload in
                    visited.append(ProtocolFrame(header: header, payload: ByteBuffer(bytes: payload)))
                }
                return
            } catch {
                visitedErrors.append("\(error.code) at \(error.offset ?? -1)")
            }
        }
    }

    func drain() {
        while true {
            let frame: ProtocolFrame
            do {
                guard let next = try decoder.nextFrame(mtus: mtus) else {
                    storageIsBounded()
                    return
                }
                frame = next
            } catch {
                pulledErrors.append("\(error.code) at \(error.offset ?? -1)")
                continue
            }
            pulled.append(frame)
            let header = frame.header
            precondition(
                header.dataSize <= mtus.receivePayloadLimit(
                    version: header.version, session: header.sessionID, service: header.serviceType, limits: limits),
                "frame above its receive limit")
            let offset = decoder.lastFrameOffset
            precondition(offset >= consumed, "frames out of order")
            consumed = offset + header.frameSize
            let original = input.getSlice(at: offset, length: header.frameSize)!
            var reencoded = ByteBuffer()
            FrameEncoder.write(frame, to: &reencoded)
            precondition(reencoded == original, "frame does not re-encode to its bytes")
            do {
                if let message = try reassembler.process(frame, now: now, mtus: mtus) {
                    if message.frameCount > 1 {
                        precondition(message.payload.readableBytes <= limits.maxMessageSize)
                    }
                    if message.serviceType == .rpc || message.serviceType == .hybrid {
                        _ = try? RPCPayload(parsing: message.payload)
                    }
                    if message.serviceType == .control && message.frameType == .single {
                        _ = try? SecurityQuery(parsing: message.payload)
                    }
                }
            } catch {
                precondition(error.messageKey == MessageKey(of: header), "reassembly error without its key")
            }
            precondition(reassembler.reservedBytes <= limits.maxReassemblyBytes)
            precondition(reassembler.activeCount <= limits.maxReassembliesPerTransport)
        }
    }

    // The first byte picks the chunking: two pieces cut where it says (whole frames and spanning
    // frames), or pieces of 1–64 bytes (the decoder's own buffer and many small appends).
    let mode = bytes.first ?? 0
    var offset = 0
    while offset < input.readableBytes {
        let length: Int
        if mode & 1 == 0 {
            let cut = Int(mode) % (input.readableBytes + 1)
            length = offset < cut ? cut - offset : input.readableBytes - offset
        } else {
            length = min(input.readableBytes - offset, Int(mode >> 2) + 1)
        }
        decoder.append(input.getSlice(at: offset, length: length)!)
        visitor.append(input.getSlice(at: offset, length: length)!)
        storageIsBounded()
        drain()
        visit()
        storageIsBounded()
        offset += length
    }
    decoder.finish()
    visitor.finish()
    drain()
    visit()
    precondition(visited == pulled, "visited frames differ from pulled frames")
    precondition(visitedErrors == pulledErrors, "visiting reports other errors: \(visitedErrors) vs \(pulledErrors)")
    precondition(visitor.skippedByteCount == decoder.skippedByteCount && visitor.streamOffset == decoder.streamOffset)
    precondition(decoder.bufferedByteCount == 0 && decoder.streamOffset == input.readableBytes, "input left over")
    precondition(decoder.bufferedStorageBytes == 0)
    if mode & 2 == 0 {
        _ = reassembler.expire(now: now + limits.reassemblyTimeout)
    } else {
        reassembler.discardAll()
    }
    precondition(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
