import NIOCore
import SDLRPC

extension SimulatedHeadUnit {
    /// The remote-control requests, in SDL Core's order of checks (its `RCCommandRequest`):
    ///
    /// 1. UNSUPPORTED_REQUEST for a function that is not remote control;
    /// 2. DISALLOWED (no `info`) for an app whose app HMI types have no REMOTE_CONTROL;
    /// 3. UNSUPPORTED_RESOURCE "Accessing not supported module" when the vehicle has no module;
    /// 4. DISALLOWED "The RPC is disallowed by vehicle settings" for a module type the app's
    ///    policy does not list (`moduleType`);
    /// 5. for SetInteriorVehicleData and ButtonPress, the module's allocation
    ///    (``takeModule(for:app:now:)``): IN_USE, REJECTED, or a question to the driver;
    /// 6. the function's own checks and the vehicle's answer.
    mutating func answerRemoteControl(_ request: AnyRPCMessage, app: AppHandle, now: NIODeadline) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        let isRemoteControlRequest = Self.implementedFunctions.contains {
            $0.id == request.functionID && $0.feature == .remoteControl
        }
        guard isRemoteControlRequest, let type = Self.moduleType(of: request.message) else {
            return self.fail(
                request, .unsupportedRequest, "\(request.functionName) is not supported by this head unit", app: app)
        }
        guard registration.isRemoteControl else {
            return self.fail(request, .disallowed, reason: "the app's HMI types have no REMOTE_CONTROL", app: app)
        }
        guard !self.vehicle.modules.isEmpty else {
            return self.fail(request, .unsupportedResource, "Accessing not supported module", app: app)
        }
        guard self.policyAllowsModule(type, registration) else {
            _ = self.fail(request, .disallowed, "The RPC is disallowed by vehicle settings", app: app)
            return "DISALLOWED: the app's policy does not list module type \(type)"
        }
        switch request.message {
        case let get as SDLGetInteriorVehicleDataRequest:
            return self.getInteriorVehicleData(request, get, app: app, registration, now: now)
        case is SDLSetInteriorVehicleDataRequest, is SDLButtonPressRequest:
            return self.takeModule(for: request, app: app, now: now)
        case let consent as SDLGetInteriorVehicleDataConsentRequest:
            return self.consent(request, consent, app: app, registration, now: now)
        case let release as SDLReleaseInteriorVehicleDataModuleRequest:
            return self.release(request, release, app: app, registration)
        default:
            return self.fail(
                request, .unsupportedRequest, "\(request.functionName) is not supported by this head unit", app: app)
        }
    }

    /// The module type a remote-control request names.
    static func moduleType(of message: any RPCMessage) -> SDLModuleType? {
        switch message {
        case let get as SDLGetInteriorVehicleDataRequest: get.moduleType
        case let set as SDLSetInteriorVehicleDataRequest: set.moduleData.moduleType
        case let press as SDLButtonPressRequest: press.moduleType
        case let consent as SDLGetInteriorVehicleDataConsentRequest: consent.moduleType
        case let release as SDLReleaseInteriorVehicleDataModuleRequest: release.moduleType
        default: nil
        }
    }

    /// The module a SetInteriorVehicleData or ButtonPress addresses at the app's version; nil when
    /// the vehicle has none (the request then fails in its own checks).
    func addressedModule(_ message: any RPCMessage, _ registration: Registration) -> Int? {
        switch message {
        case let set as SDLSetInteriorVehicleDataRequest:
            self.vehicle.moduleIndex(type: set.moduleData.moduleType, id: set.moduleData.moduleId, at: registration.version)
        case let press as SDLButtonPressRequest:
            self.vehicle.moduleIndex(type: press.moduleType, id: press.moduleId, at: registration.version)
        default: nil
        }
    }

    // MARK: - Allocation

    /// SDL Core's `AcquireResource`, for SetInteriorVehicleData, ButtonPress and the consent it
    /// computes.
    enum Acquisition: Equatable {
        case allowed
        case inUse(String)
        case rejected(String)
        case askDriver
    }

    /// Whether an app may take a module, in SDL Core's order: REJECTED when the vehicle has seats
    /// and the app's user sits outside the module's service area (the driver may control every
    /// module); ALLOWED when the module is free or the app's; REJECTED when the driver refused it
    /// this app before, when the app is not in HMI FULL, when the module does not allow multiple
    /// access; then the access mode: IN_USE (auto-deny), ask the driver (ask-driver), ALLOWED
    /// (auto-allow). Nothing changes here: the module is the app's once the vehicle has carried
    /// out the request.
    func acquire(_ key: ModuleKey, for app: AppHandle) -> Acquisition {
        guard let registration = self.apps[app]?.registration, let index = self.vehicle.index(of: key) else {
            return .inUse("unknown app or module")
        }
        let module = self.vehicle.modules[index]
        if !self.userMayControl(module, registration) {
            return .rejected("the user's seat is outside the service area of \(key.id)")
        }
        guard let holder = self.allocations[key], holder != app else { return .allowed }
        if registration.refusedModules.contains(key) {
            return .rejected("the driver refused \(key.id) to this app")
        }
        guard registration.hmiLevel == .full else {
            return .rejected("\(key.id) is held by another app and this app is not in HMI FULL")
        }
        guard module.allowsMultipleAccess else {
            return .rejected("\(key.id) is held by another app and does not allow multiple access")
        }
        switch self.accessMode {
        case .autoDeny: return .inUse("\(key.id) is held by another app (auto-deny)")
        case .askDriver: return .askDriver
        case .autoAllow: return .allowed
        }
    }

    /// SDL Core's location check: passes when the vehicle has no seats, when the user is the
    /// driver (the first seat), or when the user's seat and the module's service area (else its
    /// location, else nothing) intersect.
    func userMayControl(_ module: SimulatedVehicle.Module, _ registration: Registration) -> Bool {
        guard let driver = self.vehicle.seats.first else { return true }
        let user = registration.userLocation
        if user.normalized == driver.normalized { return true }
        guard let area = self.vehicle.serviceArea(of: module) else { return false }
        return area.intersects(user)
    }

    /// SetInteriorVehicleData and ButtonPress: the module's allocation first (Core's
    /// `AcquireResources`): IN_USE (no `info`) while the vehicle works on another request on the
    /// module or in auto-deny mode, REJECTED (no `info`) by ``acquire(_:for:)``; in ask-driver
    /// mode the driver's kept answer, else a question to the driver (a refusal: REJECTED "The
    /// resource [TYPE:id] is in use and the driver disallows this remote control RPC"). Then
    /// ``executeRemoteControl(_:app:now:)``.
    mutating func takeModule(for request: AnyRPCMessage, app: AppHandle, now: NIODeadline) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        if let index = self.addressedModule(request.message, registration) {
            let key = self.vehicle.modules[index].key
            if self.busyModules.contains(key) {
                return self.fail(request, .inUse, reason: "the vehicle is working on another request on \(key.id)", app: app)
            }
            switch self.acquire(key, for: app) {
            case .allowed:
                break
            case .inUse(let reason):
                return self.fail(request, .inUse, reason: reason, app: app)
            case .rejected(let reason):
                return self.fail(request, .rejected, reason: reason, app: app)
            case .askDriver:
                if let kept = self.savedConsents[registration.policyAppID]?[key] {
                    if !kept {
                        return self.driverDisallowed(request, key, app: app)
                    }
                } else {
                    return self.askDriver(
                        about: [key.id], topic: "may \(registration.appName) take \(key.type.wireName) \(key.id)?",
                        for: request, from: app, waiting: .acquisition(key), now: now)
                }
            }
        }
        return self.executeRemoteControl(request, app: app, now: now)
    }

    /// The driver said no to a take-over: the module is refused to the app until the access mode
    /// leaves ask-driver (Core's `OnDriverDisallowed`), and the request is REJECTED with Core's
    /// info.
    mutating func driverDisallowed(_ request: AnyRPCMessage, _ key: ModuleKey, app: AppHandle) -> String {
        self.apps[app]?.registration?.refusedModules.insert(key)
        return self.fail(
            request, .rejected,
            "The resource [\(key.type.wireName):\(key.id)] is in use and the driver disallows this remote control RPC",
            app: app)
    }

    /// The part of SetInteriorVehicleData and ButtonPress after the allocation: their own checks,
    /// then the vehicle carries the request out, at once or after
    /// ``Configuration/vehicleResponseTime`` (the module busy meanwhile).
    mutating func executeRemoteControl(_ request: AnyRPCMessage, app: AppHandle, now: NIODeadline) -> String {
        guard let registration = self.apps[app]?.registration else { return "dropped: the app is gone" }
        let refusal: String?
        switch request.message {
        case let set as SDLSetInteriorVehicleDataRequest:
            refusal = self.checkSet(request, set.moduleData, app: app, registration)
        case let press as SDLButtonPressRequest:
            refusal = self.checkPress(request, press, app: app, registration)
        default:
            refusal = self.fail(request, .genericError, "not a remote-control change", app: app)
        }
        if let refusal { return refusal }
        guard let index = self.addressedModule(request.message, registration) else { return "no module" }
        let key = self.vehicle.modules[index].key
        guard self.vehicleResponseTime > .zero else {
            return self.completeRemoteControl(request, app: app)
        }
        self.busyModules.insert(key)
        self.wait(
            WaitingRequest(
                number: 0, app: app, request: request, kind: .execution(key), stage: .vehicle,
                deadline: now + self.vehicleResponseTime))
        return "the vehicle is working on \(key.id)"
    }

    /// SetInteriorVehicleData's checks, in SDL Core's order; nil when they pass, else the refusal's
    /// transcript outcome (the response sent).
    private mutating func checkSet(
        _ request: AnyRPCMessage, _ data: SDLModuleData, app: AppHandle, _ registration: Registration
    ) -> String? {
        let version = registration.version
        // Core cuts the control data of other types and needs the one of the module type.
        guard let key = SDLModuleData.controlDataKey(for: data.moduleType), data.controlDataKeys.contains(key) else {
            return self.fail(request, .invalidData, "Request module type & data mismatch!", app: app)
        }
        guard let index = self.vehicle.moduleIndex(type: data.moduleType, id: data.moduleId, at: version) else {
            _ = self.fail(request, .unsupportedResource, "Accessing not supported module data", app: app)
            return "UNSUPPORTED_RESOURCE: the vehicle has no \(data.moduleType) module \(data.moduleId ?? "") at RPC \(version)"
        }
        let module = self.vehicle.modules[index]
        if let channel = data.radioControlData?.hdChannel, !SimulatedVehicle.hdChannelRange(at: version).contains(channel) {
            let range = SimulatedVehicle.hdChannelRange(at: version)
            return self.fail(
                request, .invalidData,
                "hdChannel \(channel) is outside \(range.lowerBound)...\(range.upperBound) at RPC \(version)", app: app)
        }
        if let lights = data.lightControlData?.lightState {
            let supported = Set((module.data.lightControlData?.lightState ?? []).map(\.id))
            if lights.contains(where: { !supported.contains($0.id) }) {
                return self.fail(
                    request, .unsupportedResource, "The requested LightName is not supported by the vehicle.", app: app)
            }
        }
        let readOnly = SDLModuleData.readOnlyParameters[key] ?? []
        let names = data.parameterNames(in: key)
        if !names.isEmpty && names.allSatisfy({ readOnly.contains($0) }) {
            return self.fail(request, .readOnly, "All request params in module type are READ ONLY!", app: app)
        }
        if let lights = data.lightControlData?.lightState, lights.contains(where: { $0.status != .on && $0.status != .off }) {
            return self.fail(
                request, .readOnly, "The LightStatus enum passed is READ ONLY and cannot be written.", app: app)
        }
        return nil
    }

    /// ButtonPress's checks, in SDL Core's order: a climate or radio button with another module
    /// type is INVALID_DATA; a module or button the capability does not have is
    /// UNSUPPORTED_RESOURCE.
    private mutating func checkPress(
        _ request: AnyRPCMessage, _ press: SDLButtonPressRequest, app: AppHandle, _ registration: Registration
    ) -> String? {
        let button = press.buttonName
        let mismatched =
            (SimulatedVehicle.climateButtons.contains(button) && press.moduleType != .climate)
            || (SimulatedVehicle.radioButtons.contains(button) && press.moduleType != .radio)
        if mismatched {
            return self.fail(request, .invalidData, "Request module type and button name mismatch!", app: app)
        }
        let exists = self.vehicle.moduleIndex(type: press.moduleType, id: press.moduleId, at: registration.version) != nil
        let buttons = self.vehicle.remoteControlCapabilities(at: registration.version).buttonCapabilities ?? []
        guard exists, buttons.contains(where: { $0.name == button }) else {
            return self.fail(
                request, .unsupportedResource, "Requested button or module does not exist in capabilities!", app: app)
        }
        return nil
    }

    /// The vehicle carried out a SetInteriorVehicleData or a ButtonPress: the module's data
    /// changes, the module becomes the app's; in SDL Core's order, the response, OnRCStatus to
    /// every remote-control app when the allocation changed, then OnInteriorVehicleData to the
    /// subscribers when the data changed (the `rc-radio` capture).
    mutating func completeRemoteControl(_ request: AnyRPCMessage, app: AppHandle) -> String {
        guard let registration = self.apps[app]?.registration,
            let index = self.addressedModule(request.message, registration)
        else { return "dropped: the app or the module is gone" }
        let module = self.vehicle.modules[index]
        self.busyModules.remove(module.key)
        let newData: SDLModuleData
        let response: any RPCMessage
        let done: String
        switch request.message {
        case let set as SDLSetInteriorVehicleDataRequest:
            guard let key = SDLModuleData.controlDataKey(for: set.moduleData.moduleType) else { return "no control data" }
            var update = set.moduleData
            update.keepOnly(key)
            do {
                let written = try SimulatedVehicle.data(update, at: registration.version)
                    .removing(SDLModuleData.readOnlyParameters[key] ?? [], in: key)
                newData = try module.data.merging(written).removing(SDLModuleData.setOnlyParameters[key] ?? [], in: key)
            } catch {
                return self.fail(request, .invalidData, "\(error)", app: app)
            }
            response = SDLSetInteriorVehicleDataResponse(
                moduleData: SimulatedVehicle.data(newData, at: registration.version), resultCode: .success, success: true)
            done = "set \(module.moduleID)"
        case let press as SDLButtonPressRequest:
            newData = self.vehicle.buttonPressesChangeData ? Self.pressing(press.buttonName, on: module.data) : module.data
            response = SDLButtonPressResponse(resultCode: .success, success: true)
            done = "\(press.buttonName) \(press.buttonPressMode) on \(module.moduleID)"
        default:
            return "not a remote-control change"
        }
        self.vehicle.modules[index].data = newData
        let allocationChanged = self.allocations[module.key] != app
        self.allocations[module.key] = app
        self.respond(to: request, with: response, app: app)
        if allocationChanged {
            self.broadcastRCStatus()
        }
        let notified = newData != module.data ? self.notifySubscribers(ofModuleAt: index) : 0
        return done + "; \(notified) subscriber(s) notified"
    }

    // MARK: - Reading, consent, release

    /// GetInteriorVehicleData, as SDL Core answers it: UNSUPPORTED_RESOURCE "Accessing not
    /// supported module data" for a module the vehicle lacks at the app's version; the module's
    /// data as the app's version shows it. A module some app is subscribed to is answered from
    /// Core's cache: subscribing again is WARNINGS "App is already subscribed to the provided
    /// module". Requests that reach the vehicle (not from the cache) are limited per module
    /// (``Configuration/interiorDataRateLimit``): REJECTED (no `info`) beyond.
    private mutating func getInteriorVehicleData(
        _ request: AnyRPCMessage, _ get: SDLGetInteriorVehicleDataRequest, app: AppHandle, _ registration: Registration,
        now: NIODeadline
    ) -> String {
        guard let index = self.vehicle.moduleIndex(type: get.moduleType, id: get.moduleId, at: registration.version) else {
            _ = self.fail(request, .unsupportedResource, "Accessing not supported module data", app: app)
            return "UNSUPPORTED_RESOURCE: the vehicle has no \(get.moduleType) module \(get.moduleId ?? "") at RPC \(registration.version)"
        }
        let module = self.vehicle.modules[index]
        let subscribers = self.registeredApps.filter {
            self.apps[$0]?.registration?.moduleSubscriptions.contains(module.key) == true
        }
        let lastLeaving = get.subscribe == false && subscribers == [app]
        var resultCode = SDLResult.success
        var info: String?
        var outcome = module.moduleID
        if lastLeaving || subscribers.isEmpty {
            let window = now - self.configuration.interiorDataRateWindow
            var recent = (self.interiorDataRequests[module.key] ?? []).filter { $0 > window }
            guard recent.count < self.configuration.interiorDataRateLimit else {
                return self.fail(
                    request, .rejected,
                    reason: "more than \(self.configuration.interiorDataRateLimit) reads of \(module.moduleID) per window",
                    app: app)
            }
            recent.append(now)
            self.interiorDataRequests[module.key] = recent
        } else {
            outcome += " (cached)"
            if get.subscribe == true && subscribers.contains(app) {
                resultCode = .warnings
                info = "App is already subscribed to the provided module"
            }
        }
        if let subscribe = get.subscribe {
            if subscribe {
                self.apps[app]?.registration?.moduleSubscriptions.insert(module.key)
            } else {
                self.apps[app]?.registration?.moduleSubscriptions.remove(module.key)
            }
            outcome += subscribe ? ", subscribed" : ", unsubscribed"
        }
        self.respond(
            to: request,
            with: SDLGetInteriorVehicleDataResponse(
                moduleData: SimulatedVehicle.data(module.data, at: registration.version), resultCode: resultCode,
                info: info, success: true, isSubscribed: get.subscribe),
            app: app)
        return outcome + (info.map { "; WARNINGS: \($0)" } ?? "")
    }

    /// GetInteriorVehicleDataConsent (RPC 6.0+), as SDL Core computes it per module: no when the
    /// user sits outside the module's area; for a module without multiple access, whether the app
    /// could take it; else per access mode: yes (auto-allow), whether the app could take it
    /// (auto-deny), the driver's kept answer or, when the app could take it outright or is refused
    /// outright, that (ask-driver). The modules still open go to the driver in one question; its
    /// answers are kept (with the computed ones) per app id and module. An empty `moduleIds` asks
    /// about the type's default module; an unknown module is UNSUPPORTED_RESOURCE "Accessing not
    /// supported module data".
    private mutating func consent(
        _ request: AnyRPCMessage, _ consent: SDLGetInteriorVehicleDataConsentRequest, app: AppHandle,
        _ registration: Registration, now: NIODeadline
    ) -> String {
        let ids: [String?] = consent.moduleIds.isEmpty ? [nil] : consent.moduleIds.map { $0 }
        var keys: [ModuleKey] = []
        for id in ids {
            guard let index = self.vehicle.moduleIndex(type: consent.moduleType, id: id, at: registration.version) else {
                _ = self.fail(request, .unsupportedResource, "Accessing not supported module data", app: app)
                return "UNSUPPORTED_RESOURCE: the vehicle has no \(consent.moduleType) module \(id ?? "")"
            }
            keys.append(self.vehicle.modules[index].key)
        }
        var allowed: [Bool?] = []
        for key in keys {
            guard let index = self.vehicle.index(of: key) else { continue }
            let module = self.vehicle.modules[index]
            if !self.userMayControl(module, registration) {
                allowed.append(false)
            } else if !module.allowsMultipleAccess {
                allowed.append(self.acquire(key, for: app) == .allowed)
            } else {
                switch self.accessMode {
                case .autoAllow:
                    allowed.append(true)
                case .autoDeny:
                    allowed.append(self.acquire(key, for: app) == .allowed)
                case .askDriver:
                    if let kept = self.savedConsents[registration.policyAppID]?[key] {
                        allowed.append(kept)
                    } else {
                        switch self.acquire(key, for: app) {
                        case .allowed: allowed.append(true)
                        case .rejected: allowed.append(false)
                        default: allowed.append(nil)
                        }
                    }
                }
            }
        }
        let open = zip(keys, allowed).filter { $0.1 == nil }.map(\.0.id)
        guard !open.isEmpty else {
            return self.answerConsent(request, keys: keys, allowed: allowed.map { $0 ?? false }, app: app, save: false)
        }
        return self.askDriver(
            about: open, topic: "may \(registration.appName) control \(consent.moduleType.wireName) \(open.joined(separator: ", "))?",
            for: request, from: app, waiting: .consent(keys: keys, allowed: allowed), now: now)
    }

    /// The GetInteriorVehicleDataConsent response; `save`: keep the answers (the driver was asked).
    mutating func answerConsent(
        _ request: AnyRPCMessage, keys: [ModuleKey], allowed: [Bool], app: AppHandle, save: Bool
    ) -> String {
        if save, let policyAppID = self.apps[app]?.registration?.policyAppID {
            for (key, answer) in zip(keys, allowed) {
                self.savedConsents[policyAppID, default: [:]][key] = answer
            }
        }
        self.respond(
            to: request,
            with: SDLGetInteriorVehicleDataConsentResponse(success: true, resultCode: .success, allowed: allowed), app: app)
        return "consent " + zip(keys, allowed).map { "\($0.0.id): \($0.1)" }.joined(separator: ", ")
    }

    /// ReleaseInteriorVehicleDataModule (RPC 6.0+), as SDL Core answers it: UNSUPPORTED_RESOURCE
    /// "Accessing not supported module" for an unknown module; IGNORED "Module [TYPE:id] is not
    /// allocated to any application."; REJECTED "Module [TYPE:id] is allocated to a different
    /// application."; SUCCESS "Module [TYPE:id] is released successfully.", after OnRCStatus to
    /// every remote-control app (Core sends the notifications before the response).
    private mutating func release(
        _ request: AnyRPCMessage, _ release: SDLReleaseInteriorVehicleDataModuleRequest, app: AppHandle,
        _ registration: Registration
    ) -> String {
        guard let index = self.vehicle.moduleIndex(type: release.moduleType, id: release.moduleId, at: registration.version)
        else {
            return self.fail(request, .unsupportedResource, "Accessing not supported module", app: app)
        }
        let key = self.vehicle.modules[index].key
        let name = "Module [\(key.type.wireName):\(key.id)]"
        switch self.allocations[key] {
        case nil:
            return self.fail(request, .ignored, "\(name) is not allocated to any application.", app: app)
        case app:
            self.allocations[key] = nil
            self.broadcastRCStatus()
            self.respond(
                to: request,
                with: SDLReleaseInteriorVehicleDataModuleResponse(
                    success: true, resultCode: .success, info: "\(name) is released successfully."),
                app: app)
            return "released \(key.id)"
        default:
            return self.fail(request, .rejected, "\(name) is allocated to a different application.", app: app)
        }
    }

    // MARK: - Status and notifications

    /// Frees every module an app holds (it left, or the user exited it); OnRCStatus to every
    /// remote-control app when it held one; returns how many.
    mutating func releaseModules(of app: AppHandle) -> Int {
        let held = self.allocations.filter { $0.value == app }.keys
        for key in held {
            self.allocations[key] = nil
        }
        if !held.isEmpty {
            self.broadcastRCStatus()
        }
        return held.count
    }

    /// Whether an app gets OnRCStatus: a remote-control app of RPC 5.0+ on a head unit of 5.0+
    /// (and, when sent, its policy must allow it).
    func sendsRCStatus(to registration: Registration) -> Bool {
        self.configuration.remoteControl && self.configuration.rpcVersion >= .v5_0 && registration.isRemoteControl
            && registration.version >= .v5_0
    }

    /// OnRCStatus for one app, as SDL Core builds it: the modules it holds, ordered by type name
    /// and id (Core keeps allocations in an ordered map), and the free ones in capability order;
    /// modules other apps hold are in neither list.
    func rcStatus(for app: AppHandle, _ registration: Registration) -> SDLOnRCStatus {
        var allocated: [ModuleKey] = []
        var free: [SDLModuleData] = []
        let withIDs = registration.version >= .v6_0
        for index in self.vehicle.visibleModules(at: registration.version) {
            let module = self.vehicle.modules[index]
            switch self.allocations[module.key] {
            case nil: free.append(SDLModuleData(moduleType: module.moduleType, moduleId: withIDs ? module.moduleID : nil))
            case app: allocated.append(module.key)
            default: break
            }
        }
        let ordered = allocated.sorted { ($0.type.wireName, $0.id) < ($1.type.wireName, $1.id) }.map {
            SDLModuleData(moduleType: $0.type, moduleId: withIDs ? $0.id : nil)
        }
        return SDLOnRCStatus(allowed: true, allocatedModules: ordered, freeModules: free)
    }

    /// OnRCStatus to every app that gets it, after an allocation changed.
    mutating func broadcastRCStatus() {
        for app in self.registeredApps {
            guard let registration = self.apps[app]?.registration, self.sendsRCStatus(to: registration) else { continue }
            self.notify(self.rcStatus(for: app, registration), to: app)
        }
    }

    /// OnInteriorVehicleData with the module's data to the apps subscribed to it, each as its
    /// version shows it (and as its policy allows at its level); returns how many were addressed.
    @discardableResult
    mutating func notifySubscribers(ofModuleAt index: Int) -> Int {
        let module = self.vehicle.modules[index]
        var count = 0
        for app in self.registeredApps {
            guard let registration = self.apps[app]?.registration, registration.moduleSubscriptions.contains(module.key)
            else { continue }
            self.notify(SDLOnInteriorVehicleData(moduleData: SimulatedVehicle.data(module.data, at: registration.version)), to: app)
            count += 1
        }
        return count
    }

    /// A change from the vehicle's side: read-only parameters change too.
    mutating func applyVehicleChange(_ data: SDLModuleData) -> String {
        guard let key = SDLModuleData.controlDataKey(for: data.moduleType), data.controlDataKeys == [key],
            let index = self.vehicle.moduleIndex(type: data.moduleType, id: data.moduleId, at: .v8_0)
        else {
            return "ignored: no \(data.moduleType) module \(data.moduleId ?? "") with matching control data"
        }
        let module = self.vehicle.modules[index]
        do {
            self.vehicle.modules[index].data = try module.data.merging(data)
        } catch {
            return "ignored: \(error)"
        }
        let notified = self.notifySubscribers(ofModuleAt: index)
        return "\(module.moduleID) changed; \(notified) subscriber(s) notified"
    }

    /// The climate data after a button press, as the knob would change it.
    static func pressing(_ button: SDLButtonName, on data: SDLModuleData) -> SDLModuleData {
        guard var climate = data.climateControlData else { return data }
        switch button {
        case .ac: climate.acEnable = !(climate.acEnable ?? false)
        case .acMax: climate.acMaxEnable = !(climate.acMaxEnable ?? false)
        case .recirculate: climate.circulateAirEnable = !(climate.circulateAirEnable ?? false)
        case .fanUp: climate.fanSpeed = min(100, (climate.fanSpeed ?? 0) + 10)
        case .fanDown: climate.fanSpeed = max(0, (climate.fanSpeed ?? 0) - 10)
        case .tempUp: climate.desiredTemperature?.value += 1
        case .tempDown: climate.desiredTemperature?.value -= 1
        case .defrost: climate.defrostZone = .front
        case .defrostRear: climate.defrostZone = .rear
        case .defrostMax: climate.defrostZone = .all
        case .upperVent: climate.ventilationMode = .upper
        case .lowerVent: climate.ventilationMode = .lower
        default: break
        }
        var data = data
        data.climateControlData = climate
        return data
    }
}

extension SDLModuleData {
    /// Keeps only the control data of `key`, as SDL Core cuts the control data of other module
    /// types out of a SetInteriorVehicleData.
    mutating func keepOnly(_ key: String) {
        if key != "radioControlData" { self.radioControlData = nil }
        if key != "climateControlData" { self.climateControlData = nil }
        if key != "seatControlData" { self.seatControlData = nil }
        if key != "audioControlData" { self.audioControlData = nil }
        if key != "lightControlData" { self.lightControlData = nil }
        if key != "hmiSettingsControlData" { self.hmiSettingsControlData = nil }
    }
}
