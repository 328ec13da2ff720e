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

    /// The entries in wire order. Keys are not required to be unique (a decoder keeps what came).
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

    /// The first value named `key`; setting replaces it, or appends when absent; nil removes all.
    public subscript(key: String) -> RPCValue? {
        get { self.entries.first(where: { $0.key == key })?.value }
        set {
            if let newValue {
                if let index = self.entries.firstIndex(where: { $0.key == key }) {
                    self.entries[index].value = newValue
                } else {
                    self.entries.append(Entry(key: key, value: newValue))
                }
            } else {
                self.entries.removeAll(where: { $0.key == key })
            }
        }
    }

    /// Appends an entry, even if the key is already there.
    public mutating func append(key: String, value: RPCValue) {
        self.entries.append(Entry(key: key, value: value))
    }
}
