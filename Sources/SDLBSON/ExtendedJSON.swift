import NIOCore

// MongoDB Extended JSON v2 (specifications: extended-json.md), both directions.
//
// Output walks a validated `BSONDocument` in place. Canonical mode wraps every type that plain
// JSON would blur ({"$numberInt": "1"}, {"$numberDouble": "1.0"}, …); relaxed mode writes
// int32, int64 and finite doubles as JSON numbers and datetimes in 1970…9999 as ISO-8601.
// Input accepts both modes (and the documented degenerate forms: keys in any order,
// `$uuid`, legacy `{"$binary": "…", "$type": "…"}`), via the strict JSON parser, and yields a
// validated document.

/// Which Extended JSON v2 output form to produce.
public enum ExtendedJSONMode: Sendable, Hashable {
    /// Type-preserving: every non-JSON type wrapped (`{"$numberInt": "5"}`).
    case canonical
    /// Human-friendly: numbers and recent dates unwrapped (`5`, `{"$date": "2012-…Z"}`).
    case relaxed
}

extension BSONDocument {
    /// The document as Extended JSON v2 text, canonical by default.
    ///
    /// Regular-expression options are written sorted, as the spec's canonical form requires.
    public func extendedJSON(_ mode: ExtendedJSONMode = .canonical) -> String {
        var writer = _ExtendedJSONWriter(mode: mode, capacity: self._length * 2)
        writer.elements(of: self)
        return String(decoding: writer.out, as: UTF8.self)
    }

    /// Canonical Extended JSON v2 text of the document.
    public var canonicalExtendedJSON: String { self.extendedJSON(.canonical) }

    /// Relaxed Extended JSON v2 text of the document.
    public var relaxedExtendedJSON: String { self.extendedJSON(.relaxed) }

    /// Parses Extended JSON v2 text (canonical or relaxed) into a validated document.
    ///
    /// - Throws: ``BSONError/Code/invalidJSON`` for text that is not RFC 8259 JSON or whose
    ///   top-level value is not an object, ``BSONError/Code/invalidExtendedJSON`` for a malformed
    ///   `$`-wrapper, ``BSONError/Code/invalidKey`` for a NUL in a key or regex,
    ///   ``BSONError/Code/invalidDecimal128`` for a bad `$numberDecimal`,
    ///   ``BSONError/Code/duplicateKey`` for a name that appears twice in one object (RFC 8259
    ///   leaves its meaning undefined; the offset is that of the second name in the text), and
    ///   ``BSONError/Code/nestingTooDeep`` past `limits.effectiveNestingDepth`.
    public init(extendedJSON text: String, limits: BSONLimits = .default) throws(BSONError) {
        // Wrappers such as {"$date": {"$numberLong": …}} add up to two JSON levels below the
        // deepest BSON document; the BSON depth itself is checked when the result is validated.
        let json = try _JSONParser.parse(Array(text.utf8), maximumDepth: limits.effectiveNestingDepth + 2)
        guard case .object(let members) = json else {
            throw BSONError(.invalidJSON, offset: 0, "Extended JSON text must be an object")
        }
        let tree = try _ExtendedJSONReader.document(members, path: "")
        var buffer = ByteBuffer()
        try tree.write(to: &buffer)
        try self.init(validating: buffer, limits: limits)
    }
}

extension BSONOrderedDocument {
    /// The document as Extended JSON v2 text.
    ///
    /// - Throws: ``BSONError/Code/invalidKey`` if a key contains NUL (it has no BSON form).
    public func extendedJSON(_ mode: ExtendedJSONMode = .canonical) throws(BSONError) -> String {
        try self.encoded().extendedJSON(mode)
    }
}

// MARK: - Output

/// Writes Extended JSON text for elements read in place: one method per kind of value, each a
/// few appends; ``value(_:)`` dispatches on the element type.
private struct _ExtendedJSONWriter {
    let mode: ExtendedJSONMode
    var out: [UInt8] = []

    init(mode: ExtendedJSONMode, capacity: Int) {
        self.mode = mode
        self.out.reserveCapacity(capacity)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { self.out.append(contentsOf: $0) }
    }

