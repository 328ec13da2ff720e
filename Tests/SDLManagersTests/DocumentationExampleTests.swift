import SDLManagers
import SDLNIO
import SDLRPC
import SDLTestHeadUnit
import Testing

/// The README's and the SDLManagers catalog's examples, run against the simulated head unit over
/// loopback so that they stay true.
@Suite(.timeLimit(.minutes(1)))
struct DocumentationExampleTests {
    @Test func theRemoteControlExampleRuns() async throws {
        let headUnit = try await TestHeadUnit.start()
        let port = headUnit.server.primaryPort

        // --- the README's text, from here (port 12345 there)
        let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: port)
        let request = SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Climate",
            isMediaApplication: false, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs,
            appHMIType: [.remoteControl], appID: "climate-1")
        // Made before registering, the manager hears the OnRCStatus that follows the registration.
        let remoteControl = SDLRemoteControlManager(connection: app, registeredWith: request)
        try await app.register(request)

        let modules = try await remoteControl.start()   // CLIMATE/climate.front, CLIMATE/climate.rear, …
        let climate = try await remoteControl.moduleData(.climate)   // the default climate module, once
        // On RPC 6.0+ consent is asked first; data of another type or an unknown id is refused unsent.
        try await remoteControl.setModuleData(SDLModuleData(
            moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 40)))
        for try await data in remoteControl.moduleDataUpdates(.climate) {   // subscribes on first use
            if data.climateControlData?.fanSpeed == 40 { break }              // the last one out unsubscribes
        }
        let holds = await remoteControl.allocatedModules                      // from OnRCStatus
        // --- to here

        #expect(modules.modules.prefix(2).map(\.description) == ["CLIMATE/climate.front", "CLIMATE/climate.rear"])
        #expect(climate.climateControlData?.fanSpeed == 30)
        #expect(holds == nil || holds == [SDLRCModule(.climate, "climate.front")])
        try await eventually("allocated") { await remoteControl.allocatedModules == [SDLRCModule(.climate, "climate.front")] }
        try await eventually("unsubscribed") { await remoteControl.subscribedModules.isEmpty }
        #expect(headUnit.sent() == [
            "GetSystemCapability REMOTE_CONTROL subscribe=true", "GetSystemCapability SEAT_LOCATION subscribe=true",
            "GetInteriorVehicleData CLIMATE climate.front subscribe=nil",
            "GetInteriorVehicleDataConsent CLIMATE [\"climate.front\"]", "SetInteriorVehicleData CLIMATE climate.front",
            "GetInteriorVehicleData CLIMATE climate.front subscribe=true",
            "GetInteriorVehicleData CLIMATE climate.front subscribe=false",
        ])
        await app.close()
        await headUnit.stop()
    }

    @Test func theAppServiceExampleRuns() async throws {
        let headUnit = try await TestHeadUnit.start()
        let weatherApp = try await ServiceApp.start(on: headUnit, name: "Weather Now", appID: "weather-now").connection
        let dashboardApp = try await ServiceApp.start(on: headUnit, name: "Dashboard", appID: "dashboard").connection

        // --- the README's text, from here
        // The provider app.
        let provider = SDLAppServiceManager(connection: weatherApp, appID: "weather-now")
        let record = try await provider.publish(
            SDLAppServiceManifest(
                serviceName: "Weather Now", serviceType: "WEATHER", allowAppConsumers: true,
                weatherServiceManifest: SDLWeatherServiceManifest(currentForecastSupported: true)),
            handlers: SDLAppServiceHandlers(interaction: { request in
                SDLPerformAppServiceInteractionResponse(success: true, resultCode: .success, serviceSpecificResult: "refreshed")
            }))
        try await provider.updateData(SDLAppServiceData(
            serviceType: "WEATHER", serviceID: record.serviceID,
            weatherServiceData: SDLWeatherServiceData(location: SDLLocationDetails(locationName: "Berlin"))))

        // A consumer app.
        let consumer = SDLAppServiceManager(connection: dashboardApp, appID: "dashboard")
        let weather = try await consumer.discoverServices().first { $0.serviceManifest.serviceType == "WEATHER" }
        for try await data in consumer.serviceDataUpdates(ofType: "WEATHER") {   // GetAppServiceData subscribe
            if data.weatherServiceData?.location.locationName == "Berlin" { break }
        }
        let result = try await consumer.performInteraction(serviceID: weather!.serviceID, uri: "weather://refresh")
        // --- to here

        #expect(record.serviceID == "weather-1")
        #expect(weather?.serviceActive == true)
        #expect(result == "refreshed")
        await weatherApp.close()
        await dashboardApp.close()
        await headUnit.stop()
    }

    /// The catalog's getting-started article.
    @Test func gettingStartedRuns() async throws {
        let headUnit = try await TestHeadUnit.start()
        let (app, _) = try await headUnit.connect()
        let provider = try await ServiceApp.start(on: headUnit, name: "Weather Now", appID: "weather-now")
        let published = try await provider.manager.publish(
            SDLAppServiceManifest(serviceName: "Weather Now", serviceType: "WEATHER", allowAppConsumers: true))
        try await provider.manager.updateData(SDLAppServiceData(
            serviceType: "WEATHER", serviceID: published.serviceID,
            weatherServiceData: SDLWeatherServiceData(location: SDLLocationDetails(locationName: "Rome"))))

        // --- GettingStarted.md, from here
        let request = SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Climate",
            isMediaApplication: false, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs,
            appHMIType: [.remoteControl], appID: "climate-1")
        let remoteControl = SDLRemoteControlManager(connection: app, registeredWith: request)
        try await app.register(request)
        let modules = try await remoteControl.start()
        let front = modules.module(.climate)                          // the default climate module
        try await remoteControl.setModuleData(SDLModuleData(
            moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 40)))
        for try await data in remoteControl.moduleDataUpdates(.climate) {
            if data.climateControlData?.fanSpeed == 40 { break }
        }

        let consumer = SDLAppServiceManager(connection: app, appID: "dashboard")
        let services = try await consumer.discoverServices()
        for try await data in consumer.serviceDataUpdates(ofType: "WEATHER") {
            if data.weatherServiceData != nil { break }
        }
        // --- to here

        #expect(front == SDLRCModule(.climate, "climate.front"))
        #expect(services.map(\.serviceID) == ["weather-1"])
        await app.close()
        await provider.connection.close()
        await headUnit.stop()
    }
}
