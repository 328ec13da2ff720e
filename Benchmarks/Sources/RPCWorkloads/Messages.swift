import SDLRPC

/// The messages of the RPC rows: PublishAppService with a fully populated manifest,
/// OnAppServiceData carrying a WeatherServiceData with 24 hourly forecasts, a
/// GetInteriorVehicleData response with every climate field, and an OnInteriorVehicleData with
/// every seat field.
public enum RPCSamples {
    static func image(_ name: String) -> SDLImage {
        SDLImage(value: name, imageType: .dynamic, isTemplate: false)
    }

    public static func publishAppService() -> SDLPublishAppServiceRequest {
        SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(
            serviceName: "Weather Radar Pro",
            serviceType: "WEATHER",
            serviceIcon: image("weather_radar_icon.png"),
            allowAppConsumers: true,
            rpcSpecVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0),
            handledRPCs: [39, 41, 43, 44, 45, 46, 47, 52, 53, 54, 55, 56],
            mediaServiceManifest: SDLMediaServiceManifest(),
            weatherServiceManifest: SDLWeatherServiceManifest(
                currentForecastSupported: true, maxMultidayForecastAmount: 10, maxHourlyForecastAmount: 24,
                maxMinutelyForecastAmount: 60, weatherForLocationSupported: true),
            navigationServiceManifest: SDLNavigationServiceManifest(acceptsWayPoints: true)))
    }

    static func temperature(_ value: Double) -> SDLTemperature {
        SDLTemperature(unit: .celsius, value: value)
    }

    static func weather(hour: Int32) -> SDLWeatherData {
        SDLWeatherData(
            currentTemperature: temperature(21.5 + Double(hour) / 10), temperatureHigh: temperature(25.25),
            temperatureLow: temperature(12.75), apparentTemperature: temperature(20.5),
            apparentTemperatureHigh: temperature(24), apparentTemperatureLow: temperature(11.5),
            weatherSummary: "Partly cloudy with a chance of rain in the afternoon",
            time: SDLDateTime(millisecond: 0, second: 0, minute: 0, hour: hour % 24, day: 23, month: 11, year: 2026, tz_hour: 1, tz_minute: 0),
            humidity: 0.65, cloudCover: 0.4, moonPhase: 0.25, windBearing: 270, windGust: 12.5, windSpeed: 7.25,
            nearestStormBearing: 90, nearestStormDistance: 40, precipAccumulation: 1.5, precipIntensity: 0.75,
            precipProbability: 0.3, precipType: "rain", visibility: 10.5, weatherIcon: image("partly_cloudy.png"))
    }

    public static func onAppServiceData() -> SDLOnAppServiceData {
        let location = SDLLocationDetails(
            coordinate: SDLCoordinate(latitudeDegrees: 42.331429, longitudeDegrees: -83.045753),
            locationName: "Detroit", addressLines: ["1 Woodward Ave"], locationDescription: "Downtown",
            phoneNumber: "+1 313 555 0100", locationImage: image("detroit.png"),
            searchAddress: SDLOASISAddress(
                countryName: "United States", countryCode: "US", postalCode: "48226", administrativeArea: "MI",
                subAdministrativeArea: "Wayne", locality: "Detroit", subLocality: "Downtown",
                thoroughfare: "Woodward Ave", subThoroughfare: "1"))
        return SDLOnAppServiceData(serviceData: SDLAppServiceData(
            serviceType: "WEATHER", serviceID: "weather-radar-pro-1",
            weatherServiceData: SDLWeatherServiceData(
                location: location, currentForecast: weather(hour: 12),
                hourlyForecast: (0..<24).map { weather(hour: $0) })))
    }

    public static func getInteriorVehicleDataResponse() -> SDLGetInteriorVehicleDataResponse {
        SDLGetInteriorVehicleDataResponse(
            moduleData: SDLModuleData(
                moduleType: .climate, moduleId: "34045662-a9dc-4823-8435-91056d4c26cb",
                climateControlData: SDLClimateControlData(
                    fanSpeed: 55, currentTemperature: temperature(21.5), desiredTemperature: temperature(22),
                    acEnable: true, circulateAirEnable: false, autoModeEnable: true, defrostZone: .front,
                    dualModeEnable: true, acMaxEnable: false, ventilationMode: .upper, heatedSteeringWheelEnable: false,
                    heatedWindshieldEnable: false, heatedRearWindowEnable: true, heatedMirrorsEnable: false,
                    climateEnable: true)),
            resultCode: .success, info: "climate module data", success: true, isSubscribed: true)
    }

    public static func onInteriorVehicleData() -> SDLOnInteriorVehicleData {
        SDLOnInteriorVehicleData(moduleData: SDLModuleData(
            moduleType: .seat, moduleId: "a42bf1e0-e02e-4462-912a-7d4230815f73",
            seatControlData: SDLSeatControlData(
                id: .driver, heatingEnabled: true, coolingEnabled: false, heatingLevel: 40, coolingLevel: 0,
                horizontalPosition: 55, verticalPosition: 30, frontVerticalPosition: 25, backVerticalPosition: 35,
                backTiltAngle: 60, headSupportHorizontalPosition: 50, headSupportVerticalPosition: 45,
                massageEnabled: true,
                massageMode: [
                    SDLMassageModeData(massageZone: .lumbar, massageMode: .high),
                    SDLMassageModeData(massageZone: .seatCushion, massageMode: .low),
                ],
                massageCushionFirmness: [
                    SDLMassageCushionFirmness(cushion: .topLumbar, firmness: 30),
                    SDLMassageCushionFirmness(cushion: .middleLumbar, firmness: 40),
                    SDLMassageCushionFirmness(cushion: .bottomLumbar, firmness: 50),
                    SDLMassageCushionFirmness(cushion: .backBolsters, firmness: 60),
                    SDLMassageCushionFirmness(cushion: .seatBolsters, firmness: 70),
                ],
                memory: SDLSeatMemoryAction(id: 2, label: "Driver 2", action: .restore))))
    }
}
