import Foundation
import NIOCore
import SDLRPC
import SDLTestHeadUnit
import SDLTestSupport
import Testing

/// The policy table: parsing SDL Core's format (the project's fixture, Core's own stock file when
/// the sdl_core mirror is on this machine), and what the head unit does with it.
@Suite("Policy table")
struct PolicyTests {
    static let fixturePath = "Tests/SDLTestHeadUnitTests/Fixtures/policy-table.json"
    static func fixture() throws -> HeadUnitPolicy {
        try HeadUnitPolicy(json: try SharedData.packageFile(Self.fixturePath))
    }

    /// The bare git mirror of sdl_core this machine may have; the stock-table test runs only
    /// when it does (Core's file is never copied into the repository).
    static let mirror = "/work/.mirror/smartdevicelink+sdl_core/repo"
    static let hasMirror = FileManager.default.fileExists(atPath: mirror)

    @Test("the project's fixture parses: groups, levels, parameters, app policies, references, null")
    func parsesFixture() throws {
        let policy = try Self.fixture()
        #expect(policy.functionalGroupings.keys.sorted() == ["Basics", "Climate", "Nothing", "Weather"])
        #expect(policy.functionalGroupings["Basics"]?.rpcs["Show"] == HeadUnitPolicy.RPCRule(hmiLevels: [.full, .limited]))
        #expect(policy.functionalGroupings["Weather"]?.userConsentPrompt == "WeatherData")
        #expect(policy.functionalGroupings["Weather"]?.rpcs["GetVehicleData"]?.parameters == ["gps", "speed"])
        #expect(policy.functionalGroupings["Nothing"]?.rpcs.isEmpty == true)

        let climate = try #require(policy.appPolicies["climate-app"])
        #expect(climate.groups == ["Basics", "Climate"])
        #expect(climate.appHMITypes == [.remoteControl])
        #expect(climate.moduleTypes == [.climate])
        #expect(climate.nicknames == ["Climate", "Klima"])
        #expect(climate.defaultHMI == .none_)

        let weather = try #require(policy.appPolicies["weather-app"])
        #expect(weather.defaultHMI == .background)
        #expect(weather.encryptionRequired == false)
        #expect(weather.moduleTypes == nil)
        #expect(weather.appServices == ["WEATHER": HeadUnitPolicy.AppServiceRule(serviceNames: ["Sunny"], handledRPCs: [39])])
        #expect(policy.appPolicies["twin-app"] == weather)
        #expect(policy.appPolicies["pre_DataConsent"] == policy.appPolicies["default"])
        #expect(policy.revokedAppIDs == ["revoked-app"])
        #expect(policy.appPolicy(for: "unknown-app") == policy.appPolicies["default"])

        let rules = policy.rules(of: climate)
        #expect(rules["SetInteriorVehicleData"]?.hmiLevels == [.full])
        #expect(rules["OnHMIStatus"]?.hmiLevels == [.background, .full, .limited, .none_])
        #expect(rules["PublishAppService"] == nil)
    }

