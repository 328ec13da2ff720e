/// A value a parameter can hold: Boolean, Integer (`Int32`/`Int64`), Float (`Double`), String, a
/// generated enum or struct, or an array of these. Generated code encodes and decodes every
/// parameter through this one protocol, generic over the writer and the reader, so a new wire
/// format needs no new generated code.
public protocol RPCParameterValue: Hashable, Sendable {
    /// Reads one value at the reader's position.
    init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError)
    /// Writes this value under `key`.
    func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey)
}

extension Bool: RPCParameterValue {
    @inlinable
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        self = try reader.readBool()
    }

    @inlinable
    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.writeBool(self, forKey: key)
    }
}

extension Int32: RPCParameterValue {
    @inlinable
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        self = try reader.readInt32()
    }

    @inlinable
    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.writeInt32(self, forKey: key)
    }
}

extension Int64: RPCParameterValue {
    @inlinable
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        self = try reader.readInt64()
    }

    @inlinable
    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.writeInt64(self, forKey: key)
    }
}

extension Double: RPCParameterValue {
    @inlinable
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        self = try reader.readDouble()
    }

    @inlinable
    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.writeDouble(self, forKey: key)
    }
}

extension String: RPCParameterValue {
    @inlinable
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        self = try reader.readString()
    }

    @inlinable
    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.writeString(self, forKey: key)
    }
}

extension Array: RPCParameterValue where Element: RPCParameterValue {
    /// Reads an array; an element's error gets its index in the path (`name[3]`).
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        try reader.beginArray()
        var elements: [Element] = []
        var index = 0
        while try reader.nextElement() {
            if index == 0 {
                // Skips the 1, 2, 4 growth steps of small arrays.
                elements.reserveCapacity(8)
            } else if index == 8 {
                // Past eight, 32 at once (then doubling): a day's 24 hourly forecasts take two
                // allocations, not three (8, 16, 32). At most 32 elements' room unused, and only
                // for an array that has nine.
                elements.reserveCapacity(32)
            }
            do throws(RPCError) {
                elements.append(try Element(parameterFrom: &reader))
            } catch {
                throw error.prefixed(.index(index))
            }
            index += 1
        }
        self = elements
    }

    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.beginArray(forKey: key)
        for element in self {
            element.encode(to: &writer, forKey: .element)
        }
        writer.endArray()
    }
}

/// A generated enum of the spec: its known wire names as cases plus `unknown(String)`, which keeps
/// names this spec version does not define so that they round-trip (validation reports them).
public protocol RPCEnum: RPCParameterValue, CustomStringConvertible {
    /// The case for a wire name; `.unknown(name)` for names the spec does not define.
    init(wireName: String)
    /// The name on the wire, e.g. `"2D"` for `SDLDimension._2d`.
    var wireName: String { get }
    /// False for `.unknown`.
    var isKnown: Bool { get }
    /// Every case the spec defines, in spec order.
    static var knownCases: [Self] { get }
}

extension RPCEnum {
    public init<Reader: RPCParameterReader>(parameterFrom reader: inout Reader) throws(RPCError) {
        self.init(wireName: try reader.readString())
    }

    public func encode<Writer: RPCParameterWriter>(to writer: inout Writer, forKey key: RPCKey) {
        writer.writeString(self.wireName, forKey: key)
    }

    public var description: String { self.wireName }
}