    mutating func appendString(_ text: String) {
        var text = text
        text.withUTF8 { self.appendJSONString(UnsafeRawBufferPointer($0)) }
    }

    /// `bytes` (UTF-8) as a JSON string, escaped per RFC 8259 §7.
    mutating func appendJSONString(_ bytes: UnsafeRawBufferPointer) {
        self.out.append(UInt8(ascii: "\""))
        for b in bytes {
            switch b {
            case 0x22: self.append("\\\"")
            case 0x5C: self.append("\\\\")
            case 0x08: self.append("\\b")
            case 0x0C: self.append("\\f")
            case 0x0A: self.append("\\n")
            case 0x0D: self.append("\\r")
            case 0x09: self.append("\\t")
            case 0..<0x20:
                self.append("\\u00")
                self.out.append(Self.hexDigits[Int(b >> 4)])
                self.out.append(Self.hexDigits[Int(b & 0xF)])
            default: self.out.append(b)
            }
        }
        self.out.append(UInt8(ascii: "\""))
    }

    /// `{"key": "string"}`.
    mutating func wrapped(_ key: StaticString, _ string: String) {
        self.append("{\"")
        self.append(key)
        self.append("\": ")
        self.appendString(string)
        self.out.append(UInt8(ascii: "}"))
    }

    /// `{"key": ` + the UTF-8 of a string, code or symbol element + `}`.
    mutating func wrappedUTF8(_ key: StaticString, _ element: BSONElement) {
        self.append("{\"")
        self.append(key)
        self.append("\": ")
        element.withUTF8 { self.appendJSONString($0) }
        self.out.append(UInt8(ascii: "}"))
    }

