import SDLRPC

/// The two messages of the RPC benchmarks: PublishAppService with a fully populated manifest, and
/// OnAppServiceData carrying a WeatherServiceData with 24 hourly forecasts.
enum ProfileData {
    static func image(_ name: String) -> SDLImage {
        SDLImage(value: name, imageType: .dynamic, isTemplate: false)
    }

    static func publishAppService() -> SDLPublishAppServiceRequest {
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

    static func onAppServiceData() -> SDLOnAppServiceData {
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
}

