import NIOCore
import Testing

@testable import SDLBSON

@Suite struct CodableTests {
    struct StartServiceACK: Codable, Equatable {
        var protocolVersion: String?
        var hashId: Int32?
        var mtu: Int64?
        var secondaryTransports: [String]?
        // Int32, not Int: the spec's int32 arrays (an Int would go out as int64).
        var audioServiceTransports: [Int32]?
        var videoServiceTransports: [Int32]?
        var authToken: String?
    }

    @Test func startServiceACKRoundTripWithWireWidths() throws {
        let ack = StartServiceACK(
            protocolVersion: "5.4.1",
            hashId: 42,
            mtu: 131_084,
            secondaryTransports: ["TCP_WIFI"],
            audioServiceTransports: [1, 2],
            videoServiceTransports: [2, 1],
            authToken: nil
        )
        let document = try BSONEncoder().encode(ack)
        #expect(document.map(\.key) == ["protocolVersion", "hashId", "mtu", "secondaryTransports", "audioServiceTransports", "videoServiceTransports"])
        #expect(document["hashId"]?.type == .int32)
        #expect(document["mtu"]?.type == .int64)
        #expect(document["audioServiceTransports"]?.arrayValue?.map(\.type) == [.int32, .int32])
        #expect(document["authToken"] == nil, "nil optionals are omitted")
        #expect(try BSONDecoder().decode(StartServiceACK.self, from: document) == ack)
    }

    @Test func decodesThePeerStartServiceACKWhateverTheIntegerWidths() throws {
        // sdl_core's vector: hashId int32, mtu int64, protocolVersion string.
        let bytes = bytes(hex: "39000000106861736849640040e20100126d747500dc050000000000000270726f746f636f6c56657273696f6e0006000000352e302e300000")
        let ack = try BSONDecoder().decode(StartServiceACK.self, from: bytes)
        #expect(ack == StartServiceACK(protocolVersion: "5.0.0", hashId: 123_456, mtu: 1500))
        // The other widths decode too (int64 hashId, int32 mtu) when the value fits.
        var buffer = ByteBuffer()
        buffer.writeBSONDocument {
            $0.appendInt64("hashId", 7)
            $0.appendInt32("mtu", 1500)
        }
        #expect(try BSONDecoder().decode(StartServiceACK.self, from: buffer) == StartServiceACK(hashId: 7, mtu: 1500))
    }

    struct Widths: Codable, Equatable {
        var i8: Int8 = -8
        var i16: Int16 = -16
        var i32: Int32 = -32
        var i64: Int64 = 64
        var u8: UInt8 = 8
        var u16: UInt16 = 16
        var u32Small: UInt32 = 32
        var u32Big: UInt32 = .max
        var intSmall: Int = 5
        var intBig: Int = 1 << 40
        var uintSmall: UInt = 6
        var u64Big: UInt64 = UInt64(Int64.max)
        var float: Float = 1.5
        var double: Double = -0.0
        var flag: Bool = true
        var bytes: [UInt8] = [1, 2, 3]
        var binary = BSONBinary(subtype: .uuid, bytes: Array(repeating: 0xAB, count: 16))
        var when = BSONDateTime(millisecondsSinceEpoch: -1)
        var id = BSONObjectID(hexString: "56e1fc72e0c917e9c4714161")!
        var dictionary: [String: Int] = ["k": 1]
        var nested: [[String]] = [["a"], []]
    }

    @Test func integerMappingAndLeafTypes() throws {
        let document = try BSONEncoder().encode(Widths())
        let types = Dictionary(uniqueKeysWithValues: document.map { ($0.key, $0.type) })
        #expect(types["i8"] == .int32)
        #expect(types["i16"] == .int32)
        #expect(types["i32"] == .int32)
        #expect(types["i64"] == .int64)
        #expect(types["u8"] == .int32)
        #expect(types["u16"] == .int32)
        #expect(types["u32Small"] == .int32)
        #expect(types["u32Big"] == .int64)
        // Int and UInt are 64-bit types: int64 whatever the value.
        #expect(types["intSmall"] == .int64)
        #expect(types["intBig"] == .int64)
        #expect(types["uintSmall"] == .int64)
        #expect(types["u64Big"] == .int64)
        #expect(types["float"] == .double)
        #expect(types["double"] == .double)
        #expect(types["flag"] == .bool)
        #expect(types["bytes"] == .binary)
        #expect(types["binary"] == .binary)
        #expect(types["when"] == .datetime)
        #expect(types["id"] == .objectID)
        #expect(types["dictionary"] == .document)
        #expect(types["nested"] == .array)
        #expect(document["binary"]?.binaryValue?.subtype == .uuid)
        #expect(try BSONDecoder().decode(Widths.self, from: document) == Widths())
    }