    /// A document as a JSON object, or an array's items as a JSON array (their keys dropped).
    mutating func elements(of document: BSONDocument, asArray: Bool = false) {
        self.out.append(asArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
        var first = true
        for element in document {
            if !first { self.append(", ") }
            first = false
            if !asArray {
                element.withUnsafeKeyBytes { self.appendJSONString($0) }
                self.append(": ")
            }
            self.value(element)
        }
        self.out.append(asArray ? UInt8(ascii: "]") : UInt8(ascii: "}"))
    }

    mutating func value(_ element: BSONElement) {
        switch element.type {
        case .double: self.double(element.doubleValue!)
        case .string: element.withUTF8 { self.appendJSONString($0) }
        case .document: self.elements(of: element.documentValue!)
        case .array: self.elements(of: element.arrayValue!, asArray: true)
        case .binary: self.binary(element.binaryValue!)
        case .undefined: self.append("{\"$undefined\": true}")
        case .objectID: self.wrapped("$oid", element.objectIDValue!.description)
        case .bool: self.append(element.boolValue! ? "true" : "false")
        case .datetime: self.dateTime(element.dateTimeValue!.millisecondsSinceEpoch)
        case .null: self.append("null")
        case .regularExpression: self.regularExpression(element.regularExpressionValue!)
        case .dbPointer: self.dbPointer(element.dbPointerValue!)
        case .javascript: self.wrappedUTF8("$code", element)
        case .symbol: self.wrappedUTF8("$symbol", element)
        case .javascriptWithScope: self.codeWithScope(element.javascriptWithScopeValue!)
        case .int32: self.integer(String(element.int32Value!), "$numberInt")
        case .timestamp: self.timestamp(element.timestampValue!)
        case .int64: self.integer(String(element.int64Value!), "$numberLong")
        case .decimal128: self.wrapped("$numberDecimal", element.decimal128Value!.description)
        case .minKey: self.append("{\"$minKey\": 1}")
        default: self.append("{\"$maxKey\": 1}")  // validation admits no other type
        }
    }

    /// Relaxed mode writes finite doubles as JSON numbers; the rest is `$numberDouble`.
    mutating func double(_ value: Double) {
        if self.mode == .relaxed && value.isFinite {
            self.out.append(contentsOf: _formatDouble(value).utf8)
        } else {
            self.wrapped("$numberDouble", _formatDouble(value))
        }
    }

    /// Relaxed mode writes integers as JSON numbers; canonical mode wraps them in `wrapper`.
    mutating func integer(_ digits: String, _ wrapper: StaticString) {
        if self.mode == .relaxed {
            self.out.append(contentsOf: digits.utf8)
        } else {
            self.wrapped(wrapper, digits)
        }
    }

    /// Relaxed mode writes the years 1970…9999 as ISO-8601; the rest is `$numberLong`.
    mutating func dateTime(_ ms: Int64) {
        if self.mode == .relaxed && ms >= 0 && ms <= 253_402_300_799_999 {
            self.append("{\"$date\": ")
            self.appendString(_iso8601(ms))
            self.out.append(UInt8(ascii: "}"))
        } else {
            self.append("{\"$date\": {\"$numberLong\": \"")
            self.out.append(contentsOf: String(ms).utf8)
            self.append("\"}}")
        }
    }

    mutating func binary(_ binary: BSONBinary) {
        self.append("{\"$binary\": {\"base64\": ")
        self.appendString(_base64Encode(binary.bytes))
        self.append(", \"subType\": \"")
        self.out.append(Self.hexDigits[Int(binary.subtype.rawValue >> 4)])
        self.out.append(Self.hexDigits[Int(binary.subtype.rawValue & 0xF)])
        self.append("\"}}")
    }

    mutating func regularExpression(_ regex: BSONRegularExpression) {
        self.append("{\"$regularExpression\": {\"pattern\": ")
        self.appendString(regex.pattern)
        self.append(", \"options\": ")
        self.appendString(regex.sortedOptions)
        self.append("}}")
    }

    mutating func dbPointer(_ pointer: BSONDBPointer) {
        self.append("{\"$dbPointer\": {\"$ref\": ")
        self.appendString(pointer.ref)
        self.append(", \"$id\": ")
        self.wrapped("$oid", pointer.id.description)
        self.append("}}")
    }

    mutating func codeWithScope(_ cws: (code: String, scope: BSONDocument)) {
        self.append("{\"$code\": ")
        self.appendString(cws.code)
        self.append(", \"$scope\": ")
        self.elements(of: cws.scope)
        self.out.append(UInt8(ascii: "}"))
    }

    mutating func timestamp(_ ts: BSONTimestamp) {
        self.append("{\"$timestamp\": {\"t\": ")
        self.out.append(contentsOf: String(ts.timestamp).utf8)
        self.append(", \"i\": ")
        self.out.append(contentsOf: String(ts.increment).utf8)
        self.append("}}")
    }
}

/// Extended JSON's double text: the shortest string that round-trips (Swift's `description`),
/// with an exponent written `E+n`/`E-n` and a mantissa that always has a fraction (`1.0E+16`),
/// plus `Infinity`, `-Infinity` and `NaN`. Swift switches to the exponent form above 2^53 and
/// below 1e-4; the corpus values (`1.0`, `-0.0`, `1.2345678921232E+18`) come out verbatim.
internal func _formatDouble(_ value: Double) -> String {
    if value.isNaN { return "NaN" }
    if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
    let text = value.description
    guard let e = text.firstIndex(of: "e") else {
        return text.contains(".") ? text : text + ".0"
    }
    var mantissa = String(text[..<e])
    if !mantissa.contains(".") { mantissa += ".0" }
    var exponent = text[text.index(after: e)...]
    var sign = "+"
    if exponent.first == "-" || exponent.first == "+" {
        if exponent.first == "-" { sign = "-" }
        exponent = exponent.dropFirst()
    }
    while exponent.count > 1 && exponent.first == "0" { exponent = exponent.dropFirst() }
    return mantissa + "E" + sign + exponent
}

/// `YYYY-MM-DDTHH:MM:SS[.mmm]Z` for a millisecond count in 0…253402300799999.
internal func _iso8601(_ ms: Int64) -> String {
    let days = ms.quotientAndRemainder(dividingBy: 86_400_000)
    var dayCount = days.quotient
    var msOfDay = days.remainder
    if msOfDay < 0 {
        msOfDay += 86_400_000
        dayCount -= 1
    }
    // Days to civil date (proleptic Gregorian), after H. Hinnant's public-domain derivation.
    let z = dayCount + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    var year = yoe + era * 400
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    if month <= 2 { year += 1 }
    func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
    let millis = msOfDay % 1000
    let seconds = msOfDay / 1000
    var out = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
    out += "\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2)):\(pad(seconds % 60, 2))"
    if millis != 0 { out += "." + pad(millis, 3) }
    return out + "Z"
}

/// Days since 1970-01-01 of a civil date (inverse of the above).
private func _daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
}

