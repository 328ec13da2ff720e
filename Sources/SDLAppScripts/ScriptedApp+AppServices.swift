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

/// Where the apps of an `appservice` run meet: providers say what they published, consumers say
/// when they subscribed and when they are done, and each waits for the others with a time bound
/// (an app that fails says so, and nobody waits for it).
actor AppServiceRendezvous {
    private var records: [Int: SDLAppServiceRecord] = [:]
    private var failed: Set<Int> = []
    private var subscribed: Set<Int> = []
    private var consumedBy: [Int: Int] = [:]

    /// Provider `number` published its service.
    func published(_ number: Int, _ record: SDLAppServiceRecord) { self.records[number] = record }
    /// Provider `number` failed: its consumer does not wait for it.
    func fail(provider number: Int) { self.failed.insert(number) }
    /// A consumer of provider `number`'s service subscribed (or gave up subscribing).
    func didSubscribe(to number: Int) { self.subscribed.insert(number) }
    /// A consumer of provider `number`'s service is done.
    func consumed(_ number: Int) { self.consumedBy[number, default: 0] += 1 }

    private func wait<Value: Sendable>(within timeout: TimeAmount, _ check: () -> Value?) async -> Value? {
        let deadline = NIODeadline.now() + timeout
        while NIODeadline.now() < deadline, !Task.isCancelled {
            if let value = check() { return value }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return check()
    }

    /// Provider `number`'s record once published; nil if it failed or took longer than `timeout`.
    func record(of number: Int, within timeout: TimeAmount) async -> SDLAppServiceRecord? {
        await self.wait(within: timeout) { self.failed.contains(number) ? SDLAppServiceRecord?.none : self.records[number] } ?? nil
    }

    /// Whether a consumer subscribed to provider `number`'s service within `timeout`.
    func waitForSubscription(to number: Int, within timeout: TimeAmount) async -> Bool {
        await self.wait(within: timeout) { self.subscribed.contains(number) ? true : nil } ?? false
    }

    /// Whether a consumer of provider `number`'s service was done within `timeout`.
    func waitUntilConsumed(_ number: Int, within timeout: TimeAmount) async -> Bool {
        await self.wait(within: timeout) { (self.consumedBy[number] ?? 0) > 0 ? true : nil } ?? false
    }
}

extension ScriptedApp {
    /// The provider's part of `appservice`: discover, publish (the manager answers consumers),
    /// update the data, update it again once a consumer subscribed, wait for the consumer to be
    /// done, unpublish (RPC 6.0).
    func provide(_ kind: PublishedServiceKind, number: Int, _ rendezvous: AppServiceRendezvous) async throws(AppScriptFailure) {
        guard await self.speaks(5, 1) else {
            self.skip("app services", "RPC \(await self.rpcVersion) has none (5.1 and later)")
            await rendezvous.fail(provider: number)
            return
        }
        try await self.subscribeToAppServices()
        let answers = try await self.recordAnswers()
        defer { answers.cancel() }
        let record = try await self.publish(kind)
        await rendezvous.published(number, record)
        try await self.updateData(kind, of: record, number: 1)
        if await rendezvous.waitForSubscription(to: number, within: .seconds(30)) {
            try await self.updateData(kind, of: record, number: 2)
        } else {
            self.skip("OnAppServiceData #2", "no consumer subscribed within 30 s")
        }
        _ = await rendezvous.waitUntilConsumed(number, within: .seconds(30))
        if await self.speaks(6, 0) {
            try await self.unpublish(record)
        } else {
            self.skip("UnpublishAppService", "RPC 6.0 and later")
        }
    }

    /// The consumer's part of `appservice`, of provider `target`'s service: wait for it to be
    /// published, subscribe to the data of the active service of its type (SDL Core routes by
    /// type, to the active service; it answers IGNORED when that service is the consumer's own,
    /// an expected outcome where every app provides), see the provider's next update, interact
    /// with the provider's service by its id, unsubscribe.
    func consume(
        _ kind: PublishedServiceKind, of target: Int, _ rendezvous: AppServiceRendezvous, providesToo: Bool
    ) async throws(AppScriptFailure) {
        defer { Task { await rendezvous.consumed(target) } }
        let waitStep = "wait for service #\(target)"
        let record = try await self.step(waitStep) {
            guard let record = await rendezvous.record(of: target, within: .seconds(30)) else {
                throw self.failure(waitStep, "provider #\(target) published nothing within 30 s")
            }
            return (record, "\(record.serviceID) (\(record.serviceManifest.serviceName ?? "?"))")
        }
        let manager = try self.appServiceManager("GetAppServiceData")
        let step = "GetAppServiceData \(kind.serviceType), subscribe"
        // Core routes by type, to the active service; which one is active changes as the apps of
        // the run come to the foreground. A provider asking while its own service is active is
        // answered IGNORED: expected where every app provides.
        let observation = Observation(manager.serviceDataUpdates(ofType: kind.serviceType))
        let first: SDLAppServiceData? = try await self.step(step) {
            do {
                guard let data = try await observation.first(within: .seconds(10)) else {
                    throw self.failure(step, "no serviceData within 10 s")
                }
                return (data, "data of \(data.serviceID)")
            } catch let error as SDLManagerError where providesToo && error.resultCode == .ignored {
                return (nil, "IGNORED, as SDL Core answers: the active \(kind.serviceType) service is this app's own")
            }
        }
        await rendezvous.didSubscribe(to: target)
        var subscription: Observation<SDLAppServiceData>?
        if let data = first {
            subscription = observation
            if data.serviceID == record.serviceID {
                try await self.step("OnAppServiceData #2 of \(record.serviceID)") {
                    let update = try await observation.first(within: .seconds(10)) { kind.number(of: $0) == 2 }
                    guard update != nil else { throw self.failure("OnAppServiceData #2", "no update within 10 s") }
                    return ((), "received")
                }
            } else {
                self.skip("OnAppServiceData #2 of \(record.serviceID)", "the active \(kind.serviceType) service is \(data.serviceID)")
            }
        } else {
            await observation.stop()
        }
        let result = try await self.interact(with: record, uri: "\(kind.rawValue)://refresh")
        try self.expect(result == "done: \(kind.rawValue)://refresh", "PerformAppServiceInteraction", "result \"\(result)\"")
        if let subscription {
            try await self.unsubscribe(from: kind, ending: subscription)
        }
    }
}

extension PublishedServiceKind {
    /// The update number ``data(serviceID:number:)`` put in the data.
    func number(of data: SDLAppServiceData) -> Int? {
        let text: String? =
            switch self {
            case .weather: data.weatherServiceData?.currentForecast?.weatherSummary.map { String($0.dropFirst("update ".count)) }
            case .media: data.mediaServiceData?.mediaTitle.map { String($0.dropFirst("Track ".count)) }
            }
        return text.flatMap { Int($0) }
    }
}
