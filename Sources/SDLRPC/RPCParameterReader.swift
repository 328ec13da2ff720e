import SDLBSON

/// The source generated code decodes parameters from: a pull reader over one parameters document.
/// One conformance per wire format, in this module: a JSON reader over the text, and a BSON reader
/// over the validated document in place.
///
/// Generated code walks an object like this:
///
/// ```swift
/// try reader.beginObject()            // or: the top-level object, already entered
/// while try reader.nextKey() {
///     switch reader.keyHash {
///     case 0x08667064 where reader.currentKeyEquals("fanSpeed"): try reader.decode(&fanSpeed, "fanSpeed")
///     default: try reader.decodeUnknown(into: &unknownParameters)
///     }
/// }
/// try unknownParameters.requireUniqueKeys()   // a repeated unknown key is duplicateParameter
/// ```
///
/// After `nextKey()` returns true exactly one value must be read. `keyHash` is `RPCKeyHash` of the
/// key's (unescaped) UTF-8 bytes, computed while scanning, so a key is matched without creating a
/// `String`. Typed reads throw `typeMismatch` when the value has another type; a reader accepts any
/// integer encoding that holds the value exactly (a BSON int64 for an Int32 parameter when it fits).
public protocol RPCParameterReader {
    /// Enters the object at the current position; throws `typeMismatch` if the value is not one.
    mutating func beginObject() throws(RPCError)
    /// Moves to the next key of the innermost object; false (and leaves the object) at its end.
    mutating func nextKey() throws(RPCError) -> Bool
    /// `RPCKeyHash` of the current key.
    var keyHash: UInt32 { get }
    /// Whether the current key is `name`, compared byte for byte.
    func currentKeyEquals(_ name: StaticString) -> Bool
    /// The current key as a String (for unknown parameters and error paths).
    var currentKey: String { get }
    /// Enters the array at the current position; throws `typeMismatch` if the value is not one.
    mutating func beginArray() throws(RPCError)
    /// Moves to the next element of the innermost array; false (and leaves the array) at its end.
    mutating func nextElement() throws(RPCError) -> Bool
    /// Reads a Boolean.
    mutating func readBool() throws(RPCError) -> Bool
    /// Reads an integer that must fit 32 bits.
    mutating func readInt32() throws(RPCError) -> Int32
    /// Reads an integer that must fit 64 bits.
    mutating func readInt64() throws(RPCError) -> Int64
    /// Reads a number as a Double (integers accepted).
    mutating func readDouble() throws(RPCError) -> Double
    /// Reads a string.
    mutating func readString() throws(RPCError) -> String
    /// Reads any value, for parameters the spec does not define.
    mutating func readUnknown() throws(RPCError) -> RPCValue
    /// Reads a string naming an enum case, matched where it lies: `match` gets the name's
    /// `RPCKeyHash` and a test of the name against a candidate, and returns the case, or nil for
    /// a name it does not know, which is then read as a String for `E(wireName:)` (the `unknown`
    /// case). Generated enums decode through this, so a known name builds no String. The default
    /// reads a String first.
    mutating func readEnumeration<E: RPCEnum>(
        _ match: (_ hash: UInt32, _ equals: (StaticString) -> Bool) -> E?
    ) throws(RPCError) -> E

    /// Implementation detail of lenient decoding: a saved reading position.
    associatedtype _Mark
    /// Implementation detail: the position of the value about to be read (after `nextKey()` or
    /// `nextElement()` returned true).
    var _mark: _Mark { get }
    /// Implementation detail: goes back to a mark taken in a container that is still open, so that
    /// the marked value is read again (as raw parameters, after it failed to read typed).
    mutating func _rewind(to mark: _Mark)
    /// Implementation detail: whether non-conforming optional parts are kept raw instead of
    /// failing the decode (`RPCReceivePolicy.lenient` and `.off`). A property of the type, not of
    /// the reader, so that code specialised for a strict reader has no lenient path at all: the
    /// module's readers are strict, and lenient decoding wraps them (`_LenientParameterReader`).
    static var _keepsNonconformingParts: Bool { get }
}

extension RPCParameterReader {
    public mutating func readEnumeration<E: RPCEnum>(
        _ match: (_ hash: UInt32, _ equals: (StaticString) -> Bool) -> E?
    ) throws(RPCError) -> E {
        let name = try self.readString()
        let known = name.utf8.withContiguousStorageIfAvailable { bytes in
            match(RPCKeyHash.hash(bytes)) { candidate in
                candidate.utf8CodeUnitCount == bytes.count
                    && (bytes.isEmpty || _bsonBytesEqual(UnsafeRawPointer(bytes.baseAddress!), UnsafeRawPointer(candidate.utf8Start), bytes.count))
            }
        }
        return (known ?? nil) ?? E(wireName: name)
    }

