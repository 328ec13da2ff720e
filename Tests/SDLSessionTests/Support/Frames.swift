import SDLTestSupport
import Testing
import NIOCore
import SDLBSON
import SDLProtocol

@testable import SDLSession

/// A BSON document built by `body`.
func bson(_ body: (inout BSONDocumentWriter) -> Void) -> [UInt8] {
    var buffer = ByteBuffer()
    buffer.writeBSONDocument(body)
    return Array(buffer.readableBytesView)
}

/// The bytes of one frame, with the data size taken from the payload.
func frameBytes(
    version: ProtocolVersion = .v5, encrypted: Bool = false, type: FrameType = .control, service: ServiceType,
    info: UInt8 = 0, session: UInt8, messageID: UInt32 = 0, payload: [UInt8] = []
) -> [UInt8] {
    var buffer = ByteBuffer()
    FrameEncoder.write(
        ProtocolFrame(
            header: FrameHeader(
                version: version, encrypted: encrypted, frameType: type, serviceType: service, frameInfo: info,
                sessionID: SessionID(session), dataSize: 0, messageID: MessageID(messageID)),
            payload: ByteBuffer(bytes: payload)),
        to: &buffer)
    return Array(buffer.readableBytesView)
}

func control(
    _ info: ControlFrameInfo, version: ProtocolVersion = .v5, encrypted: Bool = false, service: ServiceType, session: UInt8,
    messageID: UInt32 = 0, payload: [UInt8] = []
) -> [UInt8] {
    frameBytes(
        version: version, encrypted: encrypted, type: .control, service: service, info: info.rawValue, session: session,
        messageID: messageID, payload: payload)
}

/// An app engine alone, talking to a scripted peer through raw bytes.
struct AppUnderTest {
    var driver: EngineDriver
    let link = TransportID(1)
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)

    init(_ adjust: (inout SessionConfiguration) -> Void = { _ in }) {
        var configuration = SessionConfiguration(role: .app)
        adjust(&configuration)
        self.driver = EngineDriver(configuration)
        try! self.driver.engine.transportOpened(self.link, as: .primary, now: self.now)
    }

    /// Starts a session and returns its handle with the bytes it wrote.
    mutating func start() -> SessionHandle {
        let handle = try! self.driver.engine.startSession(on: self.link, now: self.now)
        self.driver.drain()
        return handle
    }

    mutating func feed(_ bytes: [UInt8], on transport: TransportID? = nil) {
        self.driver.feed(bytes, on: transport ?? self.link, now: self.now)
    }

    /// Frames written since the last call, on a transport.
    mutating func newFrames(on transport: TransportID? = nil) -> [ProtocolFrame] {
        decodeFrames(self.driver.takeOutbox(transport ?? self.link))
    }

    mutating func advance(by amount: TimeAmount) {
        let end = self.now + amount
        while let timer = self.driver.timer, timer <= end {
            self.now = max(self.now, timer)
            self.driver.timer = nil
            self.driver.engine.timerFired(now: self.now)
            self.driver.drain()
        }
        self.now = end
    }
}

/// A head-unit engine alone, fed raw bytes by a scripted app.
struct HeadUnitUnderTest {
    var driver: EngineDriver
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    private var nextTransport: UInt64 = 1

    init(_ adjust: (inout SessionConfiguration) -> Void = { _ in }) {
        var configuration = EnginePair.headUnitDefaults()
        adjust(&configuration)
        self.driver = EngineDriver(configuration)
    }

    mutating func accept() -> TransportID {
        let transport = TransportID(self.nextTransport)
        self.nextTransport += 1
        try! self.driver.engine.transportOpened(transport, as: .accepted, now: self.now)
        return transport
    }

    mutating func feed(_ bytes: [UInt8], on transport: TransportID) {
        self.driver.feed(bytes, on: transport, now: self.now)
    }

    mutating func newFrames(on transport: TransportID) -> [ProtocolFrame] {
        decodeFrames(self.driver.takeOutbox(transport))
    }

    /// Starts a v5 session on `transport` with A1 and returns its handle, registered.
    mutating func startSession(on transport: TransportID, registered: Bool = true) -> (SessionHandle, SessionInfo) {
        self.feed([UInt8](hex: Vectors.a1), on: transport)
        let info = self.driver.events.compactMap(\.startedInfo).last!
        let handle = self.driver.events.last { $0.startedInfo != nil }!.handle!
        if registered { try! self.driver.engine.sessionRegistered(handle, now: self.now) }
        _ = self.newFrames(on: transport)
        return (handle, info)
    }

    mutating func advance(by amount: TimeAmount) {
        let end = self.now + amount
        while let timer = self.driver.timer, timer <= end {
            self.now = max(self.now, timer)
            self.driver.timer = nil
            self.driver.engine.timerFired(now: self.now)
            self.driver.drain()
        }
        self.now = end
    }
}
