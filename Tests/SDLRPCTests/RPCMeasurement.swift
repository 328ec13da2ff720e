import Foundation
import NIOCore
import SDLRPC
import Testing

// Speed of the generated JSON coding against Foundation's JSONEncoder/JSONDecoder on an equivalent
// Codable model, for PublishAppService (fully populated manifest) and OnAppServiceData (weather
// service data with 24 hourly forecasts). Timing is printed, never asserted; what the tests assert
// is that both models carry the same JSON value, so the comparison is like for like.
//
// Run: SDL_RPC_MEASURE=1 swift test -c release --filter RPCMeasurement
// Self-contained so it can move to the Benchmarks package as it is.

@Suite("RPC coding measurement", .serialized)
struct RPCMeasurement {
    static var enabled: Bool { ProcessInfo.processInfo.environment["SDL_RPC_MEASURE"] == "1" }

    @Test("the Codable model is equivalent to the generated one (PublishAppService)")
    func publishAppService() throws {
        let message = MeasurementData.publishAppService()
        try message.validate()
        let ours = try message.jsonParametersText()
        let codable = try JSONDecoder().decode(CodablePublishAppService.self, from: Data(ours.utf8))
        let theirs = String(decoding: try JSONEncoder().encode(codable), as: UTF8.self)
        #expect(try sameJSON(ours, theirs))
        #expect(ours.utf8.count > 500)
        if Self.enabled {
            Self.measure("PublishAppService request", message, codable)
        }
    }

    @Test("the Codable model is equivalent to the generated one (OnAppServiceData, 24 hourly forecasts)")
    func onAppServiceData() throws {
        let message = MeasurementData.onAppServiceData()
        try message.validate()
        #expect(message.serviceData.weatherServiceData?.hourlyForecast?.count == 24)
        let ours = try message.jsonParametersText()
        let codable = try JSONDecoder().decode(CodableOnAppServiceData.self, from: Data(ours.utf8))
        let theirs = String(decoding: try JSONEncoder().encode(codable), as: UTF8.self)
        #expect(try sameJSON(ours, theirs))
        if Self.enabled {
            Self.measure("OnAppServiceData weather x24", message, codable)
        }
    }

    static func measure<M: RPCStruct, C: Codable>(_ name: String, _ message: M, _ codable: C) {
        let json = try! message.jsonParameters()
        let data = try! JSONEncoder().encode(codable)
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let unchecked = RPCCodingOptions(validate: false)
        var sink = 0
        let results = [
            ("encode SDLRPC (validating)", nsPerOp { sink &+= try! message.jsonParameters().readableBytes }),
            ("encode SDLRPC (no validation)", nsPerOp { sink &+= try! message.jsonParameters(options: unchecked).readableBytes }),
            ("encode Foundation JSONEncoder", nsPerOp { sink &+= try! encoder.encode(codable).count }),
            ("decode SDLRPC (validating)", nsPerOp { sink &+= try! M(jsonParameters: json).unknownParameters.count }),
            ("decode SDLRPC (no validation)", nsPerOp { sink &+= try! M(jsonParameters: json, options: unchecked).unknownParameters.count }),
            ("decode Foundation JSONDecoder", nsPerOp { blackHole(try! decoder.decode(C.self, from: data)) }),
        ]
        print("== \(name): \(json.readableBytes) bytes of JSON (Foundation: \(data.count))")
        for (label, ns) in results {
            print("   \(label): \(Int(ns)) ns/op")
        }
        print("   encode speed-up: \(String(format: "%.1f", results[2].1 / results[0].1))x, decode speed-up: \(String(format: "%.1f", results[5].1 / results[3].1))x (validating)")
        precondition(sink != 0)
    }

    /// The fastest of 25 rounds of ~40 ms each, after a warm-up: the minimum is what the code
    /// costs when nothing else on the machine interferes.
    static func nsPerOp(_ body: () -> Void) -> Double {
        let clock = ContinuousClock()
        var iterations = 1
        while true {
            let elapsed = clock.measure { for _ in 0..<iterations { body() } }
            if elapsed > .milliseconds(40) { break }
            iterations *= 2
        }
        var best = Double.infinity
        for _ in 0..<25 {
            let elapsed = clock.measure { for _ in 0..<iterations { body() } }
            let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            best = min(best, ns / Double(iterations))
        }
        return best
    }
}

