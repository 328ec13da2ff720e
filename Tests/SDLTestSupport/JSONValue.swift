import Foundation

/// A JSON value read from test data, for fixtures whose JSON the tests compare or edit. Numbers
/// compare by value and objects regardless of key order.
public enum JSONValue: Codable, Equatable, Sendable {
    /// An object; key order is not kept.
    case object([String: JSONValue])
    /// An array.
    case array([JSONValue])
    /// A string.
    case string(String)
    /// A number, as a double.
    case number(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Parses JSON text (any value at the top level).
    public init(parsing text: some Collection<UInt8>) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(text))
    }

    /// Encodes the value as it is.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .object(let object): try container.encode(object)
        case .array(let array): try container.encode(array)
        case .string(let string): try container.encode(string)
        case .number(let number): try container.encode(number)
        case .bool(let bool): try container.encode(bool)
        case .null: try container.encodeNil()
        }
    }

    /// The member `key` of an object; nil for other values and absent keys. Setting adds or
    /// replaces the member of an object.
    public subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let object) = self else { return nil }
            return object[key]
        }
        set {
            guard case .object(var object) = self else { return }
            object[key] = newValue
            self = .object(object)
        }
    }

    /// The value with `transform` applied to every member of every object, inside out: it gets the
    /// key and the (already transformed) value and returns the member to keep.
    public func mappingMembers(_ transform: (String, JSONValue) -> (String, JSONValue)) -> JSONValue {
        switch self {
        case .object(let object):
            var result: [String: JSONValue] = [:]
            for (key, value) in object {
                let (newKey, newValue) = transform(key, value.mappingMembers(transform))
                result[newKey] = newValue
            }
            return .object(result)
        case .array(let array):
            return .array(array.map { $0.mappingMembers(transform) })
        default:
            return self
        }
    }

    /// Compact JSON text with sorted keys.
    public var text: String {
        get throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }
    }
}

/// Whether two JSON texts denote the same JSON value (numbers compared by value, key order ignored).
public func sameJSON(_ lhs: String, _ rhs: String) throws -> Bool {
    try JSONValue(parsing: Array(lhs.utf8)) == JSONValue(parsing: Array(rhs.utf8))
}
