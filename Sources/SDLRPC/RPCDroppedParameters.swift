/// The parts of a received struct that lenient decoding kept out of its typed properties because
/// they break the spec in a way the typed value cannot hold, each as it was received: an optional
/// parameter whose value did not conform (whole), or an element of an array parameter (by its
/// index on the wire). See ``RPCReceivePolicy``.
///
/// Every generated struct has one (`droppedParameters`, empty unless decoded leniently), so the
/// data of a message is never lost:
/// - Encoding writes each entry back where it was: a whole parameter under its name when the
///   typed property is nil (a value assigned to the property replaces it), an element at its
///   index among the typed elements. A leniently decoded message re-encodes (with `validate`
///   off) to the same parameters, and decodes leniently again to an equal value.
/// - Validation reports each entry as the violation it was dropped for, so encoding with
///   `validate` on refuses a message that still carries one (we send strictly); set the typed
///   property, or remove the entries, to send a repaired message.
///
/// Entries are sorted by key (its UTF-8 bytes), then by index, whatever the order on the wire,
/// so equal messages have equal stores. Only decoders add entries.
public struct RPCDroppedParameters: Hashable, Sendable, RandomAccessCollection {
    /// One dropped part.
    ///
    /// Equal when key, index, value and the violation's code and path are: the violation's
    /// `detail` is text for people, and names the format the part came in ("found BSON string"),
    /// so that the same message read from JSON and from BSON compares equal.
    public struct Entry: Hashable, Sendable {
        /// The spec parameter of the struct holding this store.
        public let key: String
        /// The element's index in the array on the wire, or nil when the whole parameter was dropped.
        public let index: Int?
        /// The value as received.
        public let value: RPCValue
        /// Why: the first violation found inside the part, its paths relative to the struct
        /// holding this store (`droppedPath` is `key`, or `key[index]`).
        public let violation: RPCViolation

        public static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.key == rhs.key && lhs.index == rhs.index && lhs.value == rhs.value
                && lhs.violation.code == rhs.violation.code && lhs.violation.path == rhs.violation.path
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(self.key)
            hasher.combine(self.index)
            hasher.combine(self.value)
            hasher.combine(self.violation.code)
            hasher.combine(self.violation.path)
        }
    }

    /// The entries, sorted by key and index.
    public private(set) var entries: [Entry]

    /// An empty store.
    public init() { self.entries = [] }

    public var startIndex: Int { self.entries.startIndex }
    public var endIndex: Int { self.entries.endIndex }
    public subscript(position: Int) -> Entry { self.entries[position] }

    /// The value of parameter `key` as received, when it was dropped whole.
    public func value(forKey key: String) -> RPCValue? {
        self.entries[self.range(forKey: key)].first(where: { $0.index == nil })?.value
    }

    /// The dropped elements of array parameter `key`, by increasing index on the wire.
    public func elements(forKey key: String) -> ArraySlice<Entry> {
        let range = self.range(forKey: key)
        let slice = self.entries[range]
        // A whole entry sorts first among its key's.
        return slice.first?.index == nil ? slice.dropFirst() : slice
    }

    /// Removes the entries of parameter `key`, e.g. after repairing the typed property.
    public mutating func removeAll(forKey key: String) {
        self.entries.removeSubrange(self.range(forKey: key))
    }

    // MARK: Decoding, encoding, validation

    /// Where an element of a merged array comes from.
    enum MergedElement {
        /// The typed array's element at this index.
        case typed(Int)
        /// A dropped element.
        case dropped(Entry)
    }

    /// The elements of an array on the wire, in order, from `typedCount` typed elements and the
    /// dropped `elements` of that array (sorted by index): each dropped element at its index,
    /// the typed ones in the gaps, and dropped indices past the end (the typed array having shrunk
    /// since decoding) last, so that nothing is lost. Encoding and validation walk arrays this way.
    static func merge(
        typedCount: Int, _ elements: ArraySlice<Entry>
    ) -> AnyIterator<(position: Int, element: MergedElement)> {
        var typed = 0
        var next = elements.startIndex
        var position = 0
        return AnyIterator<(position: Int, element: MergedElement)> {
            defer { position += 1 }
            if next < elements.endIndex, typed == typedCount || (elements[next].index ?? 0) <= position {
                next += 1
                return (position, .dropped(elements[next - 1]))
            }
            guard typed < typedCount else { return nil }
            typed += 1
            return (position, .typed(typed - 1))
        }
    }

    /// An entry for the part of parameter `key` (its element `index`) dropped because of `error`,
    /// whose path starts at `key`.
    static func entry(key: StaticString, index: Int?, value: RPCValue, error: RPCError) -> Entry {
        let droppedPathCount = index == nil ? 1 : 2
        let violation = RPCViolation(error, depthInsideDroppedPart: error.path.count - droppedPathCount)
        return Entry(key: key.description, index: index, value: value, violation: violation)
    }

    /// Adds the entries of one parameter that has none yet (decoders check for a repeated key
    /// before reading): a whole value, or the dropped elements of one array in increasing index
    /// order. One insertion per parameter, so that a struct whose arrays arrive in the reverse of
    /// key order still costs time linear in its entries (per element, earlier entries would be
    /// moved once per element of a later array).
    mutating func add(_ run: [Entry]) {
        guard let first = run.first else { return }
        let position = self.range(forKey: first.key).lowerBound
        self.entries.insert(contentsOf: run, at: position)
    }

    /// Whether parameter `key` has an entry (a whole one or elements), compared by bytes.
    func contains(_ key: StaticString) -> Bool {
        !self.range(forKey: key.description).isEmpty
    }

    /// The positions of the entries of `key`: a binary search, as a hostile message can drop
    /// many elements and validation looks up every parameter.
    func range(forKey key: String) -> Range<Int> {
        let lower = self.entries.partitioningIndex { !RPCKeyBytes.less($0.key, key) }
        let upper = self.entries[lower...].partitioningIndex { !RPCKeyBytes.equal($0.key, key) }
        return lower..<upper
    }
}

extension Collection {
    /// The first position whose element satisfies `belongsToSecondPart`, the collection being
    /// partitioned by it (every element that does follows every element that does not).
    func partitioningIndex(where belongsToSecondPart: (Element) -> Bool) -> Index {
        var low = self.startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = self.index(low, offsetBy: half)
            if belongsToSecondPart(self[middle]) {
                count = half
            } else {
                low = self.index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
