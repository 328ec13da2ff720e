import NIOCore
import SDLProtocol
import SDLRPC
import Testing

/// The README's 30-second example, compiled and run so that it stays true.
@Suite struct ReadmeExampleTests {
    @Test func sendAndReceiveAsTheReadmeShows() throws {
        // Sending: a typed RPC, BSON-encoded for protocol 5, fragmented at the default MTU.
        let request = SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true)
        var out = ByteBuffer()
        try FrameEncoder.writeMessage(
            try request.payload(correlationID: 1, format: .bson), version: .v5, serviceType: .rpc,
            sessionID: SessionID(1), messageID: MessageID(7),
            maxPayloadPerFrame: ProtocolLimits().sendPayloadLimit(version: .v5), to: &out)
        // A control frame and a big notification in small frames too.
        var ack = ByteBuffer()
        try StartServiceACKPayload(protocolVersion: "5.4.0", hashID: 9, mtu: 131_072).write(to: &ack)
        try FrameEncoder.writeMessage(ack, version: .v5, serviceType: .rpc, sessionID: SessionID(1), control: .startServiceACK,
                                      maxPayloadPerFrame: 1000, to: &out)
        let data = SDLOnAppServiceData(serviceData: SDLAppServiceData(serviceType: "WEATHER", serviceID: "w1"))
        try FrameEncoder.writeMessage(try data.payload(correlationID: 0xFFFF_FFFF), version: .v5, serviceType: .rpc,
                                      sessionID: SessionID(1), messageID: MessageID(8), maxPayloadPerFrame: 10, to: &out)

        var decoder = FrameDecoder()
        var reassembler = Reassembler()
        var printed: [String] = []
        var errors: [any Error] = []
        func received(_ bytes: ByteBuffer, now: NIODeadline) {
            decoder.append(bytes)
            while true {
                do {
                    guard let frame = try decoder.nextFrame() else { break }
                    guard let message = try reassembler.process(frame, now: now) else { continue }
                    if message.serviceType == .rpc && message.frameType != .control {
                        let rpc = try AnyRPCMessage(payload: message.payload)
                        if let data = rpc.message as? SDLOnAppServiceData {
                            printed.append("\(data.serviceData.serviceType) \(rpc.correlationID)")
                        } else {
                            printed.append(rpc.functionName)
                        }
                    } else if let info = message.controlFrameInfo {
                        printed.append("\(try ControlPayload(frameInfo: info, version: message.version, payload: message.payload))")
                    }
                } catch {
                    errors.append(error)
                }
            }
        }
        received(ByteBuffer(bytes: [0xFF, 0xFF]), now: .uptimeNanoseconds(0))
        received(out, now: .uptimeNanoseconds(0))
        #expect(errors.count == 1)
        #expect(printed.count == 3)
        #expect(printed.first == "GetInteriorVehicleData")
        #expect(printed.dropFirst().first?.hasPrefix("startServiceACK(") == true)
        #expect(printed.last == "WEATHER 4294967295")
    }
}
