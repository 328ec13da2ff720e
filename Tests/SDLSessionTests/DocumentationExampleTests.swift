import NIOCore
import SDLProtocol
import SDLSession
import Testing

/// The code of SDLSession.docc's getting-started article, run.
@Suite struct DocumentationExampleTests {
    @Test func gettingStarted() throws {
        let link = TransportID(1)
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var app = SessionEngine(configuration: SessionConfiguration(role: .app))
        var headUnit = SessionEngine(configuration: SessionConfiguration(role: .headUnit))
        try app.transportOpened(link, as: .primary, now: now)
        try headUnit.transportOpened(link, as: .accepted, now: now)

        func pump() {
            var moved = true
            while moved {
                moved = false
                var bytes = ByteBuffer()
                if app.nextWrite(on: link, maxBytes: 65_536, into: &bytes) > 0 {
                    headUnit.received(bytes, on: link, now: now)
                    moved = true
                }
                bytes.clear()
                if headUnit.nextWrite(on: link, maxBytes: 65_536, into: &bytes) > 0 {
                    app.received(bytes, on: link, now: now)
                    moved = true
                }
            }
        }

        let session = try app.startSession(on: link, now: now)
        pump()
        var started: [SessionInfo] = []
        while let action = app.nextAction() {
            if case .event(.sessionStarted(_, let info)) = action { started.append(info) }
        }
        #expect(started.count == 1)
        #expect(started.first?.version == SDLVersion(major: 5, minor: 4, patch: 1))

        try app.sessionRegistered(session, now: now)
        try app.send(ByteBuffer(bytes: [0x10, 0x00, 0x00, 0x01]), on: .rpc, of: session, now: now)
        pump()
        var received: [ReceivedMessage] = []
        while let action = headUnit.nextAction() {
            if case .event(.message(_, let message)) = action { received.append(message) }
        }
        #expect(received.map(\.service) == [.rpc])
        #expect(received.map { Array($0.payload.readableBytesView) } == [[0x10, 0x00, 0x00, 0x01]])
    }
}
