import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import SDLTestSupport
import Testing

/// The app runtime against a head unit that writes what a real SDL Core 8.2.0 wrote
/// (`../shared/vectors/core82/`; ARCHITECTURE.md, D-real-peers): the
/// StartServiceACK's field types, pretty-printed JSON with tabs, notifications with correlation id
/// 0xFFFFFFFF, and a RegisterAppInterface response that breaks the spec. The app reads it with its
/// default policy, reports every violation by path and keeps the data.
@Suite(.timeLimit(.minutes(1)))
struct RealCoreTests {
    static let imageFieldViolations = (0..<10).map { "displayCapabilities.imageFields[\($0)].imageTypeSupported" }

    @Test(
        "Core's four bodies through the app runtime's default policy, in one frame each and cut into 1,500-byte frames",
        arguments: [131_072 - 12, 1_500 - 12])
    func coreBodiesThroughTheDefaultPolicy(framePayload: Int) async throws {
        try await within {
            let headUnit = try await CoreLikeHeadUnit.start(framePayload: framePayload)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: headUnit.port)
            // The ACK as Core writes it: protocolVersion 5.4.0 for a 5.4.1 request, mtu as int64.
            #expect(app.sessionInfo.version == SDLVersion(major: 5, minor: 4, patch: 0))
            #expect(app.sessionInfo.mtu == 131_072)
            #expect(app.sessionInfo.hashID == 0x1D2C_3B4A)
            #expect(await app.statistics.messagesWithViolations == 0)

            let permissions = app.permissionUpdates()
            let statuses = app.hmiStatusUpdates()
            let response = try await app.register(registration("Core client", appID: "core-1", hmiTypes: [.remoteControl]))
            #expect(response.success)
            #expect(response.resultCode == .success)
            let display = try #require(response.displayCapabilities)
            // The two conforming image fields are typed; the ten others are kept as Core sent them.
            #expect(display.imageFields?.map(\.name) == [.locationImage, .alertIcon])
            #expect(display.droppedParameters.elements(forKey: "imageFields").map(\.index) == Array(0..<10))
            #expect(display.textFields.count == 30)
            #expect(await app.registration?.displayCapabilities?.imageFields?.count == 2)

            // Every violation reported by path on the event stream.
            var events = app.events.makeAsyncIterator()
            var reported: [RPCViolation]?
            while reported == nil, let event = await events.next() {
                if case .violations(let name, let type, let correlationID, let violations) = event {
                    #expect(name == "RegisterAppInterface")
                    #expect(type == .response)
                    #expect(correlationID == headUnit.registrationCorrelationID.withLockedValue { $0 })
                    reported = violations
                }
            }
            #expect(reported?.map(\.pathString) == Self.imageFieldViolations)
            #expect(reported?.allSatisfy { $0.code == .missingParameter } == true)

            // Core's notifications (correlation id 0xFFFFFFFF) arrive typed.
            var statusIterator = statuses.makeAsyncIterator()
            #expect(await statusIterator.next()?.hmiLevel == SDLHMILevel.none_)
            var permissionIterator = permissions.makeAsyncIterator()
            let change = try #require(await permissionIterator.next())
            #expect(change.permissionItem.count == 52)
            #expect(change.permissionItem.first?.rpcName == "AddCommand")
            #expect(change.permissionItem.contains { $0.rpcName == "GetSystemCapability" })
            #expect(await app.permissions?.permissionItem.count == change.permissionItem.count)

            // Core's 16 KB GetSystemCapability response, at the request's correlation id.
            let capability = try await app.systemCapability(.remoteControl)
            let remote = try #require(capability.remoteControlCapability)
            #expect(remote.climateControlCapabilities?.isEmpty == false)
            #expect(remote.radioControlCapabilities?.isEmpty == false)
            #expect(await app.statistics.messagesWithViolations == 1)
            #expect(await app.statistics.unreadableMessages == 0)

            await app.close()
            await headUnit.stop()
        }
    }

    @Test func requestsTheAppCannotReadAreAnsweredNotDropped() async throws {
        try await within {
            let headUnit = try await CoreLikeHeadUnit.start(framePayload: 131_072 - 12, unreadableRequests: true)
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: headUnit.port)
            try await app.register(registration("Core client", appID: "core-1"))
            // After the registration the head unit sends a GetAppServiceData whose JSON is cut
            // short and a request of a function id no spec has: each gets a response of its
            // function id and correlation id.
            while headUnit.answers.withLockedValue({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
            let answers = headUnit.answers.withLockedValue { $0 }
            #expect(answers.map(\.functionID) == [FunctionID.getAppServiceData.rawValue, 0x7777])
            #expect(answers.map(\.correlationID) == [901, 902])
            #expect(answers.map(\.text).map { $0.contains("\"resultCode\":\"INVALID_DATA\"") } == [true, false])
            #expect(answers.map(\.text).map { $0.contains("\"resultCode\":\"UNSUPPORTED_REQUEST\"") } == [false, true])
            #expect(await app.statistics.unreadableMessages == 2)
            await app.close()
            await headUnit.stop()
        }
    }

    @Test func theStrictPolicyRefusesCoresRegistration() async throws {
        try await within {
            let headUnit = try await CoreLikeHeadUnit.start(framePayload: 131_072 - 12)
            var configuration = SDLAppConfiguration()
            configuration.receiveOptions = .default
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: headUnit.port, configuration: configuration)
            let error = await #expect(throws: SDLConnectionError.self) {
                try await app.register(registration("Core client", appID: "core-1"))
            }
            #expect(error?.code == .invalidResponse)
            #expect(error?.detail.contains("displayCapabilities.imageFields[0].imageTypeSupported") == true)
            await app.close()
            await headUnit.stop()
        }
    }
}

