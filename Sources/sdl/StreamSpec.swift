import Foundation
import NIOCore
import SDLBSON
import SDLProtocol
import SDLRPC

/// A failure of a command, reported as one line on stderr with a non-zero exit.
struct ToolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Builds the byte stream a SPEC file describes (ARCHITECTURE.md §5): a JSON array of messages, each
/// fragmented by `mtu` with the library's own fragmenter; raw frames (also malformed ones) and raw
/// bytes for test input.
///
/// A SPEC is test input, so it is taken as written or refused, never repaired. It is read with
/// SDLRPC's strict JSON reader (`RPCValue(jsonText:)`): RFC 8259 only, a key repeated in any
/// object is refused with its path, and every number keeps its value: integers exactly (`int32`
/// or `int64`), other numbers as the Double they denote. Integer fields take only integers
/// written without a fraction or exponent, since as Doubles `1.0` and `0.99999999999999999999`
/// are the same number; a number of magnitude 2^63 or more, which the reader can hold only as a
/// rounded Double, is refused wherever it is. Objects keep their key order: `json` parameters
/// and Extended JSON payloads are written in the order of the SPEC.
struct StreamSpec {
    /// How the SPEC is read and its parts written: no spec validation (deliberately invalid
    /// messages are test input), nesting up to the reader's ceiling.
    static let jsonOptions = RPCCodingOptions(validate: false, maxNestingDepth: RPCCodingOptions.nestingDepthCeiling)

    /// Encodes the whole SPEC. It must be UTF-8 JSON text (RFC 8259 §8.1).
    static func encode(specJSON: Data) throws -> ByteBuffer {
        let text = try utf8Text(specJSON, source: "SPEC")
        // UTF-8 JSON text holds no NUL byte; one is the sign of UTF-16 or UTF-32, worth saying so.
        if let nul = specJSON.firstIndex(of: 0) {
            throw ToolError("SPEC is not UTF-8 JSON text: a NUL byte at byte \(nul - specJSON.startIndex)")
        }
        guard case .array(let entries) = try parse(text) else {
            throw ToolError("SPEC must be a JSON array of messages")
        }
        var stream = ByteBuffer()
        var previousMessageID: UInt32 = 0
        for (index, entry) in entries.enumerated() {
            guard case .object(let object) = entry else {
                throw ToolError("SPEC[\(index)]: not a JSON object")
            }
            do {
                try encode(Fields(object), previousMessageID: &previousMessageID, to: &stream)
            } catch let error as ToolError {
                throw ToolError("SPEC[\(index)]: \(error.description)")
            } catch let error as SDLProtocolError {
                throw ToolError("SPEC[\(index)]: \(error)")
            }
        }
        return stream
    }

    /// The SPEC's value tree, or one line naming the path (and byte offset) of what is wrong.
    static func parse(_ text: String) throws -> RPCValue {
        do {
            let value = try RPCValue(jsonText: text, options: Self.jsonOptions)
            try requireExactNumbers(value)
            return value
        } catch {
            throw ToolError(Self.message(for: error))
        }
    }

