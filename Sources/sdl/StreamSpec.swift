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
struct StreamSpec {
    /// Encodes the whole SPEC. It must be UTF-8 (RFC 8259 §8.1): JSONSerialization would also
    /// take UTF-16 and UTF-32, whose NUL bytes UTF-8 JSON text cannot contain.
    static func encode(specJSON: Data) throws -> ByteBuffer {
        _ = try utf8Text(specJSON, source: "SPEC")
        if let nul = specJSON.firstIndex(of: 0) {
            throw ToolError("SPEC is not UTF-8 JSON text: a NUL byte at byte \(nul - specJSON.startIndex)")
        }
        guard let entries = try JSONSerialization.jsonObject(with: specJSON) as? [Any] else {
            throw ToolError("SPEC must be a JSON array of messages")
        }
        var stream = ByteBuffer()
        var previousMessageID: UInt32 = 0
        for (index, entry) in entries.enumerated() {
            guard let object = entry as? [String: Any] else {
                throw ToolError("SPEC[\(index)]: not a JSON object")
            }
            do {
                try encode(object, previousMessageID: &previousMessageID, to: &stream)
            } catch let error as ToolError {
                throw ToolError("SPEC[\(index)]: \(error.description)")
            } catch let error as SDLProtocolError {
                throw ToolError("SPEC[\(index)]: \(error)")
            }
        }
        return stream
    }

