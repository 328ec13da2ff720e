import NIOCore
import SDLBSON
import SDLProtocol
import SDLRPC

/// Turns one direction of a byte stream into the events `sdl dissect` prints (ARCHITECTURE.md §5):
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
        self.drain(emit: emit)
    }

    /// Emits the events of every frame the decoder has ready.
    private mutating func drain(emit: (OutputJSON) -> Void) {
        while true {
            let frame: ProtocolFrame
            do {
                guard let next = try self.decoder.nextFrame() else { return }
                frame = next
            } catch {
                self.emitError(Problem(error, offset: error.offset), emit: emit)
                continue
            }
            self.frames += 1
            emit(Self.frameEvent(frame, offset: self.decoder.lastFrameOffset))
            do {
                if let message = try self.reassembler.process(frame, now: self.now) {
                    self.messages += 1
                    // The message first, then what is wrong with its payload.
                    var problems: [Problem] = []
                    emit(Self.messageEvent(message, offset: self.decoder.lastFrameOffset, problems: &problems))
                    for problem in problems { self.emitError(problem, emit: emit) }
                }
            } catch {
                self.emitError(Problem(error, offset: self.decoder.lastFrameOffset), emit: emit)
            }
        }
    }

    /// Delivers what the decoder held back, reports what the end of the stream leaves unfinished,
    /// then the `end` event.
    mutating func finish(emit: (OutputJSON) -> Void) {
        self.decoder.finish()
        self.drain(emit: emit)
        for error in self.reassembler.expire(now: self.now + self.reassembler.limits.reassemblyTimeout) {
            let detail = "stream ended inside " + error.detail.replacingOccurrences(of: " expired with", with: ", with")
            self.emitError(Problem(code: "incompleteMessage", offset: nil, detail: detail), emit: emit)
        }
        emit(.object([
            ("event", .string("end")), ("bytes", .int(self.bytes)), ("frames", .int(self.frames)),
            ("messages", .int(self.messages)), ("errors", .int(self.errors)),
        ]))
    }

    private mutating func emitError(_ problem: Problem, emit: (OutputJSON) -> Void) {
        self.errors += 1
        emit(Self.errorEvent(code: problem.code, detail: problem.detail, offset: problem.offset))
    }

    static func errorEvent(code: String, detail: String, offset: Int?) -> OutputJSON {
        .object([
            ("event", .string("error")), ("offset", offset.map(OutputJSON.int) ?? .null),
            ("code", .string(code)), ("detail", .string(detail)),
        ])
    }

    static func frameEvent(_ frame: ProtocolFrame, offset: Int) -> OutputJSON {
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

    private static func messageEvent(_ message: ProtocolMessage, offset: Int, problems: inout [Problem]) -> OutputJSON {
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
            if let error {
                problems.append(Problem(error, offset: offset))
            }
        } else if message.isEncrypted {
            // Encrypted payloads are opaque here; only their size is known.
            members.append(("payloadSize", .int(message.payload.readableBytes)))
        } else if message.serviceType == .rpc || message.serviceType == .hybrid {
            switch PayloadDescription.rpc(message) {
            case .success(let description):
                members.append(("rpc", .object(description.fields)))
                for problem in description.problems {
                    problems.append(Problem(code: problem.code, offset: offset, detail: problem.detail))
                }
            case .failure(let problem):
                members.append(("payloadSize", .int(message.payload.readableBytes)))
                problems.append(Problem(code: problem.code, offset: offset, detail: problem.detail))
            }
        } else if message.serviceType == .control {
            switch PayloadDescription.securityQuery(message.payload) {
            case .success((let query, let problem)):
                members.append(("securityQuery", query))
                if let problem {
                    problems.append(Problem(code: problem.code, offset: offset, detail: problem.detail))
                }
            case .failure(let error):
                members.append(("payloadSize", .int(message.payload.readableBytes)))
                problems.append(Problem(error, offset: offset))
            }
        } else {
            members.append(("payloadSize", .int(message.payload.readableBytes)))
        }
        return .object(members)
    }
}

/// An error event: a protocol layer error, or a problem only the dissector names (an RPC
/// validation problem, an incomplete message at the end of the stream), by its code's name.
struct Problem: Error {
    var code: String
    var offset: Int?
    var detail: String

    init(code: String, offset: Int?, detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    init(_ error: SDLProtocolError, offset: Int?) {
        self.init(code: error.code.name, offset: offset, detail: error.detail)
    }
}

/// Interprets message payloads for the dissector.
enum PayloadDescription {
    /// The control payload: its BSON as canonical Extended JSON, or the pre-v5 raw hash id, plus
    /// the error if the payload is not what its frame requires.
    static func control(info: ControlFrameInfo, message: ProtocolMessage) -> (OutputJSON, SDLProtocolError?) {
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

    /// The RPC a message carries, and the problems found in it (each becomes an error event).
    static func rpc(_ message: ProtocolMessage) -> Result<RPCDescription, Problem> {
        if message.version == .v1 {
            do {
                return .success(try RPCDescription(v1Envelope: message.payload))
            } catch {
                return .failure(error)
            }
        }
        do {
            return .success(RPCDescription(payload: try RPCPayload(parsing: message.payload)))
        } catch {
            return .failure(Problem(error, offset: error.offset))
        }
    }

    /// A security query: its header, its JSON and the size of its binary data. The JSON is read
    /// strictly and shown in the peer's key order; JSON that is not valid (a repeated key, bad
    /// syntax) is reported as an error and shown as hex, never repaired or dropped.
    static func securityQuery(_ bytes: ByteBuffer) -> Result<(OutputJSON, Problem?), SDLProtocolError> {
        let query: SecurityQuery
        do {
            query = try SecurityQuery(parsing: bytes)
        } catch {
            return .failure(error)
        }
        var members: [(String, OutputJSON)] = [
            ("queryType", .string(query.header.queryType.description)), ("queryId", .string(query.header.queryID.description)),
            ("sequenceNumber", .int(Int(query.header.sequenceNumber))),
        ]
        var problem: Problem?
        if query.json.readableBytes == 0 {
            members.append(("json", .null))
        } else {
            do {
                let value = try RPCValue(jsonObject: query.json, options: RPCCodingOptions(validate: false))
                members.append(("json", .raw(try value.jsonText())))
            } catch {
                members += [("json", .null), ("jsonHex", .string(query.json.readableBytesView.hexString))]
                problem = Problem(code: "invalidJSON", offset: nil, detail: "security query JSON: \(error)")
            }
        }
        members.append(("binarySize", .int(query.binaryData.readableBytes)))
        return .success((.object(members), problem))
    }
}
