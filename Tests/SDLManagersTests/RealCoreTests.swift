import NIOCore
import SDLRPC
import SDLTestSupport
import Testing

@testable import SDLManagers

/// The managers' view of what a real SDL Core 8.2.0 sent (`../shared/vectors/core82/`), read
/// leniently as the app runtime reads it.
struct RealCoreTests {
    static func decode<Message: RPCMessage>(_ file: String, as type: Message.Type) throws -> Message {
        let bytes = try SharedData.bytes("vectors/core82/\(file)")
        return try Message(jsonParameters: ByteBuffer(bytes: bytes), options: .lenient)
    }

    @Test("Core's REMOTE_CONTROL capability as typed modules: one module per type, its id, buttons on the climate module")
    func capabilities() throws {
        let response = try Self.decode("GetSystemCapability.response.json", as: SDLGetSystemCapabilityResponse.self)
        let remote = try #require(response.systemCapability?.remoteControlCapability)
        let modules = SDLRemoteControlModules(remote)
        #expect(modules.modules.map(\.description) == [
            "CLIMATE/34045662-a9dc-4823-8435-91056d4c26cb", "RADIO/eb7739ea-b263-4fe1-af9c-9311d1acac2d",
            "SEAT/06cdec22-920e-4865-bf2e-9518463edc68", "AUDIO/a279fe12-4587-4d12-8514-50f4ea9e9537",
            "LIGHT/8d73e369-6a1f-4459-ab5a-6e432631881d", "HMI_SETTINGS/c8cace3c-d482-4be1-8862-624a21e34563",
        ])
        // The default module of a type is the one Core names.
        #expect(modules.module(.climate)?.id == "34045662-a9dc-4823-8435-91056d4c26cb")
        #expect(modules.climate()?.moduleName == "primary_climate")
        #expect(modules.climate("34045662-a9dc-4823-8435-91056d4c26cb")?.moduleName == "primary_climate")
        #expect(modules.seat()?.moduleName == "driver_seat")
        #expect(modules.hmiSettings()?.moduleName == "hmiSettings")
        #expect(modules.module(.climate, "another") == nil)
        #expect(modules.buttons.count == 18)
        #expect(modules.module(pressing: .ac) == SDLRCModule(.climate, "34045662-a9dc-4823-8435-91056d4c26cb"))
        #expect(modules.module(pressing: .volumeUp)?.type == .radio)
        // As a pre-6.0 head unit's: ids ignored, one default module per type.
        let old = SDLRemoteControlModules(remote, moduleIDs: false)
        #expect(old.modules.allSatisfy { $0.id == .default })
        #expect(old.climate()?.moduleName == "primary_climate")
    }

    @Test("Core's registration and permissions: remote control does not start, for the reasons Core gives")
    func startupAgainstCore() throws {
        let registration = try Self.decode("RegisterAppInterface.response.json", as: SDLRegisterAppInterfaceResponse.self)
        let failure = SDLRemoteControlManager.startupFailure(
            hmiTypes: [.remoteControl], registration: registration, rpcVersion: registration.syncMsgVersion)
        #expect(failure?.code == .remoteControlUnavailable)
        #expect(SDLRemoteControlManager.startupFailure(hmiTypes: [.media], registration: registration, rpcVersion: registration.syncMsgVersion)?.code == .notRemoteControlApp)
        let permissions = try Self.decode("OnPermissionsChange.notification.json", as: SDLOnPermissionsChange.self)
        let status = try Self.decode("OnHMIStatus.notification.json", as: SDLOnHMIStatus.self)
        // Core's default policy gives this app no remote-control function: every call would fail.
        #expect(!permits("GetInteriorVehicleData", permissions: permissions, level: status.hmiLevel))
        #expect(permits("GetSystemCapability", permissions: permissions, level: status.hmiLevel))
    }
}
