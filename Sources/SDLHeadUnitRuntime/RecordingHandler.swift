import SDLRuntime
import SDLRPC
import SDLTestHeadUnit

/// A head-unit handler that tells a recorder every RPC an app sends before passing it on
/// (``SimulatedHeadUnitServerConfiguration/recorder``).
struct RecordingHandler<Handler: SDLHeadUnitHandler>: SDLHeadUnitHandler {
    let handler: Handler
    let recorder: @Sendable (AppHandle, AnyRPCMessage) -> Void

    init(_ handler: Handler, recorder: @escaping @Sendable (AppHandle, AnyRPCMessage) -> Void) {
        self.handler = handler
        self.recorder = recorder
    }

    /// The head unit's handle of an app, as the simulation names it.
    private static func handle(of app: SDLConnectedApp) -> AppHandle { AppHandle(UInt64(app.handle.rawValue)) }

    func registerApp(_ request: SDLRegisterAppInterfaceRequest, from app: SDLConnectedApp) async -> SDLRegisterAppInterfaceResponse {
        // The server hands over the typed request without its correlation id.
        self.recorder(Self.handle(of: app), AnyRPCMessage(request, correlationID: 0))
        return await self.handler.registerApp(request, from: app)
    }

    func answer(_ request: AnyRPCMessage, from app: SDLConnectedApp) async -> SDLRequestAnswer {
        self.recorder(Self.handle(of: app), request)
        return await self.handler.answer(request, from: app)
    }

    func handle(_ event: SDLHeadUnitEvent) async {
        if case .notification(let app, let message) = event {
            self.recorder(Self.handle(of: app), message)
        }
        await self.handler.handle(event)
    }
}
