import NIOCore

/// Reads a fuzzer's input as a sequence of small decisions (the structured targets' op
/// languages). Reading past the end yields zeros, so every program is total: a short input is a
/// short program, never an error.
public struct FuzzInput {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    /// Reads `bytes` from the start.
    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Whether every byte was read.
    public var isExhausted: Bool { self.position >= self.bytes.count }

    /// How many bytes are left.
    public var remaining: Int { max(0, self.bytes.count - self.position) }

    /// The next byte, 0 past the end.
    public mutating func byte() -> UInt8 {
        guard self.position < self.bytes.count else { return 0 }
        defer { self.position += 1 }
        return self.bytes[self.position]
    }

    /// A big-endian integer of `T`'s width.
    public mutating func integer<T: FixedWidthInteger>(_ type: T.Type = T.self) -> T {
        var value: T = 0
        for _ in 0..<(T.bitWidth / 8) { value = value << 8 | T(truncatingIfNeeded: self.byte()) }
        return value
    }

    /// A value in `range`, from as few bytes as the range needs.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound)
        guard span > 0 else { return range.lowerBound }
        let raw: UInt64
        switch span {
        case ...0xFF: raw = UInt64(self.byte())
        case ...0xFFFF: raw = UInt64(self.integer(UInt16.self))
        case ...0xFFFF_FFFF: raw = UInt64(self.integer(UInt32.self))
        default: raw = self.integer(UInt64.self)
        }
        return range.lowerBound + Int(raw % (span &+ 1 == 0 ? .max : span &+ 1))
    }

    /// One bit of decision.
    public mutating func bool() -> Bool { self.byte() & 1 == 1 }

    /// One of `items` (which must not be empty).
    public mutating func pick<T>(_ items: [T]) -> T { items[self.int(in: 0...(items.count - 1))] }

    /// The next `count` bytes, or fewer at the end.
    public mutating func bytes(_ count: Int) -> ByteBuffer {
        let start = min(self.position, self.bytes.count)
        let end = min(self.bytes.count, start + max(0, count))
        self.position = end
        return ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: self.bytes[start..<end]))
    }

    /// A short string of the next bytes (up to `maxLength`, as UTF-8 with repairs).
    public mutating func string(maxLength: Int) -> String {
        let buffer = self.bytes(self.int(in: 0...maxLength))
        return String(decoding: buffer.readableBytesView, as: UTF8.self)
    }
}
