import NIOConcurrencyHelpers
import NIOCore
import SDLManagers
import SDLRPC
import SDLRuntime
import SDLSession

extension ScriptedApp {
    /// `rc` on the remote control manager: capability, consent (6.0), climate (and radio, when
    /// the vehicle has one) read, subscribed and set, a button pressed, subscriptions ended,
    /// modules released (6.0). `contended`: other apps run the script at once, so SDL Core's
    /// allocation outcomes (REJECTED for an app not in FULL, IN_USE while another request on the
    /// module runs, the module taken by the other app) are expected results, reported as such.
    func runRemoteControlScript(contended: Bool = false) async throws(AppScriptFailure) {
        let (climate, radio) = try await self.remoteControlModules()
        let consent = await self.speaks(6, 0)
        let modules = [climate] + (radio.map { [$0] } ?? [])
        if consent {
            // Asked for each module before its first set, as the manager would on its own.
            for module in modules {
                try await self.askConsent(for: module, contended: contended)
            }
        } else {
            self.skip("GetInteriorVehicleDataConsent", "RPC 6.0 and later")
        }
        let (climateData, climateUpdates) = try await self.readAndSubscribe(climate)
        let current = climateData.climateControlData?.fanSpeed ?? 30
        let fanSpeed: Int32 = current >= 90 ? 20 : current + 10
        try await self.set(
            climate, SDLModuleData(moduleType: .climate, moduleId: climate.id.wireValue, climateControlData: SDLClimateControlData(fanSpeed: fanSpeed)),
            what: "fan speed \(fanSpeed)", contended: contended, shows: { $0.climateControlData?.fanSpeed == fanSpeed })
        var radioUpdates: Observation<SDLModuleData>?
        if let radio {
            let (radioData, updates) = try await self.readAndSubscribe(radio)
            radioUpdates = updates
            let frequency: Int32 = radioData.radioControlData?.frequencyInteger == 99 ? 101 : 99
            try await self.set(
                radio,
                SDLModuleData(
                    moduleType: .radio, moduleId: radio.id.wireValue,
                    radioControlData: SDLRadioControlData(frequencyInteger: frequency, frequencyFraction: 5)),
                what: "frequency \(frequency).5", contended: contended, shows: { $0.radioControlData?.frequencyInteger == frequency })
        } else {
            self.skip("radio", "the vehicle has no radio module")
        }
        try await self.press(.fanUp, of: climate, contended: contended)
        try await self.unsubscribe(climate, ending: climateUpdates)
        if let radio, let radioUpdates {
            try await self.unsubscribe(radio, ending: radioUpdates)
        }
        if consent {
            for module in modules {
                try await self.release(module, contended: contended)
            }
        } else {
            self.skip("ReleaseInteriorVehicleDataModule", "RPC 6.0 and later")
        }
    }

