import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// A hostile peer against the head unit (and a hostile head unit against the app), over loopback:
/// each attack bounded in memory, answered as SDL Core answers, and ended for that peer alone.
@Suite(.timeLimit(.minutes(1)))
struct HostilePeerTests {
    /// A raw ListFiles request payload with a correlation id.
    static func listFiles(_ correlationID: UInt32) -> ByteBuffer {
        try! SDLListFilesRequest().payload(correlationID: correlationID)
    }

    /// The frames of `count` ListFiles requests in one buffer.
    static func requests(_ count: Int, session: UInt8, from first: UInt32 = 10) -> ByteBuffer {
        var all = ByteBuffer()
        for index in 0..<count {
            var frame = RawFrames.rpc(Self.listFiles(first + UInt32(index)), session: session, messageID: first + UInt32(index))
            all.writeBuffer(&frame)
        }
        return all
    }

    static func disconnections(_ handler: RecordingHandler) -> [String] {
        handler.events.map(\.name).filter { $0.hasPrefix("appDisconnected") }
    }

    /// A head unit that holds at most `limit` queued bytes per connection and closes a connection
    /// not read for 2 s, and a registered raw app on it that has stopped reading.
    static func nonReadingApp(limit: Int, handler: RecordingHandler) async throws -> (SDLHeadUnitServer, RawPeer, UInt8) {
        var configuration = testHeadUnitConfiguration()
        configuration.transport.maxQueuedBytesPerTransport = limit
        configuration.transport.stalledReaderTimeout = .seconds(2)
        // Small kernel buffers on both ends, so that a peer that stops reading shows at once.
        configuration.transport.socketSendBufferSize = 16 * 1024
        configuration.session.headUnit.floodLimit = nil
        let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
        let (peer, _, session) = try await RawPeer.registered(port: server.primaryPort, receiveBufferSize: 16 * 1024)
        try await peer.stopReading()
        return (server, peer, session)
    }

    @Test func anAppThatSendsRequestsAndNeverReadsTheAnswersIsThrottledThenClosed() async throws {
        try await within(40) {
            let handler = RecordingHandler()
            let (server, peer, session) = try await Self.nonReadingApp(limit: 64 * 1024, handler: handler)
            // 20,000 requests whose answers (about 100 bytes each) it never reads.
            let sent = Task { try? await peer.send(Self.requests(20_000, session: session)) }
            var highest = 0
            while Self.disconnections(handler).isEmpty {
                highest = max(highest, await server.queuedBytes)
                try await Task.sleep(for: .milliseconds(50))
            }
            // Held: the bound plus the answers to the requests of the one read (up to 64 KiB,
            // about 2,300 requests) that made the queue cross it: about 250 KiB in all was seen
            // (350 KiB when the rest of the read cycle was still handled after the pause), never
            // the 2 MB of answers to everything sent.
            #expect(highest <= 64 * 1024 + 320 * 1024)
            #expect(handler.requests.withLockedValue { $0.count } < 20_000)
            #expect(Self.disconnections(handler) == ["appDisconnected(transportLost)"])
            #expect(handler.events.contains { event in
                if case .session(.transportClosed(_, let closure)) = event { return "\(closure)".contains("peerStoppedReading") }
                return false
            })
            sent.cancel()
            #expect(await server.queuedBytes == 0)
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func heartbeatsWhoseACKsAreNeverReadHoldNoMoreThanTheBound() async throws {
        try await within(40) {
            let handler = RecordingHandler()
            let (server, peer, session) = try await Self.nonReadingApp(limit: 32 * 1024, handler: handler)
            var heartbeats = ByteBuffer()
            for index in 0..<100_000 {
                heartbeats.writeBytes([0x50, 0x00, 0x00, session, 0, 0, 0, 0])
                heartbeats.writeInteger(UInt32(index + 2))
            }
            let sent = Task { try? await peer.send(heartbeats) }
            var highest = 0
            while Self.disconnections(handler).isEmpty {
                highest = max(highest, await server.queuedBytes)
                try await Task.sleep(for: .milliseconds(50))
            }
            // The bound plus the ACKs of the heartbeats of the read that made the queue cross it,
            // as for requests.
            #expect(highest <= 32 * 1024 + 320 * 1024)
            sent.cancel()
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func idleConnectionsCannotKeepANewAppOut() async throws {
        try await within {
            let handler = RecordingHandler()
            var configuration = testHeadUnitConfiguration()
            configuration.maxConnections = 3
            configuration.connectionStartTimeout = nil
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
            var idle: [RawPeer] = []
            for _ in 0..<3 { idle.append(try await RawPeer.connect(port: server.primaryPort)) }
            try await Task.sleep(for: .milliseconds(100))
            // A fourth: the oldest idle connection makes room, and the app registers.
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.primaryPort)
            try await app.register(registration())
            var frames = idle[0].frames()
            #expect(try await frames.next() == nil)  // closed
            await app.disconnect()
            for peer in idle { await peer.close() }
            await server.shutdown()
        }
    }

    @Test func aConnectionThatStartsNoSessionIsClosed() async throws {
        try await within {
            var configuration = testHeadUnitConfiguration()
            configuration.connectionStartTimeout = .milliseconds(300)
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: RecordingHandler())
            // Timed from before the connect: the head unit's clock starts at its accept, which a
            // loaded machine may run long before the client's connect returns.
            let start = NIODeadline.now()
            let peer = try await RawPeer.connect(port: server.primaryPort)
            var frames = peer.frames()
            #expect(try await frames.next() == nil)
            #expect(NIODeadline.now() - start >= .milliseconds(300))
            await server.shutdown()
        }
    }

