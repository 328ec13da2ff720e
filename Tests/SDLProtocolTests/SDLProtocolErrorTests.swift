import SDLProtocol
import Testing

/// Error codes: only this module mints them, their names are stable, and errors compare by code.
@Suite struct SDLProtocolErrorTests {
    /// The names the `sdl` tool prints (e.g. `dissect --json` "code" fields) stay as they were.
    @Test func codeNamesAreStable() {
        let codes: [SDLProtocolError.Code] = [
            .unsupportedVersion, .reservedFrameType, .unknownServiceType, .unknownControlFrameInfo,
            .invalidFirstFrameDataSize, .emptyFrame, .frameTooLarge, .truncatedFrame, .decoderFailed, .payloadTooLarge,
            .messageTooLarge, .frameCountMismatch, .consecutiveWithoutFirst, .unexpectedSequenceNumber,
            .duplicateFirstFrame, .messageSizeMismatch, .versionMismatch, .reassemblyExpired, .tooManyReassemblies,
            .truncatedHeader, .jsonSizeExceedsPayload, .fieldOutOfRange, .invalidControlPayload,
        ]
        #expect(codes.map(\.name) == [
            "unsupportedVersion", "reservedFrameType", "unknownServiceType", "unknownControlFrameInfo",
            "invalidFirstFrameDataSize", "emptyFrame", "frameTooLarge", "truncatedFrame", "decoderFailed", "payloadTooLarge",
            "messageTooLarge", "frameCountMismatch", "consecutiveWithoutFirst", "unexpectedSequenceNumber",
            "duplicateFirstFrame", "messageSizeMismatch", "versionMismatch", "reassemblyExpired", "tooManyReassemblies",
            "truncatedHeader", "jsonSizeExceedsPayload", "fieldOutOfRange", "invalidControlPayload",
        ])
        #expect(codes.map(\.description) == codes.map(\.name))
        #expect(Set(codes).count == codes.count)
    }

    /// Equality and hashing consider the code only, so `catch` sites can match on a code; the
    /// offset and detail stay readable.
    @Test func errorsCompareByCode() {
        let a = SDLProtocolError(.frameTooLarge, offset: 3, "one")
        let b = SDLProtocolError(.frameTooLarge, offset: 90, "two")
        let c = SDLProtocolError(.emptyFrame, offset: 3, "one")
        #expect(a == b)
        #expect(a != c)
        #expect(Set([a, b, c]).count == 2)
        #expect(a.offset == 3 && b.offset == 90 && a.detail == "one")
        #expect(a.messageKey == nil)
        #expect(a.description == "frameTooLarge at offset 3: one")
        #expect(SDLProtocolError(.truncatedHeader, "short").description == "truncatedHeader: short")
    }
}
