import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

/// The code of SDLTestHeadUnit.docc's getting-started article, run.
@Suite struct DocumentationExampleTests {
    @Test func gettingStarted() throws {
        var headUnit = SimulatedHeadUnit(configuration: .init())
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let music = AppHandle(1)
        let dashboard = AppHandle(2)

        func register(_ app: AppHandle, _ name: String) -> [HeadUnitOutput] {
            let request = SDLRegisterAppInterfaceRequest(
                syncMsgVersion: RPCVersion.v8_0.syncMsgVersion, appName: name, isMediaApplication: true,
                languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs, appID: name.lowercased())
            return headUnit.appConnected(app)
                + headUnit.received(AnyRPCMessage(request, correlationID: 1), from: app, now: now)
        }
        #expect(register(music, "Music").contains(.registered(music)))
        #expect(register(dashboard, "Dashboard").contains(.registered(dashboard)))

        let manifest = SDLAppServiceManifest(serviceName: "Music", serviceType: "MEDIA", allowAppConsumers: true)
        _ = headUnit.received(
            AnyRPCMessage(SDLPublishAppServiceRequest(appServiceManifest: manifest), correlationID: 2),
            from: music, now: now)
        #expect(headUnit.serviceRecords.map(\.serviceID) == ["media-1"])

        var outputs = headUnit.received(
            AnyRPCMessage(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true), correlationID: 2),
            from: dashboard, now: now)
        var printed: [String] = []
        for case .send(let request, let app) in outputs {
            printed.append("\(app) \(request.functionName) \(request.correlationID)")
        }
        let data = SDLAppServiceData(
            serviceType: "MEDIA", serviceID: "media-1", mediaServiceData: SDLMediaServiceData(mediaTitle: "Song"))
        outputs = headUnit.received(
            AnyRPCMessage(SDLGetAppServiceDataResponse(success: true, resultCode: .success, serviceData: data), correlationID: 1),
            from: music, now: now)
        for case .send(let response, let app) in outputs {
            printed.append("\(app) \(response.functionName) \(response.correlationID)")
        }
        #expect(printed == ["app1 GetAppServiceData 1", "app2 GetAppServiceData 2"])
    }
}