    static func encode(_ entry: [String: Any], previousMessageID: inout UInt32, to stream: inout ByteBuffer) throws {
        let fields = Fields(entry)
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
            if let bson = try fields.value("bson") {
                payload = try extendedJSONDocument(bson, field: "bson").bytes
            } else {
                payload = try fields.hex("payloadHex") ?? []
            }
            try FrameEncoder.writeMessage(
                ByteBuffer(bytes: payload), version: version, serviceType: serviceType, sessionID: sessionID,
                messageID: MessageID(messageID), control: ControlFrameInfo(rawValue: info), encrypted: encrypted,
                maxPayloadPerFrame: max(mtu, payload.count), to: &stream)
        case "rpc":
            guard let rpc = entry["rpc"] as? [String: Any] else { throw ToolError("rpc entry needs an \"rpc\" object") }
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
        switch try rpc.value("rpcType") {
        case nil, "request" as String: rpcType = .request
        case "response" as String: rpcType = .response
        case "notification" as String: rpcType = .notification
        case "erroneousResponse" as String: rpcType = .erroneousResponse
        case let number as Int where (0...15).contains(number): rpcType = RPCType(rawValue: UInt8(number))
        case let other?: throw ToolError("rpcType \(other) is not request, response, notification, erroneousResponse or 0...15")
        }
        let functionID: UInt32
        switch try rpc.value("functionId") {
        case let number as Int where (0...Int(RPCBinaryHeader.maxFunctionID)).contains(number): functionID = UInt32(number)
        case let name as String:
            guard let id = FunctionID(name: name) else { throw ToolError("\"functionId\": no function named \"\(name)\" in the spec") }
            functionID = id.rawValue
        default: throw ToolError("rpc needs a \"functionId\": a spec function name or a number in 0...0x0FFFFFFF")
        }
        let correlationID = UInt32(try rpc.int("correlationId", in: 0...Int(UInt32.max)) ?? 0)
        var parameters = ByteBuffer()
        if let json = try rpc.value("json") {
            let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .fragmentsAllowed])
            parameters.writeBytes(data)
        } else if let bson = try rpc.value("bson") {
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
            let parametersObject = try rpc.value("json") ?? [String: Any]()
            let body: [String: Any] = [
                "name": isResponse ? name + "Response" : name, "correlationID": correlationID,
                "parameters": parametersObject,
            ]
            let envelope: [String: Any] = [type: body]
            payload.writeBytes(try JSONSerialization.data(withJSONObject: envelope, options: [.sortedKeys]))
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
    static func bsonParameters(_ value: Any, functionID: UInt32, rpcType: RPCType) throws -> ByteBuffer {
        guard value is [String: Any] else { throw ToolError("\"bson\" must be a JSON object of parameters") }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
        if let message = try? AnyRPCMessage(
            functionID: FunctionID(rawValue: functionID), rpcType: rpcType, jsonParameters: text),
            let parameters = try? message.message.parameters(format: .bson)
        {
            return parameters
        }
        do {
            return try RPCValue(jsonObject: text).bsonDocument()
        } catch {
            throw ToolError("\"bson\": \(error)")
        }
    }

    /// A BSON document from an Extended JSON value of the SPEC (an object such as
    /// `{"hashId": {"$numberInt": "5"}}`; plain numbers follow Extended JSON's relaxed rules).
    /// The SPEC is read with JSONSerialization, which keeps no key order: keys are written sorted;
    /// use `payloadHex` for exact bytes.
    static func extendedJSONDocument(_ value: Any, field: String) throws -> BSONDocument {
        guard value is [String: Any] else { throw ToolError("\"\(field)\" must be an Extended JSON object") }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
        do {
            return try BSONDocument(extendedJSON: text)
        } catch {
            throw ToolError("\"\(field)\": \(error.detail)")
        }
    }

    /// Typed access to a SPEC object's fields, with errors that name the field.
    struct Fields {
        let object: [String: Any]
        init(_ object: [String: Any]) { self.object = object }

        func value(_ key: String) throws -> Any? {
            guard let value = self.object[key], !(value is NSNull) else { return nil }
            return value
        }

        func string(_ key: String) throws -> String? {
            guard let value = try self.value(key) else { return nil }
            guard let string = value as? String else { throw ToolError("\"\(key)\" must be a string") }
            return string
        }

        func bool(_ key: String) throws -> Bool? {
            guard let value = try self.value(key) else { return nil }
            guard let number = value as? NSNumber, number.isJSONBool else {
                throw ToolError("\"\(key)\" must be true or false")
            }
            return number.boolValue
        }

        func int(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let value = try self.value(key) else { return nil }
            guard let number = value as? NSNumber, !number.isJSONBool,
                let int = Int(exactly: number.doubleValue), range.contains(int)
            else {
                throw ToolError("\"\(key)\" must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return int
        }

        func hex(_ key: String) throws -> [UInt8]? {
            guard let text = try self.string(key) else { return nil }
            guard let bytes = parseHex(text) else { throw ToolError("\"\(key)\" is not hex") }
            return bytes
        }

        func serviceType(_ key: String) throws -> ServiceType? {
            switch try self.value(key) {
            case nil: return nil
            case let name as String:
                guard let service = ServiceType.known.first(where: { $0.name == name.uppercased() }) else {
                    throw ToolError("\"\(key)\": unknown service \(name) (CONTROL, RPC, AUDIO, VIDEO, HYBRID or a number)")
                }
                return service
            default: return ServiceType(rawValue: UInt8(try self.int(key, in: 0...255)!))
            }
        }

        func frameType() throws -> FrameType? {
            switch try self.value("frameType") {
            case nil: return nil
            case let name as String:
                let names = ["control": FrameType.control, "single": .single, "first": .first, "consecutive": .consecutive]
                guard let type = names[name] else { throw ToolError("\"frameType\": \(name) is not control, single, first or consecutive") }
                return type
            default: return FrameType(rawValue: UInt8(try self.int("frameType", in: 0...7)!))
            }
        }

        func frameInfo() throws -> UInt8? {
            switch try self.value("frameInfo") {
            case nil: return nil
            case let name as String:
                guard let info = ControlFrameInfo(name: name) else { throw ToolError("\"frameInfo\": unknown control frame \(name)") }
                return info.rawValue
            default: return UInt8(try self.int("frameInfo", in: 0...255)!)
            }
        }
    }
}
