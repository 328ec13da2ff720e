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
// - nesting is at most `BSONLimits.maximumNestingDepth` (checked before recursing, so a
//   nesting bomb costs at most that many stack frames).
//
// The validator runs over the raw readable bytes (one `withUnsafeReadableBytes`), the only
// way to make the per-byte key and UTF-8 scans cheap.

@usableFromInline
internal struct _BSONValidator {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline let maximumDepth: Int

    @inlinable
    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    @inlinable
    func int32(at offset: Int) -> Int32 {
        Int32(littleEndian: self.bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self))
    }

    /// Validates the document starting at `start`, which must end at or before `limit`.
    /// Returns the offset one past its terminator.
    @usableFromInline
    func validateDocument(at start: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        if depth > self.maximumDepth {
            throw BSONError(
                .nestingTooDeep,
                offset: start,
                "documents nest deeper than the limit of \(self.maximumDepth)"
            )
        }
        if limit &- start < 4 {
            throw BSONError(.truncated, offset: start, "document length needs 4 bytes, \(limit - start) left")
        }
        let length = Int(self.int32(at: start))
        if length < 5 {
            throw BSONError(.invalidDocumentLength, offset: start, "document length \(length) is below the minimum of 5")
        }
        if length > limit &- start {
            throw BSONError(
                .invalidDocumentLength,
                offset: start,
                "document length \(length) exceeds the \(limit - start) bytes its container leaves"
            )
        }
        let end = start &+ length
        let last = end &- 1
        if self.bytes[last] != 0 {
            throw BSONError(.invalidDocumentTerminator, offset: last, "document does not end with a NUL byte")
        }
        var position = start &+ 4
        while true {
            let type = self.bytes[position]
            if type == 0 {
                if position != last {
                    throw BSONError(
                        .invalidDocumentTerminator,
                        offset: position,
                        "document terminator found \(last - position) bytes before the declared end"
                    )
                }
                return end
            }
            let keyEnd = try self.validateCString(from: position &+ 1, limit: last, what: "key")
            position = try self.validateValue(type: type, typeOffset: position, at: keyEnd &+ 1, limit: last, depth: depth)
        }
    }

    /// Validates a NUL-terminated UTF-8 string in `from..<limit`; returns the offset of its NUL.
    @inlinable
    func validateCString(from: Int, limit: Int, what: StaticString) throws(BSONError) -> Int {
        var i = from
        var sawNonASCII = false
        while i < limit {
            let b = self.bytes[i]
            if b == 0 {
                if sawNonASCII, let bad = _firstInvalidUTF8(self.bytes, from: from, to: i) {
                    throw BSONError(.invalidUTF8, offset: bad, "\(what) is not valid UTF-8")
                }
                return i
            }
            if b >= 0x80 { sawNonASCII = true }
            i &+= 1
        }
        throw BSONError(.unterminatedCString, offset: from, "\(what) has no NUL terminator inside its document")
    }

    /// Validates an int32-length-prefixed UTF-8 string at `at`; returns the offset past it.
    @inlinable
    func validateString(at: Int, limit: Int) throws(BSONError) -> Int {
        if limit &- at < 4 {
            throw BSONError(.truncated, offset: at, "string length needs 4 bytes, \(limit - at) left")
        }
        let length = Int(self.int32(at: at))
        if length < 1 {
            throw BSONError(.invalidStringLength, offset: at, "string length \(length) is below the minimum of 1")
        }
        if length > limit &- at &- 4 {
            throw BSONError(
                .invalidStringLength,
                offset: at,
                "string length \(length) exceeds the \(limit - at - 4) bytes its document leaves"
            )
        }
        let nul = at &+ 4 &+ length &- 1
        if self.bytes[nul] != 0 {
            throw BSONError(.invalidStringLength, offset: nul, "string does not end with a NUL byte")
        }
        if let bad = _firstInvalidUTF8(self.bytes, from: at &+ 4, to: nul) {
            throw BSONError(.invalidUTF8, offset: bad, "string is not valid UTF-8")
        }
        return nul &+ 1
    }

    @inlinable
    func need(_ count: Int, at: Int, limit: Int, _ type: UInt8) throws(BSONError) -> Int {
        if limit &- at < count {
            throw BSONError(
                .truncated,
                offset: at,
                "\(BSONType(rawValue: type)) value needs \(count) bytes, \(limit - at) left"
            )
        }
        return at &+ count
    }

    /// Validates the value of an element of `type` starting at `at`; returns the offset past it.
    @usableFromInline
    func validateValue(type: UInt8, typeOffset: Int, at: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        switch type {
        case 0x01, 0x09, 0x11, 0x12:  // double, datetime, timestamp, int64
            return try self.need(8, at: at, limit: limit, type)
        case 0x10:  // int32
            return try self.need(4, at: at, limit: limit, type)
        case 0x02, 0x0D, 0x0E:  // string, code, symbol
            return try self.validateString(at: at, limit: limit)
        case 0x03, 0x04:  // document, array
            return try self.validateDocument(at: at, limit: limit, depth: depth &+ 1)
        case 0x05:
            return try self.validateBinary(at: at, limit: limit)
        case 0x06, 0x0A, 0x7F, 0xFF:  // undefined, null, max key, min key
            return at
        case 0x07:
            return try self.need(12, at: at, limit: limit, type)
        case 0x08:
            let end = try self.need(1, at: at, limit: limit, type)
            let value = self.bytes[at]
            if value > 1 {
                throw BSONError(.invalidBoolean, offset: at, "boolean byte is \(value), not 0 or 1")
            }
            return end
        case 0x0B:
            let patternEnd = try self.validateCString(from: at, limit: limit, what: "regular expression pattern")
            let optionsEnd = try self.validateCString(
                from: patternEnd &+ 1,
                limit: limit,
                what: "regular expression options"
            )
            return optionsEnd &+ 1
        case 0x0C:
            let nameEnd = try self.validateString(at: at, limit: limit)
            return try self.need(12, at: nameEnd, limit: limit, type)
        case 0x0F:
            return try self.validateCodeWithScope(at: at, limit: limit, depth: depth)
        case 0x13:
            return try self.need(16, at: at, limit: limit, type)
        default:
            throw BSONError(
                .unknownElementType,
                offset: typeOffset,
                "element type 0x\(hexByte(type)) is not defined by bsonspec.org"
            )
        }
    }

    @usableFromInline
    func validateBinary(at: Int, limit: Int) throws(BSONError) -> Int {
        let payload = try self.need(5, at: at, limit: limit, 0x05)
        let length = Int(self.int32(at: at))
        if length < 0 {
            throw BSONError(.invalidBinaryLength, offset: at, "binary length \(length) is negative")
        }
        if length > limit &- payload {
            throw BSONError(
                .invalidBinaryLength,
                offset: at,
                "binary length \(length) exceeds the \(limit - payload) bytes its document leaves"
            )
        }
        if self.bytes[at &+ 4] == 0x02 {
            if length < 4 {
                throw BSONError(.invalidBinaryLength, offset: at, "old binary (subtype 0x02) of \(length) bytes has no inner length")
            }
            let inner = Int(self.int32(at: payload))
            if inner != length &- 4 {
                throw BSONError(
                    .invalidBinaryLength,
                    offset: payload,
                    "old binary (subtype 0x02) inner length \(inner) is not the outer length \(length) - 4"
                )
            }
        }
        return payload &+ length
    }

    @usableFromInline
    func validateCodeWithScope(at: Int, limit: Int, depth: Int) throws(BSONError) -> Int {
        _ = try self.need(4, at: at, limit: limit, 0x0F)
        let total = Int(self.int32(at: at))
        // int32 + (string: int32 + at least NUL) + (empty document: 5 bytes)
        if total < 14 {
            throw BSONError(.invalidCodeWithScopeLength, offset: at, "code-with-scope length \(total) is below the minimum of 14")
        }
        if total > limit &- at {
            throw BSONError(
                .invalidCodeWithScopeLength,
                offset: at,
                "code-with-scope length \(total) exceeds the \(limit - at) bytes its document leaves"
            )
        }
        let end = at &+ total
        let codeEnd = try self.validateString(at: at &+ 4, limit: end)
        let scopeEnd = try self.validateDocument(at: codeEnd, limit: end, depth: depth &+ 1)
        if scopeEnd != end {
            throw BSONError(
                .invalidCodeWithScopeLength,
                offset: at,
                "code-with-scope length \(total) disagrees with its code and scope (\(scopeEnd - at) bytes)"
            )
        }
        return end
    }
}
