import NIOCore
import SDLRPC

extension SimulatedHeadUnit {
    /// Which part of the head unit a function belongs to.
    enum Feature: Hashable, Sendable {
        case base
        case remoteControl
        case appServices
    }

    /// A function the head unit implements (a request it answers, or a notification it sends or
    /// takes), and the RPC version that introduced it (MOBILE_API.xml `since`).
    struct ImplementedFunction: Hashable, Sendable {
        var id: FunctionID
        var since: RPCVersion
        var feature: Feature
    }

    static let implementedFunctions: [ImplementedFunction] = [
        ImplementedFunction(id: .registerAppInterface, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .unregisterAppInterface, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .setGlobalProperties, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .resetGlobalProperties, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .onHMIStatus, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .onPermissionsChange, since: RPCVersion(2, 0), feature: .base),
        ImplementedFunction(id: .show, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .addCommand, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .deleteCommand, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .addSubMenu, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .deleteSubMenu, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .createInteractionChoiceSet, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .deleteInteractionChoiceSet, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .performInteraction, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .alert, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .speak, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .setMediaClockTimer, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .subscribeButton, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .unsubscribeButton, since: RPCVersion(1, 0), feature: .base),
        ImplementedFunction(id: .changeRegistration, since: RPCVersion(2, 0), feature: .base),
        ImplementedFunction(id: .putFile, since: RPCVersion(3, 0), feature: .base),
        ImplementedFunction(id: .listFiles, since: RPCVersion(3, 0), feature: .base),
        ImplementedFunction(id: .deleteFile, since: RPCVersion(3, 0), feature: .base),
        ImplementedFunction(id: .setAppIcon, since: RPCVersion(3, 0), feature: .base),
        // MOBILE_API.xml says 6.0, the version that deprecated it; it exists since 3.0.
        ImplementedFunction(id: .setDisplayLayout, since: RPCVersion(3, 0), feature: .base),
        ImplementedFunction(id: .getSystemCapability, since: .v4_5, feature: .base),
        ImplementedFunction(id: .onSystemCapabilityUpdated, since: .v5_1, feature: .base),
        ImplementedFunction(id: .buttonPress, since: .v4_5, feature: .remoteControl),
        ImplementedFunction(id: .getInteriorVehicleData, since: .v4_5, feature: .remoteControl),
        ImplementedFunction(id: .setInteriorVehicleData, since: .v4_5, feature: .remoteControl),
        ImplementedFunction(id: .onInteriorVehicleData, since: .v4_5, feature: .remoteControl),
        ImplementedFunction(id: .onRCStatus, since: .v5_0, feature: .remoteControl),
        ImplementedFunction(id: .getInteriorVehicleDataConsent, since: .v6_0, feature: .remoteControl),
        ImplementedFunction(id: .releaseInteriorVehicleDataModule, since: .v6_0, feature: .remoteControl),
        ImplementedFunction(id: .publishAppService, since: .v5_1, feature: .appServices),
        ImplementedFunction(id: .getAppServiceData, since: .v5_1, feature: .appServices),
        ImplementedFunction(id: .onAppServiceData, since: .v5_1, feature: .appServices),
        ImplementedFunction(id: .performAppServiceInteraction, since: .v5_1, feature: .appServices),
        ImplementedFunction(id: .unpublishAppService, since: .v6_0, feature: .appServices),
    ]

    /// Whether this head unit implements a function at its version and settings.
    func implements(_ function: FunctionID) -> Bool {
        guard let entry = Self.implementedFunctions.first(where: { $0.id == function }) else { return false }
        return entry.since <= self.configuration.rpcVersion
            && (entry.feature != .remoteControl || self.configuration.remoteControl)
    }

    /// Answers a request, or forwards it to the app-service provider that handles it.
    mutating func handleRequest(_ request: AnyRPCMessage, from app: AppHandle, now: NIODeadline) -> String {
        if let registration = request.message as? SDLRegisterAppInterfaceRequest {
            return self.register(request, registration, app: app)
        }
        guard self.isRegistered(app) else {
            return self.fail(request, .applicationNotRegistered, "the app must register first", app: app)
        }
        if let outcome = self.forwardToHandlingProvider(request, from: app, now: now) {
            return outcome
        }
        return self.answer(request, from: app, now: now)
    }

