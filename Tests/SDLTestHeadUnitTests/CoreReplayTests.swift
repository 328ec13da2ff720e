import NIOCore
import SDLProtocol
import SDLRPC
import SDLTestHeadUnit
import SDLTestSupport
import Testing

/// Whole sessions between `sdl app` and a real SDL Core 8.2.0 (`vectors/core82-sessions`): the
/// app's requests from the `-up` capture are fed to a head unit configured like that Core, and what
/// the head unit sends must be what Core sent in the `-down` capture.
///
/// Compared, message by message and in order: the function, the RPC type, the correlation id (a
/// response's is its request's, a notification's 0xFFFFFFFF); for responses `success`,
/// `resultCode` and `info`; and these parameters, whose values do not depend on Core's HMI:
/// OnHMIStatus (level, audio and video states, window), OnPermissionsChange (every item),
/// OnRCStatus (allocated and free modules), GetInteriorVehicleDataConsent's `allowed`,
/// GetInteriorVehicleData's `isSubscribed`, the `updateReason`s of OnSystemCapabilityUpdated
/// APP_SERVICES.
///
/// Not compared, on purpose:
/// - Core's OnSystemRequest(LOCK_SCREEN_ICON_URL), OnDriverDistraction and OnHashChange: the
///   simulator has no lock-screen URL, driver distraction or resumption hash; they carry nothing
///   the session depends on.
/// - The simulator's OnSystemCapabilityUpdated(DISPLAYS) after registration: Core sends it once
///   its HMI has given the display capabilities, which the captures' minimal HMI did not.
/// - Values that come from Core's HMI or its random generator: capabilities (the RegisterAppInterface
///   response, GetSystemCapability), module data (Core echoes what its HMI returns), service ids
///   (Core's are hashes), the embedded "HMI Media" service the captures' HMI published.
@Suite("Replays of SDL Core 8.2.0 sessions")
struct CoreReplayTests {
    /// One message of a capture: an RPC, or the control frame that ends the RPC service.
    enum Event {
        case rpc(AnyRPCMessage)
        case endService
    }

    /// The RPC messages and EndService frames of a capture, in order.
    static func events(_ name: String) throws -> [Event] {
        var decoder = FrameDecoder()
        var reassembler = Reassembler()
        decoder.append(contentsOf: try SharedData.bytes("vectors/core82-sessions/\(name)"))
        decoder.finish()
        var events: [Event] = []
        while let frame = try decoder.nextFrame() {
            guard let message = try reassembler.process(frame, now: .uptimeNanoseconds(0)) else { continue }
            if message.serviceType == .rpc, let info = message.controlFrameInfo {
                if info == .endService {
                    events.append(.endService)
                }
                continue
            }
            guard message.serviceType == .rpc, message.controlFrameInfo == nil else { continue }
            // Lenient: Core's RegisterAppInterface response breaks the spec (imageTypeSupported).
            events.append(.rpc(try AnyRPCMessage(payload: message.payload, options: .lenient)))
        }
        return events
    }

    /// The policy of the captures' Core, as the sessions show it: every app got Base-4,
    /// RemoteControl, AppServiceProvider and AppServiceConsumer (OnPermissionsChange), every
    /// module type, WEATHER publishing, and app HMI types that include REMOTE_CONTROL (an
    /// INFORMATION and a DEFAULT app got OnRCStatus) and an audio-video type (they were AUDIBLE and
    /// STREAMABLE in FULL) without a WARNINGS registration: all the types.
    static var capturePolicy: HeadUnitPolicy {
        var policy = HeadUnitPolicy.standard
        policy.appPolicies["default"]?.appHMITypes = SDLAppHMIType.knownCases
        return policy
    }

    static func headUnit(vehicle: SimulatedVehicle) -> SimulatedHeadUnit {
        var configuration = SimulatedHeadUnit.Configuration()
        configuration.policy = Self.capturePolicy
        configuration.vehicle = vehicle
        return SimulatedHeadUnit(configuration: configuration)
    }

    /// A message reduced to what the replay compares.
    struct Compared: Equatable, CustomStringConvertible {
        var function: String
        var type: RPCType
        var correlationID: UInt32
        var fields: [String]

