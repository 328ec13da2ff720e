import CFrameHeaderLoop
import ComparisonKit
import NIOCore
import SDLProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The frame layer against the least a C program could do with the same bytes: a hand-written
// header loop, and memcpy of the stream or message.

/// 64 v5 headers of varied fields, the same set on both sides of the header rows.
private let headerSet: [FrameHeader] = (0..<64).map { index in
    let types: [FrameType] = [.single, .first, .consecutive, .control]
    let services: [ServiceType] = [.rpc, .video, .audio, .control, .hybrid]
    let type = types[index % types.count]
    return FrameHeader(
        version: .v5, encrypted: index % 3 == 0, frameType: type, serviceType: services[index % services.count],
        frameInfo: type == .consecutive ? UInt8(index) : 0, sessionID: SessionID(UInt8(index)),
        dataSize: UInt32(100 + index * 977), messageID: MessageID(UInt32(index) &* 2_654_435_761))
}

private let headerBytes: [UInt8] = headerSet.flatMap(\.bytes)

/// The 64 headers of the header rows, one after the other (768 bytes).
public let headerSetBuffer = ByteBuffer(bytes: headerBytes)

/// Our side of the header parse row: `count` headers read with `FrameHeader.peek(in:at:)` from
/// the bytes of `headerSetBuffer` (one access to the buffer, as a decoder's walk has), in turn,
/// every field read; returns a checksum of the fields.
@inline(__always)
public func parseHeaderSet(_ buffer: ByteBuffer, count: Int) -> UInt64 {
    buffer.withUnsafeReadableBytes { bytes in
        parseHeaders(count: count, end: bytes.count) { FrameHeader.peek(in: bytes, at: $0) }
    }
}

/// The header parse with `FrameHeader.peek(in:at:)` on the `ByteBuffer`, one access to its
/// storage (a dynamic exclusivity check) per header.
@inline(__always)
public func parseHeaderSetPerAccess(_ buffer: ByteBuffer, count: Int) -> UInt64 {
    parseHeaders(count: count, end: buffer.readableBytes) { FrameHeader.peek(in: buffer, at: $0) }
}

@inline(__always)
private func parseHeaders(count: Int, end: Int, _ peek: (Int) -> FrameHeader?) -> UInt64 {
    var sum: UInt64 = 0
    var offset = 0
    for _ in 0..<count {
        let header = peek(offset).unsafelyUnwrapped
        sum &+= UInt64(header.version.rawValue) &+ (header.protectionBit ? 1 : 0) &+ UInt64(header.frameType.rawValue)
        sum &+= UInt64(header.serviceType.rawValue) &+ UInt64(header.frameInfo) &+ UInt64(header.sessionID.rawValue)
        sum &+= UInt64(header.dataSize) &+ UInt64(header.messageID?.rawValue ?? 0)
        offset += 12
        if offset == end { offset = 0 }
    }
    return sum
}