    /// Decodes the known parameter `key` into its slot; a second occurrence is
    /// `duplicateParameter`. Errors get `key` in front of their path.
    public mutating func decode<Value: RPCParameterValue>(_ slot: inout Value?, _ key: StaticString) throws(RPCError) {
        // A pattern, not `!= nil`: the operator of an Equatable optional compares whole values.
        if case .some = slot {
            throw RPCError.duplicate(key.description)
        }
        do throws(RPCError) {
            slot = try Value(parameterFrom: &self)
        } catch {
            throw error.prefixed(.key(key.description))
        }
    }

    /// Decodes the optional parameter `key` into its slot, as `decode(_:_:)` does; when the reader
    /// keeps non-conforming parts (``RPCReceivePolicy/lenient``, ``RPCReceivePolicy/off``) a value
    /// that does not conform in a way the typed value cannot hold (a mandatory parameter missing
    /// inside it, a wrong type, a number out of the Swift type's range) leaves the slot nil and
    /// goes into `dropped` as received. The strict path is `decode(_:_:)` itself.
    @inline(__always)
    mutating func decode<Value: RPCParameterValue>(
        _ slot: inout Value?, _ key: StaticString, droppingInto dropped: inout RPCDroppedParameters
    ) throws(RPCError) {
        if Self._keepsNonconformingParts {
            try self.decodeKeepingRaw(&slot, key, droppingInto: &dropped)
        } else {
            try self.decode(&slot, key)
        }
    }

    /// Decodes the array parameter `key` into its slot, as `decode(_:_:)` does; when the reader
    /// keeps non-conforming parts, an element that does not conform goes into `dropped` with its
    /// index on the wire and the conforming ones make the typed array, and an optional parameter
    /// that is no array at all goes into `dropped` whole.
    @inline(__always)
    mutating func decodeArray<Element: RPCParameterValue>(
        _ slot: inout [Element]?, _ key: StaticString, isOptional: Bool, droppingInto dropped: inout RPCDroppedParameters
    ) throws(RPCError) {
        if Self._keepsNonconformingParts {
            try self.decodeArrayKeepingRaw(&slot, key, isOptional: isOptional, droppingInto: &dropped)
        } else {
            try self.decode(&slot, key)
        }
    }

    /// The lenient path of `decode(_:_:droppingInto:)`.
    mutating func decodeKeepingRaw<Value: RPCParameterValue>(
        _ slot: inout Value?, _ key: StaticString, droppingInto dropped: inout RPCDroppedParameters
    ) throws(RPCError) {
        if case .some = slot {
            throw RPCError.duplicate(key.description)
        }
        if dropped.contains(key) {
            throw RPCError.duplicate(key.description)
        }
        let mark = self._mark
        do throws(RPCError) {
            slot = try Value(parameterFrom: &self)
        } catch {
            guard error.isContainable else { throw error.prefixed(.key(key.description)) }
            dropped.add([try self.readDropped(at: mark, key, index: nil, because: error)])
        }
    }

    /// The lenient path of `decodeArray(_:_:isOptional:droppingInto:)`.
    mutating func decodeArrayKeepingRaw<Element: RPCParameterValue>(
        _ slot: inout [Element]?, _ key: StaticString, isOptional: Bool, droppingInto dropped: inout RPCDroppedParameters
    ) throws(RPCError) {
        if slot != nil || dropped.contains(key) {
            throw RPCError.duplicate(key.description)
        }
        let mark = self._mark
        do throws(RPCError) {
            try self.beginArray()
        } catch {
            guard isOptional, error.isContainable else { throw error.prefixed(.key(key.description)) }
            dropped.add([try self.readDropped(at: mark, key, index: nil, because: error)])
            return
        }
        var elements: [Element] = []
        var droppedElements: [RPCDroppedParameters.Entry] = []
        var index = 0
        while true {
            let more: Bool
            do throws(RPCError) {
                more = try self.nextElement()
            } catch {
                throw error.prefixed(.key(key.description))
            }
            guard more else { break }
            let elementMark = self._mark
            do throws(RPCError) {
                elements.append(try Element(parameterFrom: &self))
            } catch {
                guard error.isContainable else { throw error.prefixed(.index(index)).prefixed(.key(key.description)) }
                droppedElements.append(try self.readDropped(at: elementMark, key, index: index, because: error))
            }
            index += 1
        }
        dropped.add(droppedElements)
        slot = elements
    }

