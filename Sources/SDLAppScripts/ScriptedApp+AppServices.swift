import NIOCore
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

/// The app-service steps: publish, answer consumers, update the data, consume it, interact,
/// unpublish.
extension ScriptedApp {
    /// Subscribes to APP_SERVICES capability updates (GetSystemCapability with subscribe, RPC 5.1).
    func subscribeToAppServices() async throws(AppScriptFailure) {
        try await self.step("GetSystemCapability APP_SERVICES, subscribe") {
            let response: SDLGetSystemCapabilityResponse = try await self.request(
                SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true))
            try self.expect(response.success, "GetSystemCapability APP_SERVICES", "\(response.resultCode)")
            let count = response.systemCapability?.appServicesCapabilities?.appServices?.count ?? 0
            return ((), "\(count) service(s) published")
        }
    }

    /// Answers what the head unit forwards to the app as a provider: GetAppServiceData with the
    /// current data, PerformAppServiceInteraction with a result naming the URI. Runs until the
    /// returned task is cancelled or the session ends.
    func answerConsumers(kind: PublishedServiceKind, serviceID: @escaping @Sendable () -> String) -> Task<Void, Never> {
        let requests = self.connection.incomingRequests(of: [.getAppServiceData, .performAppServiceInteraction])
        return Task {
            var answered = 0
            for await request in requests {
                answered += 1
                let response: any RPCMessage
                switch request.message.message {
                case is SDLGetAppServiceDataRequest:
                    response = SDLGetAppServiceDataResponse(
                        success: true, resultCode: .success, serviceData: kind.data(serviceID: serviceID(), number: answered))
                case let interaction as SDLPerformAppServiceInteractionRequest:
                    response = SDLPerformAppServiceInteractionResponse(
                        success: true, resultCode: .success, serviceSpecificResult: "done: \(interaction.serviceUri)")
                default:
                    continue
                }
                do {
                    try await self.connection.respond(response, to: request)
                    self.skipCounted("answer \(request.functionName) #\(request.correlationID)", "answered")
                } catch {
                    self.skipCounted("answer \(request.functionName) #\(request.correlationID)", "not sent: \(error)")
                }
            }
        }
    }

    private func skipCounted(_ step: String, _ outcome: String) {
        self.counters.update { $0.steps += 1 }
        self.transcript(AppTranscriptLine(app: self.name, step: step, ok: true, outcome: outcome))
    }

    /// Publishes the service (PublishAppService) and returns its record; the service must be
    /// published, and active once the app is in FULL.
    func publish(_ kind: PublishedServiceKind) async throws(AppScriptFailure) -> SDLAppServiceRecord {
        let step = "PublishAppService \(kind.serviceType)"
        return try await self.step(step) {
            let response: SDLPublishAppServiceResponse = try await self.request(
                SDLPublishAppServiceRequest(appServiceManifest: kind.manifest(name: self.name)))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            guard let record = response.appServiceRecord else {
                throw AppScriptFailure(line: AppTranscriptLine(app: self.name, step: step, ok: false, outcome: "no appServiceRecord"))
            }
            try self.expect(record.servicePublished, step, "servicePublished false")
            return (record, "service \(record.serviceID) published\(record.serviceActive ? " and active" : "")")
        }
    }

    /// Sends new data of the service (OnAppServiceData) to its subscribers.
    func updateData(_ kind: PublishedServiceKind, of record: SDLAppServiceRecord, number: Int) async throws(AppScriptFailure) {
        try await self.step("OnAppServiceData #\(number)") {
            try await self.connection.sendNotification(SDLOnAppServiceData(serviceData: kind.data(serviceID: record.serviceID, number: number)))
            return ((), "sent")
        }
    }

    /// Reads the service's data as a consumer (GetAppServiceData, forwarded to the provider) and
    /// subscribes to it.
    func consumeData(_ kind: PublishedServiceKind) async throws(AppScriptFailure) -> SDLAppServiceData {
        let step = "GetAppServiceData \(kind.serviceType), subscribe"
        return try await self.step(step) {
            let response: SDLGetAppServiceDataResponse = try await self.request(
                SDLGetAppServiceDataRequest(serviceType: kind.serviceType, subscribe: true))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            guard let data = response.serviceData else {
                throw AppScriptFailure(line: AppTranscriptLine(app: self.name, step: step, ok: false, outcome: "no serviceData"))
            }
            return (data, "data of \(data.serviceID)")
        }
    }

    /// Asks the provider for an interaction (PerformAppServiceInteraction).
    func interact(with record: SDLAppServiceRecord, uri: String) async throws(AppScriptFailure) -> String {
        let step = "PerformAppServiceInteraction \(uri)"
        return try await self.step(step) {
            let response: SDLPerformAppServiceInteractionResponse = try await self.request(
                SDLPerformAppServiceInteractionRequest(serviceUri: uri, serviceID: record.serviceID, originApp: self.name.lowercased()))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            let result = response.serviceSpecificResult ?? ""
            return (result, "result \"\(result)\"")
        }
    }

    /// Removes the service (UnpublishAppService, RPC 6.0).
    func unpublish(_ record: SDLAppServiceRecord) async throws(AppScriptFailure) {
        let step = "UnpublishAppService \(record.serviceID)"
        try await self.step(step) {
            let response: SDLUnpublishAppServiceResponse = try await self.request(SDLUnpublishAppServiceRequest(serviceID: record.serviceID))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            return ((), "unpublished")
        }
    }
}
