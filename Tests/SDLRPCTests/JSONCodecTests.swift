import Foundation
import NIOCore
import SDLRPC
import Testing

@Suite("JSON reader (RFC 8259)")
struct JSONReaderTests {
    static func parse(_ text: String) throws(RPCError) -> RPCValue {
        try RPCValue(jsonObject: text)
    }

    @Test("SDL Core's pretty-printed JSON: tabs, \" : \", trailing newline")
    func prettyPrinted() throws {
        let text = "{\n\t\"serviceID\" : \"s1\",\r\n\t\"extra\" : [ 1 ,\t2 ]\n}\n"
        let request = try SDLUnpublishAppServiceRequest(jsonParameters: text)
        #expect(request.serviceID == "s1")
        #expect(request.unknownParameters["extra"] == .array([.int32(1), .int32(2)]))
    }

    @Test("key hash: length and first, middle, last byte, as sdl-rpc-gen computes it")
    func keyHash() {
        #expect(RPCKeyHash.hash("".utf8) == 0)
        #expect(RPCKeyHash.hash("a".utf8) == 0x0161_6161)
        #expect(RPCKeyHash.hash("fanSpeed".utf8) == 0x0866_7064)
        #expect(RPCKeyHash.hash("protocol".utf8) == 0x0870_6f6c)
    }