    /// Over WebSocket a connection is the head unit's only once upgraded: until then the listener
    /// bounds it (the oldest of too many pending upgrades closed, each closed at its deadline).
    @Test func webSocketConnectionsThatNeverUpgradeAreBoundedAndClosed() async throws {
        try await within {
            var configuration = testHeadUnitConfiguration()
            configuration.transport.handshakeTimeout = .milliseconds(500)
            configuration.transport.maxPendingHandshakes = 3
            let server = try await TestBed(.webSocket).server(configuration, handler: RecordingHandler())
            let connecting = NIODeadline.now()
            var idle: [RawPeer] = []
            for _ in 0..<5 {
                idle.append(try await RawPeer.connect(port: server.primaryPort))
                try await Task.sleep(for: .milliseconds(20))
            }
            // Five connections, three may wait: the two oldest are closed for the newer ones.
            for peer in idle.prefix(2) {
                var frames = peer.frames()
                #expect(try await frames.next() == nil)
            }
            // The others at their deadline: 500 ms after each was accepted, which was after the
            // first connect began.
            for peer in idle.suffix(3) {
                var frames = peer.frames()
                #expect(try await frames.next() == nil)
            }
            #expect(NIODeadline.now() - connecting >= .milliseconds(450))
            await server.shutdown()
        }
    }

