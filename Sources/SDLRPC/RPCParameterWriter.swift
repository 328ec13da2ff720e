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

    /// Re-emits the parameters a decoder did not know, in their order.
    public mutating func encodeUnknown(_ parameters: RPCObject) {
        for entry in parameters.entries {
            self.writeUnknown(entry.value, forKey: entry.key)
        }
    }
}