    @Test(
        "malformed tables are invalidPolicy with the path of the part at fault",
        arguments: [
            (#"[]"#, "", "not an object"),
            (#"{"policy_table": {"app_policies": {}}}"#, "policy_table.functional_groupings", "missing"),
            (#"{"policy_table": {"functional_groupings": {}, "app_policies": {}}}"#, "policy_table.app_policies", "no \"default\" app policy"),
            (
                #"{"policy_table": {"functional_groupings": {"G": {"rpcs": {"Show": {"hmi_levels": ["FULL", "SOMETIMES"]}}}}, "app_policies": {"default": {"groups": ["G"]}}}}"#,
                "policy_table.functional_groupings.G.rpcs.Show.hmi_levels[1]", "\"SOMETIMES\" is not an HMI level"
            ),
            (
                #"{"policy_table": {"functional_groupings": {"G": {"rpcs": {}}}, "app_policies": {"default": {"groups": ["G", "H"]}}}}"#,
                "policy_table.app_policies.default.groups[1]", "no functional group named \"H\""
            ),
            (
                #"{"policy_table": {"functional_groupings": {}, "app_policies": {"default": {"groups": [], "moduleType": ["ROOF"]}}}}"#,
                "policy_table.app_policies.default.moduleType[0]", "\"ROOF\" is not a module type"
            ),
            (
                #"{"policy_table": {"functional_groupings": {}, "app_policies": {"default": {"groups": [], "app_services": {"MEDIA": {"handled_rpcs": [{"function_id": "39"}]}}}}}}"#,
                "policy_table.app_policies.default.app_services.MEDIA.handled_rpcs[0].function_id", "not a 32-bit integer"
            ),
            (
                #"{"policy_table": {"functional_groupings": {}, "app_policies": {"default": {"groups": []}, "x": "nobody"}}}"#,
                "policy_table.app_policies.x", "names \"nobody\", which is not an app policy object"
            ),
        ])
    func malformed(json: String, path: String, detail: String) {
        let error = #expect(throws: HeadUnitError.self) { try HeadUnitPolicy(jsonText: json) }
        #expect(error?.code == .invalidPolicy)
        #expect(error?.path == path)
        #expect(error?.detail == detail)
    }

    @Test("bytes that are not UTF-8 or not JSON are invalidPolicy")
    func notJSON() {
        #expect(throws: HeadUnitError(.invalidPolicy, detail: "")) { try HeadUnitPolicy(json: [0x7B, 0xFF, 0x7D]) }
        #expect(throws: HeadUnitError(.invalidPolicy, detail: "")) { try HeadUnitPolicy(jsonText: "{\"policy_table\": ") }
        #expect(throws: HeadUnitError(.invalidPolicy, detail: "")) { try HeadUnitPolicy(jsonText: #"{"a": 1, "a": 2}"#) }
    }

    @Test("SDL Core 8.2.0's stock sdl_preloaded_pt.json parses unchanged and equals the built-in sdlCore table", .enabled(if: hasMirror))
    func stockTable() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git", "-C", Self.mirror, "show", "8.2.0:src/appMain/sdl_preloaded_pt.json"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0 && data.count > 100_000, "git show failed")

        let stock = try HeadUnitPolicy(json: Array(data))
        #expect(stock.functionalGroupings.count == 28)
        #expect(stock.functionalGroupings["Base-4"]?.rpcs.count == 52)
        #expect(stock.functionalGroupings["RemoteControl"]?.rpcs["SetInteriorVehicleData"]?.hmiLevels == [.background, .full, .limited])
        #expect(stock.functionalGroupings["Location-1"]?.rpcs["GetVehicleData"]?.parameters == ["gps", "speed"])
        #expect(stock.appPolicies["default"]?.groups == ["Base-4"])
        #expect(stock.functionalGroupings == HeadUnitPolicy.sdlCore.functionalGroupings)
        #expect(stock.appPolicies == HeadUnitPolicy.sdlCore.appPolicies)
        #expect(stock == HeadUnitPolicy.sdlCore)
    }

    @Test("the built-in tables: sdlCore's default is Base-4 alone; standard adds RC and app services on the same groups")
    func builtInTables() {
        #expect(HeadUnitPolicy.sdlCore.appPolicies["default"] == HeadUnitPolicy.AppPolicy(groups: ["Base-4"]))
        #expect(HeadUnitPolicy.standard.functionalGroupings == HeadUnitPolicy.sdlCore.functionalGroupings)
        let standard = HeadUnitPolicy.standard.appPolicy(for: "any")
        #expect(standard.groups == ["Base-4", "RemoteControl", "AppServiceProvider", "AppServiceConsumer"])
        #expect(standard.moduleTypes == [])
        #expect(standard.appServices?.keys.sorted() == ["MEDIA", "NAVIGATION", "WEATHER"])
        #expect(standard.appServices?["MEDIA"]?.handledRPCs.contains(Int32(FunctionID.sendLocation.rawValue)) == true)
        #expect(standard.appServices?["MEDIA"]?.handledRPCs.contains(Int32(FunctionID.onHMIStatus.rawValue)) == false)
    }

    @Test("OnPermissionsChange lists the app's policy: Core's stock table gives the Base-4 items Core sent (vectors/core82)")
    func permissionsMatchCore() throws {
        var harness = Harness {
            $0.policy = .sdlCore
            $0.activationLevel = nil
        }
        let outputs = harness.register(AppHandle(1), name: "Plain")
        let ours = try outputs.only(SDLOnPermissionsChange.self, to: AppHandle(1))
        let core = try SDLOnPermissionsChange(
            jsonParameters: String(decoding: try SharedData.bytes("vectors/core82/OnPermissionsChange.notification.json"), as: UTF8.self))
        #expect(ours == core)
        #expect(ours.permissionItem.count == 52)
    }

    @Test("a request the policy does not allow at the app's level is DISALLOWED without info; allowed once the level allows it")
    func disallowedByLevel() throws {
        var harness = Harness { $0.activationLevel = nil }
        harness.register(AppHandle(1), name: "Plain")
        let show = harness.send(SDLShowRequest(mainField1: "hi"), from: AppHandle(1), correlationID: 5)
        expectFailure(show, to: AppHandle(1), function: "Show", correlationID: 5, .disallowed)
        #expect(try show.only(SDLShowResponse.self, to: AppHandle(1)).info == nil)
        #expect(show.transcript?.outcome == "DISALLOWED (the app's policy does not allow Show in HMI NONE)")
        // Allowed in NONE by Base-4: ListFiles.
        #expect(try harness.send(SDLListFilesRequest(), from: AppHandle(1)).only(SDLListFilesResponse.self, to: AppHandle(1)).success)
        _ = harness.headUnit.setHMILevel(.full, of: AppHandle(1))
        #expect(try harness.send(SDLShowRequest(mainField1: "hi"), from: AppHandle(1)).only(SDLShowResponse.self, to: AppHandle(1)).success)
    }

    @Test("Core's stock table: remote control and app services are DISALLOWED, OnRCStatus is not sent")
    func stockTableRefusesRC() throws {
        var harness = Harness { $0.policy = .sdlCore }
        let registered = harness.register(AppHandle(1), name: "Climate", types: [.remoteControl])
        #expect(registered.messages(SDLOnRCStatus.self, to: AppHandle(1)).isEmpty)
        let get = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate), from: AppHandle(1), correlationID: 7)
        expectFailure(get, to: AppHandle(1), function: "GetInteriorVehicleData", correlationID: 7, .disallowed)
        let publish = harness.send(
            SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(serviceType: "MEDIA")), from: AppHandle(1),
            correlationID: 8)
        expectFailure(publish, to: AppHandle(1), function: "PublishAppService", correlationID: 8, .disallowed)
    }

    @Test("a policy's AppHMIType replaces the app's: WARNINGS with Core's info for the types it lacks, OnRCStatus for the new REMOTE_CONTROL")
    func appHMITypeReplaced() throws {
        var harness = Harness { $0.policy = try! Self.fixture() }
        _ = harness.headUnit.appConnected(AppHandle(1))
        let outputs = harness.send(
            registration(name: "Klima", appID: "climate-app", types: [.media, .navigation]), from: AppHandle(1))
        let response = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: AppHandle(1))
        #expect(response.success && response.resultCode == .warnings)
        #expect(response.info == "Following AppHmiTypes are not present in policy table:MEDIA,NAVIGATION,")
        #expect(outputs.messages(SDLOnRCStatus.self, to: AppHandle(1)).count == 1)
        // The app is REMOTE_CONTROL now, not NAVIGATION: no audio, no video.
        #expect(harness.headUnit.mediaStartDecision(for: AppHandle(1), service: .video)
            == .refuse(reason: "Service type: 11 disallowed with current HMI type"))
        let permissions = try outputs.only(SDLOnPermissionsChange.self, to: AppHandle(1))
        #expect(permissions.permissionItem.map(\.rpcName).contains("SetInteriorVehicleData"))
        #expect(permissions.permissionItem.first { $0.rpcName == "SetInteriorVehicleData" }?.hmiPermissions.allowed == [.full])
    }

    @Test("nicknames: another name is DISALLOWED; WEB_VIEW absent from the policy is DISALLOWED with Core's info")
    func nicknamesAndWebView() throws {
        var harness = Harness { $0.policy = try! Self.fixture() }
        _ = harness.headUnit.appConnected(AppHandle(1))
        let wrongName = harness.send(registration(name: "Heater", appID: "climate-app"), from: AppHandle(1), correlationID: 1)
        expectFailure(wrongName, to: AppHandle(1), function: "RegisterAppInterface", correlationID: 1, .disallowed)
        let webView = harness.send(
            registration(name: "Climate", appID: "climate-app", types: [.webView]), from: AppHandle(1), correlationID: 2)
        expectFailure(webView, to: AppHandle(1), function: "RegisterAppInterface", correlationID: 2, .disallowed)
        #expect(try webView.only(SDLRegisterAppInterfaceResponse.self, to: AppHandle(1)).info == "WEB_VIEW AppHmiType is absent in application policies")
        let noTypes = harness.send(registration(name: "Plain", appID: "plain", types: [.webView]), from: AppHandle(1), correlationID: 3)
        #expect(
            try noTypes.only(SDLRegisterAppInterfaceResponse.self, to: AppHandle(1)).info
                == "WEB_VIEW AppHmiType is absent in application policies, because they are empty")
        let right = harness.send(registration(name: "KLIMA", appID: "climate-app"), from: AppHandle(1), correlationID: 4)
        #expect(try right.only(SDLRegisterAppInterfaceResponse.self, to: AppHandle(1)).resultCode == .success)
    }

    @Test("moduleType: a module type the policy does not list is DISALLOWED with Core's info; levels come from the policy")
    func moduleTypes() throws {
        var harness = Harness { $0.policy = try! Self.fixture() }
        _ = harness.headUnit.appConnected(AppHandle(1))
        _ = harness.send(registration(name: "Climate", appID: "climate-app"), from: AppHandle(1))
        let radio = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .radio), from: AppHandle(1), correlationID: 9)
        expectFailure(radio, to: AppHandle(1), function: "GetInteriorVehicleData", correlationID: 9, .disallowed)
        #expect(try radio.only(SDLGetInteriorVehicleDataResponse.self, to: AppHandle(1)).info == "The RPC is disallowed by vehicle settings")
        let climate = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: AppHandle(1))
        #expect(try climate.only(SDLGetInteriorVehicleDataResponse.self, to: AppHandle(1)).success)

        // BACKGROUND: GetInteriorVehicleData still allowed, SetInteriorVehicleData not (FULL only),
        // and OnInteriorVehicleData is not sent (FULL, LIMITED only).
        _ = harness.headUnit.setHMILevel(.background, of: AppHandle(1))
        let set = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 5))),
            from: AppHandle(1), correlationID: 11)
        expectFailure(set, to: AppHandle(1), function: "SetInteriorVehicleData", correlationID: 11, .disallowed)
        let change = harness.headUnit.changeVehicleData(
            SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 90)))
        #expect(change.sends == [])
        _ = harness.headUnit.setHMILevel(.full, of: AppHandle(1))
        let again = harness.headUnit.changeVehicleData(
            SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 91)))
        #expect(again.sends == ["app1 <- OnInteriorVehicleData notification #4294967295"])
    }

    @Test("app_services: only the type, names and handled RPCs the policy lists may be published; default_hmi BACKGROUND")
    func appServices() throws {
        var harness = Harness {
            $0.policy = try! Self.fixture()
            $0.activationLevel = nil
        }
        _ = harness.headUnit.appConnected(AppHandle(1))
        let registered = harness.send(registration(name: "Weather", appID: "weather-app"), from: AppHandle(1))
        #expect(registered.messages(SDLOnHMIStatus.self, to: AppHandle(1)).map(\.hmiLevel) == [.background])
        func publish(_ manifest: SDLAppServiceManifest, _ correlationID: UInt32) -> [HeadUnitOutput] {
            harness.send(SDLPublishAppServiceRequest(appServiceManifest: manifest), from: AppHandle(1), correlationID: correlationID)
        }
        let media = publish(SDLAppServiceManifest(serviceName: "Sunny", serviceType: "MEDIA"), 2)
        expectFailure(media, to: AppHandle(1), function: "PublishAppService", correlationID: 2, .disallowed)
        #expect(try media.only(SDLPublishAppServiceResponse.self, to: AppHandle(1)).info == "Service disallowed by policies")
        let name = publish(SDLAppServiceManifest(serviceName: "Cloudy", serviceType: "WEATHER"), 3)
        expectFailure(name, to: AppHandle(1), function: "PublishAppService", correlationID: 3, .disallowed)
        let handled = publish(
            SDLAppServiceManifest(serviceName: "Sunny", serviceType: "WEATHER", handledRPCs: [Int32(FunctionID.buttonPress.rawValue)]), 4)
        expectFailure(handled, to: AppHandle(1), function: "PublishAppService", correlationID: 4, .disallowed)
        let good = publish(
            SDLAppServiceManifest(serviceName: "Sunny", serviceType: "WEATHER", handledRPCs: [Int32(FunctionID.sendLocation.rawValue)]), 5)
        #expect(try good.only(SDLPublishAppServiceResponse.self, to: AppHandle(1)).success)
        let unnamed = harness.send(SDLUnpublishAppServiceRequest(serviceID: "weather-1"), from: AppHandle(1))
        expectFailure(unnamed, to: AppHandle(1), function: "UnpublishAppService", correlationID: 2, .disallowed)
    }

    @Test("a revoked app registers but every request is DISALLOWED and only OnHMIStatus in NONE reaches it")
    func revoked() throws {
        var harness = Harness { $0.policy = try! Self.fixture() }
        _ = harness.headUnit.appConnected(AppHandle(1))
        let outputs = harness.send(registration(name: "Gone", appID: "revoked-app"), from: AppHandle(1))
        #expect(outputs.sends == ["app1 <- RegisterAppInterface response #1", "registered app1", "app1 <- OnHMIStatus notification #4294967295"])
        let list = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .displays), from: AppHandle(1), correlationID: 3)
        expectFailure(list, to: AppHandle(1), function: "GetSystemCapability", correlationID: 3, .disallowed)
    }
}
