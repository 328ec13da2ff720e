import FrameWorkloads
import NIOCore
import SDLProtocol

// A plain loop over one frame-layer operation, for `valgrind --tool=callgrind` (instruction
// counts per function) and quick readings: `FrameProfile MODE [iterations]`.
// MODE: `parse` (FrameHeader.peek over 64 varied v5 headers, one header per iteration, every
// field read, as the report's header row does, from the buffer's bytes; `parse-access` with one
// access to the ByteBuffer per header); `visit-one`, `visit-64k`, `visit-1448`,
// `visit-1k` (FrameDecoder.forEachFrame over the report's 10,000 frames of 200 bytes, delivered
// as one buffer or in reads of that size; one iteration is the whole stream); `decode-…` the
// same through `nextFrame` (a slice per payload); `garbage` (a resynchronising decoder sliding
// through 1 MiB of pseudo-random bytes in which no valid header starts, in two buffers, as the
// FrameBenchmarks row "Skip 1 MiB of garbage in two buffers" does; one iteration is the MiB);
// `memcpy` (the stream rows' reference: one iteration copies the 2,120,000-byte stream);
// `touch-64k`, `touch-1448`, `touch-1k` (per read only what keeping NIO's buffers costs at the
// least: a retain and release, the storage capacity, one access to the bytes).

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "visit-1448"
let iterations = arguments.count > 2 ? Int(arguments[2])! : 100

let chunkings: [String: () -> [ByteBuffer]] = [
    "one": { [singleFrameStream] }, "64k": { reads(of: 64 << 10) }, "1448": { reads(of: 1448) }, "1k": { reads(of: 1 << 10) },
]

var total: UInt64 = 0
let clock = ContinuousClock()
var start = clock.now
if mode == "parse" {
    total = parseHeaderSet(headerSetBuffer, count: iterations)
} else if mode == "parse-access" {
    total = parseHeaderSetPerAccess(headerSetBuffer, count: iterations)
} else if mode == "memcpy" {
    // The stream rows' reference: memcpy of the 2,120,000-byte stream into an existing buffer.
    let copy = memcpyExisting(FrameWorkloads.streamBytes)
    start = clock.now
    copy(iterations)
} else if mode.hasPrefix("touch-"), let makeReads = chunkings[String(mode.dropFirst(6))] {
    // What any decoder keeping NIO's buffers pays per read at the least: keeping the buffer (a
    // retain, and a release when it goes), its storage capacity (for a memory bound) and one
    // access to its bytes, each a dynamic exclusivity check. No frame is looked at.
    let chunks = makeReads()
    start = clock.now
    for _ in 0..<iterations {
        var kept = CircularBuffer<ByteBuffer>(initialCapacity: 4)
        for read in chunks {
            kept.append(read)
            total &+= UInt64(read.storageCapacity)
            total &+= UInt64(kept.removeFirst().withUnsafeReadableBytes { $0.first ?? 0 })
        }
    }
} else if mode == "garbage" {
    let halves = garbageHalves
    start = clock.now
    for _ in 0..<iterations {
        total &+= UInt64(skipGarbage(halves))
    }
} else {
    let parts = mode.split(separator: "-", maxSplits: 1).map(String.init)
    guard parts.count == 2, let makeReads = chunkings[parts[1]], ["visit", "decode"].contains(parts[0]) else {
        fatalError("unknown mode \(mode)")
    }
    let chunks = makeReads()
    start = clock.now
    for _ in 0..<iterations {
        let decoded = parts[0] == "visit" ? visitFrames(chunks) : decodeFrames(chunks)
        precondition(decoded == 2_000_000)
        total &+= UInt64(decoded)
    }
}
let elapsed = clock.now - start
let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
print("\(mode): \(Int(ns / Double(max(iterations, 1)))) ns per iteration (\(total))")
