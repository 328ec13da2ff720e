import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

@Suite("Apps leaving mid-flow")
struct DisconnectTests {
    let provider = AppHandle(1)
    let consumer = AppHandle(2)

    /// A provider that is also a remote-control app: its MEDIA service active (handling
    /// SendLocation), climate.front held, subscribed to climate data; a consumer (RC too)
    /// subscribed to APP_SERVICES updates and to the service's data. The policy grants Core's
    /// SendLocation group, which RPC passing needs.
    static func midFlow() -> Harness {
        var harness = Harness { $0.policy.appPolicies["default"]?.groups.append("SendLocation") }
        harness.register(AppHandle(1), name: "Music", types: [.remoteControl], isMedia: true)
        harness.register(AppHandle(2), name: "Dash", types: [.remoteControl])
        _ = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true), from: AppHandle(2))
        _ = harness.send(
            SDLPublishAppServiceRequest(
                appServiceManifest: SDLAppServiceManifest(
                    serviceName: "Music", serviceType: "MEDIA", allowAppConsumers: true,
                    handledRPCs: [Int32(FunctionID.sendLocation.rawValue)])),
            from: AppHandle(1))
        _ = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true), from: AppHandle(2), correlationID: 10)
        _ = harness.send(SDLGetAppServiceDataResponse(success: true, resultCode: .success), from: AppHandle(1), correlationID: 1)
        _ = harness.send(SDLGetInteriorVehicleDataRequest(moduleType: .climate, subscribe: true), from: AppHandle(1))
        _ = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 50))),
            from: AppHandle(1))
        return harness
    }

    @Test("a provider disconnects: its service REMOVED (to itself too, still registered then, as on Core), its module freed (OnRCStatus), requests waiting on it answered at once")
    func providerLeaves() throws {
        var harness = Self.midFlow()
        _ = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.consumer, correlationID: 11)
        _ = harness.send(SDLSendLocationRequest(locationName: "Home"), from: self.consumer, correlationID: 12)
        #expect(harness.headUnit.nextDeadline == harness.now + .seconds(9))

        let outputs = harness.disconnect(self.provider)
        #expect(
            outputs.summary == [
                "log",
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnRCStatus notification #4294967295",
                "app2 <- GetAppServiceData response #11",
                "app2 <- SendLocation response #12",
            ])
        #expect(outputs.transcript?.outcome == "unregistered; 1 service(s) unpublished, 1 module(s) freed")
        let update = try outputs.only(SDLOnSystemCapabilityUpdated.self, to: self.consumer)
        #expect(update.systemCapability.appServicesCapabilities?.appServices?.map(\.updateReason) == [.removed])
        #expect(try outputs.only(SDLOnRCStatus.self, to: self.consumer).freeModules.count == 8)
        expectFailure(
            Array(outputs.filter { if case .send(let message, _) = $0 { return message.functionID == .getAppServiceData }; return false }),
            to: self.consumer, function: "GetAppServiceData", correlationID: 11, .genericError)
        #expect(
            try outputs.only(SDLSendLocationResponse.self, to: self.consumer)
                == SDLSendLocationResponse(
                    success: false, resultCode: .unsupportedRequest, info: "SendLocation is not supported by this head unit (RPC 8.0.0)"))
        #expect(harness.headUnit.serviceRecords.isEmpty)
        #expect(harness.headUnit.holder(of: .climate, id: "climate.front") == nil)
        #expect(harness.headUnit.nextDeadline == nil)

        let taken = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .climate, climateControlData: SDLClimateControlData(fanSpeed: 20))),
            from: self.consumer)
        #expect(try taken.only(SDLSetInteriorVehicleDataResponse.self, to: self.consumer).success)
        #expect(taken.sent.allSatisfy { $0.app == self.consumer })
    }

    @Test("a consumer disconnects: the provider's late answer and data go nowhere; its module and subscriptions are gone")
    func consumerLeaves() throws {
        var harness = Self.midFlow()
        _ = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "m://", serviceID: "media-1", originApp: "dash"), from: self.consumer,
            correlationID: 13)
        _ = harness.send(
            SDLSetInteriorVehicleDataRequest(moduleData: SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: 88))),
            from: self.consumer)

        let outputs = harness.disconnect(self.consumer)
        #expect(outputs.sends == ["app1 <- OnRCStatus notification #4294967295"])
        #expect(outputs.transcript?.outcome == "unregistered; 0 service(s) unpublished, 1 module(s) freed")
        #expect(harness.headUnit.nextDeadline == nil)

        let late = harness.send(
            SDLPerformAppServiceInteractionResponse(success: true, resultCode: .success), from: self.provider, correlationID: 2)
        #expect(late.sends.isEmpty)
        let data = harness.send(
            SDLOnAppServiceData(serviceData: SDLAppServiceData(serviceType: "MEDIA", serviceID: "media-1")), from: self.provider,
            correlationID: 0)
        #expect(data.sends.isEmpty && data.transcript?.outcome == "sent to 0 subscriber(s)")
        let unpublished = harness.send(SDLUnpublishAppServiceRequest(serviceID: "media-1"), from: self.provider)
        #expect(unpublished.sends == ["app1 <- OnSystemCapabilityUpdated notification #4294967295", "app1 <- UnpublishAppService response #5"])
    }

    @Test("an app that comes back on the same handle must register again")
    func comesBack() {
        var harness = Self.midFlow()
        _ = harness.disconnect(self.consumer)
        let again = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl), from: self.consumer, correlationID: 1)
        expectFailure(again, to: self.consumer, function: "GetSystemCapability", correlationID: 1, .applicationNotRegistered)
        let twice = harness.disconnect(self.consumer)
        let again2 = harness.disconnect(self.consumer)
        #expect(twice.transcript?.outcome == "was not registered" && again2.transcript?.outcome == "was not connected")
    }
}
