import SDLRPC

/// A policy table in SDL Core's format (`sdl_preloaded_pt.json`): which RPCs an app may send, and
/// receive as notifications, at each HMI level, which app HMI types it registers with, which
/// remote-control modules it may control, which app services it may publish.
///
/// The simulated head unit applies it as SDL Core's policy manager does (the "regular" policy of
/// Core's default build, without user consent prompts):
///
/// - An app's rules are those of its entry in `app_policies` (its app id), else of the `default`
///   entry. Its RPCs are the union of the RPCs of its `groups` (`functional_groupings`); an RPC is
///   allowed at an HMI level when one of those groups lists the level for it.
/// - A request not allowed at the app's current level is answered DISALLOWED without `info`; a
///   notification not allowed is not sent. OnPermissionsChange lists the app's RPCs with their
///   levels.
/// - `AppHMIType`, when present, replaces the types the app registers with; a type the app asks for
///   and the policy does not list makes the registration WARNINGS.
/// - `moduleType` lists the remote-control modules the app may control; absent: none (DISALLOWED),
///   empty: all.
/// - `app_services` lists the service types the app may publish, with the names and handled RPCs
///   each may have; absent: none (PublishAppService DISALLOWED).
/// - `nicknames`, when not empty, are the names the app may register with.
///
/// ``sdlCore`` is SDL Core 8.2.0's stock table; ``standard`` (the simulator's default) has the same
/// functional groups and lets every app use remote control and app services.
///
/// ```swift
/// var configuration = SimulatedHeadUnit.Configuration()
/// configuration.policy = try HeadUnitPolicy(jsonText: policyFileText)
/// ```
public struct HeadUnitPolicy: Hashable, Sendable {
    /// One RPC of a functional group: the HMI levels it is allowed in and, for vehicle data, the
    /// parameters it may carry.
    public struct RPCRule: Hashable, Sendable {
        /// The HMI levels the RPC is allowed in (`hmi_levels`).
        public var hmiLevels: Set<SDLHMILevel>
        /// The parameters the RPC may carry (`parameters`); nil: not restricted.
        public var parameters: [String]?

        /// A rule from its parts.
        public init(hmiLevels: Set<SDLHMILevel>, parameters: [String]? = nil) {
            self.hmiLevels = hmiLevels
            self.parameters = parameters
        }
    }

    /// A functional group (`functional_groupings` entry): RPCs that are granted together.
    public struct FunctionalGroup: Hashable, Sendable {
        /// `user_consent_prompt`: the consent the group asks for in Core's external policy. The
        /// regular policy the simulator follows does not ask; the group applies as any other.
        public var userConsentPrompt: String?
        /// The RPCs of the group by name (`rpcs`).
        public var rpcs: [String: RPCRule]

        /// A group from its parts.
        public init(userConsentPrompt: String? = nil, rpcs: [String: RPCRule]) {
            self.userConsentPrompt = userConsentPrompt
            self.rpcs = rpcs
        }
    }

    /// What an app may publish for one app-service type (`app_services` entry).
    public struct AppServiceRule: Hashable, Sendable {
        /// `service_names`: the names its services may have; nil: any name.
        public var serviceNames: [String]?
        /// `handled_rpcs`: the function ids its manifest may list in `handledRPCs`.
        public var handledRPCs: [Int32]

        /// A rule from its parts.
        public init(serviceNames: [String]? = nil, handledRPCs: [Int32] = []) {
            self.serviceNames = serviceNames
            self.handledRPCs = handledRPCs
        }
    }

    /// The rules of one app (an `app_policies` entry).
    public struct AppPolicy: Hashable, Sendable {
        /// `groups`: the functional groups granted, by name.
        public var groups: [String]
        /// `AppHMIType`: the app HMI types the app registers with, whatever it asks; nil: its own.
        public var appHMITypes: [SDLAppHMIType]?
        /// `moduleType`: the remote-control modules the app may control; nil: none, empty: all.
        public var moduleTypes: [SDLModuleType]?
        /// `app_services`: the service types the app may publish; nil: none.
        public var appServices: [String: AppServiceRule]?
        /// `nicknames`: the names the app may register with; nil or empty: any.
        public var nicknames: [String]?
        /// `default_hmi`: the HMI level the app is in right after registering. Default NONE.
        public var defaultHMI: SDLHMILevel
        /// `encryption_required`: read and kept; the simulator does not encrypt.
        public var encryptionRequired: Bool?

        /// An app policy from its parts.
        public init(
            groups: [String], appHMITypes: [SDLAppHMIType]? = nil, moduleTypes: [SDLModuleType]? = nil,
            appServices: [String: AppServiceRule]? = nil, nicknames: [String]? = nil, defaultHMI: SDLHMILevel = .none_,
            encryptionRequired: Bool? = nil
        ) {
            self.groups = groups
            self.appHMITypes = appHMITypes
            self.moduleTypes = moduleTypes
            self.appServices = appServices
            self.nicknames = nicknames
            self.defaultHMI = defaultHMI
            self.encryptionRequired = encryptionRequired
        }
    }

    /// The functional groups by name (`functional_groupings`).
    public var functionalGroupings: [String: FunctionalGroup]
    /// The app policies by key (`app_policies`): `default`, `device`, `pre_DataConsent` and app ids.
    /// An entry that names another (`"default"`) holds a copy of it.
    public var appPolicies: [String: AppPolicy]
    /// App ids whose entry is `null`: revoked apps, which may register but send nothing else and get
    /// no notification but OnHMIStatus in NONE, as on Core.
    public var revokedAppIDs: Set<String>

    /// A table from its parts.
    public init(
        functionalGroupings: [String: FunctionalGroup], appPolicies: [String: AppPolicy], revokedAppIDs: Set<String> = []
    ) {
        self.functionalGroupings = functionalGroupings
        self.appPolicies = appPolicies
        self.revokedAppIDs = revokedAppIDs
    }

    /// The policy of an app id: its own entry, else `default` (an app the table does not name gets
    /// the default policy, as on Core); no groups when neither exists.
    public func appPolicy(for appID: String) -> AppPolicy {
        self.appPolicies[appID] ?? self.appPolicies["default"] ?? AppPolicy(groups: [])
    }

    /// The RPCs an app policy grants, merged over its groups: for each RPC name the union of the
    /// levels and of the parameters (nil when one group does not restrict them).
    public func rules(of policy: AppPolicy) -> [String: RPCRule] {
        var merged: [String: RPCRule] = [:]
        for name in policy.groups {
            guard let group = self.functionalGroupings[name] else { continue }
            for (rpc, rule) in group.rpcs {
                guard var existing = merged[rpc] else {
                    merged[rpc] = rule
                    continue
                }
                existing.hmiLevels.formUnion(rule.hmiLevels)
                if let old = existing.parameters, let new = rule.parameters {
                    existing.parameters = old + new.filter { !old.contains($0) }
                } else {
                    existing.parameters = nil
                }
                merged[rpc] = existing
            }
        }
        return merged
    }
}