    struct Holder<T: Codable & Equatable>: Codable, Equatable { var value: T }

    /// The type byte and the value `value` is written as (the first element of `{value: …}`).
    func wire<T: Codable & Equatable>(_ value: T) throws -> (type: UInt8, value: Int64?) {
        let document = try BSONEncoder().encode(Holder(value: value))
        #expect(try BSONDecoder().decode(Holder<T>.self, from: document).value == value, "\(T.self) \(value) round-trips")
        return (document.bytes[4], document["value"]?.integerValue)
    }

    @Test func integerWireTypeFollowsTheSwiftType() throws {
        let int32: UInt8 = 0x10
        let int64: UInt8 = 0x12
        #expect(try wire(Int8.min) == (int32, -128))
        #expect(try wire(Int8.max) == (int32, 127))
        #expect(try wire(Int16.min) == (int32, -32768))
        #expect(try wire(UInt8.max) == (int32, 255))
        #expect(try wire(UInt16.max) == (int32, 65535))
        #expect(try wire(Int32.max) == (int32, 2_147_483_647))
        #expect(try wire(Int32.min) == (int32, -2_147_483_648))
        #expect(try wire(UInt32(Int32.max)) == (int32, 2_147_483_647))
        #expect(try wire(UInt32(Int32.max) + 1) == (int64, 2_147_483_648))
        #expect(try wire(UInt32.max) == (int64, 4_294_967_295))
        #expect(try wire(0 as Int) == (int64, 0))
        #expect(try wire(Int(Int32.max)) == (int64, 2_147_483_647))
        #expect(try wire(Int.min) == (int64, Int64.min))
        #expect(try wire(0 as Int64) == (int64, 0))
        #expect(try wire(Int64.min) == (int64, Int64.min))
        #expect(try wire(Int64.max) == (int64, Int64.max))
        #expect(try wire(0 as UInt) == (int64, 0))
        #expect(try wire(UInt(Int64.max)) == (int64, Int64.max))
        #expect(try wire(UInt64(Int64.max)) == (int64, Int64.max))
        // Above Int64.max there is no BSON integer: a typed error with the coding path.
        for tooBig in [Holder(value: UInt64.max), Holder(value: UInt64(Int64.max) + 1)] {
            do {
                _ = try BSONEncoder().encode(tooBig)
                Issue.record("\(tooBig.value) encoded")
            } catch EncodingError.invalidValue(let value, let context) {
                #expect(value as? UInt64 == tooBig.value)
                #expect(context.codingPath.map(\.stringValue) == ["value"])
            }
        }
        #expect(throws: EncodingError.self) { try BSONEncoder().encode(Holder(value: UInt.max)) }
    }

    @Test func integersDecodeFromEitherWidthWhenTheValueFits() throws {
        func decode<T: Codable & Equatable>(_: T.Type, int32 value: Int32) throws -> T {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { $0.appendInt32("value", value) }
            return try BSONDecoder().decode(Holder<T>.self, from: buffer).value
        }
        func decode<T: Codable & Equatable>(_: T.Type, int64 value: Int64) throws -> T {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { $0.appendInt64("value", value) }
            return try BSONDecoder().decode(Holder<T>.self, from: buffer).value
        }
        #expect(try decode(Int32.self, int64: Int64(Int32.max)) == Int32.max)
        #expect(try decode(Int32.self, int64: Int64(Int32.min)) == Int32.min)
        #expect(try decode(UInt32.self, int64: 4_294_967_295) == UInt32.max)
        #expect(try decode(Int.self, int32: -7) == -7)
        #expect(try decode(UInt64.self, int32: 5) == 5)
        #expect(try decode(UInt64.self, int64: Int64.max) == UInt64(Int64.max))
        #expect(try decode(Int8.self, int32: -128) == -128)
        #expect(try decode(UInt16.self, int64: 65535) == 65535)
        // Out of range for the Swift type: dataCorrupted, never a trap or a truncation.
        #expect(throwsDataCorrupted { try decode(Int32.self, int64: Int64(Int32.max) + 1) })
        #expect(throwsDataCorrupted { try decode(Int32.self, int64: Int64(Int32.min) - 1) })
        #expect(throwsDataCorrupted { try decode(UInt32.self, int32: -1) })
        #expect(throwsDataCorrupted { try decode(UInt64.self, int64: Int64.min) })
        #expect(throwsDataCorrupted { try decode(UInt8.self, int32: 256) })
    }
    struct Outer: Codable { var inner: Inner }
    struct Inner: Codable { var items: [Item] }
    struct Item: Codable { var name: String }

