import NIOCore
import SDLProtocol
import SDLRPC

/// A simulated head unit that behaves towards apps as SDL Core does: it registers them and moves
/// their HMI levels, grants permissions, keeps a registry of published app services (routing data,
/// interactions and the RPCs a provider handles), and simulates a vehicle whose modules apps read,
/// subscribe to and control. A "head unit RPC version" setting makes it behave as an older head
/// unit (4.5, 5.0, 5.1, 6.0, 8.0), where remote control and app services changed.
///
/// It is sans-IO, as the session engine is: no sockets, no clocks, no tasks. Each input is a
/// method call (an app connected, a message arrived from it, it disconnected, a timer fired, the
/// simulated driver did something) with the current time as an argument, and returns the
/// ``HeadUnitOutput``s the driver acts on, in order: a transcript line, the messages to send, a
/// timer to arm. It answers every request, synchronously or, when it forwards one to an
/// app-service provider, once the provider answers or ``Configuration/providerTimeout`` passes
/// (``timerFired(now:)``): well within the 10 s apps wait.
///
/// Messages are the typed SDLRPC values inside `AnyRPCMessage`; the driver decodes what apps send
/// (``receivedUndecodable(functionID:rpcType:correlationID:error:from:now:)`` for what it could
/// not decode) and encodes what the head unit sends, in the format the app's session uses.
///
/// ```swift
/// var headUnit = SimulatedHeadUnit(configuration: .init())
/// var outputs = headUnit.appConnected(AppHandle(1))
/// outputs += headUnit.received(registerAppInterface, from: AppHandle(1), now: .now())
/// for case .send(let message, let app) in outputs { … }
/// ```
public struct SimulatedHeadUnit: Sendable {
    /// The settings of a simulated head unit.
    public struct Configuration: Hashable, Sendable {
        /// The RPC spec version the head unit implements: functions of later versions are answered
        /// UNSUPPORTED_REQUEST, and an app negotiates the lower of its version and this one.
        /// Default 8.0.0.
        public var rpcVersion: RPCVersion = .v8_0
        /// The HMI level an app is activated to after registration (FULL, LIMITED or BACKGROUND);
        /// nil: it stays in NONE until ``SimulatedHeadUnit/setHMILevel(_:of:)``. Default FULL.
        public var activationLevel: SDLHMILevel? = .full
        /// The head unit's language (`language`, `hmiDisplayLanguage`); an app that desires
        /// another registers with WRONG_LANGUAGE, as on Core. Default EN-US.
        public var language: SDLLanguage = .enUs
        /// `vehicleType` of the RegisterAppInterface response.
        public var vehicleType = SDLVehicleType(make: "SDL", model: "Simulator", modelYear: "2024", trim: "SE")
        /// `sdlVersion` of the RegisterAppInterface response.
        public var sdlVersion = "swift-sdl simulated head unit"
        /// `systemSoftwareVersion` of the RegisterAppInterface response.
        public var systemSoftwareVersion = "1.0.0"
        /// Whether the vehicle has remote control (`hmiCapabilities.remoteControl`); false: the RC
        /// functions are answered UNSUPPORTED_REQUEST. Default true.
        public var remoteControl = true
        /// The vehicle's modules and seats, with their initial data.
        public var vehicle: SimulatedVehicle = .standard
        /// What happens when an app wants a module another app holds. Default `.autoDeny` (one
        /// app at a time per module).
        public var accessMode: RCAccessMode = .autoDeny
        /// How the simulated driver answers when asked to let an app control a module. Default
        /// `.grant`.
        public var driverConsent: DriverConsent = .grant
        /// How long the head unit waits for an app-service provider to answer a request it
        /// forwarded (GetAppServiceData, PerformAppServiceInteraction, an RPC in `handledRPCs`)
        /// before it answers the consumer itself. Default 9 s, under the 10 s apps wait.
        public var providerTimeout: TimeAmount = .seconds(9)
        /// The most requests of one app that may wait for providers at once; more are answered
        /// TOO_MANY_PENDING_REQUESTS, so that an app flooding the registry cannot make the head unit
        /// hold without bound. Default 100.
        public var maxPendingRequestsPerApp = 100
        /// The most services one app may publish (one per service type; types are open strings).
        /// Default 10.
        public var maxServicesPerApp = 10
        /// The correlation id of the notifications the head unit sends. Default 0xFFFFFFFF, as
        /// SDL Core 8.2 sends.
        public var notificationCorrelationID: UInt32 = 0xFFFF_FFFF

