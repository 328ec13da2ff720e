import NIOCore

/// The chunkings every stream vector is fed in: whole, one byte at a time, and split in two at
/// every offset; then whole and in two halves in each awkward `BufferLayout`, so that a decoder
/// meets buffers with a non-zero reader index and slices of larger allocations too.
///
/// Streams above 8 KiB (a few vectors of one 128 KiB frame) are split at every offset of their
/// first and last 2 KiB and at every 509th offset between: a cut deep inside a payload behaves
/// like its neighbours, and all cuts would take minutes in a debug build.
///
/// The chunks of each chunking are made as it is reached, so that a caller that checks one run
/// at a time holds one copy of a large stream, not thousands.
public func chunkings(of stream: [UInt8]) -> some Sequence<(name: String, chunks: [ByteBuffer])> {
    enum Plan {
        case whole
        case byteByByte
        case split(at: Int)
        case wholeIn(BufferLayout)
        case halvesIn(BufferLayout)
    }
    var plans: [Plan] = [.whole, .byteByByte]
    if stream.count > 1 {
        for cut in 1..<stream.count {
            if stream.count > 8192, cut > 2048, cut < stream.count - 2048, cut % 509 != 0 { continue }
            plans.append(.split(at: cut))
        }
    }
    for layout in BufferLayout.awkward {
        plans += [.wholeIn(layout), .halvesIn(layout)]
    }
    let middle = stream.count / 2
    return plans.lazy.map { plan -> (name: String, chunks: [ByteBuffer]) in
        switch plan {
        case .whole:
            ("whole", [ByteBuffer(bytes: stream)])
        case .byteByByte:
            ("byte by byte", stream.map { ByteBuffer(bytes: [$0]) })
        case .split(let cut):
            ("split at \(cut)", [ByteBuffer(bytes: stream[..<cut]), ByteBuffer(bytes: stream[cut...])])
        case .wholeIn(let layout):
            ("whole, \(layout)", [layout.buffer(stream)])
        case .halvesIn(let layout):
            ("halves, \(layout)", [layout.buffer(stream[..<middle]), layout.buffer(stream[middle...])])
        }
    }
}
