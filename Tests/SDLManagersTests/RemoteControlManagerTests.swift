import NIOCore
import SDLHeadUnitRuntime
import SDLNIO
import SDLRPC
import SDLTestHeadUnit
import Testing

@testable import SDLManagers

/// What an app sent, in a compact form the tests compare: the parameters that matter per function.
func describe(_ message: AnyRPCMessage) -> String {
    switch message.message {
    case let get as SDLGetSystemCapabilityRequest:
        return "GetSystemCapability \(get.systemCapabilityType.wireName) subscribe=\(get.subscribe.map(String.init) ?? "nil")"
    case let get as SDLGetInteriorVehicleDataRequest:
        return "GetInteriorVehicleData \(get.moduleType.wireName) \(get.moduleId ?? "nil") subscribe=\(get.subscribe.map(String.init) ?? "nil")"
    case let set as SDLSetInteriorVehicleDataRequest:
        return "SetInteriorVehicleData \(set.moduleData.moduleType.wireName) \(set.moduleData.moduleId ?? "nil")"
    case let consent as SDLGetInteriorVehicleDataConsentRequest:
        return "GetInteriorVehicleDataConsent \(consent.moduleType.wireName) \(consent.moduleIds)"
    case let press as SDLButtonPressRequest:
        return "ButtonPress \(press.buttonName.wireName) \(press.moduleType.wireName) \(press.moduleId ?? "nil") \(press.buttonPressMode.wireName)"
    case let release as SDLReleaseInteriorVehicleDataModuleRequest:
        return "ReleaseInteriorVehicleDataModule \(release.moduleType.wireName) \(release.moduleId ?? "nil")"
    case let properties as SDLSetGlobalPropertiesRequest:
        let grid = properties.userLocation?.grid
        return "SetGlobalProperties userLocation=\(grid.map { "\($0.col),\($0.row)" } ?? "nil")"
    default:
        return message.functionName
    }
}

extension TestHeadUnit {
    /// The requests sent after registration, described, optionally from one app.
    func sent(from app: AppHandle? = nil) -> [String] {
        self.log.requests(from: app).filter { !($0.message is SDLRegisterAppInterfaceRequest) }.map(describe)
    }

    /// The requests sent after the first `count`, described.
    func sent(after count: Int) -> [String] { Array(self.sent().dropFirst(count)) }

    /// Runs `body` and expects that no app sent a request meanwhile: what it tried was refused
    /// before sending.
    func expectNothingSent(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async rethrows {
        let before = self.sent()
        try await body()
        #expect(self.sent() == before, sourceLocation: sourceLocation)
    }
}

/// A started manager on a registered app.
struct RCApp {
    let connection: SDLAppConnection
    let manager: SDLRemoteControlManager
    let handle: AppHandle

    static func start(
        on headUnit: TestHeadUnit, name: String = "RC App", appID: String = "rc-1", hmiTypes: [SDLAppHMIType] = [.remoteControl],
        start: Bool = true
    ) async throws -> RCApp {
        let (connection, request) = try await headUnit.connect(name, appID: appID, hmiTypes: hmiTypes)
        let manager = SDLRemoteControlManager(connection: connection, registeredWith: request)
        try await connection.register(request)
        let handle = try #require(headUnit.lastRegisteredApp)
        // The head unit's policy (SDL Core's) allows remote control from BACKGROUND up: wait for
        // the activation that follows registration.
        try await eventually("activated") { await connection.hmiStatus.map { $0.hmiLevel != .none_ } ?? false }
        if start {
            try await manager.start()
        }
        return RCApp(connection: connection, manager: manager, handle: handle)
    }
}

/// A head unit of `version` and an RC app registered on it (its manager started unless `start`
/// is false) for `body`; both are closed afterwards, whatever `body` did.
func withRCApp(
    version: RPCVersion = .v8_0, hmiTypes: [SDLAppHMIType] = [.remoteControl], start: Bool = true,
    configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in },
    _ body: (TestHeadUnit, RCApp) async throws -> Void
) async throws {
    let headUnit = try await TestHeadUnit.start(version: version, configure)
    var failure: (any Error)?
    do {
        let app = try await RCApp.start(on: headUnit, hmiTypes: hmiTypes, start: start)
        do { try await body(headUnit, app) } catch { failure = error }
        await app.connection.close()
    } catch {
        failure = error
    }
    await headUnit.stop()
    if let failure { throw failure }
}

