import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SDLNIO
import SDLProtocol
import SDLRPC
import SDLSession
import Testing

/// Video over the secondary transport, verified byte for byte, and back-pressure from a head unit
/// that stops reading.
@Suite(.timeLimit(.minutes(2)))
struct MediaTests {
    /// Reads a media stream to its end, checking every byte against the pattern; returns the count.
    static func verify(_ stream: SDLMediaStream) async -> (bytes: Int, mismatches: Int) {
        var offset = 0
        var mismatches = 0
        for await message in stream {
            message.withUnsafeReadableBytes { bytes in
                for index in 0..<bytes.count {
                    let position = offset + index
                    if bytes[index] != UInt8(truncatingIfNeeded: position &* 31 &+ position >> 11) { mismatches += 1 }
                }
            }
            offset += message.readableBytes
        }
        return (offset, mismatches)
    }

    static func serviceStarted(_ handler: RecordingHandler) async -> (ServiceInfo, SDLMediaStream)? {
        await handler.next { event -> (ServiceInfo, SDLMediaStream)? in
            if case .serviceStarted(_, .video, let info, let stream) = event { return (info, stream) }
            return nil
        }
    }

    @Test(arguments: TransportKind.allCases) func sixtyFourMebibytesOfVideoOnTheSecondaryTransport(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within(90) {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(secondary: true, videoTransports: [.secondary]), handler: handler)
            let app = try await bed.connect(server)
            #expect(app.sessionInfo.secondaryTransports == ["TCP_WIFI"])
            #expect(app.sessionInfo.videoServiceTransports == [.secondary])
            try await app.register(registration())

            let parameters = VideoParameters(height: 480, width: 800, videoProtocol: "RAW", videoCodec: "H264")
            let writer = try await app.startVideo(parameters)
            #expect(writer.info.slot == .secondary)
            #expect(writer.info.transport != app.sessionInfo.transport)
            #expect(writer.info.video == parameters)
            let (headUnitInfo, stream) = try #require(await Self.serviceStarted(handler))
            #expect(headUnitInfo.slot == .secondary)
            let reader = Task { await Self.verify(stream) }

            let total = 64 * 1024 * 1024
            let chunk = 1024 * 1024
            var offset = 0
            while offset < total {
                try await writer.write(patternBytes(offset: offset, count: chunk))
                offset += chunk
                if offset == total / 2 {
                    // RPCs go on the primary while video streams on the secondary.
                    let files: SDLListFilesResponse = try await app.send(SDLListFilesRequest())
                    #expect(files.filenames == ["a.png", "b.png"])
                }
            }
            await writer.finish()
            let (received, mismatches) = await reader.value
            #expect(received == total)
            #expect(mismatches == 0)
            let ended = await handler.next { event -> ServiceEndReason? in
                if case .serviceEnded(_, .video, let reason) = event { return reason }
                return nil
            }
            #expect(ended == .peer)
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test(arguments: TransportKind.allCases) func audioOnThePrimaryAndVideoRefusedBeforeRegistration(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within {
            let handler = RecordingHandler()
            let server = try await bed.server(testHeadUnitConfiguration(), handler: handler)
            let app = try await bed.connect(server)
            // Audio and video start after registration: refused locally, nothing written.
            await #expect { try await app.startVideo() } throws: {
                ($0 as? SDLConnectionError)?.code == .notRegistered
            }
            try await app.register(registration())
            let writer = try await app.startAudio()
            #expect(writer.info.slot == .primary)
            await #expect { try await app.startAudio() } throws: {
                ($0 as? SDLConnectionError)?.code == .refused
            }
            let stream = try #require(
                await handler.next { event -> SDLMediaStream? in
                    if case .serviceStarted(_, .audio, _, let stream) = event { return stream }
                    return nil
                })
            let reader = Task { await Self.verify(stream) }
            // One write longer than a media message: cut into slices, delivered in order.
            try await writer.write(patternBytes(offset: 0, count: 300_000))
            try await writer.write(patternBytes(offset: 300_000, count: 700_000))
            await writer.finish()
            let (received, mismatches) = await reader.value
            #expect(received == 1_000_000)
            #expect(mismatches == 0)
            await #expect { try await writer.write(patternBytes(offset: 0, count: 1)) } throws: {
                ($0 as? SDLConnectionError)?.code == .serviceFailed
            }
            // Started again after it ended.
            let again = try await app.startAudio()
            try await again.write(patternBytes(offset: 0, count: 10))
            await app.disconnect()
            await server.shutdown()
        }
    }

    @Test(arguments: TransportKind.allCases) func aHeadUnitThatStopsReadingStopsTheWriterNotTheMemory(kind: TransportKind) async throws {
        let bed = TestBed(kind)
        try await within(90) {
            let handler = RecordingHandler()
            var configuration = testHeadUnitConfiguration()
            configuration.mediaBacklog = 4
            let server = try await bed.server(configuration, handler: handler)
            var appConfiguration = SDLAppConfiguration()
            appConfiguration.transport.maxQueuedBytesPerService = 128 * 1024
            appConfiguration.maxMediaMessageSize = 32 * 1024
            // Back-pressure is under test, not the stalled-reader timeout, which a loaded machine
            // could reach while the test waits for the writer to stall.
            appConfiguration.transport.stalledReaderTimeout = nil
            let app = try await bed.connect(server, configuration: appConfiguration)
            try await app.register(registration())
            let writer = try await app.startVideo()
            #expect(writer.info.slot == .primary)
            // The head unit holds the stream without reading it.
            let (_, stream) = try #require(await Self.serviceStarted(handler))

            let total = 48 * 1024 * 1024
            let accepted = NIOLockedValueBox(0)
            let writing = Task {
                var offset = 0
                while offset < total {
                    try await writer.write(patternBytes(offset: offset, count: 256 * 1024))
                    offset += 256 * 1024
                    accepted.withLockedValue { $0 = offset }
                }
            }
            // Wait until the writer stalls: its queue full and no progress over two checks in a
            // row (a writer that is only starved of CPU on a loaded machine has room left).
            var last = -1
            var stableChecks = 0
            let nearlyFull = appConfiguration.transport.maxQueuedBytesPerService - appConfiguration.maxMediaMessageSize
            while stableChecks < 2 {
                try await Task.sleep(for: .milliseconds(250))
                let now = accepted.withLockedValue { $0 }
                let queued = await app.statistics.queuedBytes
                stableChecks = now == last && queued >= nearlyFull ? stableChecks + 1 : 0
                last = now
            }
            let stalledAt = accepted.withLockedValue { $0 }
            // The socket buffers of both kernels and the head unit's backlog hold some; far from all.
            #expect(stalledAt < total / 2)
            let statistics = await app.statistics
            // What the app holds: its queue bound plus the one message in flight.
            #expect(statistics.queuedBytes <= appConfiguration.transport.maxQueuedBytesPerService + appConfiguration.maxMediaMessageSize)
            #expect(statistics.queuedBytes > 0)
            try await Task.sleep(for: .milliseconds(300))
            #expect(accepted.withLockedValue { $0 } == stalledAt)

            // Reading again: everything arrives, in order, intact.
            let reader = Task { await Self.verify(stream) }
            try await writing.value
            await writer.finish()
            let (received, mismatches) = await reader.value
            #expect(received == total)
            #expect(mismatches == 0)
            await app.disconnect()
            await server.shutdown()
        }
    }
}
