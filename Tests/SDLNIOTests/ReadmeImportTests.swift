import SDLNIO
import Testing

/// The README's "Over TCP, WebSocket, or any byte pipe" example with exactly the import it shows
/// (`import SDLNIO`; Testing for the checks): the file imports nothing else, so the example
/// compiles only while SDLNIO brings every type it names.
@Suite(.timeLimit(.minutes(1)))
struct ReadmeImportTests {
    @Test func theOverTCPExampleCompilesWithItsOneImport() async throws {
        try await within {
            let handler = RecordingHandler()
            let server = try await SDLHeadUnitServer.start(configuration: testHeadUnitConfiguration(), handler: handler)
            let port = server.primaryPort
            let h264Frame: [UInt8] = [0, 0, 0, 1, 0x65, 0x88, 0x84]

            // --- the README's text, the port aside
            let app = try await SDLAppConnection.connect(host: "127.0.0.1", port: port)   // SDL Core's port
            try await app.register(SDLRegisterAppInterfaceRequest(
                syncMsgVersion: SDLSyncMsgVersion(majorVersion: 8, minorVersion: 0), appName: "Navigator",
                isMediaApplication: false, languageDesired: .enUs, hmiDisplayLanguageDesired: .enUs,
                appHMIType: [.navigation], appID: "nav-1"))
            let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())   // correlation id, timeout
            for await status in app.hmiStatusUpdates() { if status.hmiLevel == .full { break } }
            let video = try await app.startVideo(VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264"))
            try await video.write(ByteBuffer(bytes: h264Frame))   // waits while the head unit reads slowly
            await app.disconnect()
            // --- to here

            #expect(files.filenames == ["a.png", "b.png"])
            await server.shutdown()
        }
    }
}
