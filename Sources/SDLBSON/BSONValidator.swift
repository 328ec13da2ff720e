// Strict validation of binary BSON (bsonspec.org 1.1), done once, eagerly, when a
// `BSONDocument` is created. Everything later readers assume is checked here:
//
// - every declared length (document, string, binary, code-with-scope) is ≥ its minimum and
//   fits inside the bytes of its enclosing value, and nested documents end exactly where the
//   parent says; documents end with NUL and have no early terminator;
// - keys and regex parts are NUL-terminated inside their bounds; strings end with NUL;
// - every text (keys, strings, code, symbols, regex parts, DBPointer names) is valid UTF-8;
// - booleans are 0 or 1; element types are the ones bsonspec.org defines;
// - old binary (subtype 0x02) inner length equals the outer length − 4;
// - nesting is at most `BSONLimits.effectiveNestingDepth` (checked before recursing, so a
//   nesting bomb costs at most that many stack frames, and never more than the ceiling).
//
// Repeated keys, refused only on request, are a second pass over the validated layout
// (`_bsonFirstRepeatedKey`), so that validation without it pays nothing for it.
//
// The validator runs over the raw readable bytes (lent by `_BSONBytes` while it pins them), the only
// way to make the per-byte key and UTF-8 scans cheap. Errors are built in a cold function so
// the hot loop carries no string formatting.

@usableFromInline
internal struct _BSONValidator {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline let maximumDepth: Int

    @inlinable
    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// What went wrong, with up to two numbers for the message.
    @usableFromInline
    enum Failure {
        case depth
        case documentLengthNeeds4(left: Int)
        case documentTooShort(Int)
        case documentTooLong(Int, left: Int)
        case noTerminator
        case earlyTerminator(before: Int)
        case cstringUnterminated(Part)
        case cstringUTF8(Part)
        case stringLengthNeeds4(left: Int)
        case stringTooShort(Int)
        case stringTooLong(Int, left: Int)
        case stringUnterminated
        case stringUTF8
        case valueTruncated(type: UInt8, needs: Int, left: Int)
        case boolean(UInt8)
        case unknownType(UInt8)
        case binaryNegative(Int)
        case binaryTooLong(Int, left: Int)
        case oldBinaryNoInner(Int)
        case oldBinaryInner(Int, outer: Int)
        case codeWithScopeTooShort(Int)
        case codeWithScopeTooLong(Int, left: Int)
        case codeWithScopeMismatch(Int, actual: Int)

        @usableFromInline
        enum Part {
            case key, pattern, options
            var name: String {
                switch self {
                case .key: return "key"
                case .pattern: return "regular expression pattern"
                case .options: return "regular expression options"
                }
            }
        }
    }