/// Why an ISO-8601 date-time was refused, for the error detail.
internal struct _ISO8601Problem: Error {
    let detail: String
}

/// The days of `month` (1…12) in `year` of the proleptic Gregorian calendar: February has 29
/// in years divisible by 4, except centuries not divisible by 400 (2000 and 2012 leap, 1900 not).
internal func _daysInMonth(_ month: Int64, year: Int64) -> Int64 {
    switch month {
    case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
}

/// Parses an RFC 3339 / ISO-8601 date-time: `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM|±HHMM)`.
///
/// Every field must name a real instant: a day past its month's end or an hour, minute or second
/// out of range is refused, not normalised (2012-02-31 is not March 2). A leap second (:60) is
/// refused too: a BSON datetime counts POSIX milliseconds, which have no 61st second, so :60 could
/// only be stored as the next minute's :00 and would not round-trip, and whether a given :60
/// was a real leap second takes a table the format cannot carry.
internal func _parseISO8601(_ text: String) throws(_ISO8601Problem) -> Int64 {
    let b = Array(text.utf8)
    var i = 0
    func number(_ width: Int) -> Int64? {
        guard i + width <= b.count else { return nil }
        var v: Int64 = 0
        for k in 0..<width {
            let c = b[i + k]
            guard c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") else { return nil }
            v = v * 10 + Int64(c - UInt8(ascii: "0"))
        }
        i += width
        return v
    }
    func expect(_ c: Character) -> Bool {
        guard i < b.count, b[i] == c.asciiValue! else { return false }
        i += 1
        return true
    }
    let form = _ISO8601Problem(detail: "is not YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)")
    guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
        expect("T"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
        let second = number(2)
    else { throw form }
    guard (1...12).contains(month) else { throw _ISO8601Problem(detail: "has no month \(month)") }
    let monthDays = _daysInMonth(month, year: year)
    guard (1...monthDays).contains(day) else {
        throw _ISO8601Problem(detail: "has day \(day), but month \(month) of \(year) has \(monthDays) days")
    }
    guard hour <= 23 else { throw _ISO8601Problem(detail: "has hour \(hour)") }
    guard minute <= 59 else { throw _ISO8601Problem(detail: "has minute \(minute)") }
    guard second <= 59 else { throw _ISO8601Problem(detail: "has second \(second) (leap seconds have no BSON datetime)") }
    var millis: Int64 = 0
    if i < b.count, b[i] == UInt8(ascii: ".") {
        i += 1
        var digits = 0
        while i < b.count, b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") {
            if digits < 3 { millis = millis * 10 + Int64(b[i] - UInt8(ascii: "0")) }
            digits += 1
            i += 1
        }
        guard digits > 0 else { throw form }
        for _ in digits..<max(digits, 3) { millis *= 10 }
    }
    var offsetMinutes: Int64 = 0
    guard i < b.count else { throw form }
    if b[i] == UInt8(ascii: "Z") {
        i += 1
    } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
        let negative = b[i] == UInt8(ascii: "-")
        i += 1
        guard let oh = number(2) else { throw form }
        _ = expect(":")
        guard let om = number(2) else { throw form }
        guard oh <= 23, om <= 59 else { throw _ISO8601Problem(detail: "has an out-of-range UTC offset") }
        offsetMinutes = (oh * 60 + om) * (negative ? -1 : 1)
    } else {
        throw form
    }
    guard i == b.count else { throw form }
    let days = _daysFromCivil(year: year, month: month, day: day)
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
    return seconds * 1000 + millis
}

private let _base64Alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

