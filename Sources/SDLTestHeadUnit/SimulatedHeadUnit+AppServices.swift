import NIOCore
import SDLRPC

/// A published app service and the app that provides it.
struct PublishedService: Sendable {
    var provider: AppHandle
    var record: SDLAppServiceRecord

    var serviceID: String { self.record.serviceID }
    var serviceType: String { self.record.serviceManifest.serviceType }
    var allowsAppConsumers: Bool { self.record.serviceManifest.allowAppConsumers ?? false }
}

extension SimulatedHeadUnit {
    /// PublishAppService (RPC 5.1+), as SDL Core's app-service manager does it: the record is
    /// published (OnSystemCapabilityUpdated PUBLISHED), then activated when no service of its type
    /// is active (ACTIVATED); the response carries the record as it is then. Publishing a type the
    /// app already publishes updates the manifest from RPC 6.0 (MANIFEST_UPDATE) and is REJECTED
    /// before. A service without a name takes the app's name; names are unique (REJECTED).
    mutating func publishAppService(_ request: AnyRPCMessage, _ publish: SDLPublishAppServiceRequest, app: AppHandle) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        var manifest = publish.appServiceManifest
        if manifest.serviceName == nil {
            manifest.serviceName = registration.appName
        }
        let type = manifest.serviceType
        let existing = self.services.firstIndex { $0.provider == app && $0.serviceType == type }
        if let name = manifest.serviceName,
            let other = self.services.firstIndex(where: { $0.record.serviceManifest.serviceName == name }), other != existing
        {
            return self.fail(request, .rejected, "a service named \(name) is already published", app: app)
        }
        if let existing {
            guard self.configuration.rpcVersion >= .v6_0 else {
                return self.fail(
                    request, .rejected,
                    "the app already publishes a \(type) service (manifest updates need RPC 6.0)", app: app)
            }
            self.services[existing].record.serviceManifest = manifest
            let record = self.services[existing].record
            self.broadcastServiceUpdates([SDLAppServiceCapability(updateReason: .manifestUpdate, updatedAppServiceRecord: record)])
            self.respond(
                to: request, with: SDLPublishAppServiceResponse(success: true, resultCode: .success, appServiceRecord: record),
                app: app)
            return "updated the manifest of \(record.serviceID)"
        }
        guard self.services.count(where: { $0.provider == app }) < self.configuration.maxServicesPerApp else {
            return self.fail(
                request, .rejected, "the app already publishes \(self.configuration.maxServicesPerApp) services", app: app)
        }
        let serviceID = "\(type.lowercased())-\(self.nextServiceNumber)"
        self.nextServiceNumber += 1
        let record = SDLAppServiceRecord(
            serviceID: serviceID, serviceManifest: manifest, servicePublished: true, serviceActive: false)
        self.services.append(PublishedService(provider: app, record: record))
        self.broadcastServiceUpdates([SDLAppServiceCapability(updateReason: .published, updatedAppServiceRecord: record)])
        let index = self.services.count - 1
        if !self.services.contains(where: { $0.serviceType == type && $0.record.serviceActive }) {
            self.activateService(at: index)
        }
        let current = self.services[index].record
        self.respond(
            to: request, with: SDLPublishAppServiceResponse(success: true, resultCode: .success, appServiceRecord: current),
            app: app)
        return "published \(serviceID) (\(type))" + (current.serviceActive ? ", active" : "")
    }

    /// UnpublishAppService (RPC 6.0+): only the provider may; REMOVED to subscribers.
    mutating func unpublishAppService(
        _ request: AnyRPCMessage, _ unpublish: SDLUnpublishAppServiceRequest, app: AppHandle
    ) -> String {
        guard let index = self.services.firstIndex(where: { $0.serviceID == unpublish.serviceID }) else {
            return self.fail(request, .invalidId, "no service has id \(unpublish.serviceID)", app: app)
        }
        guard self.services[index].provider == app else {
            return self.fail(request, .disallowed, "service \(unpublish.serviceID) belongs to another app", app: app)
        }
        self.removeService(at: index)
        self.respond(to: request, with: SDLUnpublishAppServiceResponse(success: true, resultCode: .success), app: app)
        return "unpublished \(unpublish.serviceID)"
    }

    /// GetAppServiceData: forwarded to the provider of the active service of the type, whose
    /// answer goes back to the consumer; `subscribe` true subscribes the consumer to the type's
    /// OnAppServiceData once the provider answers with success, false unsubscribes it.
    mutating func getAppServiceData(
        _ request: AnyRPCMessage, _ get: SDLGetAppServiceDataRequest, app: AppHandle, now: NIODeadline
    ) -> String {
        let type = get.serviceType
        if get.subscribe == false {
            self.apps[app]?.registration?.serviceDataSubscriptions.remove(type)
        }
        guard let service = self.services.first(where: { $0.serviceType == type && $0.record.serviceActive }) else {
            return self.fail(request, .dataNotAvailable, "no \(type) service is active", app: app)
        }
        guard service.allowsAppConsumers || service.provider == app else {
            return self.fail(request, .disallowed, "service \(service.serviceID) does not allow app consumers", app: app)
        }
        guard self.mayWait(app) else { return self.tooManyPending(request, app: app) }
        let correlationID = self.forward(
            request.message, of: request, from: app, to: service.provider,
            kind: .serviceData(serviceType: type, subscribe: get.subscribe == true),
            deadline: now + self.configuration.providerTimeout)
        return "forwarded to \(service.provider) as #\(correlationID)"
    }

    /// PerformAppServiceInteraction: forwarded to the service's provider with `originApp` set to
    /// the consumer's app id, as Core does; `requestServiceActive` from an app in FULL activates
    /// the service first.
    mutating func performAppServiceInteraction(
        _ request: AnyRPCMessage, _ interaction: SDLPerformAppServiceInteractionRequest, app: AppHandle,
        now: NIODeadline
    ) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        guard let index = self.services.firstIndex(where: { $0.serviceID == interaction.serviceID }) else {
            return self.fail(request, .invalidId, "no service has id \(interaction.serviceID)", app: app)
        }
        let service = self.services[index]
        guard service.allowsAppConsumers || service.provider == app else {
            return self.fail(request, .disallowed, "service \(service.serviceID) does not allow app consumers", app: app)
        }
        guard self.mayWait(app) else { return self.tooManyPending(request, app: app) }
        if interaction.requestServiceActive == true && registration.hmiLevel == .full {
            self.activateService(at: index)
        }
        var forwarded = interaction
        forwarded.originApp = registration.appID
        let correlationID = self.forward(
            forwarded, of: request, from: app, to: service.provider, kind: .interaction,
            deadline: now + self.configuration.providerTimeout)
        return "forwarded to \(service.provider) as #\(correlationID)"
    }

    /// OnAppServiceData from a provider: sent to the apps subscribed to the service's type, when
    /// the service is the sender's, active, and open to app consumers; otherwise dropped, as Core
    /// drops it.
    mutating func appServiceDataChanged(_ notification: SDLOnAppServiceData, from app: AppHandle) -> String {
        let data = notification.serviceData
        guard let service = self.services.first(where: { $0.serviceID == data.serviceID }), service.provider == app else {
            return "dropped: \(data.serviceID) is not a service of this app"
        }
        guard service.serviceType == data.serviceType else {
            return "dropped: \(data.serviceID) is a \(service.serviceType) service, not \(data.serviceType)"
        }
        guard service.record.serviceActive else { return "dropped: \(data.serviceID) is not active" }
        guard service.allowsAppConsumers else { return "dropped: \(data.serviceID) does not allow app consumers" }
        let subscribers = self.registeredApps.filter {
            $0 != app && self.apps[$0]?.registration?.serviceDataSubscriptions.contains(data.serviceType) == true
        }
        for subscriber in subscribers {
            self.notify(notification, to: subscriber)
        }
        return "sent to \(subscribers.count) subscriber(s)"
    }

    /// Makes a service the active one of its type: the active one before is DEACTIVATED in the
    /// same update, as Core's `ActivateAppService` reports them.
    mutating func activateService(at index: Int) {
        guard !self.services[index].record.serviceActive else { return }
        var updates: [SDLAppServiceCapability] = []
        let type = self.services[index].serviceType
        if let active = self.services.firstIndex(where: { $0.serviceType == type && $0.record.serviceActive }) {
            self.services[active].record.serviceActive = false
            updates.append(SDLAppServiceCapability(updateReason: .deactivated, updatedAppServiceRecord: self.services[active].record))
        }
        self.services[index].record.serviceActive = true
        updates.append(SDLAppServiceCapability(updateReason: .activated, updatedAppServiceRecord: self.services[index].record))
        self.broadcastServiceUpdates(updates)
    }

    /// Activates every service an app publishes (the app entered FULL).
    mutating func activateServices(of app: AppHandle) {
        for index in self.services.indices where self.services[index].provider == app {
            self.activateService(at: index)
        }
    }

    /// Unpublishes every service of an app; returns how many.
    mutating func unpublishServices(of app: AppHandle) -> Int {
        var count = 0
        while let index = self.services.firstIndex(where: { $0.provider == app }) {
            self.removeService(at: index)
            count += 1
        }
        return count
    }

    /// Removes a service: REMOVED (published and active false) to subscribers. No other service
    /// of the type becomes active, as on Core without an embedded service.
    private mutating func removeService(at index: Int) {
        var record = self.services.remove(at: index).record
        record.servicePublished = false
        record.serviceActive = false
        self.broadcastServiceUpdates([SDLAppServiceCapability(updateReason: .removed, updatedAppServiceRecord: record)])
    }

    /// OnSystemCapabilityUpdated APP_SERVICES with these updates, to every app subscribed to the
    /// capability (RPC 5.1+).
    private mutating func broadcastServiceUpdates(_ updates: [SDLAppServiceCapability]) {
        let notification = SDLOnSystemCapabilityUpdated(
            systemCapability: SDLSystemCapability(
                systemCapabilityType: .appServices, appServicesCapabilities: SDLAppServicesCapabilities(appServices: updates)))
        for app in self.registeredApps {
            guard let registration = self.apps[app]?.registration, registration.version >= .v5_1,
                registration.capabilitySubscriptions.contains(.appServices)
            else { continue }
            self.notify(notification, to: app)
        }
    }
}
