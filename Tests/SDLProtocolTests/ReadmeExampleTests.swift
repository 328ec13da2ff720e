import NIOCore
import SDLProtocol
import Testing

/// The README's 30-second example, compiled and run so that it stays true.
@Suite struct ReadmeExampleTests {
    @Test func sendAndReceiveAsTheReadmeShows() throws {
        var out = ByteBuffer()
        try FrameEncoder.writeMessage(
            ByteBuffer(repeating: 0, count: 300_000), version: .v5, serviceType: .video,
            sessionID: SessionID(1), messageID: MessageID(7),
            maxPayloadPerFrame: ProtocolLimits().sendPayloadLimit(version: .v5, service: .video), to: &out)
        #expect(out.readableBytes == 12 + 8 + 3 * 12 + 300_000)

        var decoder = FrameDecoder()
        var reassembler = Reassembler()
        var delivered: [Message] = []
        var errors: [SDLProtocolError] = []
        func received(_ bytes: ByteBuffer, now: NIODeadline) {
            decoder.append(bytes)
            while true {
                do {
                    guard let frame = try decoder.nextFrame() else { break }
                    guard let message = try reassembler.process(frame, now: now) else { continue }
                    delivered.append(message)
                } catch {
                    errors.append(error)
                }
            }
        }
        received(ByteBuffer(bytes: [0xFF, 0xFF]), now: .uptimeNanoseconds(0))
        received(out, now: .uptimeNanoseconds(0))
        #expect(errors.map(\.code) == [.unsupportedVersion])
        #expect(delivered.count == 1)
        #expect(delivered.first?.payload.readableBytes == 300_000)
        #expect(delivered.first?.frameCount == 4)
    }
}
