import NIOConcurrencyHelpers
import NIOCore
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// The README's "Over TCP, WebSocket, or any byte pipe" example, run against a head unit of the tests so that it stays true.
@Suite(.timeLimit(.minutes(1)))
struct DocumentationExampleTests {
    @Test func theReadmeExampleRuns() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let port = server.primaryPort
            let h264Frame: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84]

            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: port)
            try await app.register(SDLRegisterAppInterfaceRequest(
                syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Navigator",
                isMediaApplication: false, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs,
                appHMIType: [.navigation], appID: "nav-1"))
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
            for await status in app.hmiStatusUpdates() { if status.hmiLevel == .full { break } }
            let video = try await app.startVideo(VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264"))
            try await video.write(ByteBuffer(bytes: h264Frame))
            await app.disconnect()

            #expect(files.filenames == ["a.png", "b.png"])
            #expect(video.info.video?.videoCodec == "H264")
            let received = await handler.next { event -> SDLMediaStream? in
                if case .serviceStarted(_, .video, _, let stream) = event { return stream }
                return nil
            }
            var bytes: [UInt8] = []
            for await message in try #require(received) { bytes += Array(message.readableBytesView) }
            #expect(bytes == h264Frame)
            await server.shutdown()
        }
    }

    /// The README's first example: connect, register, publish a weather service, push its data
    /// and answer a consumer's GetAppServiceData; against a head unit that records the
    /// publication and asks for the service's data as SDL Core does for a consumer.
    @Test func theWeatherServiceExampleRuns() async throws {
        try await within {
            let handler = PublishingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let port = server.primaryPort

            // --- the README's text, from here
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: port)
            try await app.register(SDLRegisterAppInterfaceRequest(
                syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Weather Now",
                isMediaApplication: false, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs,
                appHMIType: [.information], appID: "weather-now"))

            // Publish: the head unit lists the service for other apps and keeps its record.
            let published: SDLPublishAppServiceResponse = try await app.send(SDLPublishAppServiceRequest(
                appServiceManifest: SDLAppServiceManifest(
                    serviceName: "Weather Now", serviceType: "WEATHER",
                    weatherServiceManifest: SDLWeatherServiceManifest(currentForecastSupported: true))))
            let serviceID = published.appServiceRecord?.serviceID ?? ""

            // Push the data to subscribers, and answer whoever asks for it.
            let data = SDLAppServiceData(
                serviceType: "WEATHER", serviceID: serviceID,
                weatherServiceData: SDLWeatherServiceData(
                    location: SDLLocationDetails(locationName: "Berlin"),
                    currentForecast: SDLWeatherData(currentTemperature: SDLTemperature(unit: .celsius, value: 21))))
            try await app.sendNotification(SDLOnAppServiceData(serviceData: data))
            for await request in app.incomingRequests(of: [.getAppServiceData]) {
                try await app.respond(SDLGetAppServiceDataResponse(success: true, resultCode: .success, serviceData: data), to: request)
                break  // (the README's loop runs for the app's lifetime)
            }
            await app.disconnect()
            // --- to here

            // The head unit's task records the answer after its await resumes.
            while handler.answered.withLockedValue({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
            #expect(serviceID == "service-1")
            #expect(handler.published.withLockedValue { $0 } == ["Weather Now WEATHER"])
            #expect(handler.pushed.withLockedValue { $0 } == ["Berlin 21.0"])
            #expect(handler.answered.withLockedValue { $0 } == ["service-1 Berlin"])
            await server.shutdown()
        }
    }
}

/// Answers PublishAppService with a record, hears OnAppServiceData, and asks the publisher for
/// its data once it has pushed some, as a consumer's GetAppServiceData would.
final class PublishingHandler: SDLHeadUnitHandler {
    let published = NIOLockedValueBox<[String]>([])
    let pushed = NIOLockedValueBox<[String]>([])
    let answered = NIOLockedValueBox<[String]>([])

    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {

        SDLRequestAnswer(await self.response(to: request, from: app))

    }


    func response(to request: AnyRPCMessage, from app: SDLConnectedApp) async -> (any RPCMessage)? {
        guard let publish = request.message as? SDLPublishAppServiceRequest else { return nil }
        let manifest = publish.appServiceManifest
        self.published.withLockedValue { $0.append("\(manifest.serviceName ?? "") \(manifest.serviceType)") }
        return SDLPublishAppServiceResponse(
            success: true, resultCode: .success,
            appServiceRecord: SDLAppServiceRecord(serviceID: "service-1", serviceManifest: manifest, servicePublished: true, serviceActive: true))
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        guard case .notification(let app, let message) = event, let update = message.message as? SDLOnAppServiceData else { return }
        let weather = update.serviceData.weatherServiceData
        self.pushed.withLockedValue {
            $0.append("\(weather?.location.locationName ?? "") \(weather?.currentForecast?.currentTemperature?.value ?? 0)")
        }
        Task {
            let response: SDLGetAppServiceDataResponse? = try? await app.send(SDLGetAppServiceDataRequest(serviceType: "WEATHER"))
            let data = response?.serviceData
            self.answered.withLockedValue {
                $0.append("\(data?.serviceID ?? "") \(data?.weatherServiceData?.location.locationName ?? "")")
            }
        }
    }
}
