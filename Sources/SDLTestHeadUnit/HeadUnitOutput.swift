import NIOCore
import SDLRPC

/// What the simulated head unit asks of the layer that drives it, in order, after each input.
public enum HeadUnitOutput: Equatable, Sendable, CustomStringConvertible {
    /// Send this message to the app: a response (the request's correlation id), a notification
    /// (correlation id ``SimulatedHeadUnit/Configuration/notificationCorrelationID``) or a request
    /// the head unit forwards to an app-service provider (a correlation id of the head unit's own).
    case send(AnyRPCMessage, to: AppHandle)
    /// The app has registered: a session layer with a registration timer (the session engine's
    /// `sessionRegistered`) can stop it.
    case registered(AppHandle)
    /// Call ``SimulatedHeadUnit/timerFired(now:)`` at this deadline (or earlier: an early call is
    /// harmless). A later `armTimer` replaces an earlier one.
    case armTimer(NIODeadline)
    /// One transcript line: what the head unit did with one input.
    case log(TranscriptLine)

    /// One line for logs: the receiver and the message's function, type and correlation id.
    public var description: String {
        switch self {
        case .send(let message, let app): "send to \(app): \(message.functionName) \(message.rpcType) #\(message.correlationID)"
        case .registered(let app): "registered \(app)"
        case .armTimer(let deadline): "arm timer \(deadline.uptimeNanoseconds)"
        case .log(let line): "log \(line)"
        }
    }
}

/// One step of the head unit's transcript: an input (a message from an app, a connection, a timer,
/// a simulated vehicle change) and what the head unit made of it. The `sdl headunit` transcript
/// prints these, as text or as JSON fields.
public struct TranscriptLine: Hashable, Sendable, CustomStringConvertible {
    /// The app the input came from; nil for the head unit's own events (timers, vehicle changes).
    public var app: AppHandle?
    /// The input, e.g. `RegisterAppInterface request #1` or `timer`.
    public var input: String
    /// What the head unit did, e.g. `registered "Weather" (app id 42), RPC 6.0.0, HMI FULL`.
    public var outcome: String

    /// A line from its parts.
    public init(app: AppHandle?, input: String, outcome: String) {
        self.app = app
        self.input = input
        self.outcome = outcome
    }

    /// `app1 RegisterAppInterface request #1: registered …`.
    public var description: String {
        let source = self.app.map { "\($0) " } ?? ""
        return "\(source)\(self.input): \(self.outcome)"
    }
}
