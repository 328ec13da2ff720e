/// The error every malformed input of the SDL protocol layer is reported with.
///
/// `code` says what went wrong, `offset` where (the byte offset in the stream or payload, when
/// there is one), `messageKey` which message (for reassembly errors and expiries), and `detail`
/// explains it for a human.
///
/// Codes are an open set that only this module extends: adding a code is not a breaking change,
/// and no other module can mint one. Equality and hashing consider the `code` only, not the
/// offset, key or detail, so `catch` sites and tests can compare against `SDLProtocolError(.code, "")`;
/// check `offset`, `messageKey` and `detail` explicitly where they matter.
public struct SDLProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let code: Code
    /// The byte offset of the offending input: in the stream for the frame decoder, in the payload
    /// for header parsers, nil where no single offset applies (e.g. an expired message).
    public internal(set) var offset: Int?
    /// The message a reassembly error or expiry is about; nil for errors of single frames and
    /// payloads.
    public internal(set) var messageKey: MessageKey?
    /// A human-readable explanation.
    public internal(set) var detail: String

    /// Creates an error with one of the codes this module defines.
    public init(_ code: Code, offset: Int? = nil, _ detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    /// An error about one message in reassembly, naming it by its key.
    public init(_ code: Code, key: MessageKey, _ detail: String) {
        self.init(code, detail)
        self.messageKey = key
    }

    /// `code at offset N: detail`, or `code: detail` without an offset.
    public var description: String {
        if let offset {
            return "\(self.code) at offset \(offset): \(self.detail)"
        }
        return "\(self.code): \(self.detail)"
    }

    /// Compares the codes only.
    public static func == (lhs: SDLProtocolError, rhs: SDLProtocolError) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the code only, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.code)
    }

    /// An error code. Only the static members below exist; `name` is the stable machine-readable
    /// name (the `sdl` tool prints it).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Sendable {
            case unsupportedVersion, reservedFrameType, unknownServiceType, unknownControlFrameInfo
            case invalidFirstFrameDataSize, emptyFrame, frameTooLarge, truncatedFrame, decoderFailed
            case payloadTooLarge, messageTooLarge, frameCountMismatch, consecutiveWithoutFirst
            case unexpectedSequenceNumber, duplicateFirstFrame, messageSizeMismatch, versionMismatch
            case reassemblyExpired, tooManyReassemblies, truncatedHeader, jsonSizeExceedsPayload
            case fieldOutOfRange, invalidControlPayload
        }

        private let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// The code's name, as the `sdl` tool prints it.
        public var name: String { self.backing.rawValue }

        /// The name.
        public var description: String { self.name }

        // Frame headers (protocol spec 5.4.1 §3.1).
        /// The version nibble is 0 or above the highest supported version.
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// The frame type is one of the reserved values 4–7.
        public static let reservedFrameType = Code(.reservedFrameType)
        /// The service type is not one the spec defines.
        public static let unknownServiceType = Code(.unknownServiceType)
        /// A control frame's frame info is not one the spec defines.
        public static let unknownControlFrameInfo = Code(.unknownControlFrameInfo)
        /// A First frame whose data size is not 8.
        public static let invalidFirstFrameDataSize = Code(.invalidFirstFrameDataSize)
        /// A Single or Consecutive frame without payload.
        public static let emptyFrame = Code(.emptyFrame)
        /// The data size exceeds the receive limit of the frame's session and service: its MTU,
        /// clamped to the configured ceilings (`ProtocolLimits`).
        public static let frameTooLarge = Code(.frameTooLarge)
        /// The stream ended inside a frame.
        public static let truncatedFrame = Code(.truncatedFrame)
        /// The stream decoder hit a bad header while set to fail rather than resynchronise; it
        /// stays failed.
        public static let decoderFailed = Code(.decoderFailed)
        /// A payload is too large for the frame being built (sending side).
        public static let payloadTooLarge = Code(.payloadTooLarge)

        // Reassembly (protocol spec 5.4.1 §4.2).
        /// A First frame declares a total size beyond the configured limit.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// A First frame's frame count cannot carry its declared total size (or vice versa), or the
        /// declared total size is 0.
        public static let frameCountMismatch = Code(.frameCountMismatch)
        /// A Consecutive frame arrived for a message whose First frame was never seen.
        public static let consecutiveWithoutFirst = Code(.consecutiveWithoutFirst)
        /// A Consecutive frame's sequence number is not the one expected next.
        public static let unexpectedSequenceNumber = Code(.unexpectedSequenceNumber)
        /// A second First frame for a message that is still being reassembled.
        public static let duplicateFirstFrame = Code(.duplicateFirstFrame)
        /// The bytes received do not add up to the declared total size.
        public static let messageSizeMismatch = Code(.messageSizeMismatch)
        /// A Consecutive frame's protocol version differs from its First frame's.
        public static let versionMismatch = Code(.versionMismatch)
        /// An incomplete message saw no frame within the reassembly timeout; its memory was released.
        public static let reassemblyExpired = Code(.reassemblyExpired)
        /// Starting this reassembly would exceed the per-session or per-transport limits on
        /// concurrent reassemblies or reassembly bytes.
        public static let tooManyReassemblies = Code(.tooManyReassemblies)

        // Payload headers (protocol spec 5.4.1 §5.1, §5.3).
        /// Fewer than 12 bytes where an RPC binary header or a security-query header is expected.
        public static let truncatedHeader = Code(.truncatedHeader)
        /// The JSON size of a binary header is larger than the bytes that follow it.
        public static let jsonSizeExceedsPayload = Code(.jsonSizeExceedsPayload)
        /// A field value does not fit its bit width (e.g. a function id above 28 bits).
        public static let fieldOutOfRange = Code(.fieldOutOfRange)

        // Control payloads.
        /// A control payload is not what its frame info and service require.
        public static let invalidControlPayload = Code(.invalidControlPayload)
    }
}

/// Identifies one message in reassembly: the reassembler keys messages by session, service and
/// message id (protocol spec 5.4.1 §4.2), so interleaved messages reassemble side by side.
public struct MessageKey: Hashable, Sendable, CustomStringConvertible {
    /// The session the message belongs to.
    public var sessionID: SessionID
    /// The service the message belongs to.
    public var serviceType: ServiceType
    /// The message id; 0 for protocol version 1, whose header has none (all version 1 messages of
    /// a session's service share one key).
    public var messageID: MessageID

    /// Creates a key.
    @inlinable
    public init(sessionID: SessionID, serviceType: ServiceType, messageID: MessageID) {
        self.sessionID = sessionID
        self.serviceType = serviceType
        self.messageID = messageID
    }

    /// The key of the message a frame belongs to.
    @inlinable
    public init(of header: FrameHeader) {
        self.init(sessionID: header.sessionID, serviceType: header.serviceType, messageID: header.messageID ?? MessageID(0))
    }

    /// `message M of session S service X`, as the reassembler's error details say it.
    public var description: String {
        "message \(self.messageID) of session \(self.sessionID) service \(self.serviceType)"
    }
}