/// Expects `call` to fail with an ``SDLManagerError`` of `code` and, when given, exactly this
/// detail and result code; returns the error.
@discardableResult
func expectFailure<Value>(
    _ code: SDLManagerError.Code, detail: String? = nil, resultCode: SDLResult? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ call: () async throws -> Value
) async -> SDLManagerError? {
    let error = await #expect(throws: SDLManagerError.self, sourceLocation: sourceLocation) { _ = try await call() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
    if let detail {
        #expect(error?.detail == detail, sourceLocation: sourceLocation)
    }
    if let resultCode {
        #expect(error?.resultCode == resultCode, sourceLocation: sourceLocation)
    }
    return error
}

func climate(desired: Double? = nil, fan: Int32? = nil) -> SDLClimateControlData {
    SDLClimateControlData(fanSpeed: fan, desiredTemperature: desired.map { SDLTemperature(unit: .celsius, value: $0) })
}

/// A startup condition that is not met, and how the manager says so.
struct StartupFailure: Sendable, CustomTestStringConvertible {
    var name: String
    var version: RPCVersion = .v8_0
    var hmiTypes: [SDLAppHMIType] = [.remoteControl]
    var remoteControl = true
    var code: SDLManagerError.Code
    var detail: String

    var testDescription: String { self.name }

    static let all = [
        StartupFailure(
            name: "not a REMOTE_CONTROL app", hmiTypes: [.media], code: .notRemoteControlApp,
            detail: "the app's appHMIType has no REMOTE_CONTROL"),
        StartupFailure(
            name: "a head unit without remote control", remoteControl: false, code: .remoteControlUnavailable,
            detail: "the head unit's hmiCapabilities.remoteControl is false"),
        StartupFailure(
            name: "a head unit older than 4.5", version: RPCVersion(4, 0), code: .unsupportedVersion,
            detail: "remote control needs RPC 4.5; the head unit speaks 4.0.0"),
    ]
}

/// The remote control manager against the simulated head unit over loopback, at each RPC version
/// where remote control changed.
@Suite(.timeLimit(.minutes(1)))
struct RemoteControlManagerTests {
    static let versions: [RPCVersion] = RPCVersion.headUnitVersions
    static let concreteModules = [
        "CLIMATE/climate.front", "CLIMATE/climate.rear", "RADIO/radio", "SEAT/seat.driver", "SEAT/seat.passenger",
        "AUDIO/audio", "LIGHT/light", "HMI_SETTINGS/hmiSettings",
    ]

    static func expectedModules(at version: RPCVersion) -> [String] {
        if version >= .v6_0 { return Self.concreteModules }
        if version >= .v5_0 {
            return ["CLIMATE", "RADIO", "SEAT", "AUDIO", "LIGHT", "HMI_SETTINGS"].map { "\($0)/SDL_DEFAULT_MODULE" }
        }
        return ["CLIMATE/SDL_DEFAULT_MODULE", "RADIO/SDL_DEFAULT_MODULE"]
    }

    /// The default climate module at a version: named by its id from 6.0, the default module before.
    static func frontClimate(at version: RPCVersion) -> SDLRCModule {
        SDLRCModule(.climate, version >= .v6_0 ? "climate.front" : .default)
    }

    /// The default climate module's `moduleId` as ``describe(_:)`` shows it.
    static func climateID(at version: RPCVersion) -> String { version >= .v6_0 ? "climate.front" : "nil" }

