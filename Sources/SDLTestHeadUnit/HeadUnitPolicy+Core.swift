import SDLRPC

extension HeadUnitPolicy {
    /// SDL Core 8.2.0's stock policy table (`src/appMain/sdl_preloaded_pt.json` of its 8.2.0 tag),
    /// the parts the simulator applies: all 28 functional groups with their RPCs, HMI levels and
    /// parameters, and the `default` (Base-4), `device` (DataConsent-2) and `pre_DataConsent`
    /// (BaseBeforeDataConsent) app policies, each with `default_hmi` NONE.
    ///
    /// With it an app gets what it gets from a Core that runs its stock table: Base-4 alone, so no
    /// remote control and no app services. Use ``standard`` for those.
    public static let sdlCore = HeadUnitPolicy(
        functionalGroupings: coreGroups,
        appPolicies: [
            "default": AppPolicy(groups: ["Base-4"]),
            "device": AppPolicy(groups: ["DataConsent-2"]),
            "pre_DataConsent": AppPolicy(groups: ["BaseBeforeDataConsent"]),
        ])

    /// The simulator's default table: SDL Core 8.2.0's functional groups (``sdlCore``), with a
    /// `default` app policy that also grants RemoteControl, AppServiceProvider and
    /// AppServiceConsumer, every module type (`moduleType` empty) and the three app-service types
    /// of the spec (MEDIA, WEATHER, NAVIGATION) under any name, handling any request of the spec.
    /// This is how Core is set up for remote-control and app-service apps (the Core of the
    /// `core82-sessions` captures gave apps these groups).
    public static let standard: HeadUnitPolicy = {
        var policy = HeadUnitPolicy.sdlCore
        let anyRequest = RPCRegistry.allMessageTypes
            .filter { $0.rpcType == .request }
            .map { Int32(truncatingIfNeeded: $0.functionID.rawValue) }
            .sorted()
        let service = AppServiceRule(serviceNames: nil, handledRPCs: anyRequest)
        policy.appPolicies["default"] = AppPolicy(
            groups: ["Base-4", "RemoteControl", "AppServiceProvider", "AppServiceConsumer"], moduleTypes: [],
            appServices: ["MEDIA": service, "WEATHER": service, "NAVIGATION": service])
        return policy
    }()

    private static func group(_ name: String, consent: String? = nil, _ rpcs: [(String, RPCRule)]) -> (String, FunctionalGroup) {
        (name, FunctionalGroup(userConsentPrompt: consent, rpcs: Dictionary(uniqueKeysWithValues: rpcs)))
    }

    private static func rpc(_ name: String, _ levels: Levels, parameters: [String]? = nil) -> (String, RPCRule) {
        (name, RPCRule(hmiLevels: levels.set, parameters: parameters))
    }

    /// The combinations of HMI levels the stock table uses: b(ackground), f(ull), l(imited), n(one).
    private enum Levels {
        case b, f, fl, bfl, bfln

        var set: Set<SDLHMILevel> {
            switch self {
            case .b: [.background]
            case .f: [.full]
            case .fl: [.full, .limited]
            case .bfl: [.background, .full, .limited]
            case .bfln: [.background, .full, .limited, .none_]
            }
        }
    }

