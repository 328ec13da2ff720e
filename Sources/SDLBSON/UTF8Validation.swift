/// Returns the offset (relative to `bytes`) of the first byte of the first ill-formed UTF-8
/// sequence in `bytes[from..<to]`, or nil when the range is well-formed UTF-8 (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF).
///
/// BSON strings are ASCII most of the time (SDL keys and enum values), so eight bytes at a time
/// are tested for a set high bit before the byte-wise state machine is entered.
@inlinable
internal func _firstInvalidUTF8(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
    var i = from
    while i &+ 8 <= to {
        let word = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        if word & 0x8080_8080_8080_8080 != 0 { break }
        i &+= 8
    }
    while i < to {
        let b0 = bytes[i]
        if b0 < 0x80 {
            i &+= 1
            continue
        }
        return _validateMultibyteUTF8(bytes, from: i, to: to)
    }
    return nil
}

@usableFromInline
internal func _validateMultibyteUTF8(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int) -> Int? {
    var i = from
    while i < to {
        let b0 = bytes[i]
        if b0 < 0x80 {
            i &+= 1
            continue
        }
        let need: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: need = 1
        case 0xE0: need = 2; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: need = 2
        case 0xED: need = 2; upper = 0x9F
        case 0xF0: need = 3; lower = 0x90
        case 0xF1...0xF3: need = 3
        case 0xF4: need = 3; upper = 0x8F
        default: return i
        }
        if i &+ need > to &- 1 { return i }
        let b1 = bytes[i &+ 1]
        if b1 < lower || b1 > upper { return i }
        var k = 2
        while k <= need {
            let b = bytes[i &+ k]
            if b < 0x80 || b > 0xBF { return i }
            k &+= 1
        }
        i &+= need &+ 1
    }
    return nil
}