    @Test("start: capability fetched (4.5-5.0) or subscribed (5.1+), seats from 6.0, OnRCStatus from 5.0", arguments: versions)
    func startsAtEveryVersion(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, app in
            let capabilities = try #require(await app.manager.capabilities)
            #expect(capabilities.modules.map(\.description) == Self.expectedModules(at: version))

            var expected = ["GetSystemCapability REMOTE_CONTROL subscribe=" + (version >= .v5_1 ? "true" : "nil")]
            if version >= .v6_0 {
                expected.append("GetSystemCapability SEAT_LOCATION subscribe=true")
            }
            #expect(headUnit.sent() == expected)
            #expect(app.manager.answeredRequests == expected.count)

            // Typed per-module capabilities, the default module reached by `.default`.
            #expect(capabilities.climate()?.moduleName == "front climate")
            #expect(capabilities.radio()?.moduleName == "radio")
            #expect(capabilities.seat()?.moduleName == (version >= .v5_0 ? "driver seat" : nil))
            #expect(capabilities.climate("climate.rear")?.moduleName == (version >= .v6_0 ? "rear climate" : nil))
            #expect(capabilities.light()?.moduleName == (version >= .v5_0 ? "light" : nil))

            if version >= .v5_0 {
                try await eventually("OnRCStatus") { await app.manager.status != nil }
                #expect(await app.manager.allocatedModules == [])
                #expect(await app.manager.freeModules?.map(\.description) == Self.expectedModules(at: version))
            } else {
                #expect(await app.manager.status == nil)
            }
            if version >= .v6_0 {
                #expect(await app.manager.seatLocations?.seats?.count == 5)
                let seat = try #require(await app.manager.userSeat)
                #expect(seat.col == 0 && seat.row == 0)
            } else {
                #expect(await app.manager.seatLocations == nil)
                #expect(await app.manager.userSeat == nil)
            }
        }
    }

    @Test("startup conditions not met fail at once, typed, for every later call too, and nothing is sent", arguments: StartupFailure.all)
    func startupFailures(failure: StartupFailure) async throws {
        try await withRCApp(version: failure.version, hmiTypes: failure.hmiTypes, start: false, configure: {
            $0.remoteControl = failure.remoteControl
        }) { headUnit, app in
            await headUnit.expectNothingSent {
                await expectFailure(failure.code, detail: failure.detail) { try await app.manager.start() }
                await expectFailure(failure.code, detail: failure.detail) { try await app.manager.moduleData(.climate) }
                await expectFailure(failure.code, detail: failure.detail) {
                    try await app.manager.setModuleData(SDLModuleData(moduleType: .climate, climateControlData: climate(fan: 10)))
                }
            }
            #expect(headUnit.sent() == [])
        }
    }

    @Test("not registered yet: start fails, then starts once the app is registered")
    func startBeforeRegistration() async throws {
        let headUnit = try await TestHeadUnit.start()
        let (early, earlyRequest) = try await headUnit.connect("Early", appID: "early-1")
        let earlyManager = SDLRemoteControlManager(connection: early, registeredWith: earlyRequest)
        await expectFailure(.notRegistered, detail: "remote control starts once RegisterAppInterface succeeded") { try await earlyManager.start() }
        #expect(headUnit.sent() == [])
        try await early.register(earlyRequest)
        #expect(try await earlyManager.start().modules.count == 8)
        await early.close()
        await headUnit.stop()
    }

    @Test("OnRCStatus allowed false and permissions without GetInteriorVehicleData fail each call at once")
    func allowedAndPermissions() async throws {
        try await withRCApp { headUnit, app in
            #expect(await headUnit.server.notify(app.handle, SDLOnRCStatus(allowed: false, allocatedModules: [], freeModules: [])))
            // An app that is not connected gets nothing.
            #expect(await !headUnit.server.notify(AppHandle(99), SDLOnRCStatus(allowed: false, allocatedModules: [], freeModules: [])))
            try await eventually("allowed false") { await app.manager.status?.allowed == false }
            await expectFailure(.notAllowed) { try await app.manager.moduleData(.climate) }
            await expectFailure(.notAllowed) { try await app.manager.pressButton(.ac) }

            await headUnit.server.notify(app.handle, SDLOnRCStatus(allowed: true, allocatedModules: [], freeModules: []))
            let item = { (name: String) in
                SDLPermissionItem(
                    rpcName: name, hmiPermissions: SDLHMIPermissions(allowed: [.full], userDisallowed: []),
                    parameterPermissions: SDLParameterPermissions(allowed: [], userDisallowed: []))
            }
            await headUnit.server.notify(app.handle, SDLOnPermissionsChange(permissionItem: [item("ButtonPress")]))
            try await eventually("narrow permissions") { await app.connection.permissions?.permissionItem.count == 1 }
            await expectFailure(.disallowed, detail: "the app's permissions do not allow GetInteriorVehicleData in HMI level FULL") {
                try await app.manager.pressButton(.ac)
            }

            await headUnit.server.notify(app.handle, SDLOnPermissionsChange(permissionItem: [item("ButtonPress"), item("GetInteriorVehicleData")]))
            try await eventually("permissions back") { await app.connection.permissions?.permissionItem.count == 2 }
            try await app.manager.pressButton(.ac)
            await expectFailure(.disallowed) {
                try await app.manager.setModuleData(SDLModuleData(moduleType: .climate, climateControlData: climate(fan: 10)))
            }
            #expect(headUnit.sent(after: 2) == ["ButtonPress AC CLIMATE climate.front SHORT"])
        }
    }

    @Test("one-time reads: GetInteriorVehicleData without subscribe, the cache keyed by module", arguments: versions)
    func oneTimeReads(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, app in
            let data = try await app.manager.moduleData(.climate)
            #expect(data.climateControlData?.desiredTemperature?.value == 22)
            #expect(headUnit.sent().last == "GetInteriorVehicleData CLIMATE \(Self.climateID(at: version)) subscribe=nil")
            #expect(await app.manager.cachedData(.climate)?.climateControlData?.fanSpeed == 30)
            #expect(await app.manager.cachedModules.keys.sorted { $0.description < $1.description } == [Self.frontClimate(at: version)])
            if version >= .v6_0 {
                #expect(await app.manager.cachedData(.climate, "climate.front")?.climateControlData?.fanSpeed == 30)
                let rear = try await app.manager.moduleData(.climate, "climate.rear")
                #expect(rear.climateControlData?.desiredTemperature?.value == 21)
                #expect(await app.manager.cachedModules.count == 2)
            }
            // An id the capability does not name is refused before sending.
            await headUnit.expectNothingSent {
                await expectFailure(.unknownModule) { try await app.manager.moduleData(.climate, "climate.roof") }
                if version < .v5_0 {
                    await expectFailure(.unknownModule) { try await app.manager.moduleData(.seat) }
                }
            }
        }
    }

    @Test("subscriptions: the first observer subscribes, updates reach every observer, the last one leaving unsubscribes", arguments: versions)
    func subscriptions(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, app in
            let id = Self.climateID(at: version)
            let before = headUnit.sent().count

            var first = app.manager.moduleDataUpdates(.climate).makeAsyncIterator()
            // Nothing is sent before the first use.
            #expect(headUnit.sent().count == before)
            #expect(try await first.next()?.climateControlData?.fanSpeed == 30)
            #expect(headUnit.sent(after: before) == ["GetInteriorVehicleData CLIMATE \(id) subscribe=true"])
            var second = app.manager.moduleDataUpdates(.climate).makeAsyncIterator()
            #expect(try await second.next()?.climateControlData?.fanSpeed == 30)
            #expect(await app.manager.subscribedModules.count == 1)

            // A one-time read of a subscribed module sends nothing.
            try await headUnit.expectNothingSent { () async throws in
                #expect(try await app.manager.moduleData(.climate).climateControlData?.fanSpeed == 30)
            }

            // The vehicle changes: both observers and the cache see it (only the fan speed is sent).
            await headUnit.server.act { $0.changeVehicleData(SDLModuleData(moduleType: .climate, climateControlData: climate(fan: 60))) }
            let update = try await first.next()
            #expect(update?.climateControlData?.fanSpeed == 60)
            #expect(update?.climateControlData?.desiredTemperature?.value == 22)
            #expect(try await second.next()?.climateControlData?.fanSpeed == 60)
            #expect(await app.manager.cachedData(.climate)?.climateControlData?.fanSpeed == 60)

            // The first observer leaves: the subscription stays; the last leaves: unsubscribed.
            try await headUnit.expectNothingSent {
                first = app.manager.moduleDataUpdates(.radio).makeAsyncIterator()
                try await Task.sleep(for: .milliseconds(50))
            }
            second = app.manager.moduleDataUpdates(.radio).makeAsyncIterator()
            try await eventually("unsubscribe") { await app.manager.subscribedModules.isEmpty }
            #expect(headUnit.sent(after: before) == [
                "GetInteriorVehicleData CLIMATE \(id) subscribe=true", "GetInteriorVehicleData CLIMATE \(id) subscribe=false",
            ])
            _ = (first, second)
        }
    }

    @Test("setModuleData refuses mismatched data and unknown ids before sending", arguments: versions)
    func setRefusals(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, app in
            await headUnit.expectNothingSent {
                let mismatched = SDLModuleData(moduleType: .climate, radioControlData: SDLRadioControlData(frequencyInteger: 99))
                await expectFailure(.mismatchedModuleData, detail: "moduleType CLIMATE with control data of RADIO") {
                    try await app.manager.setModuleData(mismatched)
                }
                let two = SDLModuleData(
                    moduleType: .climate, radioControlData: SDLRadioControlData(frequencyInteger: 99), climateControlData: climate(fan: 1))
                await expectFailure(.mismatchedModuleData) { try await app.manager.setModuleData(two) }
                let unknown = SDLModuleData(moduleType: .climate, moduleId: "climate.roof", climateControlData: climate(fan: 1))
                await expectFailure(.unknownModule) { try await app.manager.setModuleData(unknown) }
            }
        }
    }

    @Test("setModuleData: consent asked first on 6.0+, the module allocated", arguments: versions)
    func setWithConsent(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, app in
            let before = headUnit.sent().count
            let answer = try await app.manager.setModuleData(SDLModuleData(moduleType: .climate, climateControlData: climate(desired: 24)))
            #expect(answer?.climateControlData?.desiredTemperature?.value == 24)
            let set = "SetInteriorVehicleData CLIMATE \(Self.climateID(at: version))"
            var expected = [set]
            if version >= .v6_0 {
                expected.insert("GetInteriorVehicleDataConsent CLIMATE [\"climate.front\"]", at: 0)
                #expect(await app.manager.consentStatus == [SDLRCModule(.climate, "climate.front"): true])
            } else {
                #expect(await app.manager.consentStatus == [:])
            }
            #expect(headUnit.sent(after: before) == expected)
            #expect(await headUnit.server.inspect { $0.currentVehicle.modules[0].data.climateControlData?.desiredTemperature?.value } == 24)
            if version >= .v5_0 {
                let module = Self.frontClimate(at: version)
                try await eventually("allocated") { await app.manager.allocatedModules == [module] }
                #expect(await app.manager.freeModules?.contains(module) == false)
            }
            // Consent known: the second set asks nothing.
            try await app.manager.setModuleData(SDLModuleData(moduleType: .climate, climateControlData: climate(fan: 70)))
            #expect(headUnit.sent(after: before) == expected + [set])
        }
    }

    @Test("consent refused: no SetInteriorVehicleData is sent")
    func consentRefused() async throws {
        try await withRCApp(configure: {
            $0.accessMode = .askDriver
            $0.driverConsent = .refuseModules(["radio"])
        }) { headUnit, app in
            // As on SDL Core, the driver is asked only about a module another app holds, from an
            // app in FULL: another app takes the radio, then this app is activated.
            let other = try await RCApp.start(on: headUnit, name: "Other", appID: "other")
            let radio = SDLModuleData(moduleType: .radio, radioControlData: SDLRadioControlData(frequencyInteger: 99, frequencyFraction: 5, band: .fm))
            try await other.manager.setModuleData(radio)
            await headUnit.server.act { $0.setHMILevel(.full, of: app.handle) }
            try await eventually("in FULL") { await app.connection.hmiStatus?.hmiLevel == .full }
            let before = headUnit.sent().count
            await expectFailure(.consentRefused, detail: "the user refused consent for RADIO/radio") { try await app.manager.setModuleData(radio) }
            #expect(headUnit.sent(after: before) == ["GetInteriorVehicleDataConsent RADIO [\"radio\"]"])
            #expect(await app.manager.consentStatus == [SDLRCModule(.radio, "radio"): false])
            // Refused stays refused until asked again: nothing is sent.
            await headUnit.expectNothingSent {
                await expectFailure(.consentRefused) { try await app.manager.setModuleData(radio) }
            }
            // Explicit consent for several free modules at once: yes without asking (the user sits
            // in the driver's seat, who may control every module).
            let answers = try await app.manager.requestConsent(.climate, ["climate.front", "climate.rear"])
            #expect(answers == [SDLRCModule(.climate, "climate.front"): true, SDLRCModule(.climate, "climate.rear"): true])
            await other.connection.close()
        }
    }

    @Test("allocation contention between two apps: REJECTED before 6.0 (the module allows no multiple access), consent refused from 6.0, release frees", arguments: [RPCVersion.v5_0, .v8_0])
    func contention(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, first in
            let second = try await RCApp.start(on: headUnit, name: "Second", appID: "second")
            let module = Self.frontClimate(at: version)
            let data = SDLModuleData(moduleType: .climate, climateControlData: climate(desired: 19))
            try await first.manager.setModuleData(data)
            try await eventually("allocated to the first") { await first.manager.allocatedModules == [module] }
            // The second app sees the module taken: neither its nor free.
            try await eventually("not free for the second") { await second.manager.freeModules?.contains(module) == false }
            #expect(await second.manager.allocatedModules == [])

            if version >= .v6_0 {
                await expectFailure(.consentRefused) { try await second.manager.setModuleData(data) }
                #expect(headUnit.sent(from: second.handle).last == "GetInteriorVehicleDataConsent CLIMATE [\"climate.front\"]")
                // The holder releases; the second asks again and takes it.
                try await first.manager.releaseModule(.climate)
                try await eventually("free again") { await second.manager.freeModules?.contains(module) == true }
                #expect(try await second.manager.requestConsent(.climate, [.default]) == [module: true])
                try await second.manager.setModuleData(data)
                try await eventually("allocated to the second") { await second.manager.allocatedModules == [module] }
                try await eventually("gone from the first") { await first.manager.allocatedModules == [] }
            } else {
                await expectFailure(.requestFailed, resultCode: .rejected) { try await second.manager.setModuleData(data) }
                #expect(headUnit.sent(from: second.handle).last == "SetInteriorVehicleData CLIMATE nil")
                // The refusal is an answer all the same.
                #expect(second.manager.answeredRequests == headUnit.sent(from: second.handle).count)
            }
            await second.connection.close()
        }
    }

    @Test("seats, buttons and release per version", arguments: versions)
    func seatsButtonsRelease(version: RPCVersion) async throws {
        try await withRCApp(version: version) { headUnit, app in
            let before = headUnit.sent().count
            let passenger = SDLGrid(col: 2, row: 0)
            try await app.manager.pressButton(.ac)
            try await app.manager.pressButton(.volumeUp, mode: .long)
            if version >= .v6_0 {
                try await app.manager.setUserSeat(passenger)
                #expect(await app.manager.userSeat == passenger)
                // The press took the radio: released once, then IGNORED.
                #expect(await headUnit.server.inspect { $0.holder(of: .radio, id: "radio") } == app.handle)
                try await app.manager.releaseModule(.radio)
                #expect(await headUnit.server.inspect { $0.holder(of: .radio, id: "radio") } == nil)
                await expectFailure(.requestFailed, resultCode: .ignored) { try await app.manager.releaseModule(.radio) }
                #expect(headUnit.sent(after: before) == [
                    "ButtonPress AC CLIMATE climate.front SHORT", "ButtonPress VOLUME_UP RADIO radio LONG",
                    "SetGlobalProperties userLocation=2,0", "ReleaseInteriorVehicleDataModule RADIO radio",
                    "ReleaseInteriorVehicleDataModule RADIO radio",
                ])
            } else {
                await expectFailure(.unsupportedVersion) { try await app.manager.setUserSeat(passenger) }
                await expectFailure(.unsupportedVersion) { try await app.manager.releaseModule(.radio) }
                await expectFailure(.unsupportedVersion) { try await app.manager.requestConsent(.radio, [.default]) }
                #expect(headUnit.sent(after: before) == ["ButtonPress AC CLIMATE nil SHORT", "ButtonPress VOLUME_UP RADIO nil LONG"])
            }
            await expectFailure(.unknownModule) { try await app.manager.pressButton(.ok) }
            #expect(await headUnit.server.inspect { $0.currentVehicle.modules[0].data.climateControlData?.acEnable } == false)
        }
    }

    @Test("a head unit that drops the connection mid-subscription: observers end with an error, nothing is left")
    func dropMidSubscription() async throws {
        let headUnit = try await TestHeadUnit.start()
        let app = try await RCApp.start(on: headUnit)
        var updates = app.manager.moduleDataUpdates(.radio).makeAsyncIterator()
        #expect(try await updates.next()?.radioControlData?.frequencyInteger == 101)
        let statuses = await app.manager.statusUpdates()
        await headUnit.stop()
        await expectFailure(.disconnected) { while try await updates.next() != nil {} }
        var count = 0
        for await _ in statuses { count += 1 }
        #expect(count == 1)
        await expectFailure(.disconnected) { try await app.manager.moduleData(.radio) }
        await expectFailure(.disconnected) {
            for try await _ in app.manager.moduleDataUpdates(.climate) {}
        }
        #expect(await app.manager.subscribedModules.isEmpty)
    }
}