enum MeasurementData {
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

@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

// MARK: The equivalent Codable model (what an app would write with Foundation)

enum CodableImageType: String, Codable { case STATIC, DYNAMIC }
enum CodableTemperatureUnit: String, Codable { case FAHRENHEIT, CELSIUS }

struct CodableImage: Codable { var value: String; var imageType: CodableImageType; var isTemplate: Bool? }
struct CodableSyncMsgVersion: Codable { var majorVersion: Int32; var minorVersion: Int32; var patchVersion: Int32? }
struct CodableMediaServiceManifest: Codable {}
struct CodableWeatherServiceManifest: Codable {
    var currentForecastSupported: Bool?
    var maxMultidayForecastAmount: Int32?
    var maxHourlyForecastAmount: Int32?
    var maxMinutelyForecastAmount: Int32?
    var weatherForLocationSupported: Bool?
}
struct CodableNavigationServiceManifest: Codable { var acceptsWayPoints: Bool? }
struct CodableAppServiceManifest: Codable {
    var serviceName: String?
    var serviceType: String
    var serviceIcon: CodableImage?
    var allowAppConsumers: Bool?
    var rpcSpecVersion: CodableSyncMsgVersion?
    var handledRPCs: [Int32]?
    var mediaServiceManifest: CodableMediaServiceManifest?
    var weatherServiceManifest: CodableWeatherServiceManifest?
    var navigationServiceManifest: CodableNavigationServiceManifest?
}
struct CodablePublishAppService: Codable { var appServiceManifest: CodableAppServiceManifest }

struct CodableTemperature: Codable { var unit: CodableTemperatureUnit; var value: Double }
struct CodableDateTime: Codable {
    var millisecond: Int32?, second: Int32?, minute: Int32?, hour: Int32?, day: Int32?, month: Int32?, year: Int32?
    var tz_hour: Int32?, tz_minute: Int32?
}
struct CodableWeatherData: Codable {
    var currentTemperature: CodableTemperature?, temperatureHigh: CodableTemperature?, temperatureLow: CodableTemperature?
    var apparentTemperature: CodableTemperature?, apparentTemperatureHigh: CodableTemperature?, apparentTemperatureLow: CodableTemperature?
    var weatherSummary: String?
    var time: CodableDateTime?
    var humidity: Double?, cloudCover: Double?, moonPhase: Double?
    var windBearing: Int32?
    var windGust: Double?, windSpeed: Double?
    var nearestStormBearing: Int32?, nearestStormDistance: Int32?
    var precipAccumulation: Double?, precipIntensity: Double?, precipProbability: Double?
    var precipType: String?
    var visibility: Double?
    var weatherIcon: CodableImage?
}
struct CodableCoordinate: Codable { var latitudeDegrees: Double; var longitudeDegrees: Double }
struct CodableOASISAddress: Codable {
    var countryName: String?, countryCode: String?, postalCode: String?, administrativeArea: String?
    var subAdministrativeArea: String?, locality: String?, subLocality: String?, thoroughfare: String?, subThoroughfare: String?
}
struct CodableLocationDetails: Codable {
    var coordinate: CodableCoordinate?
    var locationName: String?
    var addressLines: [String]?
    var locationDescription: String?
    var phoneNumber: String?
    var locationImage: CodableImage?
    var searchAddress: CodableOASISAddress?
}
struct CodableWeatherAlert: Codable {
    var title: String?, summary: String?
    var expires: CodableDateTime?
    var regions: [String]?
    var severity: String?
    var timeIssued: CodableDateTime?
}
struct CodableWeatherServiceData: Codable {
    var location: CodableLocationDetails
    var currentForecast: CodableWeatherData?
    var minuteForecast: [CodableWeatherData]?
    var hourlyForecast: [CodableWeatherData]?
    var multidayForecast: [CodableWeatherData]?
    var alerts: [CodableWeatherAlert]?
}
struct CodableAppServiceData: Codable {
    var serviceType: String
    var serviceID: String
    var weatherServiceData: CodableWeatherServiceData?
}
struct CodableOnAppServiceData: Codable { var serviceData: CodableAppServiceData }