    /// `video`: starts the video service where the head unit's `videoServiceTransports` put it
    /// (the secondary transport is connected and registered first when the list asks for it) and
    /// writes 32 KiB messages paced to `bitrate` for `duration` (at least one), as an encoder
    /// would; then ends it and reports whether the head unit acknowledged the end, which SDL Core
    /// does only once it has worked through what it received. As a well-mannered navigation app,
    /// it stops writing as soon as the head unit makes it NOT_STREAMABLE (another app activated:
    /// SDL Core unregisters an app that keeps streaming with PROTOCOL_VIOLATION). With
    /// `contended` (several navigation apps, one screen), a start refused for the app's HMI level
    /// is the expected result of contention.
    func runVideoScript(for duration: TimeAmount, bitrate: Int, contended: Bool = false) async throws(AppScriptFailure) {
        let started: Result<SDLMediaWriter, any Error>
        do {
            started = .success(try await self.connection.startVideo(VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264")))
        } catch {
            started = .failure(error)
        }
        if contended, case .failure(let error) = started, "\(error)".contains("disallowed with current HMI level") {
            self.record("start video", ok: true, "contention: refused, another navigation app holds the screen (\(error))")
            return
        }
        let writer = try await self.step("start video") {
            let writer = try started.get()
            return (writer, "on the \(writer.info.slot) transport, MTU \(writer.info.mtu ?? 0)")
        }
        // Whether the head unit has taken streaming away, and why.
        let stopped = NIOLockedValueBox<String?>(nil)
        let statuses = self.connection.hmiStatusUpdates()
        let watcher = Task {
            for await status in statuses {
                let level = status.hmiLevel
                if status.videoStreamingState == .notStreamable || level == .background || level == .none {
                    stopped.withLockedValue { $0 = "the head unit made the app \(status.videoStreamingState.map { $0.wireName } ?? "NOT_STREAMABLE") in HMI level \(level.wireName)" }
                    return
                }
            }
        }
        defer { watcher.cancel() }
        let chunk = ByteBuffer(repeating: 0x5A, count: 32 * 1024)
        // The time one chunk takes at the bit rate.
        let interval = TimeAmount.nanoseconds(Int64(Double(chunk.readableBytes * 8) / Double(max(1, bitrate)) * 1e9))
        let written = try await self.step("stream video") {
            let start = NIODeadline.now()
            let deadline = start + duration
            var written = 0
            var next = start
            do {
                repeat {
                    try await writer.write(chunk)
                    written += chunk.readableBytes
                    next = next + interval
                    let wait = next - .now()
                    if wait > .zero { try await Task.sleep(nanoseconds: UInt64(wait.nanoseconds)) }
                } while NIODeadline.now() < deadline && !Task.isCancelled && stopped.withLockedValue({ $0 }) == nil
            } catch {
                self.counters.update { $0.mediaBytes += written }
                throw error
            }
            self.counters.update { $0.mediaBytes += written }
            let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
            let rate = seconds > 0 ? Double(written * 8) / seconds / 1e6 : 0
            let why = stopped.withLockedValue { $0 }.map { "; stopped early: \($0)" } ?? ""
            return (written, "\(written) bytes written in \(formatted(seconds)) s (\(formatted(rate)) Mbit/s)\(why)")
        }
        try await self.step("end video") {
            let start = NIODeadline.now()
            let outcome = await writer.finish()
            let seconds = formatted(Double((NIODeadline.now() - start).nanoseconds) / 1e9)
            switch outcome {
            case .local:
                return ((), "EndService acknowledged after \(seconds) s: the head unit took all \(written) bytes")
            case .endTimedOut:
                throw self.failure("end video", "EndService not acknowledged within \(seconds) s: the head unit may not have taken the \(written) bytes")
            default:
                throw self.failure("end video", "the service had ended before: \(outcome)")
            }
        }
    }

    /// `ping`: ListFiles round trips for `duration`, at least one, at most `rate` per second (a
    /// head unit such as SDL Core ends a session that sends more than its flood limit allows).
    /// A session the head unit ends is reported with the reason it gave.
    func runPingScript(for duration: TimeAmount, rate: Int) async throws(AppScriptFailure) {
        let interval = TimeAmount.nanoseconds(Int64(1e9 / Double(max(1, rate))))
        try await self.step("ListFiles round trips") {
            let start = NIODeadline.now()
            let deadline = start + duration
            var count = 0
            var next = start
            do {
                repeat {
                    let _: SDLListFilesResponse = try await self.request(SDLListFilesRequest())
                    count += 1
                    next = next + interval
                    let wait = next - .now()
                    if wait > .zero { try await Task.sleep(nanoseconds: UInt64(wait.nanoseconds)) }
                } while NIODeadline.now() < deadline && !Task.isCancelled
            } catch {
                throw self.failure("ListFiles round trips", "after \(count): \(error)")
            }
            let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
            return ((), "\(count) in \(formatted(seconds)) s (\(formatted(seconds > 0 ? Double(count) / seconds : 0))/s)")
        }
    }
}
