import Benchmark
import ComparisonRows
import FrameWorkloads
import NIOCore
import SDLProtocol

private let oneMiB = 1 << 20

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
    // The rows the report compares (`FrameWorkloads`): header parse and serialize against a C
    // loop, stream decoding in several chunkings and reassembly against memcpy.
    for comparison in FrameWorkloads.comparisons {
        comparison.registerRows()
    }

    // One iteration slides through 1 MiB of garbage: ns per byte = wall clock / 1,048,576.
    Benchmark(
        "Skip 1 MiB of garbage in two buffers",
        configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(2))
    ) { benchmark in
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
}