        /// The default settings.
        public init() {}
    }

    /// What the head unit does when an app asks for a module another app holds (SDL Core's HMI
    /// access modes).
    public enum RCAccessMode: Hashable, Sendable {
        /// The module passes to the asking app.
        case autoAllow
        /// The asking app is refused with IN_USE.
        case autoDeny
        /// The simulated driver decides (``DriverConsent``).
        case askDriver
    }

    /// How the simulated driver answers consent questions: GetInteriorVehicleDataConsent and, in
    /// ``RCAccessMode/askDriver`` mode, a take-over of a held module.
    public enum DriverConsent: Hashable, Sendable {
        /// Yes to everything.
        case grant
        /// No to everything.
        case refuse
        /// No for these module ids, yes for the others.
        case refuseModules(Set<String>)

        func grants(_ moduleID: String) -> Bool {
            switch self {
            case .grant: true
            case .refuse: false
            case .refuseModules(let refused): !refused.contains(moduleID)
            }
        }
    }

    /// The settings the head unit was made with.
    public let configuration: Configuration

    var apps: [AppHandle: AppRecord] = [:]
    var vehicle: SimulatedVehicle
    var allocations: [ModuleKey: AppHandle] = [:]
    var services: [PublishedService] = []
    var pending: [UInt32: PendingRequest] = [:]
    var nextCorrelationID: UInt32 = 1
    var nextServiceNumber = 1
    var registrationCount = 0
    var armedDeadline: NIODeadline?
    var outputs: [HeadUnitOutput] = []

