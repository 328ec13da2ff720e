import NIOCore
import SDLBSON
import SDLProtocol
import Testing

/// What the fuzzers found in SDLProtocol, as tests (the inputs are in Fuzz/FailCases/; the
/// structured targets read them as programs, so each case is rebuilt here from what the program
/// did).
@Suite struct FuzzFailCaseTests {
    static func written(_ payload: ControlPayload) -> Result<ByteBuffer, SDLProtocolError> {
        var buffer = ByteBuffer()
        return Result { () throws(SDLProtocolError) in
            try payload.write(to: &buffer)
            return buffer
        }
    }

    static func refusal(_ payload: ControlPayload) -> String? {
        guard case .failure(let error) = Self.written(payload) else { return nil }
        #expect(error.code == .invalidControlPayload)
        #expect(error.offset == nil)
        return error.detail
    }

    /// FuzzControl, `unknown-field-named-like-a-known-field`: a StartService built with an
    /// unknown field "height" (an int64) next to the `height` property was written, and the
    /// reader refused its own writer's bytes ("height" twice); without the property set, the
    /// bytes read back as another value (the unknown field became `height`). The writer now
    /// refuses an unknown field that takes a known field's key.
    @Test func unknownFieldNamedLikeAKnownField() throws {
        let clash = StartServicePayload(height: 101_124_105, otherFields: ["height": .int64(2_315_169_217_770_759_719)])
        #expect(Self.refusal(.startService(clash)) == #"unknown fields cannot be written: "height" is a known field; set its property instead"#)
        let alone = StartServicePayload(otherFields: ["height": .int32(7)])
        #expect(Self.refusal(.startService(alone)) != nil)
        // Every payload type knows its own keys only: "height" is unknown to a NAK.
        let nak = ServiceNAKPayload(reason: "r", otherFields: ["height": .int32(7)])
        let bytes = try Self.written(.startServiceNAK(nak)).get()
        #expect(try ServiceNAKPayload(bson: bytes) == nak)
        for (payload, key) in [
            (ControlPayload.startServiceACK(StartServiceACKPayload(otherFields: ["systemHardwareVersion": .string("x")])), "systemHardwareVersion"),
            (.endService(EndServicePayload(otherFields: ["hashId": .int32(1)])), "hashId"),
            (.registerSecondaryTransportNAK(RegisterSecondaryTransportNAKPayload(otherFields: ["reason": .null])), "reason"),
            (.transportEventUpdate(TransportEventUpdatePayload(otherFields: ["tcpPort": .int32(1)])), "tcpPort"),
            (.endServiceNAK(ServiceNAKPayload(otherFields: ["rejectedParams": .array([])])), "rejectedParams"),
        ] {
            #expect(Self.refusal(payload)?.contains("\"\(key)\"") == true, "\(key)")
        }
    }

    /// FuzzControl, `unknown-fields-repeat-a-key`: unknown fields repeating a key, at the top or
    /// in a nested document, were written though the reader refuses a key twice at any depth.
    @Test func unknownFieldsRepeatingAKey() throws {
        var repeated = BSONOrderedDocument()
        repeated.append("x", .int32(1))
        repeated.append("x", .int32(2))
        #expect(Self.refusal(.startServiceNAK(ServiceNAKPayload(otherFields: repeated)))?.contains("\"x\"") == true)
        let nested: BSONOrderedDocument = ["future": .document(repeated)]
        #expect(Self.refusal(.transportEventUpdate(TransportEventUpdatePayload(otherFields: nested))) != nil)
        // Arrays are exempt, as in the reader: their keys are not read.
        let array: BSONOrderedDocument = ["future": .array([.int32(1), .int32(2)]), "more": .document(["x": .null])]
        let payload = ControlPayload.transportEventUpdate(TransportEventUpdatePayload(tcpPort: 5, otherFields: array))
        let bytes = try Self.written(payload).get()
        #expect(try ControlPayload(frameInfo: .transportEventUpdate, version: .v5, payload: bytes) == payload)
    }

    /// A document kept as is for a frame without typed fields: written only if the reader would
    /// read it back, i.e. no key repeats (found with the cases above).
    @Test func keptDocumentWithARepeatedKey() throws {
        var repeated = BSONOrderedDocument()
        repeated.append("k", .bool(true))
        repeated.append("k", .bool(false))
        let document = try repeated.encoded()
        #expect(Self.refusal(.document(document))?.contains("\"k\"") == true)
        let fine = try (["k": .bool(true), "l": .document(["k": .null])] as BSONOrderedDocument).encoded()
        let bytes = try Self.written(.document(fine)).get()
        #expect(bytes == fine.buffer)
        #expect(try ControlPayload(frameInfo: .heartbeat, version: .v5, payload: bytes) == .document(fine))
    }
}
