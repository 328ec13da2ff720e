import SDLRPC

extension SimulatedHeadUnit {
    /// Whether an app's policy allows an RPC at its current HMI level (SDL Core's
    /// `CheckPolicyPermissions`): one of its groups lists the RPC with that level. A revoked app
    /// gets only OnHMIStatus in NONE.
    func permits(_ functionName: String, _ registration: Registration) -> Bool {
        if registration.isRevoked {
            return functionName == "OnHMIStatus" && registration.hmiLevel == .none_
        }
        return registration.rules[functionName]?.hmiLevels.contains(registration.hmiLevel) == true
    }

    /// OnPermissionsChange's items: every RPC of the app's groups, in name order, with its HMI
    /// levels in name order (BACKGROUND, FULL, LIMITED, NONE) and its parameters, as SDL Core lists
    /// them (`vectors/core82/OnPermissionsChange.notification.json`).
    func permissionItems(for registration: Registration) -> [SDLPermissionItem] {
        guard !registration.isRevoked else { return [] }
        return registration.rules.keys.sorted().compactMap { name in
            guard let rule = registration.rules[name] else { return nil }
            return SDLPermissionItem(
                rpcName: name,
                hmiPermissions: SDLHMIPermissions(
                    allowed: rule.hmiLevels.sorted { $0.wireName < $1.wireName }, userDisallowed: []),
                parameterPermissions: SDLParameterPermissions(allowed: rule.parameters ?? [], userDisallowed: []))
        }
    }

    /// Whether the app's policy lets it control modules of a type (SDL Core's `CheckModule`):
    /// `moduleType` absent allows none, empty allows all.
    func policyAllowsModule(_ type: SDLModuleType, _ registration: Registration) -> Bool {
        guard let types = registration.policy.moduleTypes else { return false }
        return types.isEmpty || types.contains(type)
    }

    /// Whether the app's policy lets it publish this manifest (SDL Core's
    /// `CheckAppServiceParameters`): the type must be in `app_services`; the name, when the manifest
    /// has one and the policy lists names, among them; every `handledRPCs` id among the policy's.
    func policyAllowsService(_ manifest: SDLAppServiceManifest, _ registration: Registration) -> Bool {
        guard let rule = registration.policy.appServices?[manifest.serviceType] else { return false }
        if let names = rule.serviceNames, let name = manifest.serviceName, !name.isEmpty, !names.contains(name) {
            return false
        }
        return (manifest.handledRPCs ?? []).allSatisfy { rule.handledRPCs.contains($0) }
    }

    /// Whether the app's policy lets it send data of an app-service type (OnAppServiceData, SDL
    /// Core's check without name or handled RPCs).
    func policyAllowsServiceType(_ type: String, _ registration: Registration) -> Bool {
        registration.policy.appServices?[type] != nil
    }
}
