import NIOConcurrencyHelpers
import NIOCore
@testable import SDLManagers
import SDLNIO
import SDLRPC
import SDLTestHeadUnit
import Testing

extension TestHeadUnit {
    /// The app-service requests sent, described.
    func serviceRequests(from app: AppHandle? = nil) -> [String] {
        self.log.requests(from: app).compactMap { message -> String? in
            switch message.message {
            case let get as SDLGetAppServiceDataRequest:
                return "GetAppServiceData \(get.serviceType) subscribe=\(get.subscribe.map(String.init) ?? "nil")"
            case let publish as SDLPublishAppServiceRequest:
                return "PublishAppService \(publish.appServiceManifest.serviceType)"
            case let interaction as SDLPerformAppServiceInteractionRequest:
                return "PerformAppServiceInteraction \(interaction.serviceID) \(interaction.serviceUri)"
            case let unpublish as SDLUnpublishAppServiceRequest:
                return "UnpublishAppService \(unpublish.serviceID)"
            case let get as SDLGetSystemCapabilityRequest:
                return "GetSystemCapability \(get.systemCapabilityType.wireName) subscribe=\(get.subscribe.map(String.init) ?? "nil")"
            case is SDLRegisterAppInterfaceRequest:
                return nil
            default:
                return message.functionName
            }
        }
    }
}

/// A registered app with an app-service manager.
struct ServiceApp {
    let connection: SDLAppConnection
    let manager: SDLAppServiceManager
    let handle: AppHandle

    static func start(on headUnit: TestHeadUnit, name: String, appID: String, hmiTypes: [SDLAppHMIType] = [.information]) async throws -> ServiceApp {
        let (connection, request) = try await headUnit.connect(name, appID: appID, hmiTypes: hmiTypes)
        let manager = SDLAppServiceManager(connection: connection, appID: appID)
        try await connection.register(request)
        return ServiceApp(connection: connection, manager: manager, handle: headUnit.lastRegisteredApp!)
    }
}

func weather(_ serviceID: String, _ city: String, _ temperature: Double) -> SDLAppServiceData {
    SDLAppServiceData(
        serviceType: "WEATHER", serviceID: serviceID,
        weatherServiceData: SDLWeatherServiceData(
            location: SDLLocationDetails(locationName: city),
            currentForecast: SDLWeatherData(currentTemperature: SDLTemperature(unit: .celsius, value: temperature))))
}

/// The app-service manager: one app publishes, another consumes, through the simulated head unit
/// over loopback.
@Suite(.timeLimit(.minutes(1)))
struct AppServiceManagerTests {
    static let manifest = SDLAppServiceManifest(
        serviceName: "Weather Now", serviceType: "WEATHER", allowAppConsumers: true,
        weatherServiceManifest: SDLWeatherServiceManifest(currentForecastSupported: true))

