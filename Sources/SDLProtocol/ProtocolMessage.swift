import NIOCore

/// A whole message of one service at the protocol layer: a control message, or a data message that
/// arrived in a Single frame or was reassembled from a First frame and its Consecutive frames.
public struct ProtocolMessage: Hashable, Sendable {
    /// The protocol version of the frames that carried the message.
    public var version: ProtocolVersion
    /// The service the message belongs to.
    public var serviceType: ServiceType
    /// The session the message belongs to.
    public var sessionID: SessionID
    /// The message id; nil for version 1.
    public var messageID: MessageID?
    /// `.control` for a control message, `.single` for a data message (however many frames it took).
    public var frameType: FrameType
    /// The control frame info of a control message; 0 for data messages.
    public var frameInfo: UInt8
    /// Whether the payload is encrypted: the E bit of the Single frame, or of the Consecutive
    /// frames (the First frame is never encrypted).
    public var isEncrypted: Bool
    /// Whether the payload is compressed (version 1 C bit).
    public var isCompressed: Bool
    /// The message's bytes. For a message that arrived in one frame, a slice of the received bytes.
    public var payload: ByteBuffer
    /// How many frames carried the message: 1, or the First frame plus the Consecutive frames.
    public var frameCount: Int

    /// Creates a message; `messageID` is dropped for version 1, whose header has none.
    public init(
        version: ProtocolVersion, serviceType: ServiceType, sessionID: SessionID, messageID: MessageID?,
        frameType: FrameType, frameInfo: UInt8 = 0, isEncrypted: Bool = false, isCompressed: Bool = false,
        payload: ByteBuffer, frameCount: Int = 1
    ) {
        self.version = version
        self.serviceType = serviceType
        self.sessionID = sessionID
        self.messageID = version.hasMessageID ? messageID : nil
        self.frameType = frameType
        self.frameInfo = frameInfo
        self.isEncrypted = isEncrypted
        self.isCompressed = isCompressed
        self.payload = payload
        self.frameCount = frameCount
    }

    /// Creates the message a single control or Single frame carries.
    @inlinable
    public init(frame: ProtocolFrame) {
        self.version = frame.header.version
        self.serviceType = frame.header.serviceType
        self.sessionID = frame.header.sessionID
        self.messageID = frame.header.messageID
        self.frameType = frame.header.frameType
        self.frameInfo = frame.header.frameInfo
        self.isEncrypted = frame.header.isEncrypted
        self.isCompressed = frame.header.isCompressed
        self.payload = frame.payload
        self.frameCount = 1
    }

    /// The message's reassembly key (session, service, message id).
    @inlinable
    public var key: MessageKey {
        MessageKey(sessionID: self.sessionID, serviceType: self.serviceType, messageID: self.messageID ?? MessageID(0))
    }

    /// The control frame info of a control message, nil for data messages.
    public var controlFrameInfo: ControlFrameInfo? {
        self.frameType == .control ? ControlFrameInfo(rawValue: self.frameInfo) : nil
    }
}