        var description: String { "\(self.function) \(self.type) #\(self.correlationID) \(self.fields)" }
    }

    static func compared(_ message: AnyRPCMessage) throws -> Compared {
        var fields: [String] = []
        let parameters = try RPCValue(jsonObject: message.message.jsonParametersText(options: RPCCodingOptions(validate: false)))
        guard case .object(let object) = parameters else {
            throw RPCError(.typeMismatch, "\(message.functionName): parameters are not an object")
        }
        if message.rpcType == .response || message.rpcType == .erroneousResponse {
            for key in ["success", "resultCode", "info"] {
                fields.append("\(key)=\(object[key].map(String.init(describing:)) ?? "-")")
            }
        }
        switch message.message {
        case let status as SDLOnHMIStatus:
            fields.append("\(status.hmiLevel) \(status.audioStreamingState) \(String(describing: status.videoStreamingState)) \(String(describing: status.windowID))")
        case let permissions as SDLOnPermissionsChange:
            fields += permissions.permissionItem.map {
                "\($0.rpcName) \($0.hmiPermissions.allowed.map(\.wireName)) \($0.parameterPermissions.allowed)"
            }
        case let status as SDLOnRCStatus:
            fields.append("allowed=\(String(describing: status.allowed))")
            fields.append("allocated=\(status.allocatedModules.map { "\($0.moduleType):\($0.moduleId ?? "-")" })")
            fields.append("free=\(status.freeModules.map { "\($0.moduleType):\($0.moduleId ?? "-")" })")
        case let consent as SDLGetInteriorVehicleDataConsentResponse:
            fields.append("allowed=\(String(describing: consent.allowed))")
        case let get as SDLGetInteriorVehicleDataResponse:
            fields.append("isSubscribed=\(String(describing: get.isSubscribed))")
        case let update as SDLOnSystemCapabilityUpdated:
            fields.append("\(update.systemCapability.systemCapabilityType)")
            let reasons = update.systemCapability.appServicesCapabilities?.appServices?.compactMap(\.updateReason) ?? []
            fields.append("reasons=\(reasons)")
        default:
            break
        }
        return Compared(function: message.functionName, type: message.rpcType, correlationID: message.correlationID, fields: fields)
    }

    /// Core's messages to the app, without those the simulator deliberately does not send.
    static func coreMessages(_ events: [Event]) throws -> [Compared] {
        let notSimulated: Set<FunctionID> = [.onSystemRequest, .onDriverDistraction, .onHashChange]
        return try events.compactMap { event in
            guard case .rpc(let message) = event, !notSimulated.contains(message.functionID) else { return nil }
            return try Self.compared(message)
        }
    }

    /// The simulator's messages to the app, without the DISPLAYS update (see the suite's notes).
    static func ourMessages(_ outputs: [HeadUnitOutput], to app: AppHandle) throws -> [Compared] {
        try outputs.sent.filter { $0.app == app }.map(\.message).filter {
            ($0.message as? SDLOnSystemCapabilityUpdated)?.systemCapability.systemCapabilityType != .displays
        }.map(Self.compared)
    }

    /// Feeds the app's side of a capture to the head unit: requests and notifications, and the
    /// app's EndService as its disconnection. Returns every output, in order.
    static func replay(_ events: [Event], into headUnit: inout SimulatedHeadUnit, as app: AppHandle) -> [HeadUnitOutput] {
        var outputs = headUnit.appConnected(app)
        var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        for event in events {
            now = now + .milliseconds(10)
            switch event {
            case .rpc(let message): outputs += headUnit.received(message, from: app, now: now)
            case .endService: outputs += headUnit.appDisconnected(app, now: now)
            }
        }
        checkSent(outputs)
        return outputs
    }

    static func expectSame(_ ours: [Compared], _ core: [Compared], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(ours.count == core.count, "\(ours.count) messages, Core sent \(core.count)", sourceLocation: sourceLocation)
        for (index, (mine, theirs)) in zip(ours, core).enumerated() where mine != theirs {
            Issue.record("message \(index): ours \(mine), Core's \(theirs)", sourceLocation: sourceLocation)
            return
        }
    }

