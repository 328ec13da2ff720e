import NIOCore
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// The README's "Over TCP" example, run against a head unit of the tests so that it stays true.
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
}
