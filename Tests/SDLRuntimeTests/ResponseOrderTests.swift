import NIOCore
import SDLHeadUnitRuntime
import SDLNIO
import SDLRPC
import Testing

@testable import SDLAppScripts

@Suite("Response order")
struct ResponseOrderTests {
    @Test("an app subscribed to a module that sets it gets the SetInteriorVehicleData response before the OnInteriorVehicleData, 600 times in a row")
    func setResponseBeforeItsNotification() async throws {
        let (headUnit, _) = try await startHeadUnit()
        let relay = try await RecordingRelay.start(to: headUnit.primaryPort)
        let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: relay.port)
        let statuses = app.hmiStatusUpdates()
        try await app.register(SDLRegisterAppInterfaceRequest(
            syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Order", isMediaApplication: false,
            languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs, appHMIType: [.remoteControl], appID: "order"))
        #expect(await firstElement(of: statuses, within: .seconds(10)) { $0.hmiLevel == .full } != nil)
        let subscribed: SDLGetInteriorVehicleDataResponse = try await app.send(
            SDLGetInteriorVehicleDataRequest(moduleType: .climate, moduleId: "climate.front", subscribe: true))
        #expect(subscribed.isSubscribed == true)

        let rounds = 600
        for round in 0..<rounds {
            // The fan starts at 30: every set changes it, so every set notifies.
            let speed = Int32(40 + round % 2)
            let set: SDLSetInteriorVehicleDataResponse = try await app.send(SDLSetInteriorVehicleDataRequest(
                moduleData: SDLModuleData(
                    moduleType: .climate, moduleId: "climate.front", climateControlData: SDLClimateControlData(fanSpeed: speed))))
            #expect(set.success, "round \(round)")
        }
        let deadline = NIODeadline.now() + .seconds(10)
        while relay.received.lines.count(where: { $0 == "OnInteriorVehicleData notification" }) < rounds, NIODeadline.now() < deadline {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        let order = relay.received.lines.filter { $0.hasPrefix("SetInteriorVehicleData ") || $0.hasPrefix("OnInteriorVehicleData ") }
        let expected = Array(repeating: ["SetInteriorVehicleData response", "OnInteriorVehicleData notification"], count: rounds).flatMap { $0 }
        #expect(order.count == expected.count)
        let firstMisordered = zip(order, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstMisordered == nil, "first out of order at message \(firstMisordered ?? -1) of \(order.count)")
        #expect(!relay.received.lines.contains { $0.hasPrefix("unreadable") })
        await app.disconnect()
        await relay.stop()
        await headUnit.shutdown()
    }
}
