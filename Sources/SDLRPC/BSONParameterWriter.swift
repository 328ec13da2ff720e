import NIOCore
import SDLBSON

/// Writes a parameters object as one BSON document (protocol version 5 RPC payloads), through
/// SDLBSON's `BSONStreamWriter`: in place, lengths back-filled, array items keyed "0", "1", … .
///
/// Integer parameters are int32, or int64 where the spec's range needs it (`writeInt64`); Float
/// parameters are doubles (BSON carries NaN and the infinities, so nothing is refused there).
/// A parameter the spec does not define may have a name BSON cannot carry (a NUL byte, possible
/// in JSON); it is recorded as `invalidPayload` and reported by `finish()`.
///
/// A class: the stream writer is non-copyable (it holds the buffer's pinned storage), and
/// generated code takes its writer as an `inout` generic parameter, which must be copyable. One
/// writer encodes one document; `finish()` ends it.
final class BSONParameterWriter: RPCParameterWriter {
    /// Nil once finished. Only this object touches it, one call at a time, so the dynamic
    /// exclusivity check of a class property buys nothing on this path.
    @exclusivity(unchecked) private var stream: BSONStreamWriter?
    private var firstError: RPCError?

    /// Starts the top-level document at the end of `buffer`.
    init(buffer: consuming ByteBuffer = ByteBuffer()) {
        self.stream = BSONStreamWriter(appendingTo: consume buffer)
    }

    /// Closes the top-level document and returns the buffer; throws if a value could not be written.
    func finish() throws(RPCError) -> ByteBuffer {
        let buffer = self.stream.take()!.finish()
        if let firstError = self.firstError {
            throw firstError
        }
        return buffer
    }

    @inline(__always)
    func writeBool(_ value: Bool, forKey key: RPCKey) {
        self.stream!.appendBool(value, forKey: key.name)
    }

    @inline(__always)
    func writeInt32(_ value: Int32, forKey key: RPCKey) {
        self.stream!.appendInt32(value, forKey: key.name)
    }

    @inline(__always)
    func writeInt64(_ value: Int64, forKey key: RPCKey) {
        self.stream!.appendInt64(value, forKey: key.name)
    }

    @inline(__always)
    func writeDouble(_ value: Double, forKey key: RPCKey) {
        self.stream!.appendDouble(value, forKey: key.name)
    }

    @inline(__always)
    func writeString(_ value: String, forKey key: RPCKey) {
        self.stream!.appendString(value, forKey: key.name)
    }

    func beginObject(forKey key: RPCKey) {
        self.stream!.beginDocument(forKey: key.name)
    }

    func endObject() {
        self.stream!.end()
    }

    func beginArray(forKey key: RPCKey) {
        self.stream!.beginArray(forKey: key.name)
    }

    func endArray() {
        self.stream!.end()
    }

    func writeUnknown(_ value: RPCValue, forKey key: String) {
        guard self.checkKey(key) else { return }
        self.write(value, forKey: key)
    }

    func writeUnknownElement(_ value: RPCValue) {
        self.write(value, forKey: "")
    }

    private func checkKey(_ key: String) -> Bool {
        if BSONDocumentWriter.isValidKey(key) { return true }
        if self.firstError == nil {
            self.firstError = RPCError(.invalidPayload, path: [.key(key)], "a BSON key cannot contain a NUL byte")
        }
        return false
    }

    /// Writes any value; in an array scope the key is ignored.
    private func write(_ value: RPCValue, forKey key: String) {
        switch value {
        case .null: self.stream!.appendNull(forKey: key)
        case .bool(let bool): self.stream!.appendBool(bool, forKey: key)
        case .int32(let int): self.stream!.appendInt32(int, forKey: key)
        case .int64(let int): self.stream!.appendInt64(int, forKey: key)
        case .double(let double): self.stream!.appendDouble(double, forKey: key)
        case .string(let string): self.stream!.appendString(string, forKey: key)
        case .array(let elements):
            self.stream!.beginArray(forKey: key)
            for element in elements {
                self.write(element, forKey: "")
            }
            self.stream!.end()
        case .object(let object):
            self.stream!.beginDocument(forKey: key)
            for entry in object.entries where self.checkKey(entry.key) {
                self.write(entry.value, forKey: entry.key)
            }
            self.stream!.end()
        }
    }
}
