import NIOCore
import SDLNIO
import SDLRPC

/// A module the `rc` script works with: its type and, from RPC 6.0, its id as the head unit's
/// REMOTE_CONTROL capability names it.
struct RemoteModule: Hashable, Sendable, CustomStringConvertible {
    var type: SDLModuleType
    var id: String?

    var description: String { self.id ?? "\(self.type)" }
}

/// The remote-control steps: capability, consent, read and subscribe, set, button press, release.
extension ScriptedApp {
    /// Reads the REMOTE_CONTROL capability (GetSystemCapability) and returns the first climate and
    /// radio modules it lists (their ids are nil before RPC 6.0, where modules have none).
    func remoteControlModules() async throws(AppScriptFailure) -> (climate: RemoteModule, radio: RemoteModule) {
        let step = "GetSystemCapability REMOTE_CONTROL"
        return try await self.step(step) {
            let response: SDLGetSystemCapabilityResponse = try await self.request(
                SDLGetSystemCapabilityRequest(systemCapabilityType: .remoteControl))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            guard let rc = response.systemCapability?.remoteControlCapability else {
                throw AppScriptFailure(line: AppTranscriptLine(app: self.name, step: step, ok: false, outcome: "no remoteControlCapability"))
            }
            try self.expect(rc.climateControlCapabilities?.isEmpty == false, step, "no climate module")
            try self.expect(rc.radioControlCapabilities?.isEmpty == false, step, "no radio module")
            let climate = RemoteModule(type: .climate, id: rc.climateControlCapabilities?.first?.moduleInfo?.moduleId)
            let radio = RemoteModule(type: .radio, id: rc.radioControlCapabilities?.first?.moduleInfo?.moduleId)
            let buttons = rc.buttonCapabilities?.count ?? 0
            return ((climate, radio), "climate \(climate), radio \(radio), \(buttons) button(s)")
        }
    }

    /// Asks the driver's consent to control modules (GetInteriorVehicleDataConsent, RPC 6.0);
    /// every module must be allowed.
    func askConsent(for module: RemoteModule) async throws(AppScriptFailure) {
        let step = "GetInteriorVehicleDataConsent \(module)"
        try await self.step(step) {
            let response: SDLGetInteriorVehicleDataConsentResponse = try await self.request(
                SDLGetInteriorVehicleDataConsentRequest(moduleType: module.type, moduleIds: [module.id ?? ""]))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            try self.expect(response.allowed == [true], step, "allowed \(response.allowed.map { "\($0)" } ?? "nil")")
            return ((), "allowed")
        }
    }

    /// Reads a module's data and subscribes to its changes (GetInteriorVehicleData).
    func readAndSubscribe(_ module: RemoteModule) async throws(AppScriptFailure) -> SDLModuleData {
        let step = "GetInteriorVehicleData \(module), subscribe"
        return try await self.step(step) {
            let response: SDLGetInteriorVehicleDataResponse = try await self.request(
                SDLGetInteriorVehicleDataRequest(moduleType: module.type, moduleId: module.id, subscribe: true))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            guard let data = response.moduleData else {
                throw AppScriptFailure(line: AppTranscriptLine(app: self.name, step: step, ok: false, outcome: "no moduleData"))
            }
            return (data, "subscribed \(response.isSubscribed.map { "\($0)" } ?? "?"), \(Self.summary(of: data))")
        }
    }

    /// Sets a module's data (SetInteriorVehicleData) and waits for the OnInteriorVehicleData the
    /// subscription brings; `check` says whether data shows the change.
    func set(
        _ module: RemoteModule, _ data: SDLModuleData, what: String, shows check: @escaping @Sendable (SDLModuleData) -> Bool
    ) async throws(AppScriptFailure) {
        let step = "SetInteriorVehicleData \(module) \(what)"
        let updates = self.connection.notifications(of: SDLOnInteriorVehicleData.self)
        try await self.step(step) {
            let response: SDLSetInteriorVehicleDataResponse = try await self.request(SDLSetInteriorVehicleDataRequest(moduleData: data))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            try self.expect(response.moduleData.map(check) == true, step, "the response does not show \(what)")
            let notified = await firstElement(of: updates, within: .seconds(10)) {
                $0.moduleData.moduleType == module.type && check($0.moduleData)
            }
            try self.expect(notified != nil, step, "no OnInteriorVehicleData showing \(what)")
            return ((), "\(response.resultCode), OnInteriorVehicleData received")
        }
    }

    /// Presses a button of a module (ButtonPress, short press).
    func press(_ button: SDLButtonName, of module: RemoteModule) async throws(AppScriptFailure) {
        let step = "ButtonPress \(button) on \(module)"
        try await self.step(step) {
            let response: SDLButtonPressResponse = try await self.request(
                SDLButtonPressRequest(moduleType: module.type, moduleId: module.id, buttonName: button, buttonPressMode: .short))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            return ((), "\(response.resultCode)")
        }
    }

    /// Gives a module back (ReleaseInteriorVehicleDataModule, RPC 6.0).
    func release(_ module: RemoteModule) async throws(AppScriptFailure) {
        let step = "ReleaseInteriorVehicleDataModule \(module)"
        try await self.step(step) {
            let response: SDLReleaseInteriorVehicleDataModuleResponse = try await self.request(
                SDLReleaseInteriorVehicleDataModuleRequest(moduleType: module.type, moduleId: module.id))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            return ((), "\(response.resultCode)")
        }
    }

    /// Ends the subscription to a module's data (GetInteriorVehicleData, subscribe false).
    func unsubscribe(_ module: RemoteModule) async throws(AppScriptFailure) {
        let step = "GetInteriorVehicleData \(module), unsubscribe"
        try await self.step(step) {
            let response: SDLGetInteriorVehicleDataResponse = try await self.request(
                SDLGetInteriorVehicleDataRequest(moduleType: module.type, moduleId: module.id, subscribe: false))
            try self.expect(response.success, step, "\(response.resultCode) \(response.info ?? "")")
            return ((), "subscribed \(response.isSubscribed.map { "\($0)" } ?? "?")")
        }
    }

    static func summary(of data: SDLModuleData) -> String {
        if let climate = data.climateControlData {
            return "fan speed \(climate.fanSpeed.map { "\($0)" } ?? "?")"
        }
        if let radio = data.radioControlData {
            return "frequency \(radio.frequencyInteger.map { "\($0)" } ?? "?").\(radio.frequencyFraction.map { "\($0)" } ?? "?")"
        }
        return "\(data.moduleType)"
    }
}