    @Test("rc-radio: capability, consent, subscribe, set climate and radio, ButtonPress, unsubscribe, release")
    func rcRadio() throws {
        let up = try Self.events("rc-radio-up.bin")
        let down = try Self.events("rc-radio-down.bin")
        var headUnit = Self.headUnit(vehicle: .climateAndRadio)
        let outputs = Self.replay(up, into: &headUnit, as: AppHandle(1))
        let core = try Self.coreMessages(down)
        let ours = try Self.ourMessages(outputs, to: AppHandle(1))
        Self.expectSame(ours, core)
        #expect(core.count == 24)
        // The order that matters, spelled out: OnRCStatus after the set's response and before
        // OnInteriorVehicleData; before the release's response.
        #expect(Array(core.map(\.function)[10...13]) == [
            "SetInteriorVehicleData", "OnRCStatus", "OnInteriorVehicleData", "GetInteriorVehicleData",
        ])
        #expect(Array(core.map(\.function).suffix(4)) == [
            "OnRCStatus", "ReleaseInteriorVehicleDataModule", "OnRCStatus", "ReleaseInteriorVehicleDataModule",
        ])
    }

    @Test("appservice: publish WEATHER, send its data, ask for it: IGNORED to the producer; REMOVED when the app ends")
    func appService() throws {
        let up = try Self.events("appservice-up.bin")
        let down = try Self.events("appservice-down.bin")
        var headUnit = Self.headUnit(vehicle: .climateOnly)
        let outputs = Self.replay(up, into: &headUnit, as: AppHandle(1))
        let core = try Self.coreMessages(down)
        let ours = try Self.ourMessages(outputs, to: AppHandle(1))
        Self.expectSame(ours, core)
        #expect(core.count == 11)
        let ignored = try #require(core.first { $0.function == "GetAppServiceData" })
        #expect(ignored.fields == ["success=bool(false)", "resultCode=string(\"IGNORED\")", "info=string(\"Consumer app is same as producer app\")"])
        #expect(core.last?.fields.last == "reasons=[REMOVED]")
        #expect(headUnit.serviceRecords.isEmpty)
    }

    @Test("ping-tap: ListFiles as fast as answered, then the flood: Core's EndService, our OnAppInterfaceUnregistered")
    func pingFlood() throws {
        let up = try Self.events("ping-tap-up.bin")
        let down = try Self.events("ping-tap-down.bin")
        // Core answered up to this request, then its flood meter tripped and it ended the RPC
        // service: the EndService is the last thing it sent.
        guard case .endService? = down.last else {
            Issue.record("Core's side does not end with EndService")
            return
        }
        let lastAnswered = try #require(down.compactMap { event -> UInt32? in
            guard case .rpc(let message) = event, message.functionID == .listFiles else { return nil }
            return message.correlationID
        }.last)
        #expect(lastAnswered == 1001)
        let answeredUp = up.filter { event in
            guard case .rpc(let message) = event else { return false }
            return message.correlationID <= lastAnswered
        }
        var headUnit = Self.headUnit(vehicle: .climateOnly)
        var outputs = Self.replay(answeredUp, into: &headUnit, as: AppHandle(1))
        Self.expectSame(try Self.ourMessages(outputs, to: AppHandle(1)), try Self.coreMessages(down))
        let spaces = outputs.messages(SDLListFilesResponse.self, to: AppHandle(1)).map(\.spaceAvailable)
        #expect(spaces.count == 1000 && spaces.allSatisfy { $0 == 104_857_600 })

        // The session layer's flood meter trips here: Core's EndService is the runtime's; what the
        // head unit sends, Core writes after it, and it never reaches the app.
        outputs = headUnit.appFlooded(AppHandle(1), now: .uptimeNanoseconds(2_000_000_000))
        #expect(outputs.sends == ["app1 <- OnAppInterfaceUnregistered notification #4294967295"])
        #expect(headUnit.hmiLevel(of: AppHandle(1)) == nil)
    }
}