    @usableFromInline
    @inline(never)
    func error(_ failure: Failure, at offset: Int) -> BSONError {
        switch failure {
        case .depth:
            return BSONError(.nestingTooDeep, offset: offset, "documents nest deeper than the limit of \(self.maximumDepth)")
        case .documentLengthNeeds4(let left):
            return BSONError(.truncated, offset: offset, "document length needs 4 bytes, \(left) left")
        case .documentTooShort(let n):
            return BSONError(.invalidDocumentLength, offset: offset, "document length \(n) is below the minimum of 5")
        case .documentTooLong(let n, let left):
            return BSONError(.invalidDocumentLength, offset: offset, "document length \(n) exceeds the \(left) bytes its container leaves")
        case .noTerminator:
            return BSONError(.invalidDocumentTerminator, offset: offset, "document does not end with a NUL byte")
        case .earlyTerminator(let before):
            return BSONError(
                .invalidDocumentTerminator,
                offset: offset,
                "document terminator found \(before) bytes before the declared end"
            )
        case .cstringUnterminated(let part):
            return BSONError(.unterminatedCString, offset: offset, "\(part.name) has no NUL terminator inside its document")
        case .cstringUTF8(let part):
            return BSONError(.invalidUTF8, offset: offset, "\(part.name) is not valid UTF-8")
        case .stringLengthNeeds4(let left):
            return BSONError(.truncated, offset: offset, "string length needs 4 bytes, \(left) left")
        case .stringTooShort(let n):
            return BSONError(.invalidStringLength, offset: offset, "string length \(n) is below the minimum of 1")
        case .stringTooLong(let n, let left):
            return BSONError(.invalidStringLength, offset: offset, "string length \(n) exceeds the \(left) bytes its document leaves")
        case .stringUnterminated:
            return BSONError(.invalidStringLength, offset: offset, "string does not end with a NUL byte")
        case .stringUTF8:
            return BSONError(.invalidUTF8, offset: offset, "string is not valid UTF-8")
        case .valueTruncated(let type, let needs, let left):
            return BSONError(.truncated, offset: offset, "\(BSONType(rawValue: type)) value needs \(needs) bytes, \(left) left")
        case .boolean(let b):
            return BSONError(.invalidBoolean, offset: offset, "boolean byte is \(b), not 0 or 1")
        case .unknownType(let t):
            return BSONError(.unknownElementType, offset: offset, "element type 0x\(hexByte(t)) is not defined by bsonspec.org")
        case .binaryNegative(let n):
            return BSONError(.invalidBinaryLength, offset: offset, "binary length \(n) is negative")
        case .binaryTooLong(let n, let left):
            return BSONError(.invalidBinaryLength, offset: offset, "binary length \(n) exceeds the \(left) bytes its document leaves")
        case .oldBinaryNoInner(let n):
            return BSONError(.invalidBinaryLength, offset: offset, "old binary (subtype 0x02) of \(n) bytes has no inner length")
        case .oldBinaryInner(let inner, let outer):
            return BSONError(
                .invalidBinaryLength,
                offset: offset,
                "old binary (subtype 0x02) inner length \(inner) is not the outer length \(outer) - 4"
            )
        case .codeWithScopeTooShort(let n):
            return BSONError(.invalidCodeWithScopeLength, offset: offset, "code-with-scope length \(n) is below the minimum of 14")
        case .codeWithScopeTooLong(let n, let left):
            return BSONError(
                .invalidCodeWithScopeLength,
                offset: offset,
                "code-with-scope length \(n) exceeds the \(left) bytes its document leaves"
            )
        case .codeWithScopeMismatch(let n, let actual):
            return BSONError(
                .invalidCodeWithScopeLength,
                offset: offset,
                "code-with-scope length \(n) disagrees with its code and scope (\(actual) bytes)"
            )
        }
    }

