/// A parameter value of any shape, as JSON or BSON carries it.
///
/// Generated types keep parameters the spec does not define in an `RPCObject` of these values, so
/// that a message from a newer peer re-encodes with them intact. Integers keep their wire width
/// (`int32` or `int64`), which BSON needs; JSON integers decode as `int32` when they fit, else
/// `int64`, and other numbers as `double`.
public enum RPCValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int32(Int32)
    case int64(Int64)
    case double(Double)
    case string(String)
    case array([RPCValue])
    case object(RPCObject)
}

/// An ordered list of named `RPCValue`s: a JSON object or BSON document whose keys keep their
/// order on the wire.
///
/// Keys are unique: RFC 8259 leaves repeated names undefined and peers disagree (SDL Core's jsoncpp
/// and `JSONSerialization` keep the last, others the first), so decoders refuse a repeated key in
/// any object as `duplicateParameter`, and encoders refuse to write an object that has one. Keys
/// are compared as UTF-8 bytes, as the wire compares them (generated decoders and SDLBSON do):
/// a precomposed "é" and a decomposed "é" are two keys, though Swift's `==` calls the Strings
/// equal.
public struct RPCObject: Hashable, Sendable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// One named value.
    public struct Entry: Hashable, Sendable {
        public var key: String
        public var value: RPCValue

        public init(key: String, value: RPCValue) {
            self.key = key
            self.value = value
        }
    }

    /// The entries in wire order. Decoded objects have unique keys; encoders check it.
    public var entries: [Entry]

    /// An empty object.
    public init() { self.entries = [] }

    public init(_ entries: [Entry]) { self.entries = entries }

    public init(dictionaryLiteral elements: (String, RPCValue)...) {
        self.entries = elements.map { Entry(key: $0.0, value: $0.1) }
    }

    public var startIndex: Int { self.entries.startIndex }
    public var endIndex: Int { self.entries.endIndex }
    public subscript(position: Int) -> Entry { self.entries[position] }

    /// The value named `key` (the same UTF-8 bytes); setting replaces it, or appends when absent;
    /// nil removes it.
    public subscript(key: String) -> RPCValue? {
        get { self.entries.first(where: { RPCKeyBytes.equal($0.key, key) })?.value }
        set {
            if let newValue {
                if let index = self.entries.firstIndex(where: { RPCKeyBytes.equal($0.key, key) }) {
                    self.entries[index].value = newValue
                } else {
                    self.entries.append(Entry(key: key, value: newValue))
                }
            } else {
                self.entries.removeAll(where: { RPCKeyBytes.equal($0.key, key) })
            }
        }
    }

    /// Appends an entry without looking for the key (decoders build objects with it, then check
    /// them once); encoding an object whose key is repeated throws `duplicateParameter`.
    public mutating func append(key: String, value: RPCValue) {
        self.entries.append(Entry(key: key, value: value))
    }

    /// The first key that appears again (the same UTF-8 bytes), at its second appearance; nil when
    /// every key is unique. Linear in the number of entries: small objects compare pairwise,
    /// larger ones use a set.
    public var firstRepeatedKey: String? {
        let count = self.entries.count
        if count < 2 { return nil }
        if count <= 8 {
            for index in 1..<count {
                let key = self.entries[index].key
                for earlier in 0..<index where RPCKeyBytes.equal(self.entries[earlier].key, key) {
                    return key
                }
            }
            return nil
        }
        var seen = Set<RPCKeyBytes.Key>(minimumCapacity: count)
        for entry in self.entries where !seen.insert(RPCKeyBytes.Key(name: entry.key)).inserted {
            return entry.key
        }
        return nil
    }

    /// Throws `duplicateParameter`, with the key as its path, when a key appears twice. Decoders
    /// call it once an object has ended, so a large object costs one pass, not one per key.
    func requireUniqueKeys() throws(RPCError) {
        if let key = self.firstRepeatedKey {
            throw RPCError.duplicate(key)
        }
    }
}

extension RPCError {
    static func duplicate(_ key: String) -> RPCError {
        RPCError(.duplicateParameter, path: [.key(key)], "parameter appears more than once")
    }
}