    /// Reads the value at `mark` again as raw parameters: the entry for `dropped`, with the error
    /// (its path relative to the value) that kept it out of the typed value. What cannot be read
    /// raw either (a BSON type no `RPCValue` holds) fails the decode, marked so that no enclosing
    /// optional part tries again.
    ///
    /// A part inside a part that is dropped later is read raw again then, so a byte is read at
    /// most once typed and once per enclosing dropped part: linear in the input, times at most
    /// `maxNestingDepth`.
    private mutating func readDropped(
        at mark: _Mark, _ key: StaticString, index: Int?, because error: RPCError
    ) throws(RPCError) -> RPCDroppedParameters.Entry {
        var prefix: [RPCError.PathComponent] = [.key(key.description)]
        if let index {
            prefix.append(.index(index))
        }
        self._rewind(to: mark)
        let value: RPCValue
        do throws(RPCError) {
            value = try self.readUnknown()
        } catch {
            var final = error
            final.path.insert(contentsOf: prefix, at: 0)
            final.isFinal = true
            throw final
        }
        var relative = error
        relative.path.insert(contentsOf: prefix, at: 0)
        return RPCDroppedParameters.entry(key: key, index: index, value: value, error: relative)
    }

    /// Keeps the current parameter, unknown to this spec version, with its name. The caller checks
    /// the keys once the object has ended (`RPCObject.firstRepeatedKey`): a repeated unknown key is
    /// `duplicateParameter`, as a repeated known one is.
    public mutating func decodeUnknown(into parameters: inout RPCObject) throws(RPCError) {
        let key = self.currentKey
        do throws(RPCError) {
            parameters.append(key: key, value: try self.readUnknown())
        } catch {
            throw error.prefixed(.key(key))
        }
    }
}

/// A reader that keeps non-conforming optional parts raw (``RPCReceivePolicy/lenient`` and
/// ``RPCReceivePolicy/off``): the strict reader `base`, with the lenient paths of the decoding
/// entry points switched on by its type. Generated decoders are specialised for it separately,
/// so the strict ones carry no lenient code.
struct _LenientParameterReader<Base: RPCParameterReader>: RPCParameterReader {
    var base: Base

    /// Runs `body` with a lenient reader over `base`, which then stands where that one ended.
    @inline(__always)
    static func reading<T>(_ base: inout Base, _ body: (inout Self) throws(RPCError) -> T) throws(RPCError) -> T {
        var reader = Self(base: base)
        defer { base = reader.base }
        return try body(&reader)
    }

    static var _keepsNonconformingParts: Bool { true }

    @inline(__always) mutating func beginObject() throws(RPCError) { try self.base.beginObject() }
    @inline(__always) mutating func nextKey() throws(RPCError) -> Bool { try self.base.nextKey() }
    @inline(__always) var keyHash: UInt32 { self.base.keyHash }
    @inline(__always) func currentKeyEquals(_ name: StaticString) -> Bool { self.base.currentKeyEquals(name) }
    @inline(__always) var currentKey: String { self.base.currentKey }
    @inline(__always) mutating func beginArray() throws(RPCError) { try self.base.beginArray() }
    @inline(__always) mutating func nextElement() throws(RPCError) -> Bool { try self.base.nextElement() }
    @inline(__always) mutating func readBool() throws(RPCError) -> Bool { try self.base.readBool() }
    @inline(__always) mutating func readInt32() throws(RPCError) -> Int32 { try self.base.readInt32() }
    @inline(__always) mutating func readInt64() throws(RPCError) -> Int64 { try self.base.readInt64() }
    @inline(__always) mutating func readDouble() throws(RPCError) -> Double { try self.base.readDouble() }
    @inline(__always) mutating func readString() throws(RPCError) -> String { try self.base.readString() }
    @inline(__always) mutating func readUnknown() throws(RPCError) -> RPCValue { try self.base.readUnknown() }
    @inline(__always) mutating func readEnumeration<E: RPCEnum>(
        _ match: (_ hash: UInt32, _ equals: (StaticString) -> Bool) -> E?
    ) throws(RPCError) -> E {
        try self.base.readEnumeration(match)
    }
    @inline(__always) var _mark: Base._Mark { self.base._mark }
    @inline(__always) mutating func _rewind(to mark: Base._Mark) { self.base._rewind(to: mark) }
}

extension RPCStruct {
    /// Reads the members of an object `reader` has entered, keeping non-conforming parts raw when
    /// `options.receivePolicy` says so.
    @inline(__always)
    static func read<Reader: RPCParameterReader>(from reader: inout Reader, options: RPCCodingOptions) throws(RPCError) -> Self {
        guard options.receivePolicy.keepsNonconformingParts else {
            return try Self(parametersFrom: &reader)
        }
        return try _LenientParameterReader.reading(&reader) { (lenient) throws(RPCError) in
            try Self(parametersFrom: &lenient)
        }
    }
}