    /// The upgrade deadline is for the upgrade only: an app that upgraded is served past it.
    @Test func aWebSocketAppThatUpgradedOutlivesTheUpgradeDeadline() async throws {
        try await within {
            var configuration = testHeadUnitConfiguration()
            configuration.transport.handshakeTimeout = .seconds(5)
            let server = try await TestBed(.webSocket).server(configuration, handler: RecordingHandler())
            let app = try await TestBed(.webSocket).connect(server)
            try await app.register(registration())
            try await Task.sleep(for: .milliseconds(5500))
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            #expect(files.success)
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test func aRequestTooLargeToParseIsAnsweredInvalidDataUnparsed() async throws {
        try await within {
            var configuration = testHeadUnitConfiguration()
            configuration.maxRPCParametersSize = 64 * 1024
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
            let (peer, frames, session) = try await RawPeer.registered(port: server.primaryPort)
            var reader = frames
            // 100 KB of JSON parameters in a ListFiles request.
            let json = "{\"x\":\"" + String(repeating: "a", count: 100_000) + "\"}"
            var payload = ByteBuffer()
            try RPCPayload(
                header: RPCBinaryHeader(rpcType: .request, functionID: FunctionID.listFiles.rawValue, correlationID: 77, jsonSize: 0),
                parameters: ByteBuffer(string: json)
            ).write(to: &payload)
            try await peer.send(RawFrames.rpc(payload, session: session, messageID: 5))
            var message: AnyRPCMessage?
            while let frame = try await reader.next(where: { $0.header.serviceType == .rpc && $0.header.frameType == .single }) {
                let decoded = try AnyRPCMessage(payload: frame.payload, options: .lenient)
                if decoded.message is SDLListFilesResponse {
                    message = decoded
                    break
                }
            }
            let response = try #require(message?.message as? SDLListFilesResponse)
            #expect(message?.correlationID == 77)
            #expect(response.resultCode == .invalidData)
            #expect(response.info?.contains("above the 65536 this head unit reads") == true)
            #expect(handler.requests.withLockedValue { $0.isEmpty })
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func aRequestWhoseJSONRunsPastItsPayloadAndAnEncryptedRequestWithoutEncryptionAreAnswered() async throws {
        try await within {
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: RecordingHandler())
            let (peer, frames, session) = try await RawPeer.registered(port: server.primaryPort)
            var reader = frames
            // The binary header says 500 bytes of JSON; 20 follow.
            var short = ByteBuffer()
            short.writeInteger(UInt32(0x0000_0022))  // request, function 34 (ListFiles)
            short.writeInteger(UInt32(41))
            short.writeInteger(UInt32(500))
            short.writeString("{\"a\":1}")
            try await peer.send(RawFrames.rpc(short, session: session, messageID: 6))
            // A plain request in a frame marked encrypted (E=1) on a session without encryption.
            var marked = RawFrames.rpc(Self.listFiles(42), session: session, messageID: 7)
            let first = marked.getInteger(at: marked.readerIndex, as: UInt8.self)!
            marked.setInteger(first | 0x08, at: marked.readerIndex)
            try await peer.send(marked)
            var answered: [UInt32: SDLResult] = [:]
            while answered.count < 2, let frame = try await reader.next(where: { $0.header.serviceType == .rpc && $0.header.frameType == .single }) {
                let message = try AnyRPCMessage(payload: frame.payload, options: .lenient)
                if let response = message.message as? SDLListFilesResponse { answered[message.correlationID] = response.resultCode }
            }
            #expect(answered == [41: .invalidData, 42: .invalidData])
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func requestsWithTheHighestCorrelationIDsAreAnsweredAndAReRegistrationStillWorks() async throws {
        try await within {
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: RecordingHandler())
            let (peer, frames, session) = try await RawPeer.registered(port: server.primaryPort)
            var reader = frames
            // The ids next to the one Core's notifications carry, then an unregistration and a
            // registration whose correlation id is one of them again.
            func answer(to correlationID: UInt32) async throws -> (String, SDLResult?) {
                while let frame = try await reader.next(where: { $0.header.serviceType == .rpc && $0.header.frameType == .single }) {
                    let message = try AnyRPCMessage(payload: frame.payload, options: .lenient)
                    guard message.correlationID == correlationID, let response = message.message as? any RPCResponse else { continue }
                    return (message.functionName, response.resultCode)
                }
                throw TimedOut(what: "the answer to #\(correlationID)")
            }
            for correlationID: UInt32 in [0xFFFF_FFFD, 0xFFFF_FFFE] {
                try await peer.send(RawFrames.rpc(Self.listFiles(correlationID), session: session, messageID: 2))
                let (name, result) = try await answer(to: correlationID)
                #expect(name == "ListFiles")
                #expect(result == .success)
            }
            let unregister = try SDLUnregisterAppInterfaceRequest().payload(correlationID: 0xFFFF_FFFD)
            try await peer.send(RawFrames.rpc(unregister, session: session, messageID: 3))
            #expect(try await answer(to: 0xFFFF_FFFD) == ("UnregisterAppInterface", .success))
            try await peer.send(RawFrames.register(session: session, correlationID: 0xFFFF_FFFE))
            #expect(try await answer(to: 0xFFFF_FFFE) == ("RegisterAppInterface", .success))
            try await peer.send(RawFrames.rpc(Self.listFiles(0xFFFF_FFFD), session: session, messageID: 4))
            #expect(try await answer(to: 0xFFFF_FFFD) == ("ListFiles", .success))
            await peer.close()
            await server.shutdown()
        }
    }

    @Test func aFloodEndsWithOnAppInterfaceUnregisteredThenEndServiceAndTheConnectionClosed() async throws {
        try await within {
            var configuration = testHeadUnitConfiguration()
            configuration.session.headUnit.floodLimit = RateLimit(count: 100, per: .seconds(1))
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: configuration, handler: handler)
            let (peer, frames, session) = try await RawPeer.registered(port: server.primaryPort)
            var reader = frames
            try await peer.send(Self.requests(1500, session: session))
            var seen: [String] = []
            while let frame = try await reader.next() {
                if frame.header.frameType == .control {
                    seen.append("control \(frame.header.frameInfo)")
                } else if frame.header.serviceType == .rpc, let message = try? AnyRPCMessage(payload: frame.payload, options: .lenient),
                    let unregistered = message.message as? SDLOnAppInterfaceUnregistered
                {
                    seen.append("OnAppInterfaceUnregistered \(unregistered.reason.wireName)")
                }
            }
            // The notification, then EndService(RPC), then the connection closes (nil above).
            #expect(seen.filter { $0 != "control 255" }.suffix(2) == ["OnAppInterfaceUnregistered TOO_MANY_REQUESTS", "control 4"])
            #expect(handler.requests.withLockedValue { $0.count } <= 100)
            await server.shutdown()
        }
    }
}

/// A head unit that accepts the session, then floods heartbeats and never reads what the app
/// answers: the app's queue towards it stays bounded, and the app ends the session with a typed
/// reason once the head unit has not read for `stalledReaderTimeout`.
@Suite(.timeLimit(.minutes(1)))
struct HostileHeadUnitTests {
    final class Flooder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        var decoder = FrameDecoder(invalidHeaderPolicy: .fail)
        var flooding = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !self.flooding else { return }
            self.decoder.append(self.unwrapInboundIn(data))
            while let frame = try? self.decoder.nextFrame() {
                guard frame.header.frameType == .control, frame.header.controlFrameInfo == .startService else { continue }
                var payload = ByteBuffer()
                try! StartServiceACKPayload(protocolVersion: "5.4.0", hashID: 0x1D2C_3B4A, mtu: 131_072).write(to: &payload)
                var out = ByteBuffer()
                try! FrameEncoder.writeMessage(
                    payload, version: .v5, serviceType: .rpc, sessionID: SessionID(1), messageID: frame.header.messageID ?? MessageID(0),
                    control: .startServiceACK, maxPayloadPerFrame: 131_072, to: &out)
                context.writeAndFlush(self.wrapOutboundOut(out), promise: nil)
                // From now on nothing the app sends is read.
                self.flooding = true
                context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
                self.flood(context: context, messageID: 2)
                return
            }
        }

        /// Heartbeats, 64 KiB at a time, as long as the socket takes them.
        private func flood(context: ChannelHandlerContext, messageID: UInt32) {
            guard context.channel.isActive else { return }
            var next = messageID
            if context.channel.isWritable {
                var heartbeats = ByteBuffer()
                for _ in 0..<5000 {
                    heartbeats.writeBytes([0x50, 0x00, 0x00, 0x01, 0, 0, 0, 0])
                    heartbeats.writeInteger(next)
                    next &+= 1
                }
                context.writeAndFlush(self.wrapOutboundOut(heartbeats), promise: nil)
            }
            context.eventLoop.scheduleTask(in: .milliseconds(5)) { self.flood(context: context, messageID: next) }
        }
    }

    @Test func aHeadUnitThatFloodsHeartbeatsAndNeverReadsCostsTheAppABoundedQueueAndEndsTheSession() async throws {
        try await within(50) {
            let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 16 * 1024)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Flooder()) }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            var configuration = SDLAppConfiguration()
            configuration.transport.maxQueuedBytesPerTransport = 64 * 1024
            configuration.transport.stalledReaderTimeout = .seconds(2)
            configuration.transport.socketSendBufferSize = 16 * 1024
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: server.localAddress!.port!, configuration: configuration)
            let ended = NIOLockedValueBox<SessionEndReason?>(nil)
            let closure = NIOLockedValueBox<String>("")
            let events = Task {
                for await event in app.events {
                    if case .session(.transportClosed(_, let reason)) = event { closure.withLockedValue { $0 = "\(reason)" } }
                    if case .sessionEnded(let reason) = event { ended.withLockedValue { $0 = reason } }
                }
            }
            var highest = 0
            while ended.withLockedValue({ $0 }) == nil {
                highest = max(highest, await app.statistics.queuedBytes)
                try await Task.sleep(for: .milliseconds(50))
            }
            events.cancel()
            // The bound plus the answers to the heartbeats already read when reading paused.
            #expect(highest > 0)
            #expect(highest <= 64 * 1024 + 320 * 1024)
            #expect(ended.withLockedValue { $0 } == .transportLost)
            #expect(closure.withLockedValue { $0 }.contains("peerStoppedReading"))
            await app.disconnect()
            try? await server.close()
        }
    }
}
