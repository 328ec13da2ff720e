import SDLTestSupport
import SDLRPCGenerator
import Testing

/// What the generator emits for lenient decoding: optional and array parameters go through the
/// runtime's dropping entry points, mandatory scalars keep the strict call.
@Suite("Generated support for lenient decoding")
struct LenientGenerationTests {
    static let structBody = """

            <param name="size" type="Integer" minvalue="0" maxvalue="9" mandatory="false"/>
            <param name="flag" type="Boolean" mandatory="false"/>
            <param name="tags" type="String" array="true" minsize="1" maxsize="5" mandatory="true"/>
            <param name="colors" type="Color" array="true" mandatory="false"/>
    """

    static func structs(structBody: String = Self.structBody) throws -> String {
        let files = try CodeGenerator(spec: SpecParser.parse(miniSpec(structBody: structBody))).generate()
        return try #require(files.first(where: { $0.name == "Structs.swift" })?.contents)
    }

    @Test("each kind of parameter is decoded, encoded and validated through its entry point")
    func entryPoints() throws {
        let structs = try Self.structs()
        let expected = [
            // Decoding: the store is a local, handed to the value at the end.
            "var droppedParameters = RPCDroppedParameters()\n",
            #"where reader.currentKeyEquals("color"): try reader.decode(&color, "color")"# + "\n",
            #"where reader.currentKeyEquals("size"): try reader.decode(&size, "size", droppingInto: &droppedParameters)"#,
            #"where reader.currentKeyEquals("tags"): try reader.decodeArray(&tags, "tags", isOptional: false, droppingInto: &droppedParameters)"#,
            #"where reader.currentKeyEquals("colors"): try reader.decodeArray(&colors, "colors", isOptional: true, droppingInto: &droppedParameters)"#,
            "self.init(color: color, size: size, flag: flag, tags: tags, colors: colors, unknownParameters: unknownParameters, droppedParameters: droppedParameters)\n",
            // Encoding writes dropped parts back in place.
            #"writer.encode(self.color, forKey: "color")"#,
            #"writer.encodeIfPresent(self.size, forKey: "size", orDropped: self.extraParameters)"#,
            #"writer.encodeIfPresent(self.flag, forKey: "flag", orDropped: self.extraParameters)"#,
            #"writer.encodeArray(self.tags, forKey: "tags", merging: self.extraParameters)"#,
            #"writer.encodeArrayIfPresent(self.colors, forKey: "colors", merging: self.extraParameters)"#,
            // Validation reports them.
            #"if let value = self.size { validator.integer(value, "size", min: 0, max: 9) } else if !self.extraParameters.isEmpty { validator.droppedParameter(self.extraParameters, "size") }"#,
            #"if self.flag == nil, !self.extraParameters.isEmpty { validator.droppedParameter(self.extraParameters, "flag") }"#,
            #"validator.strings(self.tags, "tags", minSize: 1, maxSize: 5, minLength: 1, maxLength: nil, dropped: self.extraParameters)"#,
            #"if let value = self.colors { validator.enumerations(value, "colors", minSize: nil, maxSize: nil, dropped: self.extraParameters) } else if !self.extraParameters.isEmpty { validator.droppedParameter(self.extraParameters, "colors") }"#,
            // The property, stored with unknownParameters behind one reference.
            "public var droppedParameters: RPCDroppedParameters {\n        get { self.extraParameters.dropped }\n",
            "self.extraParameters = RPCExtraParameters(unknown: unknownParameters, dropped: droppedParameters)\n",
            "self.init(color: color, size: size, flag: flag, tags: tags, colors: colors, unknownParameters: unknownParameters, droppedParameters: RPCDroppedParameters())\n",
        ]
        for line in expected {
            #expect(structs.contains(line), "missing: \(line)")
        }
    }

    @Test("a struct of mandatory scalars stores no dropped parameters: nothing in it can be dropped")
    func mandatoryScalarsOnly() throws {
        let structs = try Self.structs(structBody: "")
        #expect(structs.contains("public var droppedParameters: RPCDroppedParameters { RPCDroppedParameters() }\n"))
        #expect(structs.contains("self.extraParameters = RPCExtraParameters(unknown: unknownParameters, dropped: RPCDroppedParameters())\n"))
        #expect(!structs.contains("droppedParameters: droppedParameters"))
        #expect(!structs.contains("var droppedParameters = RPCDroppedParameters()\n        while"))
        #expect(!structs.contains("self.droppedParameters = droppedParameters"))
        #expect(!structs.contains("droppingInto"))
    }

    @Test("spec parameters named droppedParameters or extraParameters are refused", arguments: ["droppedParameters", "extraParameters"])
    func reservedName(name: String) throws {
        let spec = try SpecParser.parse(miniSpec(structBody: "\n        <param name=\"\(name)\" type=\"Boolean\" mandatory=\"false\"/>"))
        let error = try #require(throws: GeneratorError.self) { try CodeGenerator(spec: spec).generate() }
        #expect(error.description == "line 11: Thing: param name \(name) is reserved by the generated code")
    }
}