    @Test func errorsCarryCodingPaths() throws {
        #expect(throws: EncodingError.self) { try BSONEncoder().encode(Holder(value: UInt64.max)) }
        #expect(throws: EncodingError.self) { try BSONEncoder().encode([1, 2, 3]) }
        #expect(throws: EncodingError.self) { try BSONEncoder().encode(["a\u{0}": 1]) }

        // Out of range for the Swift type: dataCorrupted with the path.
        var big = ByteBuffer()
        big.writeBSONDocument { $0.appendInt32("value", 300) }
        do {
            _ = try BSONDecoder().decode(Holder<Int8>.self, from: big)
            Issue.record("300 decoded as Int8")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.codingPath.map(\.stringValue) == ["value"])
        }
        // Wrong type deep inside: typeMismatch with the whole path.
        var wrong = ByteBuffer()
        wrong.writeBSONDocument { doc in
            doc.appendDocument("inner") { inner in
                inner.appendArray("items") { items in
                    items.appendDocument { $0.appendString("name", "ok") }
                    items.appendDocument { $0.appendInt32("name", 1) }
                }
            }
        }
        do {
            _ = try BSONDecoder().decode(Outer.self, from: wrong)
            Issue.record("int decoded as String")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["inner", "items", "1", "name"])
        }
        // Missing key.
        do {
            _ = try BSONDecoder().decode(Holder<String>.self, from: BSONDocument())
            Issue.record("missing key decoded")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "value")
        }
        // Malformed bytes: dataCorrupted wrapping the BSONError with its offset.
        do {
            _ = try BSONDecoder().decode(Holder<String>.self, from: [0x05, 0, 0, 0, 1])
            Issue.record("malformed bytes decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect((context.underlyingError as? BSONError)?.code == .invalidDocumentTerminator)
            #expect((context.underlyingError as? BSONError)?.offset == 4)
        }
        // An int64 that fits decodes as Int32; a double does not decode as an integer.
        var wide = ByteBuffer()
        wide.writeBSONDocument { $0.appendInt64("value", -5) }
        #expect(try BSONDecoder().decode(Holder<Int32>.self, from: wide).value == -5)
        var double = ByteBuffer()
        double.writeBSONDocument { $0.appendDouble("value", 1.0) }
        #expect(throws: DecodingError.self) { try BSONDecoder().decode(Holder<Int>.self, from: double) }
    }

    @Test func nullAndMissingDecodeAsNilOptionals() throws {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { $0.appendNull("hashId") }
        #expect(try BSONDecoder().decode(StartServiceACK.self, from: buffer) == StartServiceACK())
    }
}

/// Whether `body` throws `DecodingError.dataCorrupted` (not another error, not nothing).
func throwsDataCorrupted(_ body: () throws -> Any) -> Bool {
    do {
        _ = try body()
        return false
    } catch DecodingError.dataCorrupted {
        return true
    } catch {
        return false
    }
}

/// A coding key made at run time, for containers with many or repeated keys.
struct TestKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { self.stringValue = string }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

