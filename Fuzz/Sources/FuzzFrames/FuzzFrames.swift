import NIOCore
import SDLProtocol

// Frame decoder + reassembler + payload headers over arbitrary bytes. Invariants:
// - every frame the decoder returns re-encodes to exactly the bytes it was read from;
// - the decoder consumes the whole input (frames, reported garbage, or a reported truncation);
// - the reassembler never reserves more than its limits, and every message it delivers has the
//   size its frames declared.

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    let input = ByteBuffer(bytes: bytes)
    var limits = ProtocolLimits()
    limits.maxMessageSize = 1 << 20
    limits.maxReassemblyBytes = 2 << 20
    limits.maxReassembliesPerTransport = 8
    limits.maxReassembliesPerSession = 4
    var decoder = FrameDecoder(limits: limits)
    var reassembler = Reassembler(limits: limits)
    // Feed in two chunks, cut where the first byte says, so both paths (whole and spanning) run.
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    decoder.append(input.getSlice(at: 0, length: cut)!)
    decoder.append(input.getSlice(at: cut, length: input.readableBytes - cut)!)
    let now = NIODeadline.uptimeNanoseconds(0)
    var consumed = 0
    while true {
        let frame: Frame
        do {
            guard let next = try decoder.nextFrame() else { break }
            frame = next
        } catch {
            continue
        }
        let offset = decoder.lastFrameOffset
        precondition(offset >= consumed, "frames out of order")
        consumed = offset + frame.header.frameSize
        let original = input.getSlice(at: offset, length: frame.header.frameSize)!
        var reencoded = ByteBuffer()
        FrameEncoder.write(frame, to: &reencoded)
        precondition(reencoded == original, "frame does not re-encode to its bytes")
        do {
            if let message = try reassembler.process(frame, now: now) {
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
        } catch {}
        precondition(reassembler.reservedBytes <= limits.maxReassemblyBytes)
        precondition(reassembler.activeCount <= limits.maxReassembliesPerTransport)
    }
    // Whatever is left is an incomplete frame (reported by finish) or the tail of reported garbage.
    precondition(decoder.streamOffset + decoder.bufferedByteCount == input.readableBytes)
    _ = try? decoder.finish()
    _ = reassembler.expire(now: now + limits.reassemblyTimeout)
    precondition(reassembler.activeCount == 0 && reassembler.reservedBytes == 0)
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    check(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#else
// Without libFuzzer: replay the files given as arguments (saved crashers, corpus entries).
import Foundation

@main
struct Replay {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else { fatalError("cannot read \(path)") }
            data.withUnsafeBytes { check($0) }
            print("ok \(path)")
        }
    }
}
#endif