    /// Refuses numbers of magnitude 2^63 or more: the reader gives an integer beyond the 64-bit
    /// range as a rounded Double, so writing it back would change the number the author wrote.
    static func requireExactNumbers(_ value: RPCValue) throws(RPCError) {
        switch value {
        case .double(let double) where double.magnitude >= 0x1p63:
            throw RPCError(
                .numberOutOfRange,
                "a number beyond the 64-bit integer range, which JSON readers hold only as a rounded Double (\(double))")
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                do throws(RPCError) { try requireExactNumbers(element) } catch { throw error.prefixed(.index(index)) }
            }
        case .object(let object):
            for entry in object.entries {
                do throws(RPCError) { try requireExactNumbers(entry.value) } catch { throw error.prefixed(.key(entry.key)) }
            }
        default:
            break
        }
    }

    /// `SPEC[2].rpc.json: the key "a" appears more than once in one object`, or a syntax error
    /// with the path of the value it is in and its byte offset in the SPEC.
    static func message(for error: RPCError) -> String {
        var path = error.path
        var detail = error.detail
        if error.code == .duplicateParameter, case .key(let key)? = path.last {
            path.removeLast()
            detail = "the key \"\(key)\" appears more than once in one object"
        }
        var text = "SPEC"
        for component in path {
            switch component {
            case .key(let key): text += ".\(key)"
            case .index(let index): text += "[\(index)]"
            }
        }
        text += ": \(detail)"
        if let offset = error.offset {
            text += " (at byte \(offset))"
        }
        return text
    }

    static func encode(_ fields: Fields, previousMessageID: inout UInt32, to stream: inout ByteBuffer) throws {
        let kind = try fields.string("kind") ?? "frame"
        if kind == "raw" {
            guard let hex = try fields.string("hex"), let bytes = parseHex(hex) else {
                throw ToolError("raw entry needs \"hex\"")
            }
            stream.writeBytes(bytes)
            return
        }
        let version = ProtocolVersion(rawValue: UInt8(try fields.int("version", in: 0...15) ?? 5))
        let sessionID = SessionID(UInt8(try fields.int("sessionId", in: 0...255) ?? 1))
        let encrypted = try fields.bool("encrypted") ?? false
        let isControl = kind == "control"
        let defaultService: ServiceType = isControl ? .control : .rpc
        let serviceType = try fields.serviceType("serviceType") ?? defaultService
        let messageID: UInt32
        if let explicit = try fields.int("messageId", in: 0...Int(UInt32.max)) {
            messageID = UInt32(explicit)
        } else if try isControl || (kind == "frame" && fields.frameType() == .control) {
            messageID = 0
        } else {
            messageID = previousMessageID &+ 1
        }
        if messageID != 0 { previousMessageID = messageID }
        let limits = ProtocolLimits()
        let mtu = try fields.int("mtu", in: 1...Int(Int32.max)) ?? limits.sendPayloadLimit(version: version)

        switch kind {
        case "frame":
            let frameType = try fields.frameType() ?? .single
            let payload = try fields.hex("payloadHex") ?? []
            var header = FrameHeader(
                version: version, encrypted: encrypted, frameType: frameType, serviceType: serviceType,
                frameInfo: try fields.frameInfo() ?? 0, sessionID: sessionID, dataSize: UInt32(payload.count),
                messageID: MessageID(messageID))
            if let dataSize = try fields.int("dataSize", in: 0...Int(UInt32.max)) {
                header.dataSize = UInt32(dataSize)  // deliberately inconsistent frames for test input
            }
            header.write(to: &stream)
            stream.writeBytes(payload)
        case "control":
            guard let info = try fields.frameInfo() else { throw ToolError("control entry needs \"frameInfo\"") }
            let payload: [UInt8]
            if let bson = fields.value("bson") {
                payload = try extendedJSONDocument(bson, field: "bson").bytes
            } else {
                payload = try fields.hex("payloadHex") ?? []
            }
            try FrameEncoder.writeMessage(
                ByteBuffer(bytes: payload), version: version, serviceType: serviceType, sessionID: sessionID,
                messageID: MessageID(messageID), control: ControlFrameInfo(rawValue: info), encrypted: encrypted,
                maxPayloadPerFrame: max(mtu, payload.count), to: &stream)
        case "rpc":
            guard case .object(let rpc)? = fields.value("rpc") else { throw ToolError("rpc entry needs an \"rpc\" object") }
            let payload = try rpcPayload(Fields(rpc), version: version)
            try FrameEncoder.writeMessage(
                payload, version: version, serviceType: serviceType, sessionID: sessionID, messageID: MessageID(messageID),
                encrypted: encrypted, maxPayloadPerFrame: mtu, to: &stream)
        case "data":
            // Audio, video or any other service: a payload fragmented like any message.
            let payload = try fields.hex("payloadHex") ?? []
            try FrameEncoder.writeMessage(
                ByteBuffer(bytes: payload), version: version, serviceType: serviceType, sessionID: sessionID,
                messageID: MessageID(messageID), encrypted: encrypted, maxPayloadPerFrame: mtu, to: &stream)
        default:
            throw ToolError("unknown kind \"\(kind)\" (rpc, control, data, frame, raw)")
        }
    }

    static func rpcPayload(_ rpc: Fields, version: ProtocolVersion) throws -> ByteBuffer {
        let rpcType: RPCType
        switch rpc.value("rpcType") {
        case nil, .string("request")?: rpcType = .request
        case .string("response")?: rpcType = .response
        case .string("notification")?: rpcType = .notification
        case .string("erroneousResponse")?: rpcType = .erroneousResponse
        case let value?:
            guard let number = Fields.integer(value), (0...15).contains(number) else {
                throw ToolError("rpcType \(Self.shortText(value)) is not request, response, notification, erroneousResponse or 0...15")
            }
            rpcType = RPCType(rawValue: UInt8(number))
        }
        let functionID: UInt32
        switch rpc.value("functionId") {
        case .string(let name)?:
            guard let id = FunctionID(name: name) else { throw ToolError("\"functionId\": no function named \"\(name)\" in the spec") }
            functionID = id.rawValue
        case let value?:
            guard let number = Fields.integer(value), (0...Int64(RPCBinaryHeader.maxFunctionID)).contains(number) else { fallthrough }
            functionID = UInt32(number)
        case nil:
            throw ToolError("rpc needs a \"functionId\": a spec function name or a number in 0...0x0FFFFFFF")
        }
        let correlationID = UInt32(try rpc.int("correlationId", in: 0...Int(UInt32.max)) ?? 0)
        var parameters = ByteBuffer()
        if let json = rpc.value("json") {
            // Any JSON value, written as the SPEC has it (key order included), so that invalid
            // parameters can be test input too.
            parameters.writeString(try Self.jsonText(json, field: "json"))
        } else if let bson = rpc.value("bson") {
            parameters = try bsonParameters(bson, functionID: functionID, rpcType: rpcType)
        }
        let bulk = try rpc.hex("bulkHex") ?? []
        var payload = ByteBuffer()
        if version == .v1 {
            // Version 1 carries the JSON envelope and no binary header.
            // The function travels by name: "Name" for requests and notifications, "NameResponse"
            // for responses, as sdl_java_suite's v1 envelope has it. Version 1 has no erroneous
            // response type: it is a response there.
            let isResponse = rpcType == .response || rpcType == .erroneousResponse
            let type = isResponse ? "response" : rpcType == .notification ? "notification" : "request"
            guard let name = FunctionID(rawValue: functionID).name else {
                throw ToolError("version 1 names the function in its envelope: \(functionID) is no function of the spec")
            }
            let body: RPCObject = [
                "correlationID": .int64(Int64(correlationID)), "name": .string(isResponse ? name + "Response" : name),
                "parameters": rpc.value("json") ?? .object(RPCObject()),
            ]
            payload.writeString(try Self.jsonText(.object([type: .object(body)]), field: "json"))
            return payload
        }
        try RPCPayload(
            header: RPCBinaryHeader(rpcType: rpcType, functionID: functionID, correlationID: correlationID, jsonSize: 0),
            parameters: parameters, bulkData: ByteBuffer(bytes: bulk)
        ).write(to: &payload)
        return payload
    }

    /// RPC parameters given as a JSON object, encoded as BSON: through the function's generated type
    /// when they are valid for it (so every Integer gets its spec width), else as a generic tree
    /// (integers int32 when they fit, int64 otherwise), which also serves deliberately invalid input.
    static func bsonParameters(_ value: RPCValue, functionID: UInt32, rpcType: RPCType) throws -> ByteBuffer {
        guard case .object = value else { throw ToolError("\"bson\" must be a JSON object of parameters") }
        if let message = try? AnyRPCMessage(
            functionID: FunctionID(rawValue: functionID), rpcType: rpcType, jsonParameters: try Self.jsonText(value, field: "bson")),
            let parameters = try? message.message.parameters(format: .bson)
        {
            return parameters
        }
        do {
            return try value.bsonDocument(options: Self.jsonOptions)
        } catch {
            throw ToolError("\"bson\": \(error)")
        }
    }

    /// A BSON document from an Extended JSON value of the SPEC (an object such as
    /// `{"hashId": {"$numberInt": "5"}}`; plain numbers follow Extended JSON's relaxed rules), its
    /// keys in the order of the SPEC.
    static func extendedJSONDocument(_ value: RPCValue, field: String) throws -> BSONDocument {
        guard case .object = value else { throw ToolError("\"\(field)\" must be an Extended JSON object") }
        let text = try Self.jsonText(value, field: field)
        do {
            return try BSONDocument(extendedJSON: text)
        } catch {
            throw ToolError("\"\(field)\": \(error.detail)")
        }
    }

    /// A value of the SPEC as compact JSON text: its keys in their order, integers as written,
    /// other numbers as the shortest text of their Double.
    static func jsonText(_ value: RPCValue, field: String) throws -> String {
        do {
            return try value.jsonText(options: Self.jsonOptions)
        } catch {
            throw ToolError("\"\(field)\": \(error)")
        }
    }

    /// A value of the SPEC for an error message.
    static func shortText(_ value: RPCValue) -> String {
        (try? value.jsonText(options: Self.jsonOptions)) ?? "of this type"
    }

    /// Typed access to a SPEC object's fields, with errors that name the field. A field that is
    /// `null` counts as absent.
    struct Fields {
        let object: RPCObject
        init(_ object: RPCObject) { self.object = object }

        func value(_ key: String) -> RPCValue? {
            guard let value = self.object[key], value != .null else { return nil }
            return value
        }

        func string(_ key: String) throws -> String? {
            guard let value = self.value(key) else { return nil }
            guard case .string(let string) = value else { throw ToolError("\"\(key)\" must be a string") }
            return string
        }

        func bool(_ key: String) throws -> Bool? {
            guard let value = self.value(key) else { return nil }
            guard case .bool(let bool) = value else { throw ToolError("\"\(key)\" must be true or false") }
            return bool
        }

        /// An integer, written without a fraction or exponent: the reader gives other forms as
        /// Doubles, in which a rounded value cannot be told from an exact one.
        static func integer(_ value: RPCValue) -> Int64? {
            switch value {
            case .int32(let int): return Int64(int)
            case .int64(let int): return int
            default: return nil
            }
        }

        func int(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let value = self.value(key) else { return nil }
            guard let int = Self.integer(value).flatMap(Int.init(exactly:)), range.contains(int) else {
                var message = "\"\(key)\" must be an integer in \(range.lowerBound)...\(range.upperBound)"
                if case .double = value { message += ", written without a fraction or exponent" }
                throw ToolError(message)
            }
            return int
        }

        func hex(_ key: String) throws -> [UInt8]? {
            guard let text = try self.string(key) else { return nil }
            guard let bytes = parseHex(text) else { throw ToolError("\"\(key)\" is not hex") }
            return bytes
        }

        func serviceType(_ key: String) throws -> ServiceType? {
            switch self.value(key) {
            case nil: return nil
            case .string(let name)?:
                guard let service = ServiceType.known.first(where: { $0.name == name.uppercased() }) else {
                    throw ToolError("\"\(key)\": unknown service \(name) (CONTROL, RPC, AUDIO, VIDEO, HYBRID or a number)")
                }
                return service
            default: return ServiceType(rawValue: UInt8(try self.int(key, in: 0...255)!))
            }
        }

        func frameType() throws -> FrameType? {
            switch self.value("frameType") {
            case nil: return nil
            case .string(let name)?:
                let names = ["control": FrameType.control, "single": .single, "first": .first, "consecutive": .consecutive]
                guard let type = names[name] else { throw ToolError("\"frameType\": \(name) is not control, single, first or consecutive") }
                return type
            default: return FrameType(rawValue: UInt8(try self.int("frameType", in: 0...7)!))
            }
        }

        func frameInfo() throws -> UInt8? {
            switch self.value("frameInfo") {
            case nil: return nil
            case .string(let name)?:
                guard let info = ControlFrameInfo(name: name) else { throw ToolError("\"frameInfo\": unknown control frame \(name)") }
                return info.rawValue
            default: return UInt8(try self.int("frameInfo", in: 0...255)!)
            }
        }
    }
}
