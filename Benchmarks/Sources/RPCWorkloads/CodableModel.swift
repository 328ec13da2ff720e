import Foundation

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

struct CodableClimateControlData: Codable {
    var fanSpeed: Int32?
    var currentTemperature: CodableTemperature?, desiredTemperature: CodableTemperature?
    var acEnable: Bool?, circulateAirEnable: Bool?, autoModeEnable: Bool?
    var defrostZone: String?
    var dualModeEnable: Bool?, acMaxEnable: Bool?
    var ventilationMode: String?
    var heatedSteeringWheelEnable: Bool?, heatedWindshieldEnable: Bool?, heatedRearWindowEnable: Bool?
    var heatedMirrorsEnable: Bool?, climateEnable: Bool?
}
struct CodableMassageModeData: Codable { var massageZone: String; var massageMode: String }
struct CodableMassageCushionFirmness: Codable { var cushion: String; var firmness: Int32 }
struct CodableSeatMemoryAction: Codable { var id: Int32; var label: String?; var action: String }
struct CodableSeatControlData: Codable {
    var id: String
    var heatingEnabled: Bool?, coolingEnabled: Bool?
    var heatingLevel: Int32?, coolingLevel: Int32?
    var horizontalPosition: Int32?, verticalPosition: Int32?, frontVerticalPosition: Int32?, backVerticalPosition: Int32?
    var backTiltAngle: Int32?, headSupportHorizontalPosition: Int32?, headSupportVerticalPosition: Int32?
    var massageEnabled: Bool?
    var massageMode: [CodableMassageModeData]?
    var massageCushionFirmness: [CodableMassageCushionFirmness]?
    var memory: CodableSeatMemoryAction?
}
struct CodableModuleData: Codable {
    var moduleType: String
    var moduleId: String?
    var climateControlData: CodableClimateControlData?
    var seatControlData: CodableSeatControlData?
}
struct CodableGetInteriorVehicleDataResponse: Codable {
    var moduleData: CodableModuleData?
    var resultCode: String
    var info: String?
    var success: Bool
    var isSubscribed: Bool?
}
struct CodableOnInteriorVehicleData: Codable { var moduleData: CodableModuleData }