internal func _base64Encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 3 <= bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out.append(_base64Alphabet[Int(v >> 18 & 63)])
        out.append(_base64Alphabet[Int(v >> 12 & 63)])
        out.append(_base64Alphabet[Int(v >> 6 & 63)])
        out.append(_base64Alphabet[Int(v & 63)])
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let v = UInt32(bytes[i]) << 16
        out.append(_base64Alphabet[Int(v >> 18 & 63)])
        out.append(_base64Alphabet[Int(v >> 12 & 63)])
        out.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
    } else if rest == 2 {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out.append(_base64Alphabet[Int(v >> 18 & 63)])
        out.append(_base64Alphabet[Int(v >> 12 & 63)])
        out.append(_base64Alphabet[Int(v >> 6 & 63)])
        out.append(UInt8(ascii: "="))
    }
    return String(decoding: out, as: UTF8.self)
}

/// Strict RFC 4648 base64 with padding; nil for anything else.
internal func _base64Decode(_ text: String) -> [UInt8]? {
    let b = Array(text.utf8)
    guard b.count % 4 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(b.count / 4 * 3)
    func value(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
    var i = 0
    while i < b.count {
        let last = i + 4 == b.count
        let pad = last ? (b[i + 3] == UInt8(ascii: "=") ? (b[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
        guard let v0 = value(b[i]), let v1 = value(b[i + 1]) else { return nil }
        let v2 = pad >= 2 ? 0 : value(b[i + 2])
        let v3 = pad >= 1 ? 0 : value(b[i + 3])
        guard let v2, let v3 else { return nil }
        let v = v0 << 18 | v1 << 12 | v2 << 6 | v3
        out.append(UInt8(truncatingIfNeeded: v >> 16))
        if pad < 2 { out.append(UInt8(truncatingIfNeeded: v >> 8)) }
        if pad < 1 { out.append(UInt8(truncatingIfNeeded: v)) }
        i += 4
    }
    return out
}

// MARK: - Input

private enum _ExtendedJSONReader {
    static let wrapperKeys: Set<String> = [
        "$oid", "$symbol", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal", "$binary", "$uuid",
        "$code", "$scope", "$timestamp", "$regularExpression", "$dbPointer", "$date", "$minKey", "$maxKey",
        "$undefined",
    ]

    static func fail(_ path: String, _ detail: String) -> BSONError {
        BSONError(.invalidExtendedJSON, offset: nil, "\(path.isEmpty ? "top level" : path): \(detail)")
    }

    /// Refuses an object in which a name repeats: RFC 8259 leaves its meaning undefined, and a
    /// document (or a wrapper) can take only one value per key.
    static func requireUniqueNames(_ members: [_JSONMember], path: String) throws(BSONError) {
        if let repeated = _MemberNames.firstRepeat(in: members) {
            throw BSONError(
                .duplicateKey,
                offset: repeated.keyOffset,
                "\(path.isEmpty ? "top level" : path): the name \"\(repeated.key)\" appears more than once in one object"
            )
        }
    }

    static func document(_ members: [_JSONMember], path: String) throws(BSONError) -> BSONOrderedDocument {
        try self.requireUniqueNames(members, path: path)
        var document = BSONOrderedDocument()
        document.fields.reserveCapacity(members.count)
        for member in members {
            let key = member.key
            let value = member.value
            let childPath = path.isEmpty ? key : path + "." + key
            if key.utf8.contains(0) {
                throw BSONError(.invalidKey, offset: nil, "key \"\(childPath)\" contains a NUL byte")
            }
            document.append(key, try self.value(value, path: childPath))
        }
        return document
    }

    static func value(_ json: _JSONValue, path: String) throws(BSONError) -> BSONValue {
        switch json {
        case .string(let s): return .string(s)
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .number(let text): return try self.relaxedNumber(text, path: path)
        case .array(let items):
            var values: [BSONValue] = []
            values.reserveCapacity(items.count)
            for (i, item) in items.enumerated() { values.append(try self.value(item, path: "\(path).\(i)")) }
            return .array(values)
        case .object(let members):
            if members.contains(where: { self.wrapperKeys.contains($0.key) }) {
                return try self.wrapper(members, path: path)
            }
            return .document(try self.document(members, path: path))
        }
    }

    /// Relaxed numbers: integers to int32 when they fit, else int64, else double; anything with
    /// a fraction or exponent to double.
    static func relaxedNumber(_ text: String, path: String) throws(BSONError) -> BSONValue {
        if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
            if let v = Int32(text) { return .int32(v) }
            if let v = Int64(text) { return .int64(v) }
        }
        guard let d = Double(text), d.isFinite else { throw self.fail(path, "number \(text) is not a finite double") }
        return .double(d)
    }

    static func single(_ members: [_JSONMember], _ key: String, path: String) throws(BSONError) -> _JSONValue {
        guard members.count == 1, members[0].key == key else {
            throw self.fail(path, "\(key) must be the only key of its object")
        }
        return members[0].value
    }

    static func string(_ value: _JSONValue, _ what: String, path: String) throws(BSONError) -> String {
        guard case .string(let s) = value else { throw self.fail(path, "\(what) must be a string") }
        return s
    }

    /// Exactly the keys `keys` (any order), each once.
    static func fields(
        _ value: _JSONValue,
        _ keys: [String],
        _ what: String,
        path: String
    ) throws(BSONError) -> [String: _JSONValue] {
        guard case .object(let members) = value else { throw self.fail(path, "\(what) must be an object") }
        try self.requireUniqueNames(members, path: path)
        var found: [String: _JSONValue] = [:]
        for member in members {
            let key = member.key
            let v = member.value
            guard keys.contains(key), found[key] == nil else {
                throw self.fail(path, "\(what) has an unexpected key \"\(key)\"")
            }
            found[key] = v
        }
        guard found.count == keys.count else { throw self.fail(path, "\(what) needs the keys \(keys)") }
        return found
    }

    static func uint32(_ value: _JSONValue, _ what: String, path: String) throws(BSONError) -> UInt32 {
        guard case .number(let text) = value, let v = UInt32(text) else {
            throw self.fail(path, "\(what) must be an integer in 0…4294967295")
        }
        return v
    }

    static func objectID(_ value: _JSONValue, path: String) throws(BSONError) -> BSONObjectID {
        guard case .object(let members) = value else { throw self.fail(path, "$id must be an {\"$oid\": …} object") }
        let hex = try self.string(try self.single(members, "$oid", path: path), "$oid", path: path)
        guard let id = BSONObjectID(hexString: hex) else { throw self.fail(path, "$oid must be 24 hex digits") }
        return id
    }

    /// An object with a `$` key.
    static func wrapper(_ members: [_JSONMember], path: String) throws(BSONError) -> BSONValue {
        try self.requireUniqueNames(members, path: path)
        if members.contains(where: { $0.key == "$code" || $0.key == "$scope" }) {
            return try self.code(members, path: path)
        }
        if members.count == 2, let binary = try self.legacyBinary(members, path: path) {
            return .binary(binary)
        }
        guard members.count == 1 else { throw self.fail(path, "\(members[0].key) must be the only key of its object") }
        let value = members[0].value
        switch members[0].key {
        case "$oid": return .objectID(try self.objectID(.object(members), path: path))
        case "$symbol": return .symbol(try self.string(value, "$symbol", path: path))
        case "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal":
            return try self.number(members[0].key, value, path: path)
        case "$binary":
            let f = try self.fields(value, ["base64", "subType"], "$binary", path: path)
            let base64 = try self.string(f["base64"]!, "base64", path: path)
            return .binary(try self.binary(base64: base64, subtype: try self.string(f["subType"]!, "subType", path: path), path: path))
        case "$uuid": return .binary(try self.uuid(try self.string(value, "$uuid", path: path), path: path))
        case "$timestamp":
            let f = try self.fields(value, ["t", "i"], "$timestamp", path: path)
            let t = try self.uint32(f["t"]!, "$timestamp.t", path: path)
            return .timestamp(BSONTimestamp(timestamp: t, increment: try self.uint32(f["i"]!, "$timestamp.i", path: path)))
        case "$regularExpression": return .regularExpression(try self.regularExpression(value, path: path))
        case "$dbPointer":
            let f = try self.fields(value, ["$ref", "$id"], "$dbPointer", path: path)
            let ref = try self.string(f["$ref"]!, "$ref", path: path)
            return .dbPointer(BSONDBPointer(ref: ref, id: try self.objectID(f["$id"]!, path: path)))
        case "$date": return .datetime(try self.date(value, path: path))
        case "$minKey":
            guard case .number("1") = value else { throw self.fail(path, "$minKey must be 1") }
            return .minKey
        case "$maxKey":
            guard case .number("1") = value else { throw self.fail(path, "$maxKey must be 1") }
            return .maxKey
        case "$undefined":
            guard case .bool(true) = value else { throw self.fail(path, "$undefined must be true") }
            return .undefined
        default:
            throw self.fail(path, "\(members[0].key) is not an Extended JSON wrapper")
        }
    }

    /// `{"$code": …}` or `{"$code": …, "$scope": {…}}`.
    static func code(_ members: [_JSONMember], path: String) throws(BSONError) -> BSONValue {
        guard let code = members.first(where: { $0.key == "$code" }) else { throw self.fail(path, "$scope without $code") }
        let text = try self.string(code.value, "$code", path: path)
        if members.count == 1 { return .javascript(text) }
        guard members.count == 2, let scope = members.first(where: { $0.key == "$scope" }) else {
            throw self.fail(path, "$code allows only $scope beside it")
        }
        guard case .object(let scopeMembers) = scope.value else { throw self.fail(path, "$scope must be an object") }
        return .javascriptWithScope(BSONCodeWithScope(code: text, scope: try self.document(scopeMembers, path: path)))
    }

    /// The legacy form `{"$binary": "<base64>", "$type": "<hex>"}`, or nil for another object.
    static func legacyBinary(_ members: [_JSONMember], path: String) throws(BSONError) -> BSONBinary? {
        guard case .string(let base64)? = members.first(where: { $0.key == "$binary" })?.value,
            let type = members.first(where: { $0.key == "$type" })
        else { return nil }
        return try self.binary(base64: base64, subtype: try self.string(type.value, "$type", path: path), path: path)
    }

    /// `$numberInt`, `$numberLong`, `$numberDouble` and `$numberDecimal`: the number as a string.
    static func number(_ key: String, _ value: _JSONValue, path: String) throws(BSONError) -> BSONValue {
        let text = try self.string(value, key, path: path)
        switch key {
        case "$numberInt":
            guard self.isInteger(text), let v = Int32(text) else { throw self.fail(path, "$numberInt \"\(text)\" is not an int32") }
            return .int32(v)
        case "$numberLong":
            guard self.isInteger(text), let v = Int64(text) else { throw self.fail(path, "$numberLong \"\(text)\" is not an int64") }
            return .int64(v)
        case "$numberDecimal":
            return .decimal128(try BSONDecimal128(text))
        default:
            switch text {
            case "Infinity": return .double(.infinity)
            case "-Infinity": return .double(-.infinity)
            case "NaN": return .double(.nan)
            default:
                guard self.isDecimalNumber(text), let d = Double(text), d.isFinite else {
                    throw self.fail(path, "$numberDouble \"\(text)\" is not a double")
                }
                return .double(d)
            }
        }
    }

    /// `$uuid`: 32 hex digits in the 8-4-4-4-12 layout, as binary subtype 4.
    static func uuid(_ text: String, path: String) throws(BSONError) -> BSONBinary {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { throw self.fail(path, "$uuid must be 36 characters") }
        var bytes: [UInt8] = []
        var i = 0
        while i < 36 {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard utf8[i] == UInt8(ascii: "-") else { throw self.fail(path, "$uuid hyphens misplaced") }
                i += 1
                continue
            }
            guard i + 1 < 36, let hi = hexValue(utf8[i]), let lo = hexValue(utf8[i + 1]) else {
                throw self.fail(path, "$uuid must be hex digits")
            }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        guard bytes.count == 16 else { throw self.fail(path, "$uuid must hold 16 bytes") }
        return BSONBinary(subtype: .uuid, bytes: bytes)
    }

    /// `$regularExpression`: pattern and options; the options are stored sorted (canonical).
    static func regularExpression(_ value: _JSONValue, path: String) throws(BSONError) -> BSONRegularExpression {
        let f = try self.fields(value, ["pattern", "options"], "$regularExpression", path: path)
        let pattern = try self.string(f["pattern"]!, "pattern", path: path)
        let options = try self.string(f["options"]!, "options", path: path)
        if pattern.utf8.contains(0) || options.utf8.contains(0) {
            throw BSONError(.invalidKey, offset: nil, "\(path): regular expression contains a NUL byte")
        }
        return BSONRegularExpression(pattern: pattern, options: BSONRegularExpression(pattern: "", options: options).sortedOptions)
    }

    /// `$date`: an ISO-8601 string (relaxed) or `{"$numberLong": …}` (canonical).
    static func date(_ value: _JSONValue, path: String) throws(BSONError) -> BSONDateTime {
        switch value {
        case .string(let iso):
            do {
                return BSONDateTime(millisecondsSinceEpoch: try _parseISO8601(iso))
            } catch {
                throw self.fail(path, "$date \"\(iso)\" \(error.detail)")
            }
        case .object(let inner):
            let text = try self.string(try self.single(inner, "$numberLong", path: path), "$numberLong", path: path)
            guard self.isInteger(text), let ms = Int64(text) else { throw self.fail(path, "$date $numberLong is not an int64") }
            return BSONDateTime(millisecondsSinceEpoch: ms)
        default:
            throw self.fail(path, "$date must be an ISO-8601 string or {\"$numberLong\": …}")
        }
    }

    static func binary(base64: String, subtype: String, path: String) throws(BSONError) -> BSONBinary {
        let s = Array(subtype.utf8)
        guard (1...2).contains(s.count), let hi = hexValue(s[0]) else { throw self.fail(path, "subType must be 1–2 hex digits") }
        var type = hi
        if s.count == 2 {
            guard let lo = hexValue(s[1]) else { throw self.fail(path, "subType must be 1–2 hex digits") }
            type = hi << 4 | lo
        }
        guard let bytes = _base64Decode(base64) else { throw self.fail(path, "base64 is not valid RFC 4648 base64") }
        return BSONBinary(subtype: BSONBinary.Subtype(rawValue: type), bytes: bytes)
    }

    /// `-?digits`, as $numberInt and $numberLong carry them (no '+', no spaces).
    static func isInteger(_ text: String) -> Bool {
        var utf8 = Substring(text).utf8[...]
        if utf8.first == UInt8(ascii: "-") { utf8 = utf8.dropFirst() }
        return !utf8.isEmpty && utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// `-?(digits[.digits*]|.digits)([eE][+-]?digits)?` – what a $numberDouble may hold besides the
    /// three special names (Swift's `Double(_:)` alone would also take "inf", hex floats, …).
    static func isDecimalNumber(_ text: String) -> Bool {
        let b = Array(text.utf8)
        var i = 0
        func digits() -> Int {
            let start = i
            while i < b.count, b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }
        if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
        var mantissaDigits = digits()
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            mantissaDigits += digits()
        }
        guard mantissaDigits > 0 else { return false }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { return false }
        }
        return i == b.count
    }
}

/// The first member of a JSON object whose name an earlier member has, found in time linear in
/// the object's size: a scan of the few members of a typical object, a hash set past
/// ``linearLimit``. Names compare as UTF-8 bytes, as BSON keys do (String equality is canonical
/// equivalence, which would call two different keys the same).
private struct _MemberNames {
    static let linearLimit = 16

    static func firstRepeat(in members: [_JSONMember]) -> _JSONMember? {
        var names = _MemberNames()
        for (i, member) in members.enumerated() where !names.insert(member.key, members: members[..<i]) {
            return member
        }
        return nil
    }

    /// A name hashed and compared by its UTF-8 bytes.
    private struct Name: Hashable {
        let text: String
        static func == (lhs: Name, rhs: Name) -> Bool { lhs.text.utf8.elementsEqual(rhs.text.utf8) }
        func hash(into hasher: inout Hasher) {
            for byte in self.text.utf8 { hasher.combine(byte) }
        }
    }

    private var set: Set<Name>?

    /// Records `name`, the next member's, after `members`; false if one of them has it already.
    mutating func insert(_ name: String, members: ArraySlice<_JSONMember>) -> Bool {
        if self.set == nil {
            if members.count < Self.linearLimit {
                return !members.contains { $0.key.utf8.elementsEqual(name.utf8) }
            }
            self.set = Set(members.map { Name(text: $0.key) })
        }
        return self.set!.insert(Name(text: name)).inserted
    }
}