/// 1 MiB of pseudo-random bytes in which no valid header starts, as two received buffers: what a
/// resynchronising decoder slides through when a peer sends garbage (FrameBenchmarks' "Skip
/// 1 MiB of garbage in two buffers", and FrameProfile's `garbage`).
public let garbageHalves: (ByteBuffer, ByteBuffer) = {
    let oneMiB = 1 << 20
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

/// Slides a resynchronising decoder through `halves` (one error, every byte skipped or left
/// buffered as a possible header start); returns the bytes skipped.
@inline(never)
public func skipGarbage(_ halves: (ByteBuffer, ByteBuffer)) -> Int {
    var decoder = FrameDecoder()
    decoder.append(halves.0)
    decoder.append(halves.1)
    var errors = 0
    while true {
        do {
            guard try decoder.nextFrame() == nil else { preconditionFailure("a frame in garbage") }
            break
        } catch {
            errors += 1
        }
    }
    precondition(errors == 1 && decoder.skippedByteCount + decoder.bufferedByteCount == halves.0.readableBytes + halves.1.readableBytes)
    return decoder.skippedByteCount
}

private func writeOurs() -> (Int) -> Void {
    let state = RunState(ByteBufferAllocator().buffer(capacity: headerBytes.count))
    let headers = headerSet
    return { count in
        state.withValue { buffer in
            var index = 0
            for _ in 0..<count {
                headers[index].write(to: &buffer)
                index += 1
                if index == headers.count {
                    index = 0
                    buffer.clear()
                }
            }
            sink(buffer)
        }
    }
}

private func cHeaders() -> [sdl_c_header] {
    headerSet.map {
        sdl_c_header(
            version: $0.version.rawValue, encrypted: $0.protectionBit ? 1 : 0, frame_type: $0.frameType.rawValue,
            service_type: $0.serviceType.rawValue, frame_info: $0.frameInfo, session_id: $0.sessionID.rawValue,
            data_size: $0.dataSize, message_id: $0.messageID?.rawValue ?? 0)
    }
}

/// 10,000 v5 Single frames with 200-byte payloads on the RPC service, as one stream (2,120,000
/// bytes).
public let singleFrameStream: ByteBuffer = {
    var stream = ByteBuffer()
    let payload = ByteBuffer(repeating: 0x5A, count: 200)
    for index in 0..<10_000 {
        FrameEncoder.write(
            ProtocolFrame(
                header: FrameHeader(version: .v5, frameType: .single, serviceType: .rpc, sessionID: SessionID(1),
                                    dataSize: 200, messageID: MessageID(UInt32(index + 1))),
                payload: payload),
            to: &stream)
    }
    return stream
}()

/// The stream cut into reads of `size` bytes, each in a buffer of its own, as a socket delivers
/// them.
public func reads(of size: Int) -> [ByteBuffer] {
    var reads: [ByteBuffer] = []
    var stream = singleFrameStream
    while stream.readableBytes > 0 {
        let slice = stream.readSlice(length: min(size, stream.readableBytes))!
        reads.append(ByteBuffer(bytes: slice.readableBytesView))
    }
    return reads
}

/// Decodes every frame of `reads`, appended one after the other; returns the payload bytes.
@inline(__always)
public func decodeFrames(_ reads: [ByteBuffer]) -> Int {
    var decoder = FrameDecoder()
    var count = 0
    for read in reads {
        decoder.append(read)
        while let frame = try! decoder.nextFrame() {
            count += frame.payload.readableBytes
        }
    }
    return count
}

/// Visits every frame of `reads`, appended one after the other, with payloads lent in place;
/// returns the payload bytes.
@inline(__always)
public func visitFrames(_ reads: [ByteBuffer]) -> Int {
    var decoder = FrameDecoder()
    var count = 0
    for read in reads {
        decoder.append(read)
        try! decoder.forEachFrame { _, payload in count &+= payload.count }
    }
    return count
}

/// Decoding the stream delivered as `reads` with `decode` (`decodeFrames` or `visitFrames`).
private func streamDecode(
    _ reads: @escaping @Sendable () -> [ByteBuffer], _ decode: @escaping ([ByteBuffer]) -> Int
) -> (Int) -> Void {
    let chunks = reads()
    return { count in
        for _ in 0..<count {
            let decoded = decode(chunks)
            precondition(decoded == 2_000_000)
        }
    }
}

/// Decoding the stream delivered one byte at a time. Each byte is a slice of the stream (a
/// reference, no copy): two million buffers of their own would not fit the benchmark's memory.
private func byteByByteDecode() -> (Int) -> Void {
    let stream = singleFrameStream
    return { count in
        for _ in 0..<count {
            var decoder = FrameDecoder()
            var decoded = 0
            for index in stream.readerIndex..<stream.writerIndex {
                decoder.append(stream.getSlice(at: index, length: 1).unsafelyUnwrapped)
                while let frame = try! decoder.nextFrame() {
                    decoded += frame.payload.readableBytes
                }
            }
            precondition(decoded == 2_000_000)
        }
    }
}

/// memcpy of `bytes` into a buffer allocated once.
public func memcpyExisting(_ bytes: Int) -> (Int) -> Void {
    let source = [UInt8](repeating: 0xA5, count: bytes)
    let destination = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
    return { count in
        source.withUnsafeBytes { raw in
            for _ in 0..<count {
                _ = memcpy(destination, raw.baseAddress!, bytes)
                sink(destination)
            }
        }
    }
}

/// memcpy of `bytes` into a buffer allocated (and freed) each time, as reassembly allocates the
/// message it fills.
public func memcpyNew(_ bytes: Int) -> (Int) -> Void {
    let source = [UInt8](repeating: 0xA5, count: bytes)
    return { count in
        source.withUnsafeBytes { raw in
            for _ in 0..<count {
                let destination = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
                _ = memcpy(destination, raw.baseAddress!, bytes)
                sink(destination)
                destination.deallocate()
            }
        }
    }
}

/// A message of `size` bytes, fragmented at the v5 default MTU (131,072-byte payloads) by
/// `MessageFragmenter`, the frames handed to a `Reassembler` as a receiver gets them: one
/// reassembler for all the messages, as a connection has.
private func fragmentAndReassemble(_ size: Int) -> (Int) -> Void {
    let message = ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    var limits = ProtocolLimits()
    limits.maxMessageSize = max(limits.maxMessageSize, size)
    limits.maxReassemblyBytes = max(limits.maxReassemblyBytes, size)
    let now = NIODeadline.uptimeNanoseconds(0)
    let perFrame = ProtocolLimits().sendPayloadLimit(version: .v5)
    let state = RunState(Reassembler(limits: limits))
    return { count in
        state.withValue { reassembler in
            for _ in 0..<count {
                let fragmenter = try! MessageFragmenter(
                    payload: message, version: .v5, serviceType: .video, sessionID: SessionID(1), messageID: MessageID(1),
                    maxPayloadPerFrame: perFrame)
                var delivered = 0
                for frame in fragmenter {
                    if let reassembled = try! reassembler.process(frame, now: now) {
                        delivered = reassembled.payload.readableBytes
                    }
                }
                precondition(delivered == size)
            }
        }
    }
}

/// The 1 MiB message on the wire (131,084-byte frames), decoded and reassembled.
private func decodeAndReassemble(_ size: Int) -> (Int) -> Void {
    var stream = ByteBuffer()
    try! FrameEncoder.writeMessage(
        ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }), version: .v5, serviceType: .video,
        sessionID: SessionID(1), messageID: MessageID(1), maxPayloadPerFrame: ProtocolLimits().sendPayloadLimit(version: .v5),
        to: &stream)
    let now = NIODeadline.uptimeNanoseconds(0)
    // One decoder and one reassembler for all the messages, as a connection has.
    let state = RunState((FrameDecoder(), Reassembler()))
    return { count in
        state.withValue { receiver in
            for _ in 0..<count {
                receiver.0.append(stream)
                var delivered = 0
                while let frame = try! receiver.0.nextFrame() {
                    if let message = try! receiver.1.process(frame, now: now) {
                        delivered += message.payload.readableBytes
                    }
                }
                precondition(delivered == size)
            }
        }
    }
}