@Suite struct CodableScalingTests {
    /// A struct-like value with `count` keys k0, k1, … holding 0, 1, ….
    struct ManyKeys: Encodable {
        var count: Int
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: TestKey.self)
            for i in 0..<self.count { try container.encode(Int32(i), forKey: TestKey("k\(i)")) }
        }
    }

    @Test func largeArraysAndManyKeysEncodeToTheWriterBytes() throws {
        // 100,000 items and 1,000 keys: linear now; quadratic copying made these take minutes.
        let items = (0..<100_000).map { Int32($0) }
        var expected = ByteBuffer()
        expected.writeBSONDocument { doc in
            doc.appendArray("value") { array in
                for item in items { array.appendInt32(item) }
            }
        }
        #expect(try BSONEncoder().encode(CodableTests.Holder(value: items)).bytes == Array(expected.readableBytesView))

        var keyed = ByteBuffer()
        keyed.writeBSONDocument { doc in
            for i in 0..<1_000 { doc.appendInt32("k\(i)", Int32(i)) }
        }
        let document = try BSONEncoder().encode(ManyKeys(count: 1_000))
        #expect(document.bytes == Array(keyed.readableBytesView), "keys keep insertion order")
    }

    /// Encodes `entries` in order through one keyed container.
    struct Entries: Encodable {
        enum Value {
            case int(Int32)
            case string(String)
            case nested(String, [String])
            case null
        }
        var entries: [(String, Value)]
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: TestKey.self)
            for (key, value) in self.entries {
                switch value {
                case .int(let v): try container.encode(v, forKey: TestKey(key))
                case .string(let v): try container.encode(v, forKey: TestKey(key))
                case .nested(let name, let v): try container.encode([name: v], forKey: TestKey(key))
                case .null: try container.encodeNil(forKey: TestKey(key))
                }
            }
        }
    }

    @Test func theLastValueEncodedForAKeyWinsInThePlaceTheKeyFirstHad() throws {
        // Few keys (linear scan) and many keys (indexed) behave the same.
        for filler in [0, 40] {
            var entries: [(String, Entries.Value)] = [("a", .int(1)), ("b", .nested("x", ["1"])), ("d", .nested("x", ["2"]))]
            for i in 0..<filler { entries.append(("f\(i)", .int(Int32(i)))) }
            entries += [
                ("a", .string("second")), ("b", .int(2)), ("c", .null), ("a", .nested("y", ["3", "4"])), ("d", .nested("z", ["5"])),
            ]
            let document = try BSONEncoder().encode(Entries(entries: entries))
            let keys = document.map(\.key)
            #expect(keys == ["a", "b", "d"] + (0..<filler).map { "f\($0)" } + ["c"])
            #expect(document["a"]?.documentValue?.map(\.key) == ["y"])
            #expect(document["a"]?.documentValue?["y"]?.arrayValue?.map(\.stringValue) == ["3", "4"])
            #expect(document["b"]?.int32Value == 2, "a document replaced by a leaf")
            #expect(document["c"]?.type == .null)
            #expect(document["d"]?.documentValue?.map(\.key) == ["z"], "a document replaced by another, not merged with it")
        }
    }
}

@Suite struct CodableInheritanceTests {
    class Base: Codable {
        var id: Int32
        init(id: Int32) { self.id = id }
    }

    /// Stores its superclass under "super" via `superEncoder()`; its keys have no "super" case.
    final class Sub: Base {
        var name: String
        private enum CodingKeys: String, CodingKey { case name }
        init(id: Int32, name: String) {
            self.name = name
            super.init(id: id)
        }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.name = try container.decode(String.self, forKey: .name)
            try super.init(from: container.superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.name, forKey: .name)
            try super.encode(to: container.superEncoder())
        }
    }

    /// Stores its superclass under a key of its own via `superEncoder(forKey:)`.
    final class SubWithKey: Base {
        var flag: Bool
        private enum CodingKeys: String, CodingKey {
            case flag
            case base
        }
        init(id: Int32, flag: Bool) {
            self.flag = flag
            super.init(id: id)
        }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.flag = try container.decode(Bool.self, forKey: .flag)
            try super.init(from: container.superDecoder(forKey: .base))
        }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.flag, forKey: .flag)
            try super.encode(to: container.superEncoder(forKey: .base))
        }
    }

    @Test func superEncoderWritesTheSuperclassUnderSuper() throws {
        let document = try BSONEncoder().encode(Sub(id: 7, name: "seven"))
        #expect(document.map(\.key) == ["name", "super"])
        #expect(document["super"]?.documentValue?["id"]?.int32Value == 7)
        let decoded = try BSONDecoder().decode(Sub.self, from: document)
        #expect(decoded.id == 7)
        #expect(decoded.name == "seven")
        // A document without "super": keyNotFound naming it, not a trap.
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { $0.appendString("name", "x") }
        do {
            _ = try BSONDecoder().decode(Sub.self, from: buffer)
            Issue.record("decoded without super")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "super")
        }
    }

    @Test func superEncoderForKeyWritesTheSuperclassUnderThatKey() throws {
        let document = try BSONEncoder().encode(SubWithKey(id: -3, flag: true))
        #expect(document.map(\.key) == ["flag", "base"])
        #expect(document["base"]?.documentValue?["id"]?.int32Value == -3)
        let decoded = try BSONDecoder().decode(SubWithKey.self, from: document)
        #expect(decoded.id == -3)
        #expect(decoded.flag == true)
    }
}

@Suite struct CodableTopLevelTests {
    enum Color: String, Codable { case red }

    /// Whether decoding `T` from `{"a": 1}` throws typeMismatch (it used to recurse forever).
    func topLevelTypeMismatch<T: Decodable>(_: T.Type) -> Bool {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { $0.appendInt32("a", 1) }
        do {
            _ = try BSONDecoder().decode(T.self, from: buffer)
            return false
        } catch DecodingError.typeMismatch(_, let context) {
            return context.codingPath.isEmpty && context.debugDescription.hasSuffix("found a document")
        } catch {
            return false
        }
    }

