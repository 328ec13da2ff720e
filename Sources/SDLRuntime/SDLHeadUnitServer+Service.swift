import ServiceLifecycle

/// A running head unit is a swift-service-lifecycle `Service`: put it in a `ServiceGroup` beside
/// the rest of a program, and the group's graceful shutdown (SIGTERM or SIGINT, when the group is
/// configured to take them) stops it as ``shutdown(graceful:)`` does: listeners closed, every
/// session ended with EndService, the frames given ``SDLTransportConfiguration/closeTimeout`` to
/// leave, every connection closed.
///
/// ```swift
/// let server = try await SDLHeadUnitServer.start(transports: [.tcp(port: 12345)], handler: MyHandler())
/// let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
extension SDLHeadUnitServer: Service {
    /// Serves until the service group shuts down gracefully or the calling task is cancelled, then
    /// stops the server gracefully; returns once it has stopped. A server already shut down
    /// returns at once.
    public func run() async {
        try? await gracefulShutdown()
        await self.shutdown()
    }
}
