import SDLProtocol

/// Names one transport connection (a TCP socket, a Bluetooth channel, an in-memory pipe) for the
/// engine. The I/O layer picks the values; the engine only compares them. Transports are told
/// apart by connection, never by type, so a TCP primary with a TCP secondary works (sdl_ios
/// disables that case; ARCHITECTURE.md, D-secondary).
public struct TransportID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value the I/O layer chose.
    public var rawValue: UInt64

    /// Wraps a value the I/O layer chose.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Wraps a value the I/O layer chose.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// `T<n>`.
    public var description: String { "T\(self.rawValue)" }
}

/// Names one session for the layer above, from the moment it is asked for until long after it has
/// ended. Handles are never reused, unlike session ids (1–255, reused once freed), so a late call
/// for an old session can never reach a new session that got the same id (sdl_java_suite#660;
/// ARCHITECTURE.md, D-session-ids).
public struct SessionHandle: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The engine's counter value.
    public var rawValue: UInt32

    /// Wraps a counter value (tests and logs).
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `S#<n>`.
    public var description: String { "S#\(self.rawValue)" }
}

/// Names one request of the app engine to open a secondary transport (``SessionAction/connect(_:)``);
/// the I/O layer answers with ``SessionEngine/transportOpened(_:as:now:)`` and
/// `.secondary(request)`, or ``SessionEngine/connectFailed(_:now:)``.
public struct ConnectRequestID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The engine's counter value.
    public var rawValue: UInt32

    /// Wraps a counter value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `C#<n>`.
    public var description: String { "C#\(self.rawValue)" }
}

/// Which side of the protocol an engine plays.
public enum SessionRole: Hashable, Sendable {
    /// An app, or a router carrying several apps over one link: it starts sessions and services.
    case app
    /// A head unit: it accepts connections and assigns session ids unique across all of them.
    case headUnit
}

/// Where a service runs, in the terms of the service-transport lists of StartServiceACK
/// (`audioServiceTransports`, `videoServiceTransports`: 1 = primary, 2 = secondary; protocol spec
/// 5.4.1 §3.1.3.2, SDL-0141).
public enum TransportSlot: Int32, Hashable, Sendable, CustomStringConvertible {
    /// The transport the session was started on.
    case primary = 1
    /// The transport registered with RegisterSecondaryTransport.
    case secondary = 2

    /// `primary` or `secondary`.
    public var description: String { self == .primary ? "primary" : "secondary" }
}
