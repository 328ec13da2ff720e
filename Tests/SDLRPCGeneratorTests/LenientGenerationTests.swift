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
            "self.droppedParameters = droppedParameters\n",
            // Encoding writes dropped parts back in place.
            #"writer.encode(self.color, forKey: "color")"#,
            #"writer.encodeIfPresent(self.size, forKey: "size", orDropped: self.droppedParameters)"#,
            #"writer.encodeIfPresent(self.flag, forKey: "flag", orDropped: self.droppedParameters)"#,
            #"writer.encodeArray(self.tags, forKey: "tags", merging: self.droppedParameters)"#,
            #"writer.encodeArrayIfPresent(self.colors, forKey: "colors", merging: self.droppedParameters)"#,
            // Validation reports them.
            #"if let value = self.size { validator.integer(value, "size", min: 0, max: 9) } else if !self.droppedParameters.isEmpty { validator.droppedParameter(self.droppedParameters, "size") }"#,
            #"if self.flag == nil, !self.droppedParameters.isEmpty { validator.droppedParameter(self.droppedParameters, "flag") }"#,
            #"validator.strings(self.tags, "tags", minSize: 1, maxSize: 5, minLength: 1, maxLength: nil, dropped: self.droppedParameters)"#,
            #"if let value = self.colors { validator.enumerations(value, "colors", minSize: nil, maxSize: nil, dropped: self.droppedParameters) } else if !self.droppedParameters.isEmpty { validator.droppedParameter(self.droppedParameters, "colors") }"#,
            // The property every struct has.
            "public var droppedParameters: RPCDroppedParameters\n",
        ]
        for line in expected {
            #expect(structs.contains(line), "missing: \(line)")
        }
    }

    @Test("a struct of mandatory scalars stores no dropped parameters: nothing in it can be dropped")
    func mandatoryScalarsOnly() throws {
        let structs = try Self.structs(structBody: "")
        #expect(structs.contains("public var droppedParameters: RPCDroppedParameters { RPCDroppedParameters() }\n"))
        #expect(!structs.contains("public var droppedParameters: RPCDroppedParameters\n"))
        #expect(!structs.contains("self.droppedParameters ="))
        #expect(!structs.contains("var droppedParameters = RPCDroppedParameters()\n        while"))
        #expect(!structs.contains("self.droppedParameters = droppedParameters"))
        #expect(!structs.contains("droppingInto"))
    }

    @Test("a spec parameter named droppedParameters is refused")
    func reservedName() throws {
        let spec = try SpecParser.parse(miniSpec(structBody: "\n        <param name=\"droppedParameters\" type=\"Boolean\" mandatory=\"false\"/>"))
        let error = try #require(throws: GeneratorError.self) { try CodeGenerator(spec: spec).generate() }
        #expect(error.description == "line 11: Thing: param name droppedParameters is reserved by the generated code")
    }
}
