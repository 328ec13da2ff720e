import SDLTestSupport
import NIOCore
import SDLRPC
import Testing

/// Keys are compared as UTF-8 bytes, as the wire compares them: a precomposed "é" (C3 A9) and a
/// decomposed "é" (65 CC 81) are two keys, though Swift's `==` calls the Strings equal.
@Suite("Repeated keys are compared byte for byte")
struct RepeatedKeyBytesTests {
    static let precomposed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    @Test("the two spellings are equal Strings but different bytes")
    func theTrap() {
        #expect(Self.precomposed == Self.decomposed)
        #expect(Array(Self.precomposed.utf8) == [0x63, 0x61, 0x66, 0xC3, 0xA9])
        #expect(Array(Self.decomposed.utf8) == [0x63, 0x61, 0x66, 0x65, 0xCC, 0x81])
    }

    @Test("RPCObject: firstRepeatedKey and the key subscript, small and large objects", arguments: [0, 10])
    func object(padding: Int) {
        var object = RPCObject()
        for index in 0..<padding {
            object.append(key: "p\(index)", value: .int32(Int32(index)))
        }
        object.append(key: Self.precomposed, value: .int32(1))
        object.append(key: Self.decomposed, value: .int32(2))
        #expect(object.firstRepeatedKey == nil)
        #expect(object[Self.precomposed] == .int32(1))
        #expect(object[Self.decomposed] == .int32(2))

        object.append(key: Self.decomposed, value: .int32(3))
        let repeated = object.firstRepeatedKey
        #expect(repeated.map { Array($0.utf8) } == Array(Self.decomposed.utf8))

        // Setting and removing touch only the spelling named.
        object[Self.decomposed] = nil
        #expect(object.map(\.key).suffix(1).map { Array($0.utf8) } == [Array(Self.precomposed.utf8)])
        object[Self.decomposed] = .int32(4)
        #expect(object.count == padding + 2)
        #expect(object[Self.precomposed] == .int32(1))
    }

    @Test("decoders keep both spellings as two parameters and refuse the same bytes twice", arguments: RPCParameterFormat.allCases)
    func decoding(format: RPCParameterFormat) throws {
        let both = #"{"hmiLevel":"FULL","audioStreamingState":"AUDIBLE","systemContext":"MAIN","\#(Self.precomposed)":1,"\#(Self.decomposed)":2}"#
        let typed = try SDLOnHMIStatus(parameters: parameters(both, format), format: format)
        #expect(typed.unknownParameters.map { Array($0.key.utf8) } == [Array(Self.precomposed.utf8), Array(Self.decomposed.utf8)])
        #expect(typed.unknownParameters.map(\.value) == [.int32(1), .int32(2)])
        // And write both back.
        let again = try SDLOnHMIStatus(parameters: typed.parameters(format: format), format: format)
        #expect(again == typed)

        let nested = #"{"x":{"\#(Self.precomposed)":1,"\#(Self.decomposed)":2}}"#
        guard case .object(let outer) = try RPCValue(parameters: parameters(nested, format), format: format),
            case .object(let inner)? = outer["x"]
        else {
            Issue.record("no nested object")
            return
        }
        #expect(inner.count == 2)
    }

    @Test("the same bytes twice are a repeated key, whether escaped or not")
    func sameBytes() throws {
        // `\u00e9` unescapes to the bytes of the precomposed é.
        let escaped = #"{"x":{"caf\u00e9":1,"\#(Self.precomposed)":2}}"#
        let error = thrownError { try RPCValue(jsonObject: escaped) }
        #expect(error?.code == .duplicateParameter)
        #expect(error?.path.map { component -> [UInt8] in
            switch component {
            case .key(let key): Array(key.utf8)
            case .index: []
            }
        } == [[0x78], Array(Self.precomposed.utf8)])

        let typed = #"{"hmiLevel":"FULL","audioStreamingState":"AUDIBLE","systemContext":"MAIN","caf\u00e9":1,"\#(Self.precomposed)":2}"#
        #expect(thrownError { try SDLOnHMIStatus(jsonParameters: typed) }?.code == .duplicateParameter)
    }

    @Test("encoders refuse the same bytes twice and write both spellings")
    func encoding() throws {
        let both = RPCValue.object([Self.precomposed: .int32(1), Self.decomposed: .int32(2)])
        #expect(try both.jsonText() == #"{"\#(Self.precomposed)":1,"\#(Self.decomposed)":2}"#)
        #expect(try RPCValue(bsonObject: both.bsonDocument()) == both)

        var status = SDLOnHMIStatus(hmiLevel: .full, audioStreamingState: .audible, systemContext: .main)
        status.unknownParameters.append(key: Self.precomposed, value: .int32(1))
        status.unknownParameters.append(key: Self.decomposed, value: .int32(2))
        #expect(status.validationErrors().isEmpty)
        status.unknownParameters.append(key: Self.precomposed, value: .int32(3))
        let refused = thrownError { try status.jsonParameters() }
        #expect(refused?.code == .duplicateParameter)
        #expect(refused?.path.count == 1)
    }
}
