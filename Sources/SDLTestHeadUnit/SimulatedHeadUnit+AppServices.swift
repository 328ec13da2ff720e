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
    /// PublishAppService (RPC 5.1+), as SDL Core's app-service manager does it. DISALLOWED
    /// "Service disallowed by policies" when the app's policy does not list the type in
    /// `app_services` (or the name, or a handled RPC); the publisher is subscribed to APP_SERVICES
    /// updates. The record is published (OnSystemCapabilityUpdated PUBLISHED), then activated when
    /// no service of its type is active or the publisher is in FULL (ACTIVATED, DEACTIVATED for
    /// the one before); the response carries the record as it is then. Publishing a type the app
    /// already publishes updates the manifest from RPC 6.0 (MANIFEST_UPDATE) and is REJECTED
    /// before. Names are unique: REJECTED "Failed to publish service".
    mutating func publishAppService(_ request: AnyRPCMessage, _ publish: SDLPublishAppServiceRequest, app: AppHandle) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        let manifest = publish.appServiceManifest
        guard self.policyAllowsService(manifest, registration) else {
            return self.fail(request, .disallowed, "Service disallowed by policies", app: app)
        }
        self.apps[app]?.registration?.capabilitySubscriptions.insert(.appServices)
        let type = manifest.serviceType
        let existing = self.services.firstIndex { $0.provider == app && $0.serviceType == type }
        if let name = manifest.serviceName,
            let other = self.services.firstIndex(where: { $0.record.serviceManifest.serviceName == name }), other != existing
        {
            _ = self.fail(request, .rejected, "Failed to publish service", app: app)
            return "REJECTED: a service named \(name) is already published"
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
        if !self.services.contains(where: { $0.serviceType == type && $0.record.serviceActive }) || registration.hmiLevel == .full {
            self.activateService(at: index)
        }
        let current = self.services[index].record
        self.respond(
            to: request, with: SDLPublishAppServiceResponse(success: true, resultCode: .success, appServiceRecord: current),
            app: app)
        return "published \(serviceID) (\(type))" + (current.serviceActive ? ", active" : "")
    }

    /// UnpublishAppService (RPC 6.0+): only the provider may; REMOVED to subscribers. Another app's
    /// service or an unknown id: INVALID_ID with Core's info.
    mutating func unpublishAppService(
        _ request: AnyRPCMessage, _ unpublish: SDLUnpublishAppServiceRequest, app: AppHandle
    ) -> String {
        guard let index = self.services.firstIndex(where: { $0.serviceID == unpublish.serviceID }),
            self.services[index].provider == app
        else {
            _ = self.fail(
                request, .invalidId, "No app service with the requested service ID was published by this application",
                app: app)
            return "INVALID_ID: \(unpublish.serviceID) is not a service of this app"
        }
        self.removeService(at: index)
        self.respond(to: request, with: SDLUnpublishAppServiceResponse(success: true, resultCode: .success), app: app)
        return "unpublished \(unpublish.serviceID)"
    }

    /// GetAppServiceData, as SDL Core's `SendProviderRequest` by service type: DATA_NOT_AVAILABLE
    /// when no service of the type is active or it does not allow app consumers; IGNORED
    /// "Consumer app is same as producer app" when the asking app provides it; otherwise forwarded
    /// to the provider, whose answer goes back to the consumer. `subscribe` true or false
    /// subscribes or unsubscribes the consumer to the type's OnAppServiceData once the provider
    /// answers with success.
    mutating func getAppServiceData(
        _ request: AnyRPCMessage, _ get: SDLGetAppServiceDataRequest, app: AppHandle, now: NIODeadline
    ) -> String {
        let type = get.serviceType
        guard let service = self.services.first(where: { $0.serviceType == type && $0.record.serviceActive }),
            service.allowsAppConsumers
        else {
            return self.fail(
                request, .dataNotAvailable, "No app service provider with serviceType: \(type) is available", app: app)
        }
        guard service.provider != app else {
            return self.fail(request, .ignored, "Consumer app is same as producer app", app: app)
        }
        guard self.mayWait(app) else { return self.tooManyPending(request, app: app) }
        let correlationID = self.forward(
            request.message, of: request, from: app, to: service.provider,
            kind: .serviceData(serviceType: type, subscribe: get.subscribe),
            deadline: now + self.configuration.providerTimeout)
        return "forwarded to \(service.provider) as #\(correlationID)"
    }

    /// PerformAppServiceInteraction, as SDL Core answers it: INVALID_ID "The requested service ID
    /// does not exist"; REJECTED "The requested service ID does not allow mobile app consumers";
    /// `requestServiceActive` for an inactive service activates it when the app is in FULL, else
    /// asks the driver (no: USER_DISALLOWED "Request to activate service was denied by driver");
    /// then IGNORED "Consumer app is same as producer app" when the asking app provides the
    /// service, else the request goes to the provider without `requestServiceActive`.
    mutating func performAppServiceInteraction(
        _ request: AnyRPCMessage, _ interaction: SDLPerformAppServiceInteractionRequest, app: AppHandle,
        now: NIODeadline
    ) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        guard let index = self.services.firstIndex(where: { $0.serviceID == interaction.serviceID }) else {
            return self.fail(request, .invalidId, "The requested service ID does not exist", app: app)
        }
        let service = self.services[index]
        guard service.allowsAppConsumers else {
            return self.fail(request, .rejected, "The requested service ID does not allow mobile app consumers", app: app)
        }
        if interaction.requestServiceActive == true && !service.record.serviceActive {
            if registration.hmiLevel == .full {
                self.activateService(at: index)
            } else {
                return self.askDriver(
                    about: [service.serviceID], topic: "activate \(service.serviceType) service \(service.serviceID)",
                    for: request, from: app, waiting: .serviceActivation(serviceID: service.serviceID), now: now)
            }
        }
        return self.sendInteraction(request, interaction, from: app, now: now)
    }

    /// The part of PerformAppServiceInteraction after the activation: IGNORED to the provider
    /// itself, else the request to the provider.
    mutating func sendInteraction(
        _ request: AnyRPCMessage, _ interaction: SDLPerformAppServiceInteractionRequest, from app: AppHandle,
        now: NIODeadline
    ) -> String {
        guard let service = self.services.first(where: { $0.serviceID == interaction.serviceID }) else {
            return self.fail(
                request, .invalidId, "No app service provider with serviceId: \(interaction.serviceID) is available", app: app)
        }
        guard service.provider != app else {
            return self.fail(request, .ignored, "Consumer app is same as producer app", app: app)
        }
        guard self.mayWait(app) else { return self.tooManyPending(request, app: app) }
        var forwarded = interaction
        forwarded.requestServiceActive = nil
        let correlationID = self.forward(
            forwarded, of: request, from: app, to: service.provider, kind: .interaction,
            deadline: now + self.configuration.providerTimeout)
        return "forwarded to \(service.provider) as #\(correlationID)"
    }

    /// OnAppServiceData from a provider: sent to the apps subscribed to the service's type, when
    /// the sender's policy lists the type, the service is the sender's, active, of that type and
    /// open to app consumers; otherwise dropped, as Core drops it.
    mutating func appServiceDataChanged(_ notification: SDLOnAppServiceData, from app: AppHandle) -> String {
        let data = notification.serviceData
        guard let registration = self.apps[app]?.registration, self.policyAllowsServiceType(data.serviceType, registration)
        else {
            return "dropped: the app's policy does not list service type \(data.serviceType)"
        }
        guard let service = self.services.first(where: { $0.serviceID == data.serviceID }), service.provider == app else {
            return "dropped: \(data.serviceID) is not a service of this app"
        }
        guard service.record.serviceActive else { return "dropped: \(data.serviceID) is not active" }
        guard service.serviceType == data.serviceType else {
            return "dropped: \(data.serviceID) is a \(service.serviceType) service, not \(data.serviceType)"
        }
        guard service.allowsAppConsumers else { return "dropped: \(data.serviceID) does not allow app consumers" }
        let subscribers = self.registeredApps.filter {
            self.apps[$0]?.registration?.serviceDataSubscriptions.contains(data.serviceType) == true
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

    /// OnSystemCapabilityUpdated APP_SERVICES to every app subscribed to the capability (RPC 5.1+),
    /// as SDL Core builds it: every published service's record without `updateReason`, those
    /// updated left out of that list and appended with their reasons. (A removed service is still
    /// in the list when this is built, so it appears once, as REMOVED.)
    private mutating func broadcastServiceUpdates(_ updates: [SDLAppServiceCapability]) {
        let updatedIDs = Set(updates.map(\.updatedAppServiceRecord.serviceID))
        let unchanged = self.services.filter { !updatedIDs.contains($0.serviceID) }.map {
            SDLAppServiceCapability(updatedAppServiceRecord: $0.record)
        }
        let notification = SDLOnSystemCapabilityUpdated(
            systemCapability: SDLSystemCapability(
                systemCapabilityType: .appServices,
                appServicesCapabilities: SDLAppServicesCapabilities(appServices: unchanged + updates)))
        for app in self.registeredApps {
            guard let registration = self.apps[app]?.registration, registration.version >= .v5_1,
                registration.capabilitySubscriptions.contains(.appServices)
            else { continue }
            self.notify(notification, to: app)
        }
    }
}
