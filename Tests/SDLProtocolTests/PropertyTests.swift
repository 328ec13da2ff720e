import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

/// Random messages on random sessions and services, fragmented with random MTUs, interleaved at
/// frame granularity and fed in random chunkings: every message arrives exactly once, intact.
@Suite struct PropertyTests {
    struct Sent: Hashable {
        var session: UInt8
        var service: ServiceType
        var messageID: UInt32?
        var encrypted: Bool
        var payload: [UInt8]
    }

    static let services: [ServiceType] = [.rpc, .audio, .video, .hybrid]

    @Test func randomInterleavedMessagesReassembleExactlyOnce() async throws {
        try await onCPUThreads {
            let cases = 10_000
            var rng = SplitMix64(seed: 0x5D1_F4A3E)
            var totalFrames = 0
            var longest = 0
            let now = NIODeadline.uptimeNanoseconds(0)
            for caseIndex in 0..<cases {
                var queues: [[ProtocolFrame]] = []
                var sent: [Sent] = []
                var usedV1Keys = Set<[UInt8]>()
                var nextMessageID: UInt32 = 1
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    let session = UInt8.random(in: 0...3, using: &rng)
                    let service = Self.services.randomElement(using: &rng)!
                    var version = ProtocolVersion(rawValue: UInt8.random(in: 1...5, using: &rng))
                    if version == .v1 && !usedV1Keys.insert([session, service.rawValue]).inserted {
                        version = .v2  // v1 has no message id: one v1 message per session and service
                    }
                    // Mostly small messages; now and then one of more than 255 frames.
                    let size = Int.random(in: 0..<20, using: &rng) == 0
                        ? Int.random(in: 2000...6000, using: &rng) : Int.random(in: 1...1200, using: &rng)
                    let perFrameCeiling = Int(ProtocolLimits().receivePayloadLimit(version: version))
                    let mtu = Int.random(in: max(1, size / 600)...min(perFrameCeiling, size + 10), using: &rng)
                    let payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    let messageID = nextMessageID
                    nextMessageID += 1
                    // Version 1 has no encryption flag (its bit means "compressed").
                    let encrypted = version.hasMessageID && Bool.random(using: &rng)
                    let frames = Array(try MessageFragmenter(
                        payload: ByteBuffer(bytes: payload), version: version, serviceType: service,
                        sessionID: SessionID(session), messageID: MessageID(messageID),
                        encrypted: encrypted, maxPayloadPerFrame: mtu))
                    longest = max(longest, frames.count)
                    queues.append(frames)
                    sent.append(Sent(session: session, service: service, messageID: version == .v1 ? nil : messageID,
                                     encrypted: encrypted, payload: payload))
                }
                // Interleave: repeatedly take the next frame of a random message.
                var stream: [UInt8] = []
                var positions = [Int](repeating: 0, count: queues.count)
                var remaining = queues.reduce(0) { $0 + $1.count }
                totalFrames += remaining
                while remaining > 0 {
                    let pick = Int.random(in: 0..<queues.count, using: &rng)
                    guard positions[pick] < queues[pick].count else { continue }
                    stream += queues[pick][positions[pick]].bytes
                    positions[pick] += 1
                    remaining -= 1
                }
                // Feed in random chunks.
                var decoder = FrameDecoder()
                var reassembler = Reassembler()
                var received: [Sent] = []
                var offset = 0
                while offset < stream.count {
                    let length = Int.random(in: 1...max(1, Int.random(in: 0..<3, using: &rng) == 0 ? 16 : 4096), using: &rng)
                    let end = min(stream.count, offset + length)
                    decoder.append(contentsOf: stream[offset..<end])
                    offset = end
                    while let frame = try decoder.nextFrame() {
                        if let message = try reassembler.process(frame, now: now) {
                            #expect(!message.isCompressed, "case \(caseIndex)")
                            received.append(Sent(session: message.sessionID.rawValue, service: message.serviceType,
                                                 messageID: message.messageID?.rawValue, encrypted: message.isEncrypted,
                                                 payload: message.payload.bytes))
                        }
                    }
                }
                decoder.finish()
                #expect(try decoder.nextFrame() == nil, "case \(caseIndex)")
                #expect(decoder.bufferedByteCount == 0)
                #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0, "case \(caseIndex)")
                #expect(received.count == sent.count, "case \(caseIndex)")
                #expect(Set(received) == Set(sent), "case \(caseIndex)")
                if received.count != sent.count || Set(received) != Set(sent) { return }
            }
            #expect(totalFrames > 100_000)
            #expect(longest > 255)
        }
    }
}