/// A head unit that answers as SDL Core 8.2.0 did, from its recorded bodies: enough of Core to
/// start a session, answer RegisterAppInterface and GetSystemCapability(REMOTE_CONTROL), and send
/// OnHMIStatus and OnPermissionsChange after registering.
struct CoreLikeHeadUnit: Sendable {
    let server: any Channel
    let port: Int
    /// The correlation id of the app's RegisterAppInterface.
    let registrationCorrelationID: NIOLockedValueBox<UInt32>
    /// The app's responses to the head unit's requests: function id, correlation id, JSON text.
    let answers: NIOLockedValueBox<[(functionID: UInt32, correlationID: UInt32, text: String)]>

    static func body(_ name: String) throws -> ByteBuffer {
        ByteBuffer(bytes: try SharedData.bytes("vectors/core82/\(name).json"))
    }

    static func start(framePayload: Int, unreadableRequests: Bool = false) async throws -> CoreLikeHeadUnit {
        let bodies = try (
            register: body("RegisterAppInterface.response"), status: body("OnHMIStatus.notification"),
            permissions: body("OnPermissionsChange.notification"), capability: body("GetSystemCapability.response"))
        let box = NIOLockedValueBox<UInt32>(0)
        let answers = NIOLockedValueBox<[(functionID: UInt32, correlationID: UInt32, text: String)]>([])
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        Responder(bodies: [bodies.register, bodies.status, bodies.permissions, bodies.capability], framePayload: framePayload, registration: box, answers: answers, unreadableRequests: unreadableRequests))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return CoreLikeHeadUnit(server: server, port: server.localAddress!.port!, registrationCorrelationID: box, answers: answers)
    }

    func stop() async {
        try? await self.server.close()
    }

    /// Reads frames, answers them with Core's bytes.
    final class Responder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let bodies: [ByteBuffer]
        let framePayload: Int
        let registration: NIOLockedValueBox<UInt32>
        let answers: NIOLockedValueBox<[(functionID: UInt32, correlationID: UInt32, text: String)]>
        /// Whether two requests the app cannot read follow the registration.
        let unreadableRequests: Bool
        var decoder = FrameDecoder(invalidHeaderPolicy: .fail)
        var reassembler = Reassembler()
        var messageID: UInt32 = 100

        init(
            bodies: [ByteBuffer], framePayload: Int, registration: NIOLockedValueBox<UInt32>,
            answers: NIOLockedValueBox<[(functionID: UInt32, correlationID: UInt32, text: String)]>, unreadableRequests: Bool
        ) {
            self.unreadableRequests = unreadableRequests
            self.answers = answers
            self.bodies = bodies
            self.framePayload = framePayload
            self.registration = registration
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.decoder.append(self.unwrapInboundIn(data))
            do {
                while let frame = try self.decoder.nextFrame() {
                    try self.received(frame, context: context)
                }
            } catch {
                context.close(promise: nil)
            }
        }

        private func received(_ frame: ProtocolFrame, context: ChannelHandlerContext) throws {
            if frame.header.frameType == .control {
                guard frame.header.controlFrameInfo == .startService, frame.header.serviceType == .rpc else { return }
                // Core's field types: int32 hashId, int64 mtu, int32 transport lists, an empty
                // secondaryTransports array.
                var payload = ByteBuffer()
                try StartServiceACKPayload(
                    protocolVersion: "5.4.0", hashID: 0x1D2C_3B4A, mtu: 131_072, secondaryTransports: [],
                    audioServiceTransports: [1], videoServiceTransports: [1], make: "SDL", model: "Generic",
                    modelYear: "2019", trim: "SE"
                ).write(to: &payload)
                var out = ByteBuffer()
                try FrameEncoder.writeMessage(
                    payload, version: .v5, serviceType: .rpc, sessionID: SessionID(1), messageID: frame.header.messageID ?? MessageID(0),
                    control: .startServiceACK, maxPayloadPerFrame: self.framePayload, to: &out)
                context.writeAndFlush(self.wrapOutboundOut(out), promise: nil)
                return
            }
            guard let message = try self.reassembler.process(frame, now: .now()) else { return }
            let parsed = try RPCPayload(parsing: message.payload)
            let request = parsed.header
            if request.rpcType == .response {
                self.answers.withLockedValue {
                    $0.append((request.functionID, request.correlationID, String(buffer: parsed.parameters)))
                }
                return
            }
            switch request.functionID {
            case FunctionID.registerAppInterface.rawValue:
                self.registration.withLockedValue { $0 = request.correlationID }
                self.send(self.bodies[0], functionID: request.functionID, rpcType: 1, correlationID: request.correlationID, context: context)
                self.send(self.bodies[1], functionID: FunctionID.onHMIStatus.rawValue, rpcType: 2, correlationID: .max, context: context)
                self.send(self.bodies[2], functionID: FunctionID.onPermissionsChange.rawValue, rpcType: 2, correlationID: .max, context: context)
                // Two requests the app cannot read: JSON cut short, and an unknown function.
                guard self.unreadableRequests else { return }
                self.send(ByteBuffer(string: "{\"serviceType\":"), functionID: FunctionID.getAppServiceData.rawValue, rpcType: 0, correlationID: 901, context: context)
                self.send(ByteBuffer(string: "{}"), functionID: 0x7777, rpcType: 0, correlationID: 902, context: context)
            case FunctionID.getSystemCapability.rawValue:
                self.send(self.bodies[3], functionID: request.functionID, rpcType: 1, correlationID: request.correlationID, context: context)
            default:
                break
            }
        }

        private func send(_ body: ByteBuffer, functionID: UInt32, rpcType: UInt32, correlationID: UInt32, context: ChannelHandlerContext) {
            var payload = ByteBuffer()
            payload.writeInteger(rpcType << 28 | functionID)
            payload.writeInteger(correlationID)
            payload.writeInteger(UInt32(body.readableBytes))
            payload.writeImmutableBuffer(body)
            var out = ByteBuffer()
            self.messageID += 1
            try! FrameEncoder.writeMessage(
                payload, version: .v5, serviceType: .rpc, sessionID: SessionID(1), messageID: MessageID(self.messageID),
                maxPayloadPerFrame: self.framePayload, to: &out)
            context.writeAndFlush(self.wrapOutboundOut(out), promise: nil)
        }
    }
}