    @Test("special bytes are found at every offset of the 8-byte scan")
    func specialBytesAtEveryOffset() throws {
        for offset in 0..<24 {
            let prefix = String(repeating: "k", count: offset)
            // Escapes and non-ASCII in keys and values.
            let value = try Self.parse(#"{"\#(prefix)\u0041":"\#(prefix)\"é","\#(prefix)é":1}"#)
            #expect(value == .object([prefix + "A": .string(prefix + "\"é"), prefix + "é": .int32(1)]))
            // A raw control character or invalid UTF-8 is refused wherever it is.
            let control = ByteBuffer(bytes: Array(#"{"a":""#.utf8) + Array(prefix.utf8) + [0x01] + Array(#""}"#.utf8))
            #expect(throws: RPCError.self) { try RPCValue(jsonObject: control) }
            let invalid = ByteBuffer(bytes: Array(#"{""#.utf8) + Array(prefix.utf8) + [0xC3] + Array(#"":1}"#.utf8))
            #expect(throws: RPCError.self) { try RPCValue(jsonObject: invalid) }
            // The closing quote right after a run of plain bytes.
            #expect(try Self.parse(#"{"\#(prefix)":"\#(prefix)"}"#) == .object([prefix: .string(prefix)]))
        }
    }

    @Test("Boolean literals, read as words where the input holds five bytes, and cut short")
    func booleanLiterals() throws {
        func success(_ literal: String) throws -> Bool {
            try SDLGetInteriorVehicleDataResponse(jsonParameters: #"{"resultCode":"SUCCESS","success":"# + literal).success
        }
        #expect(try success("true}"))
        #expect(try !success("false}"))
        #expect(try success("true }"))
        #expect(try !success("false\n}"))
        #expect(try SDLGetInteriorVehicleDataResponse(jsonParameters: #"{"success":false,"resultCode":"SUCCESS"}"#).success == false)
        for bad in ["tru}", "fals}", "falsy}", "trues}", "truex}", "TRUE}", "true", "false", "tr", "f", "nul}"] {
            #expect(throws: RPCError.self, "\(bad)") { try success(bad) }
        }
    }

    @Test("Floats of up to 15 digits read in one pass equal the correctly rounded value; longer ones and exponents too")
    func shortDecimalFloats() throws {
        func value(_ number: String) throws -> Double {
            try SDLTemperature(jsonParameters: #"{"unit":"CELSIUS","value":"# + number + "}").value
        }
        let texts = [
            "0", "-0", "-0.0", "21.5", "-3", "0.05", "0.1", "0.30000000000000004", "123456789012345", "-12345678901234.5",
            "0.12345678901234", "1234567890123456", "0.123456789012345", "9007199254740993", "100000000000000.5",
            "1.5e3", "-2E-2", "7.0", "99999999999999.9",
        ]
        for text in texts {
            let read = try value(text)
            #expect(read == Double(text)!, "\(text)")
            #expect(read.sign == Double(text)!.sign, "\(text)")
        }
        #expect(try value(" 21.5 ") == 21.5)
        for bad in ["05", "-", "1.", ".5", "-.5", "1.5.3", "1e", "00.5", "+1", "1.2.", "\"1\""] {
            #expect(throws: RPCError.self, "\(bad)") { try value(bad) }
        }
    }

    @Test("compact keys read in one step; whitespace, escapes and misplaced commas go the general way")
    func compactAndSpacedKeys() throws {
        let texts = [
            #"{"unit":"CELSIUS","value":1}"#, #"{ "unit":"CELSIUS","value":1}"#, #"{"unit" :"CELSIUS","value":1}"#,
            #"{"unit":"CELSIUS" ,"value":1}"#, #"{"unit":"CELSIUS", "value":1}"#, #"{"unit":"CELSIUS","value" : 1 }"#,
            #"{"\u0075nit":"CELSIUS","value":1}"#,
        ]
        for text in texts {
            let temperature = try SDLTemperature(jsonParameters: text)
            #expect(temperature.unit == .celsius && temperature.value == 1, "\(text)")
        }
        #expect(try Self.parse(#"{"":1,"é":2,"a":3}"#) == .object(["": .int32(1), "é": .int32(2), "a": .int32(3)]))
        for bad in [#"{,"a":1}"#, #"{"a":1,,"b":2}"#, #"{"a":1"b":2}"#, #"{"a":1,}"#, #"{"a""#, #"{"a"}"#, #"{"a":1,"b""#] {
            #expect(throws: RPCError.self, "\(bad)") { try Self.parse(bad) }
        }
    }

    @Test("keys that share a hash are told apart by their bytes")
    func hashCollisions() throws {
        #expect(RPCKeyHash.hash("majorVersion".utf8) == RPCKeyHash.hash("minorVersion".utf8))
        let version = try SDLSyncMsgVersion(jsonParameters: #"{"minorVersion":1,"majorVersion":5,"mjxorVersion":2}"#)
        #expect(version.majorVersion == 5)
        #expect(version.minorVersion == 1)
        #expect(version.unknownParameters == ["mjxorVersion": .int32(2)])
    }

    @Test("escapes, surrogate pairs and escaped keys")
    func escapes() throws {
        let value = try Self.parse(#"{"s":"a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20AC\ud83d\ude00"}"#)
        #expect(value == .object(["s": .string("a\"b\\c/d\u{08}\u{0C}\n\r\tAé€😀")]))
        // A key written with escapes still matches the spec name.
        let request = try SDLUnpublishAppServiceRequest(jsonParameters: #"{"service\u0049D":"s1"}"#)
        #expect(request.serviceID == "s1")
        #expect(request.unknownParameters.isEmpty)
        // Raw UTF-8 in keys and strings.
        #expect(try Self.parse(#"{"ключ":"значение 😀"}"#) == .object(["ключ": .string("значение 😀")]))
    }

    @Test("numbers: integers, fractions, exponents, widths")
    func numbers() throws {
        let value = try Self.parse(#"{"a":0,"b":-0,"c":2147483647,"d":2147483648,"e":-9223372036854775808,"f":1.5e3,"g":-2E-2,"h":0.1,"i":123456789012345678901234567890,"j":1e-400000}"#)
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object["a"] == .int32(0))
        #expect(object["b"] == .int32(0))
        #expect(object["c"] == .int32(2_147_483_647))
        #expect(object["d"] == .int64(2_147_483_648))
        #expect(object["e"] == .int64(.min))
        #expect(object["f"] == .double(1500))
        #expect(object["g"] == .double(-0.02))
        #expect(object["h"] == .double(0.1))
        #expect(object["i"] == .double(1.2345678901234568e29))
        #expect(object["j"] == .double(0))
    }

    @Test("correctly rounded doubles on the slow path")
    func slowPathDoubles() throws {
        let texts = ["0.30000000000000004", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "9007199254740993", "123456789012345678901234567890.5"]
        for text in texts {
            let value = try Self.parse(#"{"x":\#(text)}"#)
            #expect(value == .object(["x": .double(Double(text)!)]) || value == .object(["x": .int64(Int64(text) ?? 0)]), "\(text)")
        }
    }

    @Test("malformed input is a typed error with an offset", arguments: [
        ("", "malformedInput"), ("[]", "typeMismatch"), ("{", "malformedInput"), ("{}x", "malformedInput"),
        ("{} {}", "malformedInput"), (#"{"a":1,}"#, "malformedInput"), (#"{"a":[1,]}"#, "malformedInput"),
        (#"{"a" 1}"#, "malformedInput"), (#"{a:1}"#, "malformedInput"), (#"{"a":01}"#, "malformedInput"),
        (#"{"a":1.}"#, "malformedInput"), (#"{"a":.5}"#, "malformedInput"), (#"{"a":1e}"#, "malformedInput"),
        (#"{"a":+1}"#, "malformedInput"), (#"{"a":NaN}"#, "malformedInput"), (#"{"a":tru}"#, "malformedInput"),
        (#"{"a":"x\q"}"#, "malformedInput"), (#"{"a":"\ud800"}"#, "malformedInput"), (#"{"a":"\udc00x"}"#, "malformedInput"),
        (#"{"a":"\ud83d\u0041"}"#, "malformedInput"), (#"{"a":"\u12"}"#, "malformedInput"), ("{\"a\":\"tab\there\"}", "malformedInput"),
        (#"{"a":"unterminated}"#, "malformedInput"), ("\u{FEFF}{}", "malformedInput"), (#"{"a":1e400}"#, "numberOutOfRange"),
    ])
    func malformed(text: String, code: String) {
        #expect {
            try Self.parse(text)
        } throws: { error in
            guard let error = error as? RPCError else { return false }
            return error.code.name == code && (code != "malformedInput" || error.offset != nil)
        }
    }

    @Test("invalid UTF-8 is rejected in strings and keys")
    func invalidUTF8() throws {
        for bytes: [UInt8] in [[0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFF]] {
            for template in [(#"{"a":""#, #""}"#), (#"{""#, #"":1}"#)] {
                let buffer = ByteBuffer(bytes: Array(template.0.utf8) + bytes + Array(template.1.utf8))
                #expect(throws: RPCError.self) { try RPCValue(jsonObject: buffer) }
                do {
                    _ = try RPCValue(jsonObject: buffer)
                } catch {
                    #expect(error.code == .invalidUTF8)
                }
            }
        }
    }

    @Test("nesting deeper than the limit is refused, for unknown values too")
    func depthLimit() throws {
        let ok = String(repeating: "[", count: 31) + String(repeating: "]", count: 31)
        #expect(throws: Never.self) { try Self.parse(#"{"a":\#(ok)}"#) }
        let deep = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: RPCError.self) { try Self.parse(#"{"a":\#(deep)}"#) }
        let hostile = String(repeating: #"{"a":"#, count: 1_000_000)
        let error = try #require(throws: RPCError.self) { try Self.parse(hostile) }
        #expect(error.code == .nestingTooDeep)
        #expect(error.offset == 32 * 5)
        var options = RPCCodingOptions()
        options.maxNestingDepth = 40
        #expect(throws: Never.self) { try RPCValue(jsonObject: #"{"a":\#(deep)}"#, options: options) }
    }

    @Test("a giant string decodes in bounded memory: one copy")
    func giantString() throws {
        let big = String(repeating: "é", count: 1_000_000)
        let value = try Self.parse(#"{"s":"\#(big)"}"#)
        #expect(value == .object(["s": .string(big)]))
        // Too long for locationName (maxlength 500): a validation error, not a crash.
        let error = try #require(throws: RPCError.self) {
            try SDLSendLocationRequest(jsonParameters: #"{"locationName":"\#(big)"}"#)
        }
        #expect(error.description == "locationName: above maxlength 500 (1000000 characters)")
    }
}

@Suite("JSON writer")
struct JSONWriterTests {
    @Test("strings are escaped as JSON requires, nothing more")
    func escaping() throws {
        let value = RPCValue.object(["k\"\\": .string("q\"b\\n\nr\rt\tb\u{08}f\u{0C}c\u{01}\u{1F}é😀/\u{7F}")])
        let text = try value.jsonText()
        #expect(text == #"{"k\"\\":"q\"b\\n\nr\rt\tb\bf\fc\u0001\u001fé😀/\#u{7F}"}"#)
        #expect(try RPCValue(jsonObject: text) == value)
    }

    @Test("numbers: integers as integers, doubles shortest and round-tripping")
    func numbers() throws {
        let doubles: [Double] = [0, -0.0, 1, -1, 0.1, 1.5, 100, 1e15, 1e16, 1e21, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.30000000000000004, 359.99, -180]
        for double in doubles {
            let text = try RPCValue.double(double).jsonText()
            let back = try RPCValue(jsonObject: "{\"x\":\(text)}")
            #expect(back == .object(["x": .double(double)]) || (double.rounded() == double && back == .object(["x": .int32(Int32(exactly: double) ?? 0)])), "\(double) → \(text)")
            #expect(try JSONSerialization.jsonObject(with: Data("[\(text)]".utf8)) is [Any], "\(text) is valid JSON")
        }
        #expect(try RPCValue.double(100).jsonText() == "100.0")
        #expect(try RPCValue.double(-0.0).jsonText() == "-0.0")
        #expect(try RPCValue.double(0.1).jsonText() == "0.1")
        #expect(try RPCValue.double(1e-7).jsonText() == "0.0000001")
        #expect(try RPCValue.double(-2.5e-5).jsonText() == "-0.000025")
        #expect(try RPCValue.double(0.30000000000000004).jsonText() == "0.30000000000000004")
        #expect(try RPCValue.double(1e16).jsonText() == "1e+16")
        #expect(try RPCValue.double(123456789.123).jsonText() == "123456789.123")
        #expect(try RPCValue.int32(.min).jsonText() == "-2147483648")
        #expect(try RPCValue.int64(.min).jsonText() == "-9223372036854775808")
        #expect(try RPCValue.int64(.max).jsonText() == "9223372036854775807")
        #expect(throws: RPCError.self) { try RPCValue.double(.infinity).jsonText() }
    }

    @Test("compact output of a typed message")
    func compact() throws {
        let request = SDLGetInteriorVehicleDataConsentRequest(moduleType: .climate, moduleIds: ["A0A", "R0A"])
        #expect(try request.jsonParametersText() == #"{"moduleType":"CLIMATE","moduleIds":["A0A","R0A"]}"#)
        #expect(try SDLSubscribeWayPointsRequest().jsonParametersText() == "{}")
    }
}
