import Foundation
import NIOCore
import SDLBSON
import SDLProtocol

/// Turns one direction of a byte stream into the events `sdl dissect` prints (DESIGN.md §5):
/// each frame, each whole message with its payload interpreted, each error, and a closing `end`.
struct Dissector {
    private var decoder: FrameDecoder
    private var reassembler: Reassembler
    private var bytes = 0
    private var frames = 0
    private var messages = 0
    private var errors = 0
    /// The dissector has no clock: reassembly time never passes until the stream ends.
    private let now = NIODeadline.uptimeNanoseconds(0)

    init(limits: ProtocolLimits = ProtocolLimits()) {
        self.decoder = FrameDecoder(limits: limits)
        self.reassembler = Reassembler(limits: limits)
    }

    /// Feeds bytes and emits the events they complete.
    mutating func feed(_ buffer: ByteBuffer, emit: (OutputJSON) -> Void) {
        self.bytes += buffer.readableBytes
        self.decoder.append(buffer)
        while true {
            let frame: Frame
            do {
                guard let next = try self.decoder.nextFrame() else { return }
                frame = next
            } catch {
                self.emitError(error, offset: error.offset, emit: emit)
                continue
            }
            self.frames += 1
            emit(Self.frameEvent(frame, offset: self.decoder.lastFrameOffset))
            do {
                if let message = try self.reassembler.process(frame, now: self.now) {
                    self.messages += 1
                    emit(self.messageEvent(message, offset: self.decoder.lastFrameOffset, emit: emit))
                }
            } catch {
                self.emitError(error, offset: self.decoder.lastFrameOffset, emit: emit)
            }
        }
    }

    /// Reports what the end of the stream leaves unfinished, then the `end` event.
    mutating func finish(emit: (OutputJSON) -> Void) {
        do {
            try self.decoder.finish()
        } catch {
            self.emitError(error, offset: error.offset, emit: emit)
        }
        for error in self.reassembler.expire(now: self.now + self.reassembler.limits.reassemblyTimeout) {
            var incomplete = error
            incomplete.code = .init("incompleteMessage")
            incomplete.detail = "stream ended inside " + error.detail.replacingOccurrences(of: " expired with", with: ", with")
            self.emitError(incomplete, offset: nil, emit: emit)
        }
        emit(.object([
            ("event", .string("end")), ("bytes", .int(self.bytes)), ("frames", .int(self.frames)),
            ("messages", .int(self.messages)), ("errors", .int(self.errors)),
        ]))
    }

    private mutating func emitError(_ error: SDLProtocolError, offset: Int?, emit: (OutputJSON) -> Void) {
        self.errors += 1
        emit(Self.errorEvent(code: error.code.name, detail: error.detail, offset: offset))
    }

    static func errorEvent(code: String, detail: String, offset: Int?) -> OutputJSON {
        .object([
            ("event", .string("error")), ("offset", offset.map(OutputJSON.int) ?? .null),
            ("code", .string(code)), ("detail", .string(detail)),
        ])
    }

    static func frameEvent(_ frame: Frame, offset: Int) -> OutputJSON {
        let header = frame.header
        var members: [(String, OutputJSON)] = [
            ("event", .string("frame")), ("offset", .int(offset)), ("version", .int(Int(header.version.rawValue))),
            ("encrypted", .bool(header.isEncrypted)),
        ]
        if header.isCompressed { members.append(("compressed", .bool(true))) }
        members += [
            ("frameType", .string(header.frameType.description)), ("serviceType", .int(Int(header.serviceType.rawValue))),
            ("frameInfo", .int(Int(header.frameInfo))), ("sessionId", .int(Int(header.sessionID.rawValue))),
            ("dataSize", .int(Int(header.dataSize))), ("messageId", header.messageID.map { .int(Int($0.rawValue)) } ?? .null),
        ]
        if let (total, count) = frame.firstFramePayload {
            members += [("totalSize", .int(Int(total))), ("consecutiveFrames", .int(Int(count)))]
        }
        return .object(members)
    }

    private mutating func messageEvent(_ message: Message, offset: Int, emit: (OutputJSON) -> Void) -> OutputJSON {
        var members: [(String, OutputJSON)] = [
            ("event", .string("message")), ("sessionId", .int(Int(message.sessionID.rawValue))),
            ("serviceType", .int(Int(message.serviceType.rawValue))),
            ("messageId", message.messageID.map { .int(Int($0.rawValue)) } ?? .null),
            ("version", .int(Int(message.version.rawValue))), ("encrypted", .bool(message.isEncrypted)),
            ("size", .int(message.payload.readableBytes)), ("frames", .int(message.frameCount)),
        ]
        if let info = message.controlFrameInfo {
            let (control, error) = PayloadDescription.control(info: info, message: message)
            members.append(("control", control))
            if let error { self.emitError(error, offset: offset, emit: emit) }
        } else if message.isEncrypted {
            // Encrypted payloads are opaque here; only their size is known.
            members.append(("payloadSize", .int(message.payload.readableBytes)))
        } else if message.serviceType == .rpc || message.serviceType == .hybrid {
            switch PayloadDescription.rpc(message) {
            case .success(let rpc): members.append(("rpc", rpc))
            case .failure(let error):
                members.append(("payloadSize", .int(message.payload.readableBytes)))
                self.emitError(error, offset: offset, emit: emit)
            }
        } else if message.serviceType == .control {
            switch PayloadDescription.securityQuery(message.payload) {
            case .success(let query): members.append(("securityQuery", query))
            case .failure(let error):
                members.append(("payloadSize", .int(message.payload.readableBytes)))
                self.emitError(error, offset: offset, emit: emit)
            }
        } else {
            members.append(("payloadSize", .int(message.payload.readableBytes)))
        }
        return .object(members)
    }
}