/// A weak reference a `@Sendable` closure may read.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    init(_ object: Object) { self.object = object }
}

/// Behaviours beyond the startup flow: capability updates, and a dropped manager freed.
@Suite(.timeLimit(.minutes(1)))
struct RemoteControlLifecycleTests {
    @Test("REMOTE_CONTROL updates (5.1+) replace the typed capabilities and the known module ids")
    func capabilityUpdates() async throws {
        try await withRCApp { headUnit, app in
            #expect(try await app.manager.moduleData(.radio).radioControlData?.frequencyInteger == 101)
            let reduced = SDLRemoteControlCapabilities(climateControlCapabilities: [
                SDLClimateControlCapabilities(moduleName: "only climate", moduleInfo: SDLModuleInfo(moduleId: "climate.front"))
            ])
            await headUnit.server.notify(
                app.handle,
                SDLOnSystemCapabilityUpdated(
                    systemCapability: SDLSystemCapability(systemCapabilityType: .remoteControl, remoteControlCapability: reduced)))
            try await eventually("capability update") {
                await app.manager.capabilities?.modules == [SDLRCModule(.climate, "climate.front")]
            }
            #expect(await app.manager.capabilities?.climate()?.moduleName == "only climate")
            await headUnit.expectNothingSent {
                await expectFailure(.unknownModule) { try await app.manager.moduleData(.radio) }
            }
        }
    }

    @Test("a manager dropped by the app is freed once its subscriptions ended, the head unit unsubscribed")
    func droppedManagerIsFreed() async throws {
        let headUnit = try await TestHeadUnit.start()
        let (connection, request) = try await headUnit.connect()
        let reference: WeakReference<SDLRemoteControlManager>
        do {
            let manager = SDLRemoteControlManager(connection: connection, registeredWith: request)
            reference = WeakReference(manager)
            try await connection.register(request)
            var updates = manager.moduleDataUpdates(.climate).makeAsyncIterator()
            #expect(try await updates.next()?.climateControlData?.fanSpeed == 30)
        }
        try await eventually("freed") { reference.object == nil }
        try await eventually("unsubscribed") { headUnit.sent().last == "GetInteriorVehicleData CLIMATE climate.front subscribe=false" }
        await connection.close()
        await headUnit.stop()
    }
}
