import SDLRPC

extension SimulatedHeadUnit {
    /// The remote-control requests, for apps that registered as REMOTE_CONTROL (others get
    /// DISALLOWED, as Core's policy has it); anything else is UNSUPPORTED_REQUEST.
    mutating func answerRemoteControl(_ request: AnyRPCMessage, app: AppHandle) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        let isRemoteControlRequest = Self.implementedFunctions.contains {
            $0.id == request.functionID && $0.feature == .remoteControl
        }
        guard isRemoteControlRequest else {
            return self.fail(
                request, .unsupportedRequest, "\(request.functionName) is not supported by this head unit", app: app)
        }
        guard registration.isRemoteControl else {
            return self.fail(request, .disallowed, "the app did not register with appHMIType REMOTE_CONTROL", app: app)
        }
        switch request.message {
        case let get as SDLGetInteriorVehicleDataRequest:
            return self.getInteriorVehicleData(request, get, app: app, registration)
        case let set as SDLSetInteriorVehicleDataRequest:
            return self.setInteriorVehicleData(request, set.moduleData, app: app, registration)
        case let press as SDLButtonPressRequest:
            return self.buttonPress(request, press, app: app, registration)
        case let consent as SDLGetInteriorVehicleDataConsentRequest:
            return self.consent(request, consent, app: app, registration)
        case let release as SDLReleaseInteriorVehicleDataModuleRequest:
            return self.release(request, release, app: app, registration)
        default:
            return self.fail(
                request, .unsupportedRequest, "\(request.functionName) is not supported by this head unit", app: app)
        }
    }

    /// GetInteriorVehicleData: the module's data as the app's version shows it; `subscribe`
    /// true or false changes the app's subscription to OnInteriorVehicleData of that module.
    private mutating func getInteriorVehicleData(
        _ request: AnyRPCMessage, _ get: SDLGetInteriorVehicleDataRequest, app: AppHandle, _ registration: Registration
    ) -> String {
        guard let index = self.vehicle.moduleIndex(type: get.moduleType, id: get.moduleId, at: registration.version) else {
            return self.failUnknownModule(request, get.moduleType, get.moduleId, app: app)
        }
        let module = self.vehicle.modules[index]
        var outcome = module.moduleID
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
                moduleData: SimulatedVehicle.data(module.data, at: registration.version), resultCode: .success,
                success: true, isSubscribed: get.subscribe),
            app: app)
        return outcome
    }

    /// SetInteriorVehicleData, in SDL Core's order of checks: data matching the module type
    /// (INVALID_DATA), a module of the app's version (UNSUPPORTED_RESOURCE), values of the app's
    /// version (INVALID_DATA), lights the vehicle has (UNSUPPORTED_RESOURCE), something writable
    /// (READ_ONLY), then the module's allocation (IN_USE, REJECTED). Read-only parameters next to
    /// writable ones are cut off. Subscribers get the new data.
    private mutating func setInteriorVehicleData(
        _ request: AnyRPCMessage, _ data: SDLModuleData, app: AppHandle, _ registration: Registration
    ) -> String {
        let version = registration.version
        let keys = data.controlDataKeys
        guard let key = SDLModuleData.controlDataKey(for: data.moduleType), keys == [key] else {
            return self.fail(
                request, .invalidData, "moduleData must carry the control data of moduleType \(data.moduleType) and no other",
                app: app)
        }
        guard let index = self.vehicle.moduleIndex(type: data.moduleType, id: data.moduleId, at: version) else {
            return self.failUnknownModule(request, data.moduleType, data.moduleId, app: app)
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
            if let unsupported = lights.first(where: { !supported.contains($0.id) }) {
                return self.fail(
                    request, .unsupportedResource, "the vehicle has no light \(unsupported.id)", app: app)
            }
            if let readOnly = lights.first(where: { $0.status != .on && $0.status != .off }) {
                return self.fail(
                    request, .readOnly, "light status \(readOnly.status) is read-only; only ON and OFF can be set",
                    app: app)
            }
        }
        let readOnly = SDLModuleData.readOnlyParameters[key] ?? []
        let names = data.parameterNames(in: key)
        let removed = names.filter { readOnly.contains($0) }
        guard removed.count < names.count else {
            return self.fail(
                request, .readOnly, "every parameter set is read-only: \(removed.joined(separator: ", "))", app: app)
        }
        let allocationChanged: Bool
        switch self.acquire(module.key, for: app) {
        case .refused(let resultCode, let info): return self.fail(request, resultCode, info, app: app)
        case .granted(let changed): allocationChanged = changed
        }
        let newData: SDLModuleData
        do {
            let update = try SimulatedVehicle.data(data, at: version).removing(readOnly, in: key)
            newData = try module.data.merging(update).removing(SDLModuleData.setOnlyParameters[key] ?? [], in: key)
        } catch {
            return self.fail(request, .invalidData, "\(error)", app: app)
        }
        let info = removed.isEmpty ? nil : "read-only parameters were cut off: \(removed.joined(separator: ", "))"
        let changed = newData != module.data
        self.vehicle.modules[index].data = newData
        self.respond(
            to: request,
            with: SDLSetInteriorVehicleDataResponse(
                moduleData: SimulatedVehicle.data(newData, at: version), resultCode: .success, info: info, success: true),
            app: app)
        if allocationChanged {
            self.broadcastRCStatus()
        }
        let notified = changed ? self.notifySubscribers(ofModuleAt: index) : 0
        return "set \(module.moduleID)" + (info.map { "; \($0)" } ?? "") + "; \(notified) subscriber(s) notified"
    }

    /// ButtonPress: a climate or radio button of the module's type; the press takes the module
    /// like a set does, and climate buttons change the climate data as the knobs would.
    private mutating func buttonPress(
        _ request: AnyRPCMessage, _ press: SDLButtonPressRequest, app: AppHandle, _ registration: Registration
    ) -> String {
        let button = press.buttonName
        let owner: SDLModuleType? =
            SimulatedVehicle.climateButtons.contains(button)
            ? .climate : SimulatedVehicle.radioButtons.contains(button) ? .radio : nil
        guard let owner else {
            return self.fail(request, .unsupportedResource, "\(button) is not a remote-control button", app: app)
        }
        guard owner == press.moduleType else {
            return self.fail(request, .invalidData, "\(button) is a \(owner) button, not \(press.moduleType)", app: app)
        }
        guard let index = self.vehicle.moduleIndex(type: press.moduleType, id: press.moduleId, at: registration.version) else {
            return self.failUnknownModule(request, press.moduleType, press.moduleId, app: app)
        }
        let module = self.vehicle.modules[index]
        let allocationChanged: Bool
        switch self.acquire(module.key, for: app) {
        case .refused(let resultCode, let info): return self.fail(request, resultCode, info, app: app)
        case .granted(let changed): allocationChanged = changed
        }
        let newData = Self.pressing(button, on: module.data)
        self.vehicle.modules[index].data = newData
        self.respond(to: request, with: SDLButtonPressResponse(resultCode: .success, success: true), app: app)
        if allocationChanged {
            self.broadcastRCStatus()
        }
        let notified = newData != module.data ? self.notifySubscribers(ofModuleAt: index) : 0
        return "\(button) \(press.buttonPressMode) on \(module.moduleID); \(notified) subscriber(s) notified"
    }

    /// GetInteriorVehicleDataConsent (RPC 6.0+): per module, whether the app may control it now.
    /// No when the user's seat is outside the module's service area; yes when the module is free
    /// or the app's; for a module another app holds, no unless it allows multiple access and the
    /// access mode lets it pass (auto-allow, or the driver agrees). In ask-driver mode the driver
    /// is asked about every module that allows multiple access. The answer is remembered: a
    /// refused module cannot be set until consent is asked again and granted.
    private mutating func consent(
        _ request: AnyRPCMessage, _ consent: SDLGetInteriorVehicleDataConsentRequest, app: AppHandle,
        _ registration: Registration
    ) -> String {
        var allowed: [Bool] = []
        for moduleID in consent.moduleIds {
            guard let index = self.vehicle.moduleIndex(type: consent.moduleType, id: moduleID, at: registration.version)
            else {
                return self.failUnknownModule(request, consent.moduleType, moduleID, app: app)
            }
            let module = self.vehicle.modules[index]
            let holder = self.allocations[module.key]
            let freeOrMine = holder == nil || holder == app
            let granted: Bool
            if let area = self.vehicle.serviceArea(of: module), !area.covers(registration.userLocation) {
                granted = false
            } else if !module.allowsMultipleAccess {
                granted = freeOrMine
            } else {
                switch self.configuration.accessMode {
                case .autoAllow: granted = true
                case .autoDeny: granted = freeOrMine
                case .askDriver: granted = self.configuration.driverConsent.grants(module.moduleID)
                }
            }
            self.apps[app]?.registration?.consents[module.key] = granted
            allowed.append(granted)
        }
        self.respond(
            to: request,
            with: SDLGetInteriorVehicleDataConsentResponse(success: true, resultCode: .success, allowed: allowed), app: app)
        return "consent \(zip(consent.moduleIds, allowed).map { "\($0.0): \($0.1)" }.joined(separator: ", "))"
    }

    /// ReleaseInteriorVehicleDataModule (RPC 6.0+): frees a module the app holds (SUCCESS);
    /// IGNORED when it is free, REJECTED when another app holds it.
    private mutating func release(
        _ request: AnyRPCMessage, _ release: SDLReleaseInteriorVehicleDataModuleRequest, app: AppHandle,
        _ registration: Registration
    ) -> String {
        guard let index = self.vehicle.moduleIndex(type: release.moduleType, id: release.moduleId, at: registration.version)
        else {
            return self.failUnknownModule(request, release.moduleType, release.moduleId, app: app)
        }
        let key = self.vehicle.modules[index].key
        switch self.allocations[key] {
        case nil:
            return self.fail(request, .ignored, "\(key.id) is not allocated", app: app)
        case app:
            self.allocations[key] = nil
            self.respond(
                to: request, with: SDLReleaseInteriorVehicleDataModuleResponse(success: true, resultCode: .success), app: app)
            self.broadcastRCStatus()
            return "released \(key.id)"
        default:
            return self.fail(request, .rejected, "\(key.id) is allocated to another app", app: app)
        }
    }

    private mutating func failUnknownModule(
        _ request: AnyRPCMessage, _ type: SDLModuleType, _ id: String?, app: AppHandle
    ) -> String {
        let version = self.apps[app]?.registration?.version ?? self.configuration.rpcVersion
        let name = id.map { "\(type) module \($0)" } ?? "\(type) module"
        return self.fail(request, .unsupportedResource, "the vehicle has no \(name) at RPC \(version)", app: app)
    }

    /// What asking for a module gave.
    enum Acquisition {
        /// The app holds the module; `changed`: it did not before (OnRCStatus is due, after the
        /// response).
        case granted(changed: Bool)
        case refused(SDLResult, String)
    }

    /// Gives an app a module for a set or a button press, or says why not. Taking a free module
    /// or one the app holds always works, within the user's seat area and unless the driver
    /// refused consent; another app's module passes per the access mode.
    private mutating func acquire(_ key: ModuleKey, for app: AppHandle) -> Acquisition {
        guard let registration = self.apps[app]?.registration, let index = self.vehicle.index(of: key) else {
            return .refused(.genericError, "unknown module")
        }
        let module = self.vehicle.modules[index]
        if registration.version >= .v6_0, let area = self.vehicle.serviceArea(of: module),
            !area.covers(registration.userLocation)
        {
            return .refused(.rejected, "the user's seat is outside the service area of \(key.id)")
        }
        if registration.consents[key] == false {
            return .refused(.rejected, "the driver refused consent for \(key.id)")
        }
        let holder = self.allocations[key]
        if holder == app {
            return .granted(changed: false)
        }
        if holder != nil {
            switch self.configuration.accessMode {
            case .autoDeny:
                return .refused(.inUse, "\(key.id) is allocated to another app")
            case .autoAllow:
                break
            case .askDriver:
                if registration.consents[key] != true && !self.configuration.driverConsent.grants(key.id) {
                    return .refused(.rejected, "the driver refused to pass \(key.id) to this app")
                }
            }
        }
        self.allocations[key] = app
        return .granted(changed: true)
    }

    /// Frees every module an app holds; returns how many.
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

    /// Whether an app gets OnRCStatus: a remote-control app of RPC 5.0+ on a head unit of 5.0+.
    func sendsRCStatus(to registration: Registration) -> Bool {
        self.configuration.remoteControl && self.configuration.rpcVersion >= .v5_0 && registration.isRemoteControl
            && registration.version >= .v5_0
    }

    /// OnRCStatus for one app: the modules it holds and the free ones, among those it can see.
    func rcStatus(for app: AppHandle, _ registration: Registration) -> SDLOnRCStatus {
        var allocated: [SDLModuleData] = []
        var free: [SDLModuleData] = []
        for index in self.vehicle.visibleModules(at: registration.version) {
            let module = self.vehicle.modules[index]
            let entry = SDLModuleData(
                moduleType: module.moduleType, moduleId: registration.version >= .v6_0 ? module.moduleID : nil)
            switch self.allocations[module.key] {
            case nil: free.append(entry)
            case app: allocated.append(entry)
            default: break
            }
        }
        return SDLOnRCStatus(allowed: true, allocatedModules: allocated, freeModules: free)
    }

    /// OnRCStatus to every app that gets it, after an allocation changed.
    mutating func broadcastRCStatus() {
        for app in self.registeredApps {
            guard let registration = self.apps[app]?.registration, self.sendsRCStatus(to: registration) else { continue }
            self.notify(self.rcStatus(for: app, registration), to: app)
        }
    }

    /// OnInteriorVehicleData with the module's data to the apps subscribed to it, each as its
    /// version shows it; returns how many.
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