    @inlinable
    @inline(__always)
    func int32(at offset: Int) -> Int {
        Int(Int32(littleEndian: self.bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
    }

    @inlinable
    @inline(__always)
    func byte(_ offset: Int) -> UInt8 {
        self.bytes.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// Validates the document starting at `start`, which must end at or before `limit`.
    /// Returns the offset one past its terminator.
    @usableFromInline
    func validateDocument(at start: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        if depth > self.maximumDepth { throw self.error(.depth, at: start) }
        if limit &- start < 4 { throw self.error(.documentLengthNeeds4(left: limit &- start), at: start) }
        let length = self.int32(at: start)
        if length < 5 { throw self.error(.documentTooShort(length), at: start) }
        if length > limit &- start { throw self.error(.documentTooLong(length, left: limit &- start), at: start) }
        let end = start &+ length
        let last = end &- 1
        if self.byte(last) != 0 { throw self.error(.noTerminator, at: last) }
        var position = start &+ 4
        while true {
            let type = self.byte(position)
            if type == 0 {
                if position != last { throw self.error(.earlyTerminator(before: last &- position), at: position) }
                return end
            }
            let keyEnd = try self.validateCString(from: position &+ 1, limit: last, .key)
            let at = keyEnd &+ 1
            switch type {
            case 0x10:  // int32
                position = try self.need(4, at: at, limit: last, type)
            case 0x01, 0x09, 0x11, 0x12:  // double, datetime, timestamp, int64
                position = try self.need(8, at: at, limit: last, type)
            case 0x02, 0x0D, 0x0E:  // string, code, symbol
                position = try self.validateString(at: at, limit: last)
            case 0x03, 0x04:  // document, array
                position = try self.validateDocument(at: at, limit: last, depth: depth &+ 1)
            case 0x08:
                position = try self.need(1, at: at, limit: last, type)
                let value = self.byte(at)
                if value > 1 { throw self.error(.boolean(value), at: at) }
            default:
                position = try self.validateRareValue(type: type, typeOffset: position, at: at, limit: last, depth: depth)
            }
        }
    }

    /// Validates a NUL-terminated UTF-8 string in `from..<limit`; returns the offset of its NUL.
    @inlinable
    @inline(__always)
    func validateCString(from: Int, limit: Int, _ part: Failure.Part) throws(BSONError) -> Int {
        var i = from
        // Eight bytes at a time while they are all non-NUL ASCII (keys nearly always are). The
        // lowest flagged byte of a word is its first NUL or non-ASCII byte; if it is a NUL, the
        // key ends there and was all ASCII.
        while i &+ 8 <= limit {
            let v = UInt64(littleEndian: self.bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let flags = ((v &- 0x0101_0101_0101_0101) & ~v | v) & 0x8080_8080_8080_8080
            if flags != 0 {
                let first = i &+ flags.trailingZeroBitCount &>> 3
                if self.byte(first) == 0 { return first }
                break
            }
            i &+= 8
        }
        var sawNonASCII = false
        while i < limit {
            let b = self.byte(i)
            if b == 0 {
                if sawNonASCII, let bad = _firstInvalidUTF8(self.bytes, from: from, to: i) {
                    throw self.error(.cstringUTF8(part), at: bad)
                }
                return i
            }
            sawNonASCII = sawNonASCII || b >= 0x80
            i &+= 1
        }
        throw self.error(.cstringUnterminated(part), at: from)
    }

    /// Validates an int32-length-prefixed UTF-8 string at `at`; returns the offset past it.
    @inlinable
    @inline(__always)
    func validateString(at: Int, limit: Int) throws(BSONError) -> Int {
        if limit &- at < 4 { throw self.error(.stringLengthNeeds4(left: limit &- at), at: at) }
        let length = self.int32(at: at)
        if length < 1 { throw self.error(.stringTooShort(length), at: at) }
        if length > limit &- at &- 4 { throw self.error(.stringTooLong(length, left: limit &- at &- 4), at: at) }
        let nul = at &+ 4 &+ length &- 1
        if self.byte(nul) != 0 { throw self.error(.stringUnterminated, at: nul) }
        if let bad = _firstInvalidUTF8(self.bytes, from: at &+ 4, to: nul) { throw self.error(.stringUTF8, at: bad) }
        return nul &+ 1
    }

    @inlinable
    @inline(__always)
    func need(_ count: Int, at: Int, limit: Int, _ type: UInt8) throws(BSONError) -> Int {
        if limit &- at < count { throw self.error(.valueTruncated(type: type, needs: count, left: limit &- at), at: at) }
        return at &+ count
    }

    /// The element types SDL payloads rarely carry, out of the hot loop.
    @usableFromInline
    func validateRareValue(type: UInt8, typeOffset: Int, at: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        switch type {
        case 0x05:
            return try self.validateBinary(at: at, limit: limit)
        case 0x06, 0x0A, 0x7F, 0xFF:  // undefined, null, max key, min key
            return at
        case 0x07:
            return try self.need(12, at: at, limit: limit, type)
        case 0x0B:
            let patternEnd = try self.validateCString(from: at, limit: limit, .pattern)
            let optionsEnd = try self.validateCString(from: patternEnd &+ 1, limit: limit, .options)
            return optionsEnd &+ 1
        case 0x0C:
            let nameEnd = try self.validateString(at: at, limit: limit)
            return try self.need(12, at: nameEnd, limit: limit, type)
        case 0x0F:
            return try self.validateCodeWithScope(at: at, limit: limit, depth: depth)
        case 0x13:
            return try self.need(16, at: at, limit: limit, type)
        default:
            throw self.error(.unknownType(type), at: typeOffset)
        }
    }

    @usableFromInline
    func validateBinary(at: Int, limit: Int) throws(BSONError) -> Int {
        let payload = try self.need(5, at: at, limit: limit, 0x05)
        let length = self.int32(at: at)
        if length < 0 { throw self.error(.binaryNegative(length), at: at) }
        if length > limit &- payload { throw self.error(.binaryTooLong(length, left: limit &- payload), at: at) }
        if self.byte(at &+ 4) == 0x02 {
            if length < 4 { throw self.error(.oldBinaryNoInner(length), at: at) }
            let inner = self.int32(at: payload)
            if inner != length &- 4 { throw self.error(.oldBinaryInner(inner, outer: length), at: payload) }
        }
        return payload &+ length
    }

    @usableFromInline
    func validateCodeWithScope(at: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        _ = try self.need(4, at: at, limit: limit, 0x0F)
        let total = self.int32(at: at)
        // int32 + (string: int32 + at least NUL) + (empty document: 5 bytes)
        if total < 14 { throw self.error(.codeWithScopeTooShort(total), at: at) }
        if total > limit &- at { throw self.error(.codeWithScopeTooLong(total, left: limit &- at), at: at) }
        let end = at &+ total
        let codeEnd = try self.validateString(at: at &+ 4, limit: end)
        let scopeEnd = try self.validateDocument(at: codeEnd, limit: end, depth: depth &+ 1)
        if scopeEnd != end { throw self.error(.codeWithScopeMismatch(total, actual: scopeEnd &- at), at: at) }
        return end
    }
}
