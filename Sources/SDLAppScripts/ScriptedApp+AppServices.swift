import NIOCore
import SDLManagers
import SDLNIO
import SDLRPC

/// The kind of app service the `appservice` script publishes.
public enum PublishedServiceKind: String, CaseIterable, Sendable {
    /// A WEATHER service (current temperature and conditions).
    case weather
    /// A MEDIA service (the playing track).
    case media

    /// The `serviceType` string of the spec.
    var serviceType: String { self == .weather ? "WEATHER" : "MEDIA" }

    func manifest(name: String) -> SDLAppServiceManifest {
        switch self {
        case .weather:
            SDLAppServiceManifest(
                serviceName: name, serviceType: self.serviceType, allowAppConsumers: true,
                weatherServiceManifest: SDLWeatherServiceManifest(currentForecastSupported: true))
        case .media:
            SDLAppServiceManifest(
                serviceName: name, serviceType: self.serviceType, allowAppConsumers: true,
                mediaServiceManifest: SDLMediaServiceManifest())
        }
    }

    /// The service's data, numbered so that an update is told apart from the one before.
    func data(serviceID: String, number: Int) -> SDLAppServiceData {
        switch self {
        case .weather:
            SDLAppServiceData(
                serviceType: self.serviceType, serviceID: serviceID,
                weatherServiceData: SDLWeatherServiceData(
                    location: SDLLocationDetails(locationName: "Loopback"),
                    currentForecast: SDLWeatherData(
                        currentTemperature: SDLTemperature(unit: .celsius, value: Double(15 + number)),
                        weatherSummary: "update \(number)")))
        case .media:
            SDLAppServiceData(
                serviceType: self.serviceType, serviceID: serviceID,
                mediaServiceData: SDLMediaServiceData(mediaTitle: "Track \(number)", mediaArtist: "swift-sdl"))
        }
    }
}

/// The app-service steps, each a call of the app's ``SDLAppServiceManager``: discover, publish
/// (answering consumers), update the data, consume it, interact, unsubscribe, unpublish.
extension ScriptedApp {
    /// Discovers the published services and subscribes to APP_SERVICES capability updates
    /// (GetSystemCapability with subscribe, RPC 5.1).
    func subscribeToAppServices() async throws(AppScriptFailure) {
        let step = "GetSystemCapability APP_SERVICES, subscribe"
        let manager = try self.appServiceManager(step)
        try await self.step(step) {
            let services = try await manager.discoverServices()
            return ((), "\(services.count) service(s) published")
        }
    }

    /// Publishes the service (PublishAppService) and returns its record; the service must be
    /// published, and active once the app is in FULL. The manager answers what consumers send it:
    /// GetAppServiceData with the data last given to ``updateData(_:of:number:)``,
    /// PerformAppServiceInteraction with a result naming the URI.
    func publish(_ kind: PublishedServiceKind) async throws(AppScriptFailure) -> SDLAppServiceRecord {
        let step = "PublishAppService \(kind.serviceType)"
        let manager = try self.appServiceManager(step)
        return try await self.step(step) {
            let handlers = SDLAppServiceHandlers(interaction: { interaction in
                SDLPerformAppServiceInteractionResponse(
                    success: true, resultCode: .success, serviceSpecificResult: "done: \(interaction.serviceUri)")
            })
            let record = try await manager.publish(kind.manifest(name: self.name), handlers: handlers)
            try self.expect(record.servicePublished, step, "servicePublished false")
            return (record, "service \(record.serviceID) published\(record.serviceActive ? " and active" : "")")
        }
    }

    /// Writes a transcript line for every request the manager answers for the app's services,
    /// until the returned task is cancelled or the session ends.
    func recordAnswers() async throws(AppScriptFailure) -> Task<Void, Never> {
        let manager = try self.appServiceManager("answer consumers")
        let served = await manager.servedRequests()
        return Task {
            for await answer in served {
                let step = "answer \(answer.request.functionName) #\(answer.request.correlationID)"
                if let error = answer.sendError {
                    self.record(step, ok: true, "not sent: \(error)")
                } else {
                    self.record(step, ok: true, answer.resultCode.map { "answered \($0)" } ?? "no response in the spec")
                }
            }
        }
    }

    /// Sends new data of the service (OnAppServiceData) to its subscribers.
    func updateData(_ kind: PublishedServiceKind, of record: SDLAppServiceRecord, number: Int) async throws(AppScriptFailure) {
        let step = "OnAppServiceData #\(number)"
        let manager = try self.appServiceManager(step)
        try await self.step(step) {
            try await manager.updateData(kind.data(serviceID: record.serviceID, number: number))
            return ((), "sent")
        }
    }

    /// Reads the service's data as a consumer and subscribes to it (the manager's first observer
    /// of the type: GetAppServiceData with `subscribe`, forwarded to the provider). The returned
    /// observation keeps the subscription until ``unsubscribe(from:ending:)``.
    func consumeData(_ kind: PublishedServiceKind) async throws(AppScriptFailure) -> (SDLAppServiceData, Observation<SDLAppServiceData>) {
        let step = "GetAppServiceData \(kind.serviceType), subscribe"
        let manager = try self.appServiceManager(step)
        return try await self.step(step) {
            let observation = Observation(manager.serviceDataUpdates(ofType: kind.serviceType))
            guard let data = try await observation.first(within: .seconds(10)) else {
                throw self.failure(step, "no serviceData within 10 s")
            }
            return ((data, observation), "data of \(data.serviceID)")
        }
    }

    /// Ends the subscription to a service type's data: the script's observer stops, and the
    /// manager, its last observer gone, unsubscribes (GetAppServiceData, subscribe false).
    func unsubscribe(from kind: PublishedServiceKind, ending observation: Observation<SDLAppServiceData>) async throws(AppScriptFailure) {
        let step = "GetAppServiceData \(kind.serviceType), unsubscribe"
        let manager = try self.appServiceManager(step)
        try await self.step(step) {
            await observation.stop()
            let ended = await holds(within: .seconds(10)) { await !manager.subscribedServiceTypes.contains(kind.serviceType) }
            try self.expect(ended, step, "still subscribed after 10 s")
            return ((), "subscribed false")
        }
    }

    /// Asks the provider for an interaction (PerformAppServiceInteraction).
    func interact(with record: SDLAppServiceRecord, uri: String) async throws(AppScriptFailure) -> String {
        let step = "PerformAppServiceInteraction \(uri)"
        let manager = try self.appServiceManager(step)
        return try await self.step(step) {
            let result = try await manager.performInteraction(serviceID: record.serviceID, uri: uri) ?? ""
            return (result, "result \"\(result)\"")
        }
    }

    /// Removes the service (UnpublishAppService, RPC 6.0).
    func unpublish(_ record: SDLAppServiceRecord) async throws(AppScriptFailure) {
        let step = "UnpublishAppService \(record.serviceID)"
        let manager = try self.appServiceManager(step)
        try await self.step(step) {
            try await manager.unpublish(record.serviceID)
            return ((), "unpublished")
        }
    }
}
