import NIOCore
import SDLProtocol
import SDLRPC

/// An RPC payload described for the tool's output: header fields, the function's spec name, the
/// parameters as JSON, and what is wrong with it (if anything) as errors that name the parameter.
struct RPCDescription {
    var fields: [(String, OutputJSON)]
    var problems: [(code: String, detail: String)]

    /// Describes a payload of protocol versions 2–5 (binary header + JSON or BSON + bulk data).
    ///
    /// The parameters are decoded with the generated type of the function without validation, so
    /// that an invalid message is still shown; each spec violation is then reported. A function
    /// the spec does not define, or parameters the typed decoder refuses, are shown as a generic
    /// value tree.
    init(payload: RPCPayload) {
        let header = payload.header
        let format = RPCParameterFormat.detect(payload.parameters.readableBytesView)
        let functionID = FunctionID(rawValue: header.functionID)
        self.fields = [
            ("rpcType", .string(header.rpcType.description)), ("functionId", .int(Int(header.functionID))),
            ("functionName", functionID.name.map(OutputJSON.string) ?? .null), ("correlationId", .int(Int(header.correlationID))),
            ("encoding", .string(format.description)),
        ]
        self.problems = []
        let params = self.describeParameters(payload.parameters, format: format, functionID: functionID, rpcType: header.rpcType)
        self.fields.append(("params", params))
        self.fields.append(("bulkSize", .int(payload.bulkData.readableBytes)))
    }

    /// Describes a version 1 RPC: the JSON envelope `{"request"|"response"|"notification":
    /// {"name", "correlationID", "parameters"}}`, which has no binary header. Throws when the
    /// payload is no such envelope (the JSON reader's error, or the envelope's shape); a member of
    /// the body that is missing, of another type or unknown is a problem, never ignored.
    init(v1Envelope payload: ByteBuffer) throws(Problem) {
        let envelope: RPCValue
        do {
            envelope = try RPCValue(jsonObject: payload, options: RPCCodingOptions(validate: false))
        } catch {
            throw Problem(code: "invalidJSON", offset: 0, detail: "v1 RPC payload is not a JSON envelope: \(error)")
        }
        guard case .object(let members) = envelope, members.count == 1, let typeName = members.first?.key,
            ["request", "response", "notification"].contains(typeName), case .object(let body) = members[0].value
        else {
            throw Problem(
                code: "invalidJSON", offset: 0,
                detail: "v1 RPC envelope must be an object with one member, request, response or notification, whose value is an object")
        }
        let rpcType: RPCType = typeName == "response" ? .response : typeName == "notification" ? .notification : .request
        var name: String?
        var correlationID: OutputJSON = .null
        var parameters = RPCObject()
        var problems: [(code: String, detail: String)] = []
        for entry in body.entries {
            switch (entry.key, entry.value) {
            case ("name", .string(let value)): name = value
            case ("correlationID", .int32(let value)) where value >= 0: correlationID = .int(Int(value))
            case ("correlationID", .int64(let value)) where value <= UInt32.max: correlationID = .int(Int(value))
            case ("parameters", .object(let value)): parameters = value
            case ("name", _): problems.append(("rpcDecoding", "v1 envelope: name is not a string"))
            case ("correlationID", _): problems.append(("rpcDecoding", "v1 envelope: correlationID is not an integer in 0...4294967295"))
            case ("parameters", _): problems.append(("rpcDecoding", "v1 envelope: parameters is not an object"))
            default: problems.append(("rpcDecoding", "v1 envelope: unknown member \(entry.key)"))
            }
        }
        // Notifications answer nothing, so they need no correlation id.
        for member in typeName == "notification" ? ["name"] : ["name", "correlationID"] where body[member] == nil {
            problems.append(("rpcDecoding", "v1 envelope: no \(member)"))
        }
        let functionID = name.flatMap { FunctionID(name: $0.hasSuffix("Response") ? String($0.dropLast(8)) : $0) }
        self.fields = [
            ("rpcType", .string(typeName)), ("functionId", functionID.map { .int(Int($0.rawValue)) } ?? .null),
            ("functionName", name.map(OutputJSON.string) ?? .null), ("correlationId", correlationID), ("encoding", .string("json")),
        ]
        self.problems = problems
        let text = (try? RPCValue.object(parameters).jsonText()) ?? "{}"
        var params = OutputJSON.raw(text)
        if let functionID {
            params = self.describeParameters(ByteBuffer(string: text), format: .json, functionID: functionID, rpcType: rpcType)
        }
        self.fields += [("params", params), ("bulkSize", .int(0))]
    }

    private mutating func describeParameters(
        _ parameters: ByteBuffer, format: RPCParameterFormat, functionID: FunctionID, rpcType: RPCType
    ) -> OutputJSON {
        let lenient = RPCCodingOptions(validate: false)
        if let type = AnyRPCMessage.messageType(functionID: functionID, rpcType: rpcType) {
            do {
                let message = try type.init(parameters: parameters, format: format, options: lenient)
                for error in message.validationErrors(limit: 20) {
                    self.problems.append(("rpcValidation", error.description))
                }
                return .raw(try message.jsonParametersText(options: lenient))
            } catch {
                self.problems.append(("rpcDecoding", error.description))
            }
        }
        do {
            return .raw(try RPCValue(parameters: parameters, format: format, options: lenient).jsonText())
        } catch {
            if self.problems.isEmpty { self.problems.append(("rpcDecoding", error.description)) }
            return .null
        }
    }
}