    @Test func aLeafCannotBeTheTopLevelDocument() {
        #expect(topLevelTypeMismatch(String.self))
        #expect(topLevelTypeMismatch(Int.self))
        #expect(topLevelTypeMismatch(Color.self))
        #expect(topLevelTypeMismatch(BSONObjectID.self))
        #expect(topLevelTypeMismatch(BSONDateTime.self))
        #expect(topLevelTypeMismatch(BSONDecimal128.self))
        #expect(topLevelTypeMismatch(Double.self))
        #expect(topLevelTypeMismatch([UInt8].self))
    }

    /// Whether encoding `value` at the top level throws invalidValue (a document must be a document).
    func topLevelInvalidValue<T: Encodable>(_ value: T) -> Bool {
        do {
            _ = try BSONEncoder().encode(value)
            return false
        } catch EncodingError.invalidValue(_, let context) {
            return context.codingPath.isEmpty && context.debugDescription == "the top-level value must encode as a BSON document"
        } catch {
            return false
        }
    }

    @Test func aLeafCannotBeEncodedAsTheTopLevelDocument() {
        #expect(topLevelInvalidValue(5))
        #expect(topLevelInvalidValue("text"))
        #expect(topLevelInvalidValue(Color.red))
        #expect(topLevelInvalidValue(Int?.none))
        #expect(topLevelInvalidValue(BSONObjectID(hexString: "56e1fc72e0c917e9c4714161")!))
        #expect(topLevelInvalidValue([1, 2]))
        // The same values one level down are fine.
        #expect(!topLevelInvalidValue(["a": 5]))
    }
}

@Suite struct CodableFloatTests {
    func decodeFloat(_ value: Double) throws -> Float {
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { $0.appendDouble("value", value) }
        return try BSONDecoder().decode(CodableTests.Holder<Float>.self, from: buffer).value
    }

    @Test func aFiniteDoubleBeyondFloatRangeIsAnErrorNotInfinity() throws {
        #expect(throwsDataCorrupted { try decodeFloat(1e300) })
        #expect(throwsDataCorrupted { try decodeFloat(-1e300) })
        #expect(throwsDataCorrupted { try decodeFloat(Double(Float.greatestFiniteMagnitude) * 2) })
        // NaN and the infinities stay what they are.
        #expect(try decodeFloat(.infinity) == .infinity)
        #expect(try decodeFloat(-.infinity) == -.infinity)
        #expect(try decodeFloat(.nan).isNaN)
        // Losing precision (or underflowing to zero) is rounding, not an error.
        #expect(try decodeFloat(0.1) == Float(0.1))
        #expect(try decodeFloat(Double(Float.greatestFiniteMagnitude)) == .greatestFiniteMagnitude)
        #expect(try decodeFloat(1e-300) == 0)
        #expect(try decodeFloat(-2.5) == -2.5)
    }
}

@Suite struct CodableKeyedDecodingTests {
    @Test func aDictionaryOf100000KeysDecodesInLinearTime() throws {
        // One scan per key made this about 5 * 10^9 key comparisons; the index makes it 10^5.
        var buffer = ByteBuffer()
        buffer.writeBSONDocument { doc in
            for i in 0..<100_000 { doc.appendInt32("k\(i)", Int32(i)) }
        }
        let decoded = try BSONDecoder().decode([String: Int32].self, from: buffer)
        #expect(decoded.count == 100_000)
        #expect(decoded["k0"] == 0)
        #expect(decoded["k54321"] == 54_321)
        #expect(decoded["k99999"] == 99_999)
        #expect(decoded["k100000"] == nil)
    }

    /// Keys compare as bytes, as BSON keys do, not by Unicode canonical equivalence as Strings do.
    @Test func keysThatAreEqualStringsButDifferentBytesStayApart() throws {
        for filler in [0, 40] {
            var buffer = ByteBuffer()
            buffer.writeBSONDocument { doc in
                doc.appendInt32("e\u{301}", 1)  // decomposed é
                for i in 0..<filler { doc.appendInt32("f\(i)", Int32(i)) }
                doc.appendInt32("\u{E9}", 2)  // precomposed é
            }
            struct Keys: Decodable {
                var decomposed: Int32
                var precomposed: Int32
                enum CodingKeys: String, CodingKey {
                    case decomposed = "e\u{301}"
                    case precomposed = "\u{E9}"
                }
            }
            let keys = try BSONDecoder().decode(Keys.self, from: buffer)
            #expect(keys.decomposed == 1)
            #expect(keys.precomposed == 2)
            // Not a repeated key either, for the decoder's check or for validation's.
            #expect(try BSONDocument(validating: buffer, rejectingDuplicateKeys: true).count == 2 + filler)
        }
    }
}
