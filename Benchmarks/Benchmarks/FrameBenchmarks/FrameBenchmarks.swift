import Benchmark
import NIOCore
import SDLProtocol

#if canImport(Glibc)
import Glibc
#endif

/// 10,000 v5 Single frames with 200-byte payloads on the RPC service, as one stream.
private let singleFrameStream: ByteBuffer = {
    var stream = ByteBuffer()
    let payload = ByteBuffer(repeating: 0x5A, count: 200)
    for index in 0..<10_000 {
        FrameEncoder.write(
            ProtocolFrame(header: FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1),
                                      dataSize: 200, messageID: MessageID(UInt32(index + 1))),
                  payload: payload),
            to: &stream)
    }
    return stream
}()

/// `singleFrameStream` cut into 1,448-byte reads, each in a buffer of its own.
private let segmentedStream: [ByteBuffer] = {
    var reads: [ByteBuffer] = []
    var stream = singleFrameStream
    while stream.readableBytes > 0 {
        let slice = stream.readSlice(length: min(1448, stream.readableBytes))!
        reads.append(ByteBuffer(bytes: slice.readableBytesView))
    }
    return reads
}()

/// A 1 MiB message fragmented at the v5 default MTU: every Consecutive frame is 131,084 bytes
/// (12-byte header + 131,072 payload bytes).
private let oneMiB = 1 << 20
private let largeMessageStream: ByteBuffer = {
    var stream = ByteBuffer()
    let payload = ByteBuffer(bytes: (0..<oneMiB).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    try! FrameEncoder.writeMessage(
        payload, version: .v5, serviceType: .video, sessionID: SessionID(1), messageID: MessageID(1),
        maxPayloadPerFrame: ProtocolLimits().sendPayloadLimit(version: .v5), to: &stream)
    return stream
}()

/// 1 MiB of pseudo-random bytes in which no valid header starts, as two received buffers: what a
/// resynchronising decoder slides through when a peer sends garbage.
private let garbageHalves: (ByteBuffer, ByteBuffer) = {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var bytes = (0..<oneMiB).map { _ -> UInt8 in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state >> 32)
    }
    // Where a valid header starts by chance, clear its version nibble; repeat until none is left
    // (a cleared byte can complete a header that starts before it).
    let limits = ProtocolLimits()
    var repaired = true
    while repaired {
        repaired = false
        for index in 0..<(oneMiB - 12) where FrameHeader(bytes: bytes[index..<(index + 12)])!.isValid(against: limits) {
            bytes[index] &= 0x0F
            repaired = true
        }
    }
    return (ByteBuffer(bytes: bytes[..<(oneMiB / 2 + 1)]), ByteBuffer(bytes: bytes[(oneMiB / 2 + 1)...]))
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
        warmupIterations: 3,
        maxDuration: .seconds(3),
        maxIterations: 100_000)

    // One iteration decodes the 10,000 frames: frames/s = 10,000 × throughput.
    Benchmark("Decode 10,000 single frames (200-byte payloads)") { benchmark in
        for _ in benchmark.scaledIterations {
            var decoder = FrameDecoder()
            decoder.append(singleFrameStream)
            var count = 0
            while let frame = try decoder.nextFrame() {
                count += frame.payload.readableBytes
            }
            blackHole(count)
        }
    }

    // The same stream as TCP delivers it: 1,448-byte reads (one Ethernet segment's payload),
    // so about one frame in seven spans two reads and is gathered.
    Benchmark("Decode 10,000 single frames from 1,448-byte reads") { benchmark in
        for _ in benchmark.scaledIterations {
            var decoder = FrameDecoder()
            var count = 0
            for read in segmentedStream {
                decoder.append(read)
                while let frame = try decoder.nextFrame() {
                    count += frame.payload.readableBytes
                }
            }
            precondition(count == 2_000_000)
            blackHole(count)
        }
    }

    // One iteration slides through 1 MiB of garbage: ns per byte = wall clock / 1,048,576.
    Benchmark("Skip 1 MiB of garbage in two buffers") { benchmark in
        for _ in benchmark.scaledIterations {
            var decoder = FrameDecoder()
            decoder.append(garbageHalves.0)
            decoder.append(garbageHalves.1)
            var errors = 0
            while true {
                do {
                    guard try decoder.nextFrame() == nil else { preconditionFailure("a frame in garbage") }
                    break
                } catch {
                    errors += 1
                }
            }
            precondition(errors == 1 && decoder.skippedByteCount + decoder.bufferedByteCount == oneMiB)
            blackHole(decoder.skippedByteCount)
        }
    }

    // The reference for the frame stream: memcpy of its 2,120,000 bytes into an existing buffer.
    Benchmark("memcpy the 10,000-frame stream (2.12 MB)") { benchmark in
        let source = Array(singleFrameStream.readableBytesView)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: source.count, alignment: 16)
        defer { destination.deallocate() }
        for _ in benchmark.scaledIterations {
            source.withUnsafeBytes { raw in
                _ = memcpy(destination, raw.baseAddress!, raw.count)
            }
            blackHole(destination.load(fromByteOffset: source.count - 1, as: UInt8.self))
        }
    }

    // One iteration decodes and reassembles the 1 MiB message: MB/s = throughput × 1.048576.
    Benchmark("Reassemble a 1 MiB message from 131,084-byte frames") { benchmark in
        let now = NIODeadline.uptimeNanoseconds(0)
        for _ in benchmark.scaledIterations {
            var decoder = FrameDecoder()
            var reassembler = Reassembler()
            decoder.append(largeMessageStream)
            var delivered = 0
            while let frame = try decoder.nextFrame() {
                if let message = try reassembler.process(frame, now: now) {
                    delivered += message.payload.readableBytes
                }
            }
            precondition(delivered == oneMiB)
            blackHole(delivered)
        }
    }

    // The reference: memcpy of the same 1 MiB into a freshly allocated buffer, as reassembly does.
    Benchmark("memcpy 1 MiB into a new buffer") { benchmark in
        let source = [UInt8](repeating: 0xA5, count: oneMiB)
        for _ in benchmark.scaledIterations {
            let destination = UnsafeMutableRawPointer.allocate(byteCount: oneMiB, alignment: 16)
            source.withUnsafeBytes { raw in
                _ = memcpy(destination, raw.baseAddress!, oneMiB)
            }
            blackHole(destination.load(fromByteOffset: oneMiB - 1, as: UInt8.self))
            destination.deallocate()
        }
    }

    // The same, copied in the frames' 131,072-byte pieces (glibc picks another copy strategy
    // for one 1 MiB call than for 128 KiB calls, and reassembly makes the latter).
    Benchmark("memcpy 1 MiB in 131,072-byte pieces into a new buffer") { benchmark in
        let source = [UInt8](repeating: 0xA5, count: oneMiB)
        let piece = 131_072
        for _ in benchmark.scaledIterations {
            let destination = UnsafeMutableRawPointer.allocate(byteCount: oneMiB, alignment: 16)
            source.withUnsafeBytes { raw in
                for offset in stride(from: 0, to: oneMiB, by: piece) {
                    _ = memcpy(destination + offset, raw.baseAddress! + offset, piece)
                }
            }
            blackHole(destination.load(fromByteOffset: oneMiB - 1, as: UInt8.self))
            destination.deallocate()
        }
    }

    // memcpy of the same bytes into an existing buffer (no allocation at all): the upper bound.
    Benchmark("memcpy 1 MiB into an existing buffer") { benchmark in
        let source = [UInt8](repeating: 0xA5, count: oneMiB)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: oneMiB, alignment: 16)
        defer { destination.deallocate() }
        for _ in benchmark.scaledIterations {
            source.withUnsafeBytes { raw in
                _ = memcpy(destination, raw.baseAddress!, oneMiB)
            }
            blackHole(destination.load(fromByteOffset: oneMiB - 1, as: UInt8.self))
        }
    }
}