/// A header parse row: `parse` over `headerSetBuffer` against the C loop over the same bytes.
private func headerParse(
    _ name: String, _ side: String, _ parse: @escaping @Sendable (ByteBuffer, Int) -> UInt64, goal: RatioGoal? = nil
) -> Comparison {
    Comparison(
        name, group: "Frames",
        ours: Workload(side) {
            let buffer = headerSetBuffer
            return { count in sink(parse(buffer, count)) }
        },
        reference: Workload("C loop") {
            { count in sink(headerBytes.withUnsafeBufferPointer { sdl_c_parse_headers($0.baseAddress, 64, count) }) }
        },
        items: (1, "header"), goal: goal, scale: .mega)
}

/// The frame layer's comparisons.
public enum FrameWorkloads {
    public static let streamBytes = 2_120_000

    public static var comparisons: [Comparison] {
        let cLoop = "C loop"
        let streamGoal = RatioGoal(0.5, "frame stream decode within 2× the time of memcpy of the same bytes")
        let reassemblyGoal = RatioGoal(1, "reassembly at least memcpy's bandwidth")
        let stream: (count: Int, noun: String) = (10_000, "frame")
        var rows = [
            headerParse(
                "Frame header parse (12 bytes)", "FrameHeader.peek", parseHeaderSet,
                goal: RatioGoal(0.5, "header parse at least 50% of the C loop's speed")),
            headerParse(
                "Frame header parse, one ByteBuffer access per header (12 bytes)", "FrameHeader.peek(in: ByteBuffer)",
                parseHeaderSetPerAccess),
            Comparison(
                "Frame header serialize (12 bytes)", group: "Frames",
                ours: Workload("FrameHeader.write") { writeOurs() },
                reference: Workload(cLoop) {
                    let headers = cHeaders()
                    let out = UnsafeMutablePointer<UInt8>.allocate(capacity: headerBytes.count)
                    return { count in
                        sdl_c_write_headers(headers, 64, out, count)
                        sink(out)
                    }
                },
                items: (1, "header"), scale: .mega),
        ]
        let chunkings: [(String, @Sendable () -> [ByteBuffer])] = [
            ("one buffer", { [singleFrameStream] }),
            ("64 KiB reads", { reads(of: 64 << 10) }),
            ("1,448-byte reads", { reads(of: 1448) }),
            ("1 KiB reads", { reads(of: 1 << 10) }),
        ]
        for (chunking, makeReads) in chunkings {
            rows.append(Comparison(
                "Decode 10,000 frames of 200 bytes, \(chunking)", group: "Frames",
                ours: Workload("FrameDecoder") { streamDecode(makeReads, decodeFrames) },
                reference: Workload("memcpy") { memcpyExisting(streamBytes) },
                items: stream, bytesPerOperation: streamBytes, goal: streamGoal, allocationGoal: 0))
            rows.append(Comparison(
                "Visit 10,000 frames of 200 bytes (payloads lent), \(chunking)", group: "Frames",
                ours: Workload("FrameDecoder.forEachFrame") { streamDecode(makeReads, visitFrames) },
                reference: Workload("memcpy") { memcpyExisting(streamBytes) },
                items: stream, bytesPerOperation: streamBytes, goal: streamGoal, allocationGoal: 0))
        }
        rows.append(Comparison(
            "Decode 10,000 frames of 200 bytes, 1-byte reads", group: "Frames",
            ours: Workload("FrameDecoder") { byteByByteDecode() },
            reference: Workload("memcpy") { memcpyExisting(streamBytes) },
            items: stream, bytesPerOperation: streamBytes, allocationGoal: 0))
        for (label, size) in [("1 MiB", 1 << 20), ("64 MiB", 64 << 20)] {
            rows.append(Comparison(
                "Fragment + reassemble \(label)", group: "Frames",
                ours: Workload("MessageFragmenter + Reassembler") { fragmentAndReassemble(size) },
                reference: Workload("memcpy into a new buffer") { memcpyNew(size) },
                bytesPerOperation: size, goal: reassemblyGoal))
        }
        rows.append(Comparison(
            "Decode + reassemble 1 MiB from 131,084-byte frames", group: "Frames",
            ours: Workload("FrameDecoder + Reassembler") { decodeAndReassemble(1 << 20) },
            reference: Workload("memcpy into a new buffer") { memcpyNew(1 << 20) },
            bytesPerOperation: 1 << 20, goal: reassemblyGoal))
        return rows
    }
}
