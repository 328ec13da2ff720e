/// The error every malformed input of the SDL protocol layer is reported with.
///
/// `code` says what went wrong (an open set: adding a code is not a breaking change), `offset` where
/// (the byte offset in the stream or payload, when there is one), and `detail` explains it for a
/// human.
public struct SDLProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var code: Code
    /// The byte offset of the offending input: in the stream for the frame decoder, in the payload
    /// for header parsers, nil where no single offset applies (e.g. an expired message).
    public var offset: Int?
    /// A human-readable explanation.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, offset: Int? = nil, _ detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    /// `code at offset N: detail`, or `code: detail` without an offset.
    public var description: String {
        if let offset {
            return "\(self.code) at offset \(offset): \(self.detail)"
        }
        return "\(self.code): \(self.detail)"
    }

    /// An error code. Codes are compared by their name.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as the `sdl` tool prints it.
        public let name: String

        /// A code with this name; codes with equal names are equal.
        public init(_ name: String) { self.name = name }

        /// The name.
        public var description: String { self.name }

        // Frame headers (protocol spec 5.4.1 §3.1).
        /// The version nibble is 0 or above the highest supported version.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// The frame type is one of the reserved values 4–7.
        public static let reservedFrameType = Code("reservedFrameType")
        /// The service type is not one the spec defines.
        public static let unknownServiceType = Code("unknownServiceType")
        /// A control frame's frame info is not one the spec defines.
        public static let unknownControlFrameInfo = Code("unknownControlFrameInfo")
        /// A First frame whose data size is not 8.
        public static let invalidFirstFrameDataSize = Code("invalidFirstFrameDataSize")
        /// A Single or Consecutive frame without payload.
        public static let emptyFrame = Code("emptyFrame")
        /// The data size exceeds the receive limit (MTU) for the frame's version and service, or 2^31 − 1.
        public static let frameTooLarge = Code("frameTooLarge")
        /// The stream ended inside a frame.
        public static let truncatedFrame = Code("truncatedFrame")
        /// The stream decoder hit a bad header while set to fail rather than resynchronise; it
        /// stays failed.
        public static let decoderFailed = Code("decoderFailed")
        /// A payload is too large for the frame being built (sending side).
        public static let payloadTooLarge = Code("payloadTooLarge")

        // Reassembly (protocol spec 5.4.1 §4.2).
        /// A First frame declares a total size beyond the configured limit.
        public static let messageTooLarge = Code("messageTooLarge")
        /// A First frame's frame count cannot carry its declared total size (or vice versa), or the
        /// declared total size is 0.
        public static let frameCountMismatch = Code("frameCountMismatch")
        /// A Consecutive frame arrived for a message whose First frame was never seen.
        public static let consecutiveWithoutFirst = Code("consecutiveWithoutFirst")
        /// A Consecutive frame's sequence number is not the one expected next.
        public static let unexpectedSequenceNumber = Code("unexpectedSequenceNumber")
        /// A second First frame for a message that is still being reassembled.
        public static let duplicateFirstFrame = Code("duplicateFirstFrame")
        /// The bytes received do not add up to the declared total size.
        public static let messageSizeMismatch = Code("messageSizeMismatch")
        /// An incomplete message saw no frame within the reassembly timeout; its memory was released.
        public static let reassemblyExpired = Code("reassemblyExpired")
        /// Starting this reassembly would exceed the per-session or per-transport limits on
        /// concurrent reassemblies or reassembly bytes.
        public static let tooManyReassemblies = Code("tooManyReassemblies")

        // Payload headers (protocol spec 5.4.1 §5.1, §5.3).
        /// Fewer than 12 bytes where an RPC binary header or a security-query header is expected.
        public static let truncatedHeader = Code("truncatedHeader")
        /// The JSON size of a binary header is larger than the bytes that follow it.
        public static let jsonSizeExceedsPayload = Code("jsonSizeExceedsPayload")
        /// A field value does not fit its bit width (e.g. a function id above 28 bits).
        public static let fieldOutOfRange = Code("fieldOutOfRange")

        // Control payloads.
        /// A control payload is not what its frame info and service require.
        public static let invalidControlPayload = Code("invalidControlPayload")
    }
}