    /// A head unit with no apps, its vehicle in its initial state.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.vehicle = configuration.vehicle
    }

    // MARK: - Inputs

    /// An app connected (its RPC service started); it must register before anything else.
    public mutating func appConnected(_ app: AppHandle) -> [HeadUnitOutput] {
        self.step(app, "connected") { headUnit in
            if headUnit.apps[app] != nil { return "already connected" }
            headUnit.apps[app] = AppRecord()
            return "waiting for RegisterAppInterface"
        }
    }

    /// A message arrived from an app: a request is answered (now, or once a provider it is
    /// forwarded to answers), a response to a forwarded request is routed back to its consumer, a
    /// notification (OnAppServiceData) is fanned out. A message from an app that never connected
    /// counts as connecting it first.
    public mutating func received(_ message: AnyRPCMessage, from app: AppHandle, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(app, "\(message.functionName) \(message.rpcType) #\(message.correlationID)") { headUnit in
            if headUnit.apps[app] == nil {
                headUnit.apps[app] = AppRecord()
            }
            switch message.rpcType {
            case .request:
                return headUnit.handleRequest(message, from: app, now: now)
            case .response, .erroneousResponse:
                return headUnit.handleProviderResponse(message, from: app, now: now)
            default:
                return headUnit.handleNotification(message, from: app)
            }
        }
    }

    /// A message arrived that the driver could not decode (a spec violation, a function id the
    /// spec does not define). A request is still answered: INVALID_DATA in a response of its
    /// function, as Core answers a request that fails validation, or a GenericResponse with
    /// UNSUPPORTED_REQUEST for a function the spec does not define; other messages are logged.
    public mutating func receivedUndecodable(
        functionID: FunctionID, rpcType: RPCType, correlationID: UInt32, error: RPCError, from app: AppHandle,
        now: NIODeadline
    ) -> [HeadUnitOutput] {
        self.step(app, "\(functionID) \(rpcType) #\(correlationID) (undecodable)") { headUnit in
            if headUnit.apps[app] == nil {
                headUnit.apps[app] = AppRecord()
            }
            guard rpcType == .request else { return "ignored: \(error)" }
            if RPCRegistry.messageType(functionID: functionID, rpcType: .response) != nil {
                headUnit.sendFailure(
                    functionID: functionID, correlationID: correlationID, .invalidData, "\(error)", to: app)
                return "INVALID_DATA: \(error)"
            }
            headUnit.sendFailure(
                functionID: .genericResponse, correlationID: correlationID, .unsupportedRequest,
                "function id \(functionID.rawValue) is not in the RPC spec", to: app)
            return "GenericResponse UNSUPPORTED_REQUEST"
        }
    }

    /// An app's connection ended: its services are unpublished, its modules freed, its
    /// subscriptions dropped; requests it was to answer as a provider go to the next handler.
    public mutating func appDisconnected(_ app: AppHandle, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(app, "disconnected") { headUnit in
            guard headUnit.apps[app] != nil else { return "was not connected" }
            let outcome = headUnit.unregister(app, now: now)
            headUnit.apps[app] = nil
            return outcome
        }
    }

    /// The deadline of a forwarded request passed: its consumer is answered.
    public mutating func timerFired(now: NIODeadline) -> [HeadUnitOutput] {
        self.step(nil, "timer") { headUnit in
            headUnit.expireForwardedRequests(now: now)
        }
    }

    /// The simulated user moved an app to an HMI level (activating it, sending it to the
    /// background, closing it): OnHMIStatus to it, and to the app that leaves FULL when another
    /// enters it. Activating an app activates the app services it publishes, as on Core.
    public mutating func setHMILevel(_ level: SDLHMILevel, of app: AppHandle) -> [HeadUnitOutput] {
        self.step(nil, "HMI level of \(app) to \(level)") { headUnit in
            guard headUnit.apps[app]?.registration != nil else { return "ignored: \(app) is not registered" }
            headUnit.changeLevel(of: app, to: level)
            return "\(app) is \(level)"
        }
    }

    /// The vehicle's data changed (the simulated driver turned a knob): the module's data is
    /// updated and sent to the apps subscribed to it. `data.moduleId` nil names the type's default
    /// module.
    public mutating func changeVehicleData(_ data: SDLModuleData) -> [HeadUnitOutput] {
        self.step(nil, "vehicle change of \(data.moduleType)") { headUnit in
            headUnit.applyVehicleChange(data)
        }
    }

    // MARK: - State

    /// The HMI level of a registered app.
    public func hmiLevel(of app: AppHandle) -> SDLHMILevel? {
        self.apps[app]?.registration?.hmiLevel
    }

    /// The RPC version a registered app negotiated.
    public func negotiatedVersion(of app: AppHandle) -> RPCVersion? {
        self.apps[app]?.registration?.version
    }

    /// The published app services, in publishing order.
    public var serviceRecords: [SDLAppServiceRecord] { self.services.map(\.record) }

    /// The vehicle in its current state.
    public var currentVehicle: SimulatedVehicle { self.vehicle }

    /// The app holding a module, if any.
    public func holder(of moduleType: SDLModuleType, id moduleID: String) -> AppHandle? {
        self.allocations[ModuleKey(type: moduleType, id: moduleID)]
    }

    /// When ``timerFired(now:)`` is next due; nil: no request is waiting for a provider.
    public var nextDeadline: NIODeadline? { self.pending.values.map(\.deadline).min() }

    // MARK: - Steps and sending

    /// Runs one input: `body` returns the transcript outcome; the transcript line comes first,
    /// then the messages, then a timer when the next deadline changed.
    private mutating func step(
        _ app: AppHandle?, _ input: String, _ body: (inout SimulatedHeadUnit) -> String
    ) -> [HeadUnitOutput] {
        self.outputs = []
        let outcome = body(&self)
        var result = [HeadUnitOutput.log(TranscriptLine(app: app, input: input, outcome: outcome))]
        result += self.outputs
        self.outputs = []
        let next = self.nextDeadline
        if let next, next != self.armedDeadline {
            result.append(.armTimer(next))
        }
        self.armedDeadline = next
        return result
    }

    mutating func send(_ message: AnyRPCMessage, to app: AppHandle) {
        self.outputs.append(.send(message, to: app))
    }

    mutating func respond(to request: AnyRPCMessage, with response: any RPCMessage, app: AppHandle) {
        self.send(AnyRPCMessage(response, correlationID: request.correlationID), to: app)
    }

    mutating func notify(_ notification: any RPCMessage, to app: AppHandle) {
        self.send(AnyRPCMessage(notification, correlationID: self.configuration.notificationCorrelationID), to: app)
    }

    /// Answers a request with success false, and returns the transcript outcome.
    mutating func fail(_ request: AnyRPCMessage, _ resultCode: SDLResult, _ info: String, app: AppHandle) -> String {
        self.sendFailure(functionID: request.functionID, correlationID: request.correlationID, resultCode, info, to: app)
        return "\(resultCode): \(info)"
    }

    mutating func sendFailure(
        functionID: FunctionID, correlationID: UInt32, _ resultCode: SDLResult, _ info: String, to app: AppHandle
    ) {
        let response = Self.failureResponse(functionID: functionID, resultCode: resultCode, info: info)
        self.send(AnyRPCMessage(response, correlationID: correlationID), to: app)
    }

    /// A response of the function with `success` false. Every response of the spec has `success`,
    /// `resultCode` and `info` and no other mandatory parameter, so one object fits them all; a
    /// function without a response gets a GenericResponse.
    static func failureResponse(functionID: FunctionID, resultCode: SDLResult, info: String) -> any RPCMessage {
        let info = info.isEmpty ? resultCode.wireName : String(info.prefix(1000))
        let generic = SDLGenericResponse(success: false, resultCode: resultCode, info: info)
        guard let type = RPCRegistry.messageType(functionID: functionID, rpcType: .response) else { return generic }
        let parameters: RPCValue = .object([
            "success": .bool(false), "resultCode": .string(resultCode.wireName), "info": .string(info),
        ])
        do {
            return try type.init(jsonParameters: try parameters.jsonText())
        } catch {
            return generic
        }
    }

    func isRegistered(_ app: AppHandle) -> Bool { self.apps[app]?.registration != nil }

    /// Registered apps in handle order, so that fan-outs are repeatable.
    var registeredApps: [AppHandle] {
        self.apps.keys.filter { self.isRegistered($0) }.sorted()
    }
}

