import NIOCore
import SDLManagers
import SDLNIO
import SDLRPC

/// A module's name in the steps: its id (RPC 6.0+), or its type where the head unit names none.
func label(_ module: SDLRCModule) -> String {
    module.id.wireValue ?? module.type.wireName
}

/// The remote-control steps, each a call of the app's ``SDLRemoteControlManager``: capability,
/// consent, read and subscribe, set, button press, unsubscribe, release.
extension ScriptedApp {
    /// Starts the remote control manager (GetSystemCapability REMOTE_CONTROL, SEAT_LOCATION too
    /// from RPC 6.0) and returns the default climate module and the radio module if the vehicle
    /// has one (their ids are ``SDLModuleID/default`` before 6.0, where modules have none).
    func remoteControlModules() async throws(AppScriptFailure) -> (climate: SDLRCModule, radio: SDLRCModule?) {
        let step = "GetSystemCapability REMOTE_CONTROL"
        let manager = try self.remoteControlManager(step)
        return try await self.step(step) {
            let modules = try await manager.start()
            guard let climate = modules.module(.climate) else { throw self.failure(step, "no climate module") }
            let radio = modules.module(.radio)
            let seats = await manager.seatLocations.map { ", \($0.seats?.count ?? 0) seat(s)" } ?? ""
            let radioText = radio.map { "radio \(label($0))" } ?? "no radio"
            return ((climate, radio), "climate \(label(climate)), \(radioText), \(modules.buttons.count) button(s)\(seats)")
        }
    }

    /// Runs a step of a module that other apps may hold: with `contended`, SDL Core's allocation
    /// outcomes (REJECTED, IN_USE, IGNORED) end the step as expected results of contention
    /// (returns false); any other failure fails it.
    @discardableResult
    private func contendedStep(
        _ step: String, contended: Bool, _ body: () async throws -> String
    ) async throws(AppScriptFailure) -> Bool {
        let outcome: Result<String, any Error>
        do {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let text):
            self.record(step, ok: true, text)
            return true
        case .failure(let error):
            if contended, let error = error as? SDLManagerError {
                if let code = error.resultCode, [SDLResult.rejected, .inUse, .ignored].contains(code) {
                    self.record(step, ok: true, "contention: \(code.wireName) (\(error.detail))")
                    return false
                }
                if error.code == .consentRefused {
                    self.record(step, ok: true, "contention: consent refused (\(error.detail))")
                    return false
                }
            }
            if let failure = error as? AppScriptFailure {
                self.counters.update { $0.failures.append(failure.line) }
                self.transcript(failure.line)
                throw failure
            }
            throw self.recordedFailure(step, "\(error)")
        }
    }

    /// Asks the driver's consent to control a module (GetInteriorVehicleDataConsent, RPC 6.0),
    /// which must be allowed (unless other apps contend for it).
    func askConsent(for module: SDLRCModule, contended: Bool = false) async throws(AppScriptFailure) {
        let step = "GetInteriorVehicleDataConsent \(label(module))"
        let manager = try self.remoteControlManager(step)
        try await self.step(step) {
            let answers = try await manager.requestConsent(module.type, [module.id])
            if contended && answers[module] == false {
                return ((), "contention: not allowed now (another app holds it)")
            }
            try self.expect(answers[module] == true, step, "allowed \(answers[module].map { "\($0)" } ?? "nil")")
            return ((), "allowed")
        }
    }

    /// Reads a module's data and subscribes to its changes (the manager's first observer of the
    /// module: GetInteriorVehicleData with `subscribe`). The returned observation keeps the
    /// subscription until ``unsubscribe(_:ending:)``.
    func readAndSubscribe(_ module: SDLRCModule) async throws(AppScriptFailure) -> (SDLModuleData, Observation<SDLModuleData>) {
        let step = "GetInteriorVehicleData \(label(module)), subscribe"
        let manager = try self.remoteControlManager(step)
        return try await self.step(step) {
            let observation = Observation(manager.moduleDataUpdates(module.type, module.id))
            guard let data = try await observation.first(within: .seconds(10)) else {
                throw self.failure(step, "no moduleData within 10 s")
            }
            let subscribed = await manager.subscribedModules.contains(module)
            return ((data, observation), "subscribed \(subscribed), \(Self.summary(of: data))")
        }
    }

    /// Sets a module's data (SetInteriorVehicleData) and waits for the OnInteriorVehicleData the
    /// subscription brings, read by an observer of its own that joins the subscription first;
    /// `check` says whether data shows the change.
    func set(
        _ module: SDLRCModule, _ data: SDLModuleData, what: String, contended: Bool = false,
        shows check: @escaping @Sendable (SDLModuleData) -> Bool
    ) async throws(AppScriptFailure) {
        let step = "SetInteriorVehicleData \(label(module)) \(what)"
        let manager = try self.remoteControlManager(step)
        let updates = Observation(manager.moduleDataUpdates(module.type, module.id))
        let body: () async throws -> String = {
            try await self.setAndWait(manager, data, step: step, what: what, contended: contended, updates: updates, check: check)
        }
        do throws(AppScriptFailure) {
            try await self.contendedStep(step, contended: contended, body)
        } catch {
            await updates.stop()
            throw error
        }
        await updates.stop()
    }

    private func setAndWait(
        _ manager: SDLRemoteControlManager, _ data: SDLModuleData, step: String, what: String, contended: Bool,
        updates: Observation<SDLModuleData>, check: @escaping @Sendable (SDLModuleData) -> Bool
    ) async throws -> String {
        // The observer's first update is the data it joins with: from then on it hears every change.
        guard try await updates.first(within: .seconds(10)) != nil else { throw self.failure(step, "no moduleData within 10 s") }
        let answer = try await manager.setModuleData(data)
        try self.expect(answer.map(check) == true, step, "the response does not show \(what)")
        // Another app may set the module meanwhile: any update after the answer will do then.
        let notified = try await updates.first(within: .seconds(10)) { contended || check($0) }
        try self.expect(notified != nil, step, "no OnInteriorVehicleData showing \(what)")
        return "success, OnInteriorVehicleData received"
    }

    /// Presses a button of a module (ButtonPress, short press).
    func press(_ button: SDLButtonName, of module: SDLRCModule, contended: Bool = false) async throws(AppScriptFailure) {
        let step = "ButtonPress \(button) on \(label(module))"
        let manager = try self.remoteControlManager(step)
        try await self.contendedStep(step, contended: contended) {
            try await manager.pressButton(button, module: module.id)
            return "success"
        }
    }

    /// Gives a module back (ReleaseInteriorVehicleDataModule, RPC 6.0).
    func release(_ module: SDLRCModule, contended: Bool = false) async throws(AppScriptFailure) {
        let step = "ReleaseInteriorVehicleDataModule \(label(module))"
        let manager = try self.remoteControlManager(step)
        try await self.contendedStep(step, contended: contended) {
            try await manager.releaseModule(module.type, module.id)
            return "success"
        }
    }

    /// Ends the subscription to a module's data: the script's observer stops, and the manager,
    /// its last observer gone, unsubscribes (GetInteriorVehicleData, subscribe false).
    func unsubscribe(_ module: SDLRCModule, ending observation: Observation<SDLModuleData>) async throws(AppScriptFailure) {
        let step = "GetInteriorVehicleData \(label(module)), unsubscribe"
        let manager = try self.remoteControlManager(step)
        try await self.step(step) {
            await observation.stop()
            let ended = await holds(within: .seconds(10)) { await !manager.subscribedModules.contains(module) }
            try self.expect(ended, step, "still subscribed after 10 s")
            return ((), "subscribed false")
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