    private static let coreGroups: [String: FunctionalGroup] = Dictionary(uniqueKeysWithValues: [
        group("Base-4", [
            rpc("AddCommand", .bfl),
            rpc("AddSubMenu", .bfl),
            rpc("ShowAppMenu", .f),
            rpc("Alert", .fl),
            rpc("SubtleAlert", .bfl),
            rpc("OnSubtleAlertPressed", .bfl),
            rpc("ChangeRegistration", .bfln),
            rpc("CreateInteractionChoiceSet", .bfl),
            rpc("DeleteCommand", .bfl),
            rpc("DeleteFile", .bfln),
            rpc("DeleteInteractionChoiceSet", .bfl),
            rpc("DeleteSubMenu", .bfl),
            rpc("EncodedSyncPData", .bfln),
            rpc("EndAudioPassThru", .bfl),
            rpc("GenericResponse", .bfl),
            rpc("GetSystemCapability", .bfln),
            rpc("ListFiles", .bfln),
            rpc("OnAppCapabilityUpdated", .bfl),
            rpc("OnAppInterfaceUnregistered", .bfln),
            rpc("OnAudioPassThru", .bfl),
            rpc("OnButtonEvent", .bfl),
            rpc("OnButtonPress", .bfl),
            rpc("OnCommand", .bfl),
            rpc("OnDriverDistraction", .bfln),
            rpc("OnEncodedSyncPData", .bfln),
            rpc("OnHashChange", .bfln),
            rpc("OnHMIStatus", .bfln),
            rpc("OnLanguageChange", .bfln),
            rpc("OnPermissionsChange", .bfln),
            rpc("OnSystemRequest", .bfln),
            rpc("OnSystemCapabilityUpdated", .bfln),
            rpc("PerformAudioPassThru", .fl),
            rpc("PerformInteraction", .fl),
            rpc("PutFile", .bfln),
            rpc("RegisterAppInterface", .bfln),
            rpc("ResetGlobalProperties", .bfln),
            rpc("ScrollableMessage", .f),
            rpc("SetAppIcon", .bfln),
            rpc("SetDisplayLayout", .bfln),
            rpc("SetGlobalProperties", .bfln),
            rpc("SetMediaClockTimer", .bfl),
            rpc("Show", .bfl),
            rpc("Slider", .f),
            rpc("Speak", .fl),
            rpc("SubscribeButton", .bfl),
            rpc("SystemRequest", .bfln),
            rpc("UnregisterAppInterface", .bfln),
            rpc("UnsubscribeButton", .bfl),
            rpc("CancelInteraction", .bfl),
            rpc("CloseApplication", .bfl),
            rpc("OnUpdateFile", .bfl),
            rpc("OnUpdateSubMenu", .bfl),
        ]),
        group("Location-1", consent: "Location", [
            rpc("GetVehicleData", .bfl, parameters: ["gps", "speed"]),
            rpc("OnVehicleData", .bfl, parameters: ["gps", "speed"]),
            rpc("SubscribeVehicleData", .bfl, parameters: ["gps", "speed"]),
            rpc("UnsubscribeVehicleData", .bfl, parameters: ["gps", "speed"]),
        ]),
        group("Notifications", consent: "Notifications", [
            rpc("Alert", .b),
        ]),
        group("Notifications-RC", [
            rpc("OnHMIStatus", .bfln),
            rpc("OnPermissionsChange", .bfln),
            rpc("OnSystemRequest", .bfln),
        ]),
        group("DrivingCharacteristics-3", consent: "DrivingCharacteristics", [
            rpc("GetVehicleData", .bfl, parameters: ["accPedalPosition", "beltStatus", "electronicParkBrakeStatus", "driverBraking", "myKey", "prndl", "rpm", "steeringWheelAngle", "gearStatus", "seatOccupancy", "handsOffSteering"]),
            rpc("OnVehicleData", .bfl, parameters: ["accPedalPosition", "beltStatus", "electronicParkBrakeStatus", "driverBraking", "myKey", "prndl", "rpm", "steeringWheelAngle", "gearStatus", "seatOccupancy", "handsOffSteering"]),
            rpc("SubscribeVehicleData", .bfl, parameters: ["accPedalPosition", "beltStatus", "electronicParkBrakeStatus", "driverBraking", "myKey", "prndl", "rpm", "steeringWheelAngle", "gearStatus", "seatOccupancy", "handsOffSteering"]),
            rpc("UnsubscribeVehicleData", .bfl, parameters: ["accPedalPosition", "beltStatus", "electronicParkBrakeStatus", "driverBraking", "myKey", "prndl", "rpm", "steeringWheelAngle", "gearStatus", "seatOccupancy", "handsOffSteering"]),
        ]),
        group("VehicleInfo-3", consent: "VehicleInfo", [
            rpc("GetVehicleData", .bfl, parameters: ["bodyInformation", "deviceStatus", "engineOilLife", "engineTorque", "climateData", "externalTemperature", "turnSignal", "fuelLevel", "fuelLevel_State", "headLampStatus", "instantFuelConsumption", "fuelRange", "cloudAppVehicleID", "odometer", "tirePressure", "vin", "wiperStatus", "stabilityControlsStatus", "windowStatus"]),
            rpc("OnVehicleData", .bfl, parameters: ["bodyInformation", "deviceStatus", "engineOilLife", "engineTorque", "climateData", "externalTemperature", "turnSignal", "fuelLevel", "fuelLevel_State", "headLampStatus", "instantFuelConsumption", "fuelRange", "cloudAppVehicleID", "odometer", "tirePressure", "vin", "wiperStatus", "stabilityControlsStatus", "windowStatus"]),
            rpc("SubscribeVehicleData", .bfl, parameters: ["bodyInformation", "deviceStatus", "engineOilLife", "engineTorque", "climateData", "externalTemperature", "turnSignal", "fuelLevel", "fuelLevel_State", "headLampStatus", "instantFuelConsumption", "fuelRange", "cloudAppVehicleID", "odometer", "tirePressure", "wiperStatus", "stabilityControlsStatus", "windowStatus"]),
            rpc("UnsubscribeVehicleData", .bfl, parameters: ["bodyInformation", "deviceStatus", "engineOilLife", "engineTorque", "climateData", "externalTemperature", "turnSignal", "fuelLevel", "fuelLevel_State", "headLampStatus", "instantFuelConsumption", "fuelRange", "cloudAppVehicleID", "odometer", "tirePressure", "wiperStatus", "stabilityControlsStatus", "windowStatus"]),
        ]),
        group("PropriataryData-1", [
            rpc("DiagnosticMessage", .bfl),
            rpc("GetDTCs", .bfl),
            rpc("ReadDID", .bfl),
        ]),
        group("PropriataryData-2", [
            rpc("DiagnosticMessage", .bfl),
            rpc("GetDTCs", .bfl),
            rpc("ReadDID", .bfl),
        ]),
        group("ProprietaryData-3", [
            rpc("GetDTCs", .bfl),
            rpc("ReadDID", .bfl),
        ]),
        group("CloudAppStore", [
            rpc("SetCloudAppProperties", .bfl),
            rpc("GetCloudAppProperties", .bfl),
        ]),
        group("CloudApp", [
            rpc("GetVehicleData", .bfl, parameters: ["cloudAppVehicleID"]),
            rpc("OnVehicleData", .bfl, parameters: ["cloudAppVehicleID"]),
            rpc("SubscribeVehicleData", .bfl, parameters: ["cloudAppVehicleID"]),
            rpc("UnsubscribeVehicleData", .bfl, parameters: ["cloudAppVehicleID"]),
        ]),
        group("AppServiceProvider", [
            rpc("PublishAppService", .bfl),
            rpc("UnpublishAppService", .bfln),
            rpc("GetAppServiceData", .bfln),
            rpc("OnAppServiceData", .bfln),
            rpc("PerformAppServiceInteraction", .bfln),
        ]),
        group("AppServiceConsumer", [
            rpc("GetFile", .bfln),
            rpc("GetAppServiceData", .bfln),
            rpc("OnAppServiceData", .bfln),
            rpc("PerformAppServiceInteraction", .bfln),
        ]),
        group("RemoteControl", [
            rpc("ButtonPress", .bfl),
            rpc("GetInteriorVehicleData", .bfl),
            rpc("SetInteriorVehicleData", .bfl),
            rpc("OnInteriorVehicleData", .bfl),
            rpc("SystemRequest", .bfln),
            rpc("OnRCStatus", .bfln),
            rpc("ReleaseInteriorVehicleDataModule", .bfln),
            rpc("GetInteriorVehicleDataConsent", .bfln),
        ]),
        group("Emergency-1", [
            rpc("GetVehicleData", .bfl, parameters: ["airbagStatus", "clusterModeStatus", "eCallInfo", "emergencyEvent"]),
            rpc("OnVehicleData", .bfl, parameters: ["airbagStatus", "clusterModeStatus", "eCallInfo", "emergencyEvent"]),
            rpc("SubscribeVehicleData", .bfl, parameters: ["airbagStatus", "clusterModeStatus", "eCallInfo", "emergencyEvent"]),
            rpc("UnsubscribeVehicleData", .bfl, parameters: ["airbagStatus", "clusterModeStatus", "eCallInfo", "emergencyEvent"]),
        ]),
        group("Navigation-1", [
            rpc("AlertManeuver", .bfl),
            rpc("ShowConstantTBT", .bfl),
            rpc("OnTBTClientState", .bfl),
            rpc("UpdateTurnList", .bfl),
        ]),
        group("Base-6", [
            rpc("AddCommand", .bfl),
            rpc("AddSubMenu", .bfl),
            rpc("ShowAppMenu", .f),
            rpc("Alert", .fl),
            rpc("ChangeRegistration", .bfln),
            rpc("CreateInteractionChoiceSet", .bfl),
            rpc("DeleteCommand", .bfl),
            rpc("DeleteFile", .bfln),
            rpc("DeleteInteractionChoiceSet", .bfl),
            rpc("DeleteSubMenu", .bfl),
            rpc("EncodedSyncPData", .bfln),
            rpc("EndAudioPassThru", .bfl),
            rpc("GenericResponse", .bfl),
            rpc("ListFiles", .bfln),
            rpc("OnAppInterfaceUnregistered", .bfln),
            rpc("OnAudioPassThru", .bfl),
            rpc("OnButtonEvent", .fl),
            rpc("OnButtonPress", .fl),
            rpc("OnCommand", .fl),
            rpc("OnDriverDistraction", .bfln),
            rpc("OnEncodedSyncPData", .bfln),
            rpc("OnHMIStatus", .bfln),
            rpc("OnLanguageChange", .bfln),
            rpc("OnPermissionsChange", .bfln),
            rpc("OnSyncPData", .bfln),
            rpc("PerformAudioPassThru", .fl),
            rpc("PerformInteraction", .fl),
            rpc("PutFile", .bfln),
            rpc("RegisterAppInterface", .bfln),
            rpc("ResetGlobalProperties", .bfl),
            rpc("ScrollableMessage", .f),
            rpc("SetAppIcon", .bfln),
            rpc("SetDisplayLayout", .bfln),
            rpc("SetGlobalProperties", .bfl),
            rpc("SetMediaClockTimer", .f),
            rpc("Show", .bfl),
            rpc("Slider", .f),
            rpc("Speak", .fl),
            rpc("SubscribeButton", .bfl),
            rpc("SyncPData", .bfln),
            rpc("UnregisterAppInterface", .bfln),
            rpc("UnsubscribeButton", .bfl),
        ]),
        group("OnKeyboardInputOnlyGroup", [
            rpc("OnKeyboardInput", .f),
        ]),
        group("OnTouchEventOnlyGroup", [
            rpc("OnTouchEvent", .f),
        ]),
        group("DiagnosticMessageOnly", [
            rpc("DiagnosticMessage", .bfl),
        ]),
        group("DataConsent-2", consent: "DataConsent", [
        ]),
        group("BaseBeforeDataConsent", [
            rpc("ChangeRegistration", .bfln),
            rpc("DeleteFile", .bfln),
            rpc("EncodedSyncPData", .bfln),
            rpc("ListFiles", .bfln),
            rpc("OnAppInterfaceUnregistered", .bfln),
            rpc("OnEncodedSyncPData", .bfln),
            rpc("OnHashChange", .bfln),
            rpc("OnHMIStatus", .bfln),
            rpc("OnLanguageChange", .bfln),
            rpc("OnPermissionsChange", .bfln),
            rpc("OnSystemRequest", .bfln),
            rpc("PutFile", .bfln),
            rpc("RegisterAppInterface", .bfln),
            rpc("ResetGlobalProperties", .bfln),
            rpc("SetGlobalProperties", .bfln),
            rpc("SetAppIcon", .bfln),
            rpc("SetDisplayLayout", .bfln),
            rpc("SystemRequest", .bfln),
            rpc("UnregisterAppInterface", .bfln),
        ]),
        group("SendLocation", [
            rpc("SendLocation", .bfl),
        ]),
        group("WayPoints", [
            rpc("GetWayPoints", .bfl),
            rpc("SubscribeWayPoints", .bfl),
            rpc("UnsubscribeWayPoints", .bfl),
            rpc("OnWayPointChange", .bfl),
        ]),
        group("BackgroundAPT", [
            rpc("EndAudioPassThru", .b),
            rpc("OnAudioPassThru", .b),
            rpc("PerformAudioPassThru", .b),
        ]),
        group("HapticGroup", [
            rpc("OnTouchEvent", .f),
            rpc("SendHapticData", .f),
        ]),
        group("WidgetSupport", [
            rpc("CreateWindow", .bfln),
            rpc("DeleteWindow", .bfln),
            rpc("Show", .bfl),
            rpc("OnSystemCapabilityUpdated", .bfln),
        ]),
        group("DialNumber", [
            rpc("DialNumber", .bfl),
        ]),
    ])
}