/// Interprets message payloads for the dissector.
enum PayloadDescription {
    /// The control payload: its BSON as canonical Extended JSON, or the pre-v5 raw hash id, plus
    /// the error if the payload is not what its frame requires.
    static func control(info: ControlFrameInfo, message: Message) -> (OutputJSON, SDLProtocolError?) {
        var members: [(String, OutputJSON)] = [
            ("frameInfo", .int(Int(info.rawValue))), ("name", info.name.map(OutputJSON.string) ?? .null),
        ]
        guard message.payload.readableBytes > 0 else { return (.object(members), nil) }
        var failure: SDLProtocolError?
        do {
            if case .hashID(let hashID) = try ControlPayload(frameInfo: info, version: message.version, payload: message.payload) {
                members.append(("hashId", .int(Int(hashID))))
                return (.object(members), nil)
            }
        } catch {
            failure = error
        }
        if let document = try? BSONDocument(validating: message.payload) {
            members.append(("bson", .raw(document.canonicalExtendedJSON)))
        } else {
            members.append(("payloadHex", .string(message.payload.readableBytesView.hexString)))
        }
        return (.object(members), failure)
    }

    static func rpc(_ message: Message) -> Result<OutputJSON, SDLProtocolError> {
        if message.version == .v1 {
            // Version 1 has no binary header: the payload is the JSON envelope
            // {"request"|"response"|"notification": {"name", "correlationID", "parameters"}}.
            guard let envelope = try? JSONSerialization.jsonObject(with: Data(message.payload.readableBytesView)) as? [String: Any],
                let (type, body) = envelope.first.map({ ($0.key, $0.value as? [String: Any]) }), let body
            else {
                return .failure(SDLProtocolError(.init("invalidJSON"), offset: 0, "v1 RPC payload is not a JSON envelope"))
            }
            return .success(.object([
                ("rpcType", .string(type)), ("functionId", .null),
                ("functionName", (body["name"] as? String).map(OutputJSON.string) ?? .null),
                ("correlationId", (body["correlationID"] as? Int).map(OutputJSON.int) ?? .null),
                ("encoding", .string("json")), ("params", OutputJSON(foundation: body["parameters"] ?? [String: Any]())),
                ("bulkSize", .int(0)),
            ]))
        }
        let payload: RPCPayload
        do {
            payload = try RPCPayload(parsing: message.payload)
        } catch {
            return .failure(error)
        }
        var members: [(String, OutputJSON)] = [
            ("rpcType", .string(payload.header.rpcType.description)), ("functionId", .int(Int(payload.header.functionID))),
            ("functionName", .null), ("correlationId", .int(Int(payload.header.correlationID))),
        ]
        let parameters = Data(payload.parameters.readableBytesView)
        if parameters.isEmpty {
            members += [("encoding", .string("json")), ("params", .object([]))]
        } else if let json = try? JSONSerialization.jsonObject(with: parameters, options: [.fragmentsAllowed]) {
            members += [("encoding", .string("json")), ("params", OutputJSON(foundation: json))]
        } else if parameters.first.map({ $0 != UInt8(ascii: "{") }) ?? false, parameters.count >= 5 {
            // Protocol version 5 may carry the parameters as BSON; shown as hex for now.
            members += [("encoding", .string("bson")), ("paramsHex", .string(parameters.hexString))]
        } else {
            return .failure(SDLProtocolError(.init("invalidJSON"), offset: RPCBinaryHeader.size, "RPC parameters are not valid JSON"))
        }
        members.append(("bulkSize", .int(payload.bulkData.readableBytes)))
        return .success(.object(members))
    }

    static func securityQuery(_ bytes: ByteBuffer) -> Result<OutputJSON, SDLProtocolError> {
        let query: SecurityQuery
        do {
            query = try SecurityQuery(parsing: bytes)
        } catch {
            return .failure(error)
        }
        let json = try? JSONSerialization.jsonObject(with: Data(query.json.readableBytesView), options: [.fragmentsAllowed])
        return .success(.object([
            ("queryType", .string(query.header.queryType.description)), ("queryId", .string(query.header.queryID.description)),
            ("sequenceNumber", .int(Int(query.header.sequenceNumber))), ("json", json.map(OutputJSON.init(foundation:)) ?? .null),
            ("binarySize", .int(query.binaryData.readableBytes)),
        ]))
    }
}
