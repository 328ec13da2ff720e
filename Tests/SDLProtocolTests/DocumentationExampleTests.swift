import NIOCore
import SDLBSON
import SDLProtocol
import Testing

/// The code of SDLProtocol.docc's getting-started article, run.
@Suite struct DocumentationExampleTests {
    @Test func gettingStarted() throws {
        let payload = ByteBuffer(repeating: 0x42, count: 300_000)
        var out = ByteBuffer()
        try FrameEncoder.writeMessage(
            payload, version: .v5, serviceType: .rpc, sessionID: SessionID(1), messageID: MessageID(7),
            maxPayloadPerFrame: MTUTable().sendPayloadLimit(
                version: .v5, session: SessionID(1), service: .rpc, limits: ProtocolLimits()),
            to: &out)

        var decoder = FrameDecoder()
        var reassembler = Reassembler()
        var delivered: [ProtocolMessage] = []
        var chunk = out
        while chunk.readableBytes > 0, let piece = chunk.readSlice(length: min(1000, chunk.readableBytes)) {
            decoder.append(piece)
            while let frame = try decoder.nextFrame() {
                if let message = try reassembler.process(frame, now: .uptimeNanoseconds(0)) { delivered.append(message) }
            }
        }
        #expect(delivered.count == 1)
        #expect(delivered.first?.payload == payload)
        #expect(delivered.first?.serviceType == .rpc)

        // Visiting the same frames: headers and lent payloads, nothing kept.
        var visitor = FrameDecoder()
        var visited: [(SessionID, ServiceType, Int)] = []
        visitor.append(out)
        try visitor.forEachFrame { header, payload in
            visited.append((header.sessionID, header.serviceType, payload.count))
        }
        // A First frame (8 bytes), then the 300,000 bytes in frames of at most 131,072 (v5).
        #expect(visited.map(\.2) == [8, 131_072, 131_072, 37_856])
        #expect(visited.allSatisfy { $0.0 == SessionID(1) && $0.1 == .rpc })

        var ackBytes = ByteBuffer()
        try StartServiceACKPayload(protocolVersion: "5.4.1", hashID: 9, mtu: 131_072).write(to: &ackBytes)
        let ack = try StartServiceACKPayload(bson: ackBytes)
        #expect(ack.protocolVersion == "5.4.1")
        #expect(ack.mtu == 131_072)
        #expect(ack.hashID == 9)
    }
}
