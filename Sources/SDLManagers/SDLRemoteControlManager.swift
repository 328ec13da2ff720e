import NIOConcurrencyHelpers
import SDLRuntime
import SDLRPC

/// The remote-control state the head unit last reported in OnRCStatus (RPC 5.0+).
public struct SDLRCStatus: Hashable, Sendable {
    /// False when the user turned remote control off for apps; the manager's calls then fail
    /// with ``SDLManagerError/Code/notAllowed``.
    public var allowed: Bool
    /// The modules allocated to this app: it controls them exclusively.
    public var allocatedModules: [SDLRCModule]
    /// The modules no app holds: a set or a button press may take them.
    public var freeModules: [SDLRCModule]
}

/// Everything an app does with the remote-control modules of a vehicle, with one flow whatever
/// the head unit's RPC version (4.5 to 8.0): the behaviour of the SDL-0327 remote control manager
/// proposal, with async calls, value types and `AsyncSequence`s.
///
/// ```swift
/// let request = SDLRegisterAppInterfaceRequest(…, appHMIType: [.remoteControl], …)
/// let remoteControl = SDLRemoteControlManager(connection: app, registeredWith: request)
/// try await app.register(request)
/// try await remoteControl.start()
/// let climate = try await remoteControl.moduleData(.climate)
/// for try await data in remoteControl.moduleDataUpdates(.climate) { … }
/// try await remoteControl.setModuleData(SDLModuleData(moduleType: .climate, climateControlData: …))
/// ```
///
/// **Startup.** ``start()`` (or the first call that needs it) checks, in order: the app registered
/// with the HMI type REMOTE_CONTROL, it is registered, the RPC version is 4.5 or later, and the
/// RegisterAppInterface response does not say `hmiCapabilities.remoteControl` false; otherwise it
/// and every later call fail at once with a typed ``SDLManagerError``. It then fetches the
/// REMOTE_CONTROL capability (4.5–5.0) or subscribes to it (5.1+), and from 6.0 with
/// `hmiCapabilities.seatLocation` subscribes to SEAT_LOCATION. Each call also fails at once while
/// the last OnRCStatus says `allowed` false, or while the app's permissions do not allow
/// GetInteriorVehicleData (or the call's own function) at its HMI level.
///
/// **Modules.** A module is a type and an id (``SDLRCModule``); ``SDLModuleID/default`` names the
/// default module of a type, on any version. Data read (GetInteriorVehicleData responses) and
/// pushed (OnInteriorVehicleData) is cached per module and kept current.
///
/// Create the manager before registering: it then hears the OnRCStatus the head unit sends right
/// after the registration. Made later, ``allocatedModules`` and ``freeModules`` stay nil until the
/// next OnRCStatus.
public actor SDLRemoteControlManager {
    /// The connection the manager works on.
    public nonisolated let connection: SDLAppConnection
    private let requests: ManagerRequests
    private let appHMITypes: [SDLAppHMIType]
    private let hub: SubscriptionHub<SDLRCModule, SDLModuleData>
    private let listeners = NIOLockedValueBox<[Task<Void, Never>]>([])

    private struct Context {
        var version: SDLSyncMsgVersion
        var hmiCapabilities: SDLHMICapabilities?
    }

    private var startTask: Task<Result<Context, SDLManagerError>, Never>?
    private var context: Context?
    private var ended: SDLManagerError?

    /// The REMOTE_CONTROL capability, typed per module; nil before ``start()``. Kept current from
    /// OnSystemCapabilityUpdated on 5.1+.
    public private(set) var capabilities: SDLRemoteControlModules?
    /// The SEAT_LOCATION capability (RPC 6.0+ with `hmiCapabilities.seatLocation`); nil otherwise.
    public private(set) var seatLocations: SDLSeatLocationCapability?
    /// Where the app's user sits (RPC 6.0+): the driver's seat (the first seat of SEAT_LOCATION)
    /// until ``setUserSeat(_:)``; nil before 6.0 or without seat locations.
    public private(set) var userSeat: SDLGrid?
    /// The last OnRCStatus (RPC 5.0+); nil before the first.
    public private(set) var status: SDLRCStatus?
    /// Per module, whether the user consented to this app controlling it (RPC 6.0+); a module
    /// absent has not been asked about.
    public private(set) var consentStatus: [SDLRCModule: Bool] = [:]
    private let statusBroadcast = Broadcast<SDLRCStatus>(bufferSize: 16)

    /// A manager on `connection`, for an app that registers (or registered) with `request`: its
    /// `appHMIType` decides whether remote control may start. It starts listening for OnRCStatus,
    /// OnInteriorVehicleData and capability updates at once; nothing is sent before ``start()``.
    /// `bufferSize` bounds each subscription observer's unread updates.
    public init(connection: SDLAppConnection, registeredWith request: SDLRegisterAppInterfaceRequest, bufferSize: Int = 16) {
        self.connection = connection
        let requests = ManagerRequests(connection)
        self.requests = requests
        self.appHMITypes = request.appHMIType ?? []
        self.hub = SubscriptionHub(bufferSize: bufferSize, merge: { old, new in old.map { $0.merging(new) } ?? new }) {
            (module, subscribe) throws(SDLManagerError) -> SDLModuleData? in
            let response: SDLGetInteriorVehicleDataResponse = try await requests.succeed(
                SDLGetInteriorVehicleDataRequest(moduleType: module.type, moduleId: module.id.wireValue, subscribe: subscribe))
            return response.moduleData
        }
        let statuses = connection.notifications(of: SDLOnRCStatus.self)
        let data = connection.notifications(of: SDLOnInteriorVehicleData.self)
        let remoteControl = connection.systemCapabilityUpdates(of: .remoteControl)
        let seats = connection.systemCapabilityUpdates(of: .seatLocation)
        self.listeners.withLockedValue {
            $0 = [
            Task { [weak self] in
                for await status in statuses { await self?.received(status) }
            },
            Task { [weak self] in
                for await notification in data { await self?.received(notification.moduleData) }
                await self?.sessionEnded()
            },
            Task { [weak self] in
                for await capability in remoteControl { await self?.receivedCapability(capability) }
            },
            Task { [weak self] in
                for await capability in seats { await self?.receivedCapability(capability) }
            },
            ]
        }
    }

    deinit {
        for listener in self.listeners.withLockedValue({ $0 }) { listener.cancel() }
    }

    /// How many of the manager's requests the head unit answered (with `success` true or false),
    /// subscriptions' GetInteriorVehicleData included: the manager's share of the connection's
    /// round trips, for an app that accounts for its traffic.
    public nonisolated var answeredRequests: Int { self.requests.answeredCount }

    // MARK: - Startup

    /// Checks the startup conditions and fetches (4.5–5.0) or subscribes to (5.1+) the
    /// REMOTE_CONTROL capability, and SEAT_LOCATION on 6.0+; returns the capability. Called by
    /// every other method when needed; a failure is kept and thrown by every later call, except
    /// ``SDLManagerError/Code/notRegistered`` and ``SDLManagerError/Code/connectionFailed``, after
    /// which the next call tries again.
    @discardableResult
    public func start() async throws(SDLManagerError) -> SDLRemoteControlModules {
        _ = try await self.ready()
        guard let capabilities = self.capabilities else {
            throw SDLManagerError(.capabilityUnavailable, "no REMOTE_CONTROL capability")
        }
        return capabilities
    }

    private func ready() async throws(SDLManagerError) -> Context {
        if let ended = self.ended { throw ended }
        if let context = self.context { return context }
        let task: Task<Result<Context, SDLManagerError>, Never>
        if let running = self.startTask {
            task = running
        } else {
            task = Task { await self.performStart() }
            self.startTask = task
        }
        switch await task.value {
        case .success(let context):
            self.context = context
            return context
        case .failure(let error):
            if error.code == .notRegistered || error.code == .connectionFailed {
                self.startTask = nil
            }
            throw error
        }
    }

    private func performStart() async -> Result<Context, SDLManagerError> {
        do throws(SDLManagerError) {
            let registration = await self.connection.registration
            let negotiated = await self.connection.rpcVersion
            if let failure = Self.startupFailure(
                hmiTypes: self.appHMITypes, registration: registration, rpcVersion: negotiated)
            {
                throw failure
            }
            guard let registration, let negotiated else { throw SDLManagerError(.notRegistered, "not registered") }
            let version = negotiated
            let hmi = registration.hmiCapabilities
            let context = Context(version: version, hmiCapabilities: hmi)
            try await self.checkAllowed(context, function: nil)
            let capability = try await self.requests.capability(.remoteControl, subscribe: version >= .v5_1 ? true : nil)
            self.receivedCapability(capability, at: version)
            if version >= .v6_0, hmi?.seatLocation == true {
                if let seats = try? await self.requests.capability(.seatLocation, subscribe: true) {
                    self.receivedCapability(seats, at: version)
                }
            }
            return .success(context)
        } catch {
            return .failure(error)
        }
    }

    /// Why remote control cannot start for an app of these HMI types with this registration
    /// (SDL-0327, "Startup"), checked in this order; nil when it can.
    static func startupFailure(
        hmiTypes: [SDLAppHMIType], registration: SDLRegisterAppInterfaceResponse?, rpcVersion: SDLSyncMsgVersion?
    ) -> SDLManagerError? {
        guard hmiTypes.contains(.remoteControl) else {
            return SDLManagerError(.notRemoteControlApp, "the app's appHMIType has no REMOTE_CONTROL")
        }
        guard let registration, let rpcVersion else {
            return SDLManagerError(.notRegistered, "remote control starts once RegisterAppInterface succeeded")
        }
        let version = rpcVersion
        guard version >= .v4_5 else {
            return SDLManagerError(.unsupportedVersion, "remote control needs RPC 4.5; the head unit speaks \(version.versionText)")
        }
        if registration.hmiCapabilities?.remoteControl == false {
            return SDLManagerError(.remoteControlUnavailable, "the head unit's hmiCapabilities.remoteControl is false")
        }
        return nil
    }

    /// The per-call conditions: OnRCStatus `allowed`, and permissions for GetInteriorVehicleData
    /// and the call's own function.
    private func checkAllowed(_ context: Context, function: String?) async throws(SDLManagerError) {
        if self.status?.allowed == false {
            throw SDLManagerError(.notAllowed, "the head unit's OnRCStatus says allowed false")
        }
        let permissions = await self.connection.permissions
        let level = await self.connection.hmiStatus?.hmiLevel
        for name in [SDLGetInteriorVehicleDataRequest.functionName] + (function.map { [$0] } ?? []) {
            guard permits(name, permissions: permissions, level: level) else {
                throw SDLManagerError(
                    .disallowed, "the app's permissions do not allow \(name)" + (level.map { " in HMI level \($0.wireName)" } ?? ""))
            }
        }
    }

    /// `ready()` and `checkAllowed` for a call of `function`, with a version floor.
    private func prepare(_ function: String, since minimum: SDLSyncMsgVersion = .v4_5) async throws(SDLManagerError) -> Context {
        let context = try await self.ready()
        guard context.version >= minimum else {
            throw SDLManagerError(.unsupportedVersion, "\(function) needs RPC \(minimum.versionText); the head unit speaks \(context.version.versionText)")
        }
        try await self.checkAllowed(context, function: function)
        return context
    }

    // MARK: - What the head unit reports

    private func received(_ notification: SDLOnRCStatus) {
        let status = SDLRCStatus(
            allowed: notification.allowed ?? true,
            allocatedModules: notification.allocatedModules.map { self.key($0.moduleType, wire: $0.moduleId) },
            freeModules: notification.freeModules.map { self.key($0.moduleType, wire: $0.moduleId) })
        self.status = status
        self.statusBroadcast.yield(status)
    }

    private func received(_ data: SDLModuleData) async {
        await self.hub.received(data, for: self.key(data.moduleType, wire: data.moduleId))
    }

    private func receivedCapability(_ capability: SDLSystemCapability) {
        self.receivedCapability(capability, at: self.context?.version ?? .v6_0)
    }

    private func receivedCapability(_ capability: SDLSystemCapability, at version: SDLSyncMsgVersion) {
        if let remote = capability.remoteControlCapability {
            self.capabilities = SDLRemoteControlModules(remote, moduleIDs: version >= .v6_0)
        }
        if let seats = capability.seatLocationCapability {
            self.seatLocations = seats
            if self.userSeat == nil {
                self.userSeat = seats.seats?.first?.grid ?? SDLGrid(col: 0, row: 0)
            }
        }
    }

    private func sessionEnded() async {
        let error = SDLManagerError(.disconnected, "the session ended")
        self.ended = error
        await self.hub.end(error)
        self.statusBroadcast.finish()
    }

    /// The module the wire names: a type and a `moduleId`, absent for the default module.
    private func key(_ type: SDLModuleType, wire: String?) -> SDLRCModule {
        let id = SDLModuleID(wireValue: wire)
        return self.capabilities?.module(type, id) ?? SDLRCModule(type, id)
    }

    /// The module an app names, or ``SDLManagerError/Code/unknownModule``.
    private func resolve(_ type: SDLModuleType, _ id: SDLModuleID) throws(SDLManagerError) -> SDLRCModule {
        guard let module = self.capabilities?.module(type, id) else {
            let known = self.capabilities?.modules(of: type).map(\.id.description) ?? []
            throw SDLManagerError(
                .unknownModule,
                "no \(type.wireName) module \(id) in the REMOTE_CONTROL capability (known: \(known.joined(separator: ", ")))")
        }
        return module
    }

    // MARK: - Allocation

    /// The modules allocated to this app, from the last OnRCStatus (RPC 5.0+); nil before one.
    public var allocatedModules: [SDLRCModule]? { self.status?.allocatedModules }

    /// The modules no app holds, from the last OnRCStatus (RPC 5.0+); nil before one.
    public var freeModules: [SDLRCModule]? { self.status?.freeModules }

    /// Every OnRCStatus from now on, the current status first when there is one; ends with the
    /// session.
    public func statusUpdates() -> AsyncStream<SDLRCStatus> {
        self.statusBroadcast.makeStream(current: self.status)
    }

    // MARK: - Module data

    /// The cached data of a module, if any (SDL-0327, "Retrieving Cached Data").
    public func cachedData(_ type: SDLModuleType, _ id: SDLModuleID = .default) async -> SDLModuleData? {
        await self.hub.value(for: self.key(type, wire: id.wireValue))
    }

    /// Every cached module's data.
    public var cachedModules: [SDLRCModule: SDLModuleData] {
        get async { await self.hub.cache }
    }

    /// The modules the head unit sends this app updates of (GetInteriorVehicleData `subscribe`
    /// true, not yet ended).
    public var subscribedModules: [SDLRCModule] {
        get async { await self.hub.subscribedKeys }
    }

    /// Reads a module's data once (GetInteriorVehicleData without `subscribe`); while the module
    /// is subscribed, returns the cached data without sending anything. The answer updates the
    /// cache.
    public func moduleData(_ type: SDLModuleType, _ id: SDLModuleID = .default) async throws(SDLManagerError) -> SDLModuleData {
        _ = try await self.prepare(SDLGetInteriorVehicleDataRequest.functionName)
        let module = try self.resolve(type, id)
        if await self.hub.isSubscribed(module), let cached = await self.hub.value(for: module) {
            return cached
        }
        let response: SDLGetInteriorVehicleDataResponse = try await self.requests.succeed(
            SDLGetInteriorVehicleDataRequest(moduleType: module.type, moduleId: module.id.wireValue))
        guard let data = response.moduleData else {
            throw SDLManagerError(.requestFailed, "GetInteriorVehicleData \(module): no moduleData in a successful response")
        }
        await self.hub.received(data, for: module)
        return await self.hub.value(for: module) ?? data
    }

    /// A module's data as it changes (SDL-0327, "Subscribing to Module Data Updates"): the first
    /// observer's first `next()` subscribes on the head unit (GetInteriorVehicleData `subscribe`
    /// true) and gets the current data, later observers share the subscription and start with
    /// the cached data, every OnInteriorVehicleData of the module follows, and when the last
    /// observer's iteration ends the head unit is unsubscribed.
    public nonisolated func moduleDataUpdates(_ type: SDLModuleType, _ id: SDLModuleID = .default) -> SDLSubscription<SDLModuleData> {
        SDLSubscription { () throws(SDLManagerError) in
            try await self.observe(type, id)
        }
    }

    private func observe(_ type: SDLModuleType, _ id: SDLModuleID) async throws(SDLManagerError) -> AsyncThrowingStream<SDLModuleData, any Error> {
        _ = try await self.prepare(SDLGetInteriorVehicleDataRequest.functionName)
        return try await self.hub.observe(try self.resolve(type, id))
    }

    /// Sets a module's data (SetInteriorVehicleData) and returns what the head unit answered.
    /// Refused before sending when the control data is not that of `moduleType` (or there are
    /// several, ``SDLManagerError/Code/mismatchedModuleData``) or the `moduleId` names no known
    /// module (``SDLManagerError/Code/unknownModule``; nil is the default module). On RPC 6.0+
    /// consent is asked first for a module not asked about yet, and a refused module fails with
    /// ``SDLManagerError/Code/consentRefused`` without sending.
    @discardableResult
    public func setModuleData(_ data: SDLModuleData) async throws(SDLManagerError) -> SDLModuleData? {
        let context = try await self.prepare(SDLSetInteriorVehicleDataRequest.functionName)
        let types = data.controlDataTypes
        guard types == [data.moduleType] else {
            throw SDLManagerError(
                .mismatchedModuleData,
                "moduleType \(data.moduleType.wireName) with control data of \(types.map(\.wireName).joined(separator: ", "))")
        }
        let module = try self.resolve(data.moduleType, SDLModuleID(wireValue: data.moduleId))
        if context.version >= .v6_0, module.id != .default {
            if self.consentStatus[module] == nil {
                _ = try await self.requestConsent(module.type, [module.id])
            }
            if self.consentStatus[module] == false {
                throw SDLManagerError(.consentRefused, "the user refused consent for \(module)")
            }
        }
        var outgoing = data
        outgoing.moduleId = module.id.wireValue
        let response: SDLSetInteriorVehicleDataResponse = try await self.requests.succeed(
            SDLSetInteriorVehicleDataRequest(moduleData: outgoing))
        return response.moduleData
    }

    // MARK: - Consent, seats, buttons, release

    /// Asks the user for consent to control modules of one type (GetInteriorVehicleDataConsent,
    /// RPC 6.0+) and records the answers in ``consentStatus``; returns them.
    @discardableResult
    public func requestConsent(_ type: SDLModuleType, _ ids: [SDLModuleID]) async throws(SDLManagerError) -> [SDLRCModule: Bool] {
        _ = try await self.prepare(SDLGetInteriorVehicleDataConsentRequest.functionName, since: .v6_0)
        var modules: [SDLRCModule] = []
        for id in ids {
            let module = try self.resolve(type, id)
            guard module.id != .default else {
                throw SDLManagerError(.unknownModule, "the head unit names no id for the default \(type.wireName) module")
            }
            modules.append(module)
        }
        let response: SDLGetInteriorVehicleDataConsentResponse = try await self.requests.succeed(
            SDLGetInteriorVehicleDataConsentRequest(moduleType: type, moduleIds: modules.compactMap(\.id.wireValue)))
        let allowed = response.allowed ?? []
        var answers: [SDLRCModule: Bool] = [:]
        for (index, module) in modules.enumerated() {
            let granted = index < allowed.count && allowed[index]
            answers[module] = granted
            self.consentStatus[module] = granted
        }
        return answers
    }

    /// Says where the app's user sits (SetGlobalProperties `userLocation`, RPC 6.0+), which
    /// decides the modules they may control. Fails at once before 6.0 and without seat locations.
    public func setUserSeat(_ seat: SDLGrid) async throws(SDLManagerError) {
        let context = try await self.ready()
        guard context.version >= .v6_0 else {
            throw SDLManagerError(.unsupportedVersion, "the user's seat needs RPC 6.0; the head unit speaks \(context.version.versionText)")
        }
        guard context.hmiCapabilities?.seatLocation == true, self.seatLocations != nil else {
            throw SDLManagerError(.seatLocationUnavailable, "the head unit has no seat locations")
        }
        let _: SDLSetGlobalPropertiesResponse = try await self.requests.succeed(
            SDLSetGlobalPropertiesRequest(userLocation: SDLSeatLocation(grid: seat)))
        self.userSeat = seat
    }

    /// Presses a remote-control button (ButtonPress). The module is the one the button's
    /// capability names (RPC 6.0+) unless `id` names another of the button's type.
    public func pressButton(
        _ button: SDLButtonName, mode: SDLButtonPressMode = .short, module id: SDLModuleID = .default
    ) async throws(SDLManagerError) {
        _ = try await self.prepare(SDLButtonPressRequest.functionName)
        guard let type = SDLRemoteControlModules.moduleType(of: button) else {
            throw SDLManagerError(.unknownModule, "\(button.wireName) is not a remote-control button")
        }
        let module = id == .default ? self.capabilities?.module(pressing: button) : try self.resolve(type, id)
        guard let module else {
            throw SDLManagerError(.unknownModule, "no \(type.wireName) module in the REMOTE_CONTROL capability")
        }
        let _: SDLButtonPressResponse = try await self.requests.succeed(
            SDLButtonPressRequest(moduleType: type, moduleId: module.id.wireValue, buttonName: button, buttonPressMode: mode))
    }

    /// Releases a module this app holds (ReleaseInteriorVehicleDataModule, RPC 6.0+); the head
    /// unit answers IGNORED (``SDLManagerError/Code/requestFailed``) for a module it does not hold.
    public func releaseModule(_ type: SDLModuleType, _ id: SDLModuleID = .default) async throws(SDLManagerError) {
        _ = try await self.prepare(SDLReleaseInteriorVehicleDataModuleRequest.functionName, since: .v6_0)
        let module = try self.resolve(type, id)
        let _: SDLReleaseInteriorVehicleDataModuleResponse = try await self.requests.succeed(
            SDLReleaseInteriorVehicleDataModuleRequest(moduleType: type, moduleId: module.id.wireValue))
    }
}
