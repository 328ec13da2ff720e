/// What a generated struct keeps beside its typed properties: the parameters this spec version
/// does not define (`unknownParameters`) and the parts lenient decoding dropped
/// (`droppedParameters`), behind one reference that is nil while both are empty, as they nearly
/// always are.
///
/// One reference, not two: a struct is copied with a retain per reference it holds, and decoding
/// copies structs as it builds them (an array element, an optional member), so a second reference
/// per struct cost strict decoding of OnAppServiceData about 8% more instructions; a nil one costs
/// less to copy than the empty array a lone `RPCObject` would hold.
struct RPCExtraParameters: Hashable, Sendable {
    /// The parameters of a struct that has any; shared between copies until one of them changes
    /// it (copy on write), so never mutated while shared.
    private final class Storage: @unchecked Sendable {
        var unknown: RPCObject
        var dropped: RPCDroppedParameters

        init(unknown: RPCObject, dropped: RPCDroppedParameters) {
            self.unknown = unknown
            self.dropped = dropped
        }
    }

    private var storage: Storage?

    /// Nothing unknown, nothing dropped.
    init() { self.storage = nil }

    init(unknown: RPCObject, dropped: RPCDroppedParameters) {
        self.storage = unknown.isEmpty && dropped.isEmpty ? nil : Storage(unknown: unknown, dropped: dropped)
    }

    /// Whether there is nothing unknown and nothing dropped: one pointer test, for the paths every
    /// value takes.
    var isEmpty: Bool { self.storage == nil }

    /// Whether there are parameters this spec version does not define.
    var hasUnknown: Bool {
        guard let storage = self.storage else { return false }
        return !storage.unknown.isEmpty
    }

    /// The parameters this spec version does not define.
    var unknown: RPCObject {
        get { self.storage?.unknown ?? RPCObject() }
        set { self = RPCExtraParameters(unknown: newValue, dropped: self.dropped) }
        _modify {
            let storage = self.uniqueStorage()
            yield &storage.unknown
            self.dropStorageIfEmpty()
        }
    }

    /// The parts lenient decoding dropped.
    var dropped: RPCDroppedParameters {
        get { self.storage?.dropped ?? RPCDroppedParameters() }
        set { self = RPCExtraParameters(unknown: self.unknown, dropped: newValue) }
        _modify {
            let storage = self.uniqueStorage()
            yield &storage.dropped
            self.dropStorageIfEmpty()
        }
    }

    /// Storage only this value refers to, to change in place.
    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&self.storage) {
            self.storage = Storage(unknown: self.unknown, dropped: self.dropped)
        }
        return self.storage!
    }

    private mutating func dropStorageIfEmpty() {
        if let storage = self.storage, storage.unknown.isEmpty, storage.dropped.isEmpty {
            self.storage = nil
        }
    }

    static func == (lhs: RPCExtraParameters, rhs: RPCExtraParameters) -> Bool {
        lhs.storage === rhs.storage || (lhs.unknown == rhs.unknown && lhs.dropped == rhs.dropped)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(self.unknown)
        hasher.combine(self.dropped)
    }
}
