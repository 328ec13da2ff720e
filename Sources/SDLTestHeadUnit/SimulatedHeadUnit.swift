import NIOCore
import SDLProtocol
import SDLRPC

/// A simulated head unit that behaves towards apps as SDL Core does: it registers them and moves
/// their HMI levels, grants permissions, keeps each app's files, menu, choice sets and button
/// subscriptions and shows its screen, keeps a registry of published app services (routing data,
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
        /// The policy table: which RPCs each app may send and receive at each HMI level, its app HMI
        /// types, its remote-control modules, the app services it may publish (SDL Core's policy
        /// manager, ``HeadUnitPolicy``). Default ``HeadUnitPolicy/standard``: Core's functional
        /// groups, remote control and app services for every app.
        public var policy: HeadUnitPolicy = .standard
        /// What happens when an app wants a module another app holds (SDL Core's `RCAccessMode`).
        /// Default `.autoAllow`, as SDL Core starts. Scripts change it (``HeadUnitCommand``).
        public var accessMode: RCAccessMode = .autoAllow
        /// How the simulated driver answers the questions the head unit asks: consent to a module
        /// (ask-driver mode), activation of an app service. Default `.grant`. Scripts change it.
        public var driverConsent: DriverConsent = .grant
        /// How long a question to the driver may stay unanswered (``DriverConsent/ask``); then the
        /// request that waits for it is answered GENERIC_ERROR, as SDL Core answers a request whose
        /// HMI request timed out. Default 10 s, Core's `DefaultTimeout`.
        public var driverAnswerTimeout: TimeAmount = .seconds(10)
        /// How long the vehicle takes to carry out a SetInteriorVehicleData or a ButtonPress. While
        /// it does, the module is busy: another SetInteriorVehicleData or ButtonPress on it is
        /// IN_USE, as on SDL Core while its HMI has not answered. Default zero: at once.
        public var vehicleResponseTime: TimeAmount = .zero
        /// How many GetInteriorVehicleData requests per module may reach the vehicle within
        /// ``Configuration/interiorDataRateWindow`` (those answered from the cache of a subscribed
        /// module do not count); more are REJECTED. Default 5 per second, SDL Core's
        /// `GetInteriorVehicleDataRequest = 5, 1`.
        public var interiorDataRateLimit = 5
        /// The window of ``interiorDataRateLimit``. Default 1 s.
        public var interiorDataRateWindow: TimeAmount = .seconds(1)
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
        /// The bytes one app's files may take (PutFile beyond it: OUT_OF_MEMORY; `spaceAvailable`
        /// reports what remains). Default 104,857,600, SDL Core's `AppDirectoryQuota`.
        public var appStorageQuota = 104_857_600
        /// The most files one app may store, so that tiny files cannot make the head unit keep
        /// without bound the names the quota does not count. Default 1,000, the most ListFiles
        /// can report.
        public var maxFilesPerApp = 1000
        /// How many PutFile, how many ListFiles and how many DeleteFile requests an app may send
        /// while in HMI NONE (each counted apart, for the whole registration); more are REJECTED.
        /// Default 5, SDL Core's `PutFileInNone`, `ListFilesInNone` and `DeleteFileInNone`.
        public var fileRequestsInNone = 5
        /// The most commands, submenus and choice sets one app may hold together; more are
        /// answered OUT_OF_MEMORY, so that an app adding without end cannot make the head unit
        /// grow without bound (each holds at most the spec's 100 voice commands or choices).
        /// Default 1,000.
        public var maxMenuItemsPerApp = 1000

        /// The default settings.
        public init() {}
    }

    /// What the head unit does when an app in HMI FULL asks for a module another app holds and the
    /// module allows multiple access (SDL Core's HMI `RCAccessMode`; an app in another level, or a
    /// module without multiple access, is REJECTED whatever the mode).
    public enum RCAccessMode: Hashable, Sendable {
        /// The module passes to the asking app (`AUTO_ALLOW`, SDL Core's default).
        case autoAllow
        /// The asking app is refused with IN_USE (`AUTO_DENY`).
        case autoDeny
        /// The simulated driver decides (`ASK_DRIVER`, ``DriverConsent``); the answer is kept per
        /// app id and module.
        case askDriver
    }

    /// How the simulated driver answers the questions the head unit asks: whether an app may take a
    /// module in ``RCAccessMode/askDriver`` mode (for SetInteriorVehicleData, ButtonPress and
    /// GetInteriorVehicleDataConsent), whether an app service may be activated for an app that is
    /// not in FULL (PerformAppServiceInteraction `requestServiceActive`).
    public enum DriverConsent: Hashable, Sendable {
        /// Yes to everything, at once.
        case grant
        /// No to everything, at once.
        case refuse
        /// No, at once, for these module ids; yes for the others.
        case refuseModules(Set<String>)
        /// No answer: the question stays pending, and the request waits, until a script answers it
        /// (``HeadUnitCommand`` `answer`) or ``Configuration/driverAnswerTimeout`` passes.
        case ask

        /// The answer given at once about a subject (a module id or a service id); nil: asked.
        func answer(about subject: String) -> Bool? {
            switch self {
            case .grant: true
            case .refuse: false
            case .refuseModules(let refused): !refused.contains(subject)
            case .ask: nil
            }
        }
    }

    /// The settings the head unit was made with.
    public let configuration: Configuration

    var apps: [AppHandle: AppRecord] = [:]
    var vehicle: SimulatedVehicle
    var allocations: [ModuleKey: AppHandle] = [:]
    /// Modules the vehicle is working on: SDL Core's BUSY resource state, from the moment a request
    /// acquires a module until the vehicle has answered it.
    var busyModules: Set<ModuleKey> = []
    var services: [PublishedService] = []
    var pending: [UInt32: PendingRequest] = [:]
    /// Requests waiting for the driver or the vehicle, in arrival order.
    var waiting: [WaitingRequest] = []
    var nextWaitingNumber = 1
    /// The driver's answers about modules, per policy app id, kept across registrations as SDL
    /// Core's consent manager keeps them.
    var savedConsents: [String: [ModuleKey: Bool]] = [:]
    /// App ids refused registration since they flooded (SDL Core's forbidden applications).
    var floodedAppIDs: Set<String> = []
    /// When GetInteriorVehicleData requests reached the vehicle, per module (the rate limit).
    var interiorDataRequests: [ModuleKey: [NIODeadline]] = [:]
    var nextCorrelationID: UInt32 = 1
    var nextServiceNumber = 1
    var registrationCount = 0
    var armedDeadline: NIODeadline?
    var outputs: [HeadUnitOutput] = []

    /// The current access mode: ``Configuration/accessMode`` until a script changes it.
    public internal(set) var accessMode: RCAccessMode
    /// How the driver answers now: ``Configuration/driverConsent`` until a script changes it.
    public internal(set) var driverConsent: DriverConsent
    /// The vehicle's time to carry out a change now: ``Configuration/vehicleResponseTime`` until a
    /// script changes it.
    public internal(set) var vehicleResponseTime: TimeAmount

    /// A head unit with no apps, its vehicle in its initial state.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.vehicle = configuration.vehicle
        self.accessMode = configuration.accessMode
        self.driverConsent = configuration.driverConsent
        self.vehicleResponseTime = configuration.vehicleResponseTime
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

    /// An app's connection ended (its RPC service ended, or its transport closed): it is unregistered
    /// as SDL Core unregisters it. Its services are unpublished first, while it is still registered
    /// (so it gets the REMOVED update itself when subscribed, as on Core, before the EndService ACK);
    /// then its modules are freed (OnRCStatus to the other remote-control apps), its subscriptions
    /// and waiting requests dropped, and requests it was to answer as a provider go to the next
    /// handler.
    public mutating func appDisconnected(_ app: AppHandle, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(app, "disconnected") { headUnit in
            guard headUnit.apps[app] != nil else { return "was not connected" }
            let outcome = headUnit.unregister(app, now: now)
            headUnit.apps[app] = nil
            return outcome
        }
    }

    /// A deadline passed: requests forwarded to a provider that did not answer are answered,
    /// questions to the driver that stayed unanswered time out (GENERIC_ERROR), the vehicle
    /// finishes what it was doing (``Configuration/vehicleResponseTime``).
    public mutating func timerFired(now: NIODeadline) -> [HeadUnitOutput] {
        self.step(nil, "timer") { headUnit in
            let outcomes = [headUnit.expireForwardedRequests(now: now), headUnit.expireWaiting(now: now)]
            return outcomes.filter { !$0.isEmpty }.joined(separator: "; ")
        }
    }

    /// The session layer's flood meter tripped for this app (it sent more messages than the limit
    /// within the window, SDL Core's `FrequencyCount` per `FrequencyTime`): the app is unregistered
    /// as SDL Core unregisters a flooding app. Outputs: OnAppInterfaceUnregistered
    /// (TOO_MANY_REQUESTS) to the app, then what unregistering sends others (its services REMOVED,
    /// its modules freed). Its app id may not register again while this head unit runs:
    /// RegisterAppInterface answers TOO_MANY_PENDING_REQUESTS, as Core's forbidden list does.
    ///
    /// Order for the runtime: SDL Core first sends EndService for the RPC service (the session is
    /// closed), then, its session gone, writes OnAppInterfaceUnregistered, which therefore never
    /// reaches the app (the `ping-tap` capture ends with Core's EndService and the app's ACK). To
    /// behave as Core on the wire, end the RPC service first and send the notification only if the
    /// session still carries it.
    public mutating func appFlooded(_ app: AppHandle, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(app, "flooded") { headUnit in
            guard let registration = headUnit.apps[app]?.registration else { return "ignored: not registered" }
            headUnit.floodedAppIDs.insert(registration.policyAppID)
            headUnit.notify(SDLOnAppInterfaceUnregistered(reason: .tooManyRequests), to: app)
            let outcome = headUnit.unregister(app, now: now)
            return "OnAppInterfaceUnregistered(TOO_MANY_REQUESTS); \(outcome)"
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

    /// When ``timerFired(now:)`` is next due; nil: no request waits for a provider, the driver or
    /// the vehicle.
    public var nextDeadline: NIODeadline? {
        (self.pending.values.map(\.deadline) + self.waiting.map(\.deadline)).min()
    }

    /// The questions the driver has not answered yet (``DriverConsent/ask``), oldest first.
    public var pendingQuestions: [DriverQuestion] {
        self.waiting.compactMap { entry in
            guard case .driver(let question) = entry.stage else { return nil }
            return question
        }
    }

    // MARK: - Steps and sending

    /// Runs one input: `body` returns the transcript outcome; the transcript line comes first,
    /// then the messages, then a timer when the next deadline changed.
    mutating func step(
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

    /// Sends a notification, when the app's policy allows it at its HMI level: SDL Core drops a
    /// notification its policy does not allow (OnInteriorVehicleData in NONE, OnRCStatus without
    /// the RemoteControl group, …).
    mutating func notify(_ notification: any RPCMessage, to app: AppHandle) {
        if let registration = self.apps[app]?.registration,
            !self.permits(type(of: notification).functionName, registration)
        {
            return
        }
        self.send(AnyRPCMessage(notification, correlationID: self.configuration.notificationCorrelationID), to: app)
    }

    /// Answers a request with success false, and returns the transcript outcome.
    mutating func fail(_ request: AnyRPCMessage, _ resultCode: SDLResult, _ info: String, app: AppHandle) -> String {
        self.sendFailure(functionID: request.functionID, correlationID: request.correlationID, resultCode, info, to: app)
        return "\(resultCode): \(info)"
    }

    /// Answers a request with success false and no `info`, as SDL Core answers where it gives none;
    /// `reason` goes to the transcript only.
    mutating func fail(_ request: AnyRPCMessage, _ resultCode: SDLResult, reason: String, app: AppHandle) -> String {
        self.sendFailure(functionID: request.functionID, correlationID: request.correlationID, resultCode, nil, to: app)
        return "\(resultCode) (\(reason))"
    }

    mutating func sendFailure(
        functionID: FunctionID, correlationID: UInt32, _ resultCode: SDLResult, _ info: String?, to app: AppHandle
    ) {
        let response = Self.failureResponse(functionID: functionID, resultCode: resultCode, info: info)
        self.send(AnyRPCMessage(response, correlationID: correlationID), to: app)
    }

    /// A response of the function with `success` false. Every response of the spec has `success`,
    /// `resultCode` and `info` and no other mandatory parameter, so one object fits them all; a
    /// function without a response gets a GenericResponse. `info` nil: none, as Core sends where it
    /// has none; empty: the result code's name.
    static func failureResponse(functionID: FunctionID, resultCode: SDLResult, info: String?) -> any RPCMessage {
        RPCRegistry.failureResponse(functionID: functionID, resultCode: resultCode, info: info.map { $0.isEmpty ? resultCode.wireName : $0 })
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
    /// The id its policy is looked up by: `fullAppID` (lowercased) when the app sent one, else
    /// `appID`, as SDL Core picks it.
    var policyAppID: String
    /// The negotiated RPC version.
    var version: RPCVersion
    /// Its app HMI types: the policy's when the policy names some, else its own.
    var hmiTypes: [SDLAppHMIType]
    var isMedia: Bool
    var hmiLevel: SDLHMILevel = .none_
    var audioState: SDLAudioStreamingState = .notAudible
    var videoState: SDLVideoStreamingState = .notStreamable
    /// Its policy and the RPCs it grants (merged over its groups).
    var policy: HeadUnitPolicy.AppPolicy
    var rules: [String: HeadUnitPolicy.RPCRule]
    /// Its app policy entry is `null`.
    var isRevoked = false
    /// The capability types the app subscribed to with GetSystemCapability.
    var capabilitySubscriptions: Set<SDLSystemCapabilityType> = []
    /// The app-service types whose data the app subscribed to with GetAppServiceData.
    var serviceDataSubscriptions: Set<String> = []
    /// The modules whose data the app subscribed to with GetInteriorVehicleData.
    var moduleSubscriptions: Set<ModuleKey> = []
    /// Modules the driver refused this app in ask-driver mode (SDL Core's rejected resources):
    /// asking for them again is REJECTED until the access mode leaves ask-driver.
    var refusedModules: Set<ModuleKey> = []
    /// Where the app's user sits (SetGlobalProperties `userLocation`).
    var userLocation: SDLGrid
    /// The media services whose data flows (``SimulatedHeadUnit/mediaServiceStarted(_:by:now:)``).
    var streaming: Set<MediaService> = []
    /// Its files, menu, choice sets and button subscriptions.
    var content = AppContent()

    var isRemoteControl: Bool { self.hmiTypes.contains(.remoteControl) }
    var isNavigation: Bool { self.hmiTypes.contains(.navigation) }
    var isProjection: Bool { self.hmiTypes.contains(.projection) }
    var isCommunication: Bool { self.hmiTypes.contains(.communication) }
    /// Whether the app plays audio in FULL and LIMITED (SDL Core: media, communication or
    /// navigation).
    var isAudio: Bool { self.isMedia || self.isNavigation || self.isCommunication }
    /// Whether the app may stream video in FULL and LIMITED (SDL Core: navigation or projection).
    var isVideo: Bool { self.isNavigation || self.isProjection }
}
