import NIOCore
import SDLRPC

extension SimulatedHeadUnit {
    /// Carries out a script command (``HeadUnitCommand``): the simulated user, driver or vehicle
    /// acts. The transcript line's input is `script: <command>`, its outcome what changed; the
    /// messages follow (OnHMIStatus, OnRCStatus, OnInteriorVehicleData, the answer to a request that
    /// waited for the driver, …). A command about an app that is not registered, or an answer when
    /// no question waits, changes nothing and says so.
    public mutating func perform(_ command: HeadUnitCommand, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(nil, "script: \(command.text)") { headUnit in
            switch command.action {
            case .setHMILevel(let name, let level):
                guard let app = headUnit.app(named: name) else { return "ignored: no registered app \"\(name)\"" }
                headUnit.changeLevel(of: app, to: level)
                return "\(app) is \(headUnit.hmiLevel(of: app) ?? level)"
            case .setAccessMode(let mode):
                headUnit.accessMode = mode
                if mode != .askDriver {
                    // Core forgets the modules the driver refused when it leaves ask-driver.
                    for app in headUnit.registeredApps {
                        headUnit.apps[app]?.registration?.refusedModules = []
                    }
                }
                return "access mode \(mode)"
            case .setDriverConsent(let consent):
                headUnit.driverConsent = consent
                return "the driver answers \(consent)"
            case .answer(let subject, let allow):
                return headUnit.driverAnswered(subject, allow: allow, now: now)
            case .changeModule(let data):
                return headUnit.applyVehicleChange(data)
            case .setSeat(let index, let occupied):
                guard headUnit.vehicle.seats.indices.contains(index) else { return "ignored: no seat \(index)" }
                if occupied {
                    headUnit.vehicle.occupiedSeats.insert(index)
                } else {
                    headUnit.vehicle.occupiedSeats.remove(index)
                }
                let seat = headUnit.vehicle.seats[index]
                return "seat \(index) (col \(seat.col), row \(seat.row)) \(occupied ? "occupied" : "vacant")"
            case .setVehicleResponseTime(let delay):
                headUnit.vehicleResponseTime = delay
                return "the vehicle takes \(delay.nanoseconds / 1_000_000) ms"
            case .wait(let delay):
                return "wait \(delay.nanoseconds / 1_000_000) ms"
            }
        }
    }

    /// A registered app named by a script: `app<n>` (its handle), its app id, or its name (case
    /// ignored).
    func app(named name: String) -> AppHandle? {
        if name.hasPrefix("app"), let number = UInt64(name.dropFirst(3)), self.isRegistered(AppHandle(number)) {
            return AppHandle(number)
        }
        return self.registeredApps.first { self.apps[$0]?.registration?.appID == name }
            ?? self.registeredApps.first { self.apps[$0]?.registration?.appName.lowercased() == name.lowercased() }
    }
}