/// What the head unit knows of one app connection.
struct AppRecord: Sendable {
    /// nil until RegisterAppInterface succeeds, and again after UnregisterAppInterface.
    var registration: Registration?
}

/// A registered app.
struct Registration: Sendable {
    var appID: String
    var appName: String
    /// The negotiated RPC version.
    var version: RPCVersion
    var hmiTypes: [SDLAppHMIType]
    var isMedia: Bool
    var hmiLevel: SDLHMILevel = .none_
    /// The capability types the app subscribed to with GetSystemCapability.
    var capabilitySubscriptions: Set<SDLSystemCapabilityType> = []
    /// The app-service types whose data the app subscribed to with GetAppServiceData.
    var serviceDataSubscriptions: Set<String> = []
    /// The modules whose data the app subscribed to with GetInteriorVehicleData.
    var moduleSubscriptions: Set<ModuleKey> = []
    /// Consent the driver gave or refused for this app, per module.
    var consents: [ModuleKey: Bool] = [:]
    /// Where the app's user sits (SetGlobalProperties `userLocation`).
    var userLocation: SDLGrid

    var isRemoteControl: Bool { self.hmiTypes.contains(.remoteControl) }
    /// Whether the app plays audio in FULL and LIMITED.
    var isAudio: Bool { self.isMedia || self.hmiTypes.contains(.navigation) || self.hmiTypes.contains(.communication) }
    /// Whether the app may stream video in FULL and LIMITED.
    var isVideo: Bool { self.hmiTypes.contains(.navigation) || self.hmiTypes.contains(.projection) }
}
