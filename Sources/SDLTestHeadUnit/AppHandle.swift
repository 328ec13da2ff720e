/// Names one app connection for the simulated head unit: what the I/O layer that drives it (a
/// head-unit runtime, a test) says a message came from and where one goes. The driver picks the
/// values, e.g. from the session engine's `SessionHandle`, and never reuses one for a later
/// connection; the head unit only compares them, and orders them to fan notifications out in a
/// repeatable order.
public struct AppHandle: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value the driver chose.
    public var rawValue: UInt64

    /// Wraps a value the driver chose.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Wraps a value the driver chose.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// `app<n>`.
    public var description: String { "app\(self.rawValue)" }

    /// Orders handles by value: the order fan-outs follow.
    public static func < (lhs: AppHandle, rhs: AppHandle) -> Bool { lhs.rawValue < rhs.rawValue }
}
