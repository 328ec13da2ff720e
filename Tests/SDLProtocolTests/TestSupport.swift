import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

/// What a decoder run produced.
struct DecodeResult {
    var frames: [ProtocolFrame] = []
    var errors: [SDLProtocolError] = []

    /// The errors' codes, offsets and message keys: what must not depend on how the stream was
    /// cut. (A detail may: a header refused before its data size has arrived whole names the
    /// least size its first bytes allow.)
    var errorPlaces: [String] {
        self.errors.map { "\($0.code) at \($0.offset.map(String.init) ?? "-") \($0.messageKey.map(String.init(describing:)) ?? "")" }
    }

    /// Every field of the errors: what must not depend on where the stream's bytes sit in a
    /// buffer's storage.
    var errorFields: [String] { self.errors.map { everyField(of: $0) } }
}

/// Runs a fresh decoder over a stream cut into the given chunks, draining after every chunk and,
/// unless `finish` is false, after declaring the end of the stream.
/// With `visiting`, frames are pulled with `forEachFrame(mtus:_:)` instead of `nextFrame(mtus:)`
/// (their borrowed payloads copied into the result).
func decode(_ chunks: [ByteBuffer], limits: ProtocolLimits = ProtocolLimits(), mtus: MTUTable = MTUTable(),
            policy: FrameDecoder.InvalidHeaderPolicy = .resynchronize, finish: Bool = true,
            visiting: Bool = false) -> DecodeResult {
    var decoder = FrameDecoder(limits: limits, invalidHeaderPolicy: policy)
    var result = DecodeResult()
    let pull = visiting ? visit : drain
    for chunk in chunks {
        decoder.append(chunk)
        pull(&decoder, mtus, &result)
    }
    if finish {
        decoder.finish()
        pull(&decoder, mtus, &result)
    }
    return result
}

/// `decode` over chunks given as byte arrays.
func decode(_ chunks: [[UInt8]], limits: ProtocolLimits = ProtocolLimits(), mtus: MTUTable = MTUTable(),
            policy: FrameDecoder.InvalidHeaderPolicy = .resynchronize, finish: Bool = true) -> DecodeResult {
    decode(chunks.map { ByteBuffer(bytes: $0) }, limits: limits, mtus: mtus, policy: policy, finish: finish)
}

/// Decodes `stream` in every chunking of `chunkings(of:)`, expects every run to give what the
/// whole stream gives (the same frames, byte for byte, and the same errors at the same offsets;
/// the whole stream in an awkward buffer layout gives the same details too), and hands each run
/// to `check` for the vector's own expectations. Runs are checked one at a time and dropped, so
/// that a 128 KiB stream's thousands of cuts do not all sit in memory.
func decodeInEveryChunking(
    _ stream: [UInt8], limits: ProtocolLimits = ProtocolLimits(), mtus: MTUTable = MTUTable(), finish: Bool = true,
    _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    check: (_ name: String, _ result: DecodeResult) throws -> Void
) rethrows {
    var whole: DecodeResult?
    for (index, (name, chunks)) in chunkings(of: stream).enumerated() {
        // Every other cut is pulled with `forEachFrame`, whose frames must be the same.
        let result = decode(chunks, limits: limits, mtus: mtus, finish: finish, visiting: index % 2 == 1)
        if let whole {
            // Frames compare header and payload bytes; strings are built only to report a difference.
            let sameErrors = name.hasPrefix("whole") ? result.errorFields == whole.errorFields : result.errorPlaces == whole.errorPlaces
            if result.frames != whole.frames || !sameErrors {
                let got = "frames \(result.frames.map(\.bytes.hex)) errors \(result.errorFields)"
                let want = "frames \(whole.frames.map(\.bytes.hex)) errors \(whole.errorFields)"
                Issue.record("\(comment.map { "\($0) " } ?? "")\(name): \(got), whole: \(want)", sourceLocation: sourceLocation)
            }
        } else {
            whole = result
        }
        try check(name, result)
    }
}

/// Pulls every frame `forEachFrame(mtus:_:)` visits, copying each borrowed payload, and every
/// error, until it returns (or, with `.fail`, throws).
func visit(_ decoder: inout FrameDecoder, mtus: MTUTable = MTUTable(), into result: inout DecodeResult) {
    while true {
        do {
            try decoder.forEachFrame(mtus: mtus) { header, payload in
                result.frames.append(ProtocolFrame(header: header, payload: ByteBuffer(bytes: payload)))
            }
            return
        } catch {
            result.errors.append(error)
            if decoder.invalidHeaderPolicy == .fail { return }
        }
    }
}

func drain(_ decoder: inout FrameDecoder, mtus: MTUTable = MTUTable(), into result: inout DecodeResult) {
    while true {
        do {
            guard let frame = try decoder.nextFrame(mtus: mtus) else { return }
            result.frames.append(frame)
        } catch {
            result.errors.append(error)
            if decoder.invalidHeaderPolicy == .fail { return }
        }
    }
}

/// Compares a header with a vector's expected fields (those it gives).
func expectHeader(_ header: FrameHeader, _ expect: FrameHeaderExpectation, _ id: String,
                  sourceLocation: SourceLocation = #_sourceLocation) {
    func check<T: Equatable>(_ name: String, _ actual: T, _ expected: T?) {
        if let expected {
            #expect(actual == expected, "\(id): \(name)", sourceLocation: sourceLocation)
        }
    }
    check("version", Int(header.version.rawValue), expect.version)
    check("encrypted", header.protectionBit, expect.encrypted)
    check("frameTypeValue", Int(header.frameType.rawValue), expect.frameTypeValue)
    check("serviceType", Int(header.serviceType.rawValue), expect.serviceType)
    check("frameInfo", Int(header.frameInfo), expect.frameInfo)
    check("sessionId", Int(header.sessionID.rawValue), expect.sessionId)
    check("dataSize", Int(header.dataSize), expect.dataSize)
    check("headerSize", header.size, expect.headerSize)
    if let frameType = expect.frameType, !frameType.hasPrefix("invalid") {
        #expect(header.frameType.description == frameType, "\(id): frameType", sourceLocation: sourceLocation)
    }
    if let messageID = expect.messageId {
        #expect(header.messageID == MessageID(UInt32(messageID)), "\(id): messageId", sourceLocation: sourceLocation)
    } else if header.version == .v1 {
        #expect(header.messageID == nil, "\(id): v1 has no message id", sourceLocation: sourceLocation)
    }
}

/// Runs `body` and checks that it throws an `SDLProtocolError` with the expectation's code,
/// offset and detail (`==` compares codes only), and with `key` as its message key.
@discardableResult
func expectError<T>(_ expected: SDLProtocolError, key: MessageKey? = nil, _ comment: Comment? = nil,
                    sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: () throws -> T) -> SDLProtocolError? {
    do {
        _ = try body()
        Issue.record("expected \(expected), nothing thrown. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    } catch let error as SDLProtocolError {
        #expect(error.code == expected.code, comment, sourceLocation: sourceLocation)
        #expect(error.offset == expected.offset, comment, sourceLocation: sourceLocation)
        #expect(error.detail == expected.detail, comment, sourceLocation: sourceLocation)
        #expect(error.messageKey == key, comment, sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(expected), got \(error). \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    }
    return nil
}
