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
}

extension RPCParameterReader {
    /// Decodes the known parameter `key` into its slot; a second occurrence is
    /// `duplicateParameter`. Errors get `key` in front of their path.
    public mutating func decode<Value: RPCParameterValue>(_ slot: inout Value?, _ key: StaticString) throws(RPCError) {
        if slot != nil {
            throw RPCError.duplicate(key.description)
        }
        do throws(RPCError) {
            slot = try Value(parameterFrom: &self)
        } catch {
            throw error.prefixed(.key(key.description))
        }
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