    /// Answers a request itself, in SDL Core's order: UNSUPPORTED_REQUEST for a function it does not
    /// implement, DISALLOWED (no `info`) for one the app's policy does not allow at its HMI level,
    /// then the function's own checks.
    mutating func answer(_ request: AnyRPCMessage, from app: AppHandle, now: NIODeadline) -> String {
        guard self.implements(request.functionID) else {
            return self.fail(
                request, .unsupportedRequest,
                "\(request.functionName) is not supported by this head unit (RPC \(self.configuration.rpcVersion))",
                app: app)
        }
        if let registration = self.apps[app]?.registration, !self.permits(request.functionName, registration) {
            return self.fail(
                request, .disallowed,
                reason: "the app's policy does not allow \(request.functionName) in HMI \(registration.hmiLevel)", app: app)
        }
        switch request.message {
        case is SDLUnregisterAppInterfaceRequest:
            self.respond(to: request, with: SDLUnregisterAppInterfaceResponse(success: true, resultCode: .success), app: app)
            return self.unregister(app, now: now)
        case let properties as SDLSetGlobalPropertiesRequest:
            return self.setGlobalProperties(request, properties, app: app)
        case let get as SDLGetSystemCapabilityRequest:
            return self.getSystemCapability(request, get, app: app)
        case let publish as SDLPublishAppServiceRequest:
            return self.publishAppService(request, publish, app: app)
        case let unpublish as SDLUnpublishAppServiceRequest:
            return self.unpublishAppService(request, unpublish, app: app)
        case let get as SDLGetAppServiceDataRequest:
            return self.getAppServiceData(request, get, app: app, now: now)
        case let interaction as SDLPerformAppServiceInteractionRequest:
            return self.performAppServiceInteraction(request, interaction, app: app, now: now)
        default:
            return self.answerScreen(request, app: app) ?? self.answerRemoteControl(request, app: app, now: now)
        }
    }

    /// Notifications from apps: OnAppServiceData is fanned out; the others are noted. A
    /// notification the app's policy does not allow at its level is dropped, as Core drops it.
    mutating func handleNotification(_ notification: AnyRPCMessage, from app: AppHandle) -> String {
        guard let registration = self.apps[app]?.registration else { return "ignored: the app is not registered" }
        guard self.permits(notification.functionName, registration) else {
            return "dropped: the app's policy does not allow \(notification.functionName) in HMI \(registration.hmiLevel)"
        }
        if let data = notification.message as? SDLOnAppServiceData, self.implements(.onAppServiceData) {
            return self.appServiceDataChanged(data, from: app)
        }
        return "ignored"
    }

    /// SetGlobalProperties: `userLocation` (RPC 6.0+) says where the app's user sits, which
    /// decides the modules they may control; the other properties have no effect here.
    private mutating func setGlobalProperties(
        _ request: AnyRPCMessage, _ properties: SDLSetGlobalPropertiesRequest, app: AppHandle
    ) -> String {
        var outcome = "accepted"
        if let grid = properties.userLocation?.grid, self.configuration.rpcVersion >= .v6_0 {
            self.apps[app]?.registration?.userLocation = grid
            outcome = "user sits at col \(grid.col), row \(grid.row)"
        }
        self.respond(to: request, with: SDLSetGlobalPropertiesResponse(success: true, resultCode: .success), app: app)
        return outcome
    }

    /// GetSystemCapability for APP_SERVICES (5.1+), REMOTE_CONTROL, DISPLAYS and SEAT_LOCATION (6.0+);
    /// `subscribe` (5.1+) adds or removes the app from the OnSystemCapabilityUpdated fan-out.
    private mutating func getSystemCapability(
        _ request: AnyRPCMessage, _ get: SDLGetSystemCapabilityRequest, app: AppHandle
    ) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        let type = get.systemCapabilityType
        let headUnitVersion = self.configuration.rpcVersion
        let capability: SDLSystemCapability
        switch type {
        case .appServices where headUnitVersion >= .v5_1:
            capability = SDLSystemCapability(
                systemCapabilityType: type,
                appServicesCapabilities: SDLAppServicesCapabilities(
                    appServices: self.services.map { SDLAppServiceCapability(updatedAppServiceRecord: $0.record) }))
        case .remoteControl where self.configuration.remoteControl:
            capability = SDLSystemCapability(
                systemCapabilityType: type,
                remoteControlCapability: self.vehicle.remoteControlCapabilities(at: registration.version))
        case .displays where registration.version >= .v6_0:
            capability = SDLSystemCapability(
                systemCapabilityType: type, displayCapabilities: Self.displays(at: registration.version))
        case .seatLocation where self.configuration.remoteControl && headUnitVersion >= .v6_0:
            capability = SDLSystemCapability(
                systemCapabilityType: type, seatLocationCapability: self.vehicle.seatLocationCapability)
        default:
            return self.fail(request, .dataNotAvailable, "this head unit has no \(type) capability", app: app)
        }
        var outcome = "\(type)"
        if let subscribe = get.subscribe, headUnitVersion >= .v5_1 {
            if subscribe {
                self.apps[app]?.registration?.capabilitySubscriptions.insert(type)
            } else {
                self.apps[app]?.registration?.capabilitySubscriptions.remove(type)
            }
            outcome += subscribe ? ", subscribed" : ", unsubscribed"
        }
        self.respond(
            to: request,
            with: SDLGetSystemCapabilityResponse(systemCapability: capability, resultCode: .success, success: true),
            app: app)
        return outcome
    }
}
