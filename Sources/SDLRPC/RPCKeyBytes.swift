/// Parameter names compared as their UTF-8 bytes, as the wire compares them: generated decoders
/// match names byte for byte and SDLBSON refuses repeated keys byte for byte, so a precomposed
/// "é" (C3 A9) and a decomposed "é" (65 CC 81) are two names here too, although Swift's `==`
/// (canonical equivalence) calls them equal.
enum RPCKeyBytes {
    /// Whether two names have the same UTF-8 bytes.
    static func equal(_ lhs: String, _ rhs: String) -> Bool {
        let lhsUTF8 = lhs.utf8
        let rhsUTF8 = rhs.utf8
        guard lhsUTF8.count == rhsUTF8.count else { return false }
        return lhsUTF8.elementsEqual(rhsUTF8)
    }

    /// Orders names by their UTF-8 bytes (what `RPCDroppedParameters` keeps its entries sorted by).
    static func less(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// A name hashed and compared by its bytes, for sets of names.
    struct Key: Hashable {
        let name: String

        static func == (lhs: Key, rhs: Key) -> Bool {
            RPCKeyBytes.equal(lhs.name, rhs.name)
        }

        func hash(into hasher: inout Hasher) {
            // Both paths feed the hasher the same bytes in one call, so equal keys hash equally
            // whichever path each takes.
            let hashed: Void? = self.name.utf8.withContiguousStorageIfAvailable { bytes in
                hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
            }
            if hashed == nil {
                Array(self.name.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }
    }
}