    @Test("publish, push data, answer GetAppServiceData and interactions; discover, subscribe, interact", arguments: [RPCVersion.v5_1, .v6_0, .v8_0])
    func publishAndConsume(version: RPCVersion) async throws {
        let headUnit = try await TestHeadUnit.start(version: version)
        let provider = try await ServiceApp.start(on: headUnit, name: "Weather", appID: "weather-1")
        let consumer = try await ServiceApp.start(on: headUnit, name: "Dashboard", appID: "dash-1")
        let origins = NIOLockedValueBox<[String]>([])
        let served = await provider.manager.servedRequests()
        let record = try await provider.manager.publish(
            Self.manifest,
            handlers: SDLAppServiceHandlers(interaction: { request in
                origins.withLockedValue { $0.append(request.originApp) }
                return SDLPerformAppServiceInteractionResponse(
                    success: true, resultCode: .success, serviceSpecificResult: "done \(request.serviceUri)")
            }))
        #expect(record.serviceID == "weather-1")
        #expect(record.serviceActive)
        #expect(headUnit.serviceRequests(from: provider.handle) == [
            "PublishAppService WEATHER", "GetSystemCapability APP_SERVICES subscribe=true",
        ])
        #expect(await provider.manager.publishedServices.map(\.serviceID) == ["weather-1"])

        // Discovery: the record, the active service of its type.
        let services = try await consumer.manager.discoverServices()
        #expect(services.map(\.serviceID) == ["weather-1"])
        #expect(await consumer.manager.activeService(ofType: "WEATHER")?.serviceID == "weather-1")
        #expect(await consumer.manager.activeService(ofType: "MEDIA") == nil)

        // Before any data the default handler has none.
        let early = await #expect(throws: SDLManagerError.self) { try await consumer.manager.serviceData(ofType: "WEATHER") }
        #expect(early?.resultCode == .dataNotAvailable)

        try await provider.manager.updateData(weather("weather-1", "Berlin", 21))
        let once = try await consumer.manager.serviceData(ofType: "WEATHER")
        #expect(once.weatherServiceData?.location.locationName == "Berlin")

        // Subscribing: the provider's answer first, then each push.
        var updates = consumer.manager.serviceDataUpdates(ofType: "WEATHER").makeAsyncIterator()
        #expect(try await updates.next()?.weatherServiceData?.currentForecast?.currentTemperature?.value == 21)
        #expect(await consumer.manager.subscribedServiceTypes == ["WEATHER"])
        try await provider.manager.updateData(weather("weather-1", "Berlin", 23))
        #expect(try await updates.next()?.weatherServiceData?.currentForecast?.currentTemperature?.value == 23)

        // An action, answered by the provider's handler; the head unit names the consumer.
        let result = try await consumer.manager.performInteraction(serviceID: "weather-1", uri: "weather://refresh")
        #expect(result == "done weather://refresh")
        #expect(origins.withLockedValue { $0 } == ["dash-1"])

        // The last observer leaves: unsubscribed.
        updates = consumer.manager.serviceDataUpdates(ofType: "NONE").makeAsyncIterator()
        try await eventually("unsubscribed") { await consumer.manager.subscribedServiceTypes.isEmpty }
        #expect(headUnit.serviceRequests(from: consumer.handle) == [
            "GetSystemCapability APP_SERVICES subscribe=true", "GetAppServiceData WEATHER subscribe=nil",
            "GetAppServiceData WEATHER subscribe=nil", "GetAppServiceData WEATHER subscribe=true",
            "PerformAppServiceInteraction weather-1 weather://refresh", "GetAppServiceData WEATHER subscribe=false",
        ])
        // Every answer (a failure included) counts, on each side; the provider's log has what
        // it answered, in order.
        #expect(consumer.manager.answeredRequests == 6)
        #expect(provider.manager.answeredRequests == 2)
        var log: [String] = []
        for await answer in served {
            log.append("\(answer.request.functionName) #\(answer.request.correlationID) \(answer.resultCode?.wireName ?? "nil") \(answer.answered)")
            if log.count == 5 { break }
        }
        #expect(log == [
            "GetAppServiceData #1 DATA_NOT_AVAILABLE true", "GetAppServiceData #2 SUCCESS true", "GetAppServiceData #3 SUCCESS true",
            "PerformAppServiceInteraction #4 SUCCESS true", "GetAppServiceData #5 SUCCESS true",
        ])
        // Data of a service this app does not publish is refused before sending.
        await #expect(throws: SDLManagerError(.unknownService, "")) { try await consumer.manager.updateData(weather("weather-1", "Paris", 9)) }
        _ = updates
        await provider.connection.close()
        await consumer.connection.close()
        await headUnit.stop()
    }

    @Test("handledRPCs: a consumer's ButtonPress reaches the media provider's handler and its answer comes back")
    func handledRPCs() async throws {
        let headUnit = try await TestHeadUnit.start()
        let provider = try await ServiceApp.start(on: headUnit, name: "Player", appID: "player-1", hmiTypes: [.media])
        let consumer = try await ServiceApp.start(on: headUnit, name: "Remote", appID: "remote-1")
        let pressed = NIOLockedValueBox<[String]>([])
        let manifest = SDLAppServiceManifest(
            serviceName: "Player", serviceType: "MEDIA", allowAppConsumers: true,
            handledRPCs: [Int32(FunctionID.buttonPress.rawValue)], mediaServiceManifest: SDLMediaServiceManifest())
        try await provider.manager.publish(manifest, handlers: SDLAppServiceHandlers(rpc: { request in
            guard let press = request.message as? SDLButtonPressRequest else { return nil }
            pressed.withLockedValue { $0.append(press.buttonName.wireName) }
            return SDLButtonPressResponse(resultCode: .success, success: true)
        }))
        let _: SDLButtonPressResponse = try await consumer.manager.send(
            SDLButtonPressRequest(moduleType: .audio, buttonName: .seekright, buttonPressMode: .short))
        #expect(pressed.withLockedValue { $0 } == ["SEEKRIGHT"])
        // The provider has no interaction handler: UNSUPPORTED_REQUEST.
        let error = await #expect(throws: SDLManagerError.self) {
            try await consumer.manager.performInteraction(serviceID: "media-1", uri: "media://next")
        }
        #expect(error?.resultCode == .unsupportedRequest)
        await provider.connection.close()
        await consumer.connection.close()
        await headUnit.stop()
    }

    @Test("manifest updates and unpublishing (6.0+) reach consumers with their update reasons; refused before 6.0", arguments: [RPCVersion.v5_1, .v8_0])
    func updateAndUnpublish(version: RPCVersion) async throws {
        let headUnit = try await TestHeadUnit.start(version: version)
        let provider = try await ServiceApp.start(on: headUnit, name: "Weather", appID: "weather-1")
        let consumer = try await ServiceApp.start(on: headUnit, name: "Dashboard", appID: "dash-1")
        try await consumer.manager.discoverServices()
        let updates = await consumer.manager.serviceUpdates()
        try await provider.manager.publish(Self.manifest)
        var manifest = Self.manifest
        manifest.weatherServiceManifest?.maxHourlyForecastAmount = 24
        if version >= .v6_0 {
            let record = try await provider.manager.updateManifest(manifest)
            #expect(record.serviceManifest.weatherServiceManifest?.maxHourlyForecastAmount == 24)
            try await provider.manager.unpublish("weather-1")
            var reasons: [String] = []
            for await update in updates {
                reasons.append(update.updateReason?.wireName ?? "nil")
                if reasons.count == 4 { break }
            }
            #expect(reasons == ["PUBLISHED", "ACTIVATED", "MANIFEST_UPDATE", "REMOVED"])
            #expect(await consumer.manager.services.isEmpty)
            #expect(await provider.manager.publishedServices.isEmpty)
        } else {
            await #expect(throws: SDLManagerError(.unsupportedVersion, "")) { try await provider.manager.updateManifest(manifest) }
            await #expect(throws: SDLManagerError(.unsupportedVersion, "")) { try await provider.manager.unpublish("weather-1") }
            try await eventually("published seen") { await consumer.manager.activeService(ofType: "WEATHER") != nil }
            #expect(headUnit.serviceRequests(from: provider.handle) == [
                "PublishAppService WEATHER", "GetSystemCapability APP_SERVICES subscribe=true",
            ])
        }
        await provider.connection.close()
        await consumer.connection.close()
        await headUnit.stop()
    }

    @Test("before RPC 5.1 every call fails at once and nothing is sent")
    func olderHeadUnit() async throws {
        let headUnit = try await TestHeadUnit.start(version: .v5_0)
        let app = try await ServiceApp.start(on: headUnit, name: "Weather", appID: "weather-1")
        let error = await #expect(throws: SDLManagerError.self) { try await app.manager.publish(Self.manifest) }
        #expect(error?.code == .unsupportedVersion)
        #expect(error?.detail == "PublishAppService needs RPC 5.1.0; the head unit speaks 5.0.0")
        await #expect(throws: SDLManagerError(.unsupportedVersion, "")) { try await app.manager.discoverServices() }
        await #expect(throws: SDLManagerError(.unsupportedVersion, "")) {
            for try await _ in app.manager.serviceDataUpdates(ofType: "WEATHER") {}
        }
        #expect(headUnit.serviceRequests() == [])
        await app.connection.close()
        await headUnit.stop()
    }

    @Test("the head unit drops the connection mid-subscription: the consumer's observer ends with an error")
    func dropMidSubscription() async throws {
        let headUnit = try await TestHeadUnit.start()
        let provider = try await ServiceApp.start(on: headUnit, name: "Weather", appID: "weather-1")
        let consumer = try await ServiceApp.start(on: headUnit, name: "Dashboard", appID: "dash-1")
        try await provider.manager.publish(Self.manifest)
        try await provider.manager.updateData(weather("weather-1", "Oslo", 3))
        var updates = consumer.manager.serviceDataUpdates(ofType: "WEATHER").makeAsyncIterator()
        #expect(try await updates.next()?.weatherServiceData?.location.locationName == "Oslo")
        await headUnit.stop()
        let error = await #expect(throws: SDLManagerError.self) { while try await updates.next() != nil {} }
        #expect(error?.code == .disconnected)
        await #expect(throws: SDLManagerError(.disconnected, "")) { try await consumer.manager.serviceData(ofType: "WEATHER") }
        #expect(await consumer.manager.subscribedServiceTypes.isEmpty)
    }
}
