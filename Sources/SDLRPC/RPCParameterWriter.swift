/// The sink generated code encodes parameters into: typed appends under a key, and object and array
/// scopes. One conformance per wire format, in this module: a compact JSON writer, and a BSON
/// writer on SDLBSON's `BSONStreamWriter`.
///
/// A writer starts inside the top-level parameters object. Each `begin…` is matched by its `end…`;
/// inside an array scope every key is `RPCKey.element`. Integers come with their wire width:
/// `writeInt32` for Integer parameters whose spec range fits 32 bits, `writeInt64` where it does not
/// (e.g. GetFile response `crc`, up to 4294967295), as BSON has to choose an element type.
///
/// Appends do not throw, to keep the hot path branch-free; a writer that meets a value its format
/// cannot carry (JSON has no NaN) records the error and reports it when finished.
public protocol RPCParameterWriter {
    /// Appends a Boolean parameter.
    mutating func writeBool(_ value: Bool, forKey key: RPCKey)
    /// Appends an Integer parameter whose spec range fits 32 bits.
    mutating func writeInt32(_ value: Int32, forKey key: RPCKey)
    /// Appends an Integer parameter whose spec range needs 64 bits.
    mutating func writeInt64(_ value: Int64, forKey key: RPCKey)
    /// Appends a Float parameter.
    mutating func writeDouble(_ value: Double, forKey key: RPCKey)
    /// Appends a String parameter, or an enum parameter by its wire name.
    mutating func writeString(_ value: String, forKey key: RPCKey)
    /// Opens a nested object (a struct parameter).
    mutating func beginObject(forKey key: RPCKey)
    /// Closes the innermost object.
    mutating func endObject()
    /// Opens an array; its elements are written with `RPCKey.element`.
    mutating func beginArray(forKey key: RPCKey)
    /// Closes the innermost array.
    mutating func endArray()
    /// Appends a parameter the spec does not define, with its name, in an object scope.
    mutating func writeUnknown(_ value: RPCValue, forKey key: String)
    /// Appends a raw value as the next element, in an array scope (an element lenient decoding
    /// dropped, written back in its place).
    mutating func writeUnknownElement(_ value: RPCValue)
}

extension RPCParameterWriter {
    /// Encodes a mandatory parameter.
    public mutating func encode<Value: RPCParameterValue>(_ value: Value, forKey key: RPCKey) {
        value.encode(to: &self, forKey: key)
    }

    /// Encodes an optional parameter; nothing when nil.
    public mutating func encodeIfPresent<Value: RPCParameterValue>(_ value: Value?, forKey key: RPCKey) {
        if let value {
            value.encode(to: &self, forKey: key)
        }
    }

    /// Encodes an optional parameter; when nil, the value lenient decoding dropped for it, as it
    /// was received, if there is one (``RPCDroppedParameters``). The generated encoders' entry
    /// point, as the two below: they take the struct's `extraParameters`, whose emptiness is one
    /// pointer test, so that a value with nothing dropped costs what it did before lenient
    /// decoding existed.
    @inline(__always)
    mutating func encodeIfPresent<Value: RPCParameterValue>(
        _ value: Value?, forKey key: RPCKey, orDropped extras: RPCExtraParameters
    ) {
        if let value {
            value.encode(to: &self, forKey: key)
        } else if !extras.isEmpty {
            self.encodeDropped(extras.dropped, forKey: key)
        }
    }

    /// Encodes an array parameter with the elements lenient decoding dropped from it back at their
    /// indices (``RPCDroppedParameters``).
    @inline(__always)
    mutating func encodeArray<Element: RPCParameterValue>(
        _ value: [Element], forKey key: RPCKey, merging extras: RPCExtraParameters
    ) {
        if extras.isEmpty {
            value.encode(to: &self, forKey: key)
        } else {
            self.encodeMerging(value, forKey: key, extras.dropped)
        }
    }

    /// Encodes an optional array parameter as `encodeArray(_:forKey:merging:)` does; when nil, what
    /// lenient decoding dropped for it, if anything.
    @inline(__always)
    mutating func encodeArrayIfPresent<Element: RPCParameterValue>(
        _ value: [Element]?, forKey key: RPCKey, merging extras: RPCExtraParameters
    ) {
        if let value {
            self.encodeArray(value, forKey: key, merging: extras)
        } else if !extras.isEmpty {
            self.encodeDropped(extras.dropped, forKey: key)
        }
    }

    /// Writes what was dropped for parameter `key`, whose typed property is nil: the whole value,
    /// or (the typed array having been set to nil since) the dropped elements alone.
    @inline(never)
    private mutating func encodeDropped(_ dropped: RPCDroppedParameters, forKey key: RPCKey) {
        let name = key.name.description
        let entries = dropped.entries[dropped.range(forKey: name)]
        guard let first = entries.first else { return }
        if first.index == nil {
            self.writeUnknown(first.value, forKey: name)
            return
        }
        self.beginArray(forKey: key)
        for entry in entries {
            self.writeUnknownElement(entry.value)
        }
        self.endArray()
    }

    /// Writes the typed elements with the dropped ones at their wire indices
    /// (`RPCDroppedParameters.merge`).
    @inline(never)
    private mutating func encodeMerging<Element: RPCParameterValue>(
        _ value: [Element], forKey key: RPCKey, _ dropped: RPCDroppedParameters
    ) {
        let elements = dropped.elements(forKey: key.name.description)
        if elements.isEmpty {
            value.encode(to: &self, forKey: key)
            return
        }
        self.beginArray(forKey: key)
        for (_, source) in RPCDroppedParameters.merge(typedCount: value.count, elements) {
            switch source {
            case .typed(let index): value[index].encode(to: &self, forKey: .element)
            case .dropped(let entry): self.writeUnknownElement(entry.value)
            }
        }
        self.endArray()
    }

    /// Re-emits the parameters a generated struct did not know, in their order.
    @inline(__always)
    mutating func encodeUnknown(_ extras: RPCExtraParameters) {
        if !extras.isEmpty {
            self.encodeUnknown(extras.unknown)
        }
    }

    /// Re-emits the parameters a decoder did not know, in their order.
    public mutating func encodeUnknown(_ parameters: RPCObject) {
        for entry in parameters.entries {
            self.writeUnknown(entry.value, forKey: entry.key)
        }
    }
}
