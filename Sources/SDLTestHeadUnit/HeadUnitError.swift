/// Why the simulated head unit refused an input of its driver: a policy table that does not parse,
/// a script command that does not parse. Messages from apps are never errors: the head unit answers
/// them, as a head unit does.
///
/// Errors compare and hash by code alone; `path` and `detail` say where and what.
public struct HeadUnitError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of input was refused. An open set: only this module mints codes, so adding one is
    /// not a breaking change.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: Hashable, Sendable {
            case invalidPolicy
            case invalidCommand
        }

        private let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// A policy table that is not JSON, or whose parts do not have the shape SDL Core's policy
        /// table format gives them (`path` names the part).
        public static let invalidPolicy = Code(.invalidPolicy)
        /// A script command that is not one of the commands ``HeadUnitCommand`` documents, or whose
        /// arguments do not fit it.
        public static let invalidCommand = Code(.invalidCommand)

        /// `invalidPolicy` or `invalidCommand`.
        public var description: String {
            switch self.backing {
            case .invalidPolicy: "invalidPolicy"
            case .invalidCommand: "invalidCommand"
            }
        }
    }

    /// What kind of input was refused.
    public var code: Code
    /// Where: a JSON path in a policy table (`policy_table.app_policies.default.groups[1]`), the
    /// command word of a script line; empty when the whole input is at fault.
    public var path: String
    /// What is wrong, for a human.
    public var detail: String

    /// An error from its parts.
    public init(_ code: Code, path: String = "", detail: String) {
        self.code = code
        self.path = path
        self.detail = detail
    }

    /// `invalidPolicy at policy_table.app_policies: …`.
    public var description: String {
        self.path.isEmpty ? "\(self.code): \(self.detail)" : "\(self.code) at \(self.path): \(self.detail)"
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: HeadUnitError, rhs: HeadUnitError) -> Bool { lhs.code == rhs.code }

    /// Hashes the code alone, as `==` compares.
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
