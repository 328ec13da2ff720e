import NIOCore
import Testing

/// Where the readable bytes of a `ByteBuffer` sit in its storage. Readers must give the same
/// result whatever the layout: bytes arrive after a consumed prefix when a caller reads a header
/// off a buffer first, and as slices of one large allocation when they come from a network read.
///
/// The other bytes in the storage are 0xA5 before and 0x5A after the readable ones, so that a
/// reader that looks before its reader index or past its writer index reads something a vector
/// would not contain (a 0 there could hide a missing terminator). The prefix is 7 bytes long, so
/// the readable bytes are not aligned either.
public enum BufferLayout: CaseIterable, Sendable, CustomStringConvertible {
    /// A fresh buffer holding just the bytes, from its start.
    case plain
    /// The bytes after 7 bytes already read (a non-zero reader index), with 9 more bytes of
    /// storage written after them and then dropped from the readable region.
    case afterConsumedPrefix
    /// A slice holding the bytes, from the middle of a larger allocation: 7 other bytes before
    /// them, 9 after.
    case sliceOfLargerBuffer

    /// The layouts other than `plain`.
    public static let awkward: [BufferLayout] = [.afterConsumedPrefix, .sliceOfLargerBuffer]

    static let prefix = [UInt8](repeating: 0xA5, count: 7)
    static let suffix = [UInt8](repeating: 0x5A, count: 9)

    /// `bytes` as the readable bytes of a buffer laid out this way.
    public func buffer(_ bytes: some Collection<UInt8>) -> ByteBuffer {
        switch self {
        case .plain:
            return ByteBuffer(bytes: bytes)
        case .afterConsumedPrefix:
            var buffer = self.surrounded(bytes)
            buffer.moveReaderIndex(forwardBy: Self.prefix.count)
            buffer.moveWriterIndex(to: Self.prefix.count + bytes.count)
            return buffer
        case .sliceOfLargerBuffer:
            return self.surrounded(bytes).getSlice(at: Self.prefix.count, length: bytes.count)!
        }
    }

    private func surrounded(_ bytes: some Collection<UInt8>) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: Self.prefix.count + bytes.count + Self.suffix.count)
        buffer.writeBytes(Self.prefix)
        buffer.writeBytes(bytes)
        buffer.writeBytes(Self.suffix)
        return buffer
    }

    /// `plain`, `after a consumed prefix`, `slice of a larger buffer`.
    public var description: String {
        switch self {
        case .plain: "plain"
        case .afterConsumedPrefix: "after a consumed prefix"
        case .sliceOfLargerBuffer: "slice of a larger buffer"
        }
    }
}

/// What a read gave: the value, or the thrown error. Two results are equal when their values
/// are, or when their errors agree in type and every stored property (the library errors' `==`
/// compares codes only, and the offsets and details must agree too).
public enum ReadResult<Value: Equatable>: Equatable, CustomStringConvertible {
    /// The read succeeded.
    case value(Value)
    /// The read threw `error`; `fields` is `everyField(of: error)`, what comparisons look at.
    case error(any Error, fields: String)

    /// Runs `body` and keeps what it returned or threw.
    public init(_ body: () throws -> Value) {
        do {
            self = .value(try body())
        } catch {
            self = .error(error, fields: everyField(of: error))
        }
    }

    /// The value, or nil when the read threw.
    public var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// The error, or nil when the read succeeded.
    public var error: (any Error)? {
        if case .error(let error, _) = self { return error }
        return nil
    }

    /// Equal values, or errors equal in every field.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.value(let left), .value(let right)): left == right
        case (.error(_, let left), .error(_, let right)): left == right
        default: false
        }
    }

    /// The value or the error fields, for failure messages.
    public var description: String {
        switch self {
        case .value(let value): "value \(value)"
        case .error(_, let fields): "error \(fields)"
        }
    }
}

/// An error's type and every stored property, e.g. `BSONError(code: invalidLength, offset:
/// Optional(4), detail: "…")`: what tests compare of errors whose `==` looks at the code alone.
public func everyField(of error: any Error) -> String {
    let children = Mirror(reflecting: error).children.map { "\($0.label ?? "_"): \(String(reflecting: $0.value))" }
    return "\(type(of: error))(\(children.joined(separator: ", ")))"
}

/// Reads `bytes` laid out in every `BufferLayout`, expects the awkward layouts to give what the
/// plain buffer gives, and returns that. `read` should reduce its result to what matters (a value
/// read out of the buffer, or a `ReadResult`), so that errors are compared by offset and detail,
/// not by code alone.
@discardableResult
public func readInEveryLayout<Result: Equatable>(
    _ bytes: some Collection<UInt8>, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ read: (ByteBuffer) throws -> Result
) rethrows -> Result {
    let plain = try read(BufferLayout.plain.buffer(bytes))
    for layout in BufferLayout.awkward {
        let result = try read(layout.buffer(bytes))
        #expect(result == plain, "\(comment.map { "\($0) " } ?? "")\(layout)", sourceLocation: sourceLocation)
    }
    return plain
}
