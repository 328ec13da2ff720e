import SDLRPC

extension HeadUnitPolicy {
    /// Parses a policy table in SDL Core's format: the JSON of `sdl_preloaded_pt.json`, one object
    /// whose `policy_table` holds `functional_groupings` and `app_policies` (read) and
    /// `module_config`, `consumer_friendly_messages`, `vehicle_data` and anything else (left
    /// aside). Core's own stock file parses unchanged.
    ///
    /// `app_policies` must have a `default` entry. An entry may be an object, the name of another
    /// entry (`"default"`: a copy of it) or `null` (a revoked app). Every group an entry names must
    /// be in `functional_groupings`; HMI levels, app HMI types and module types must be the spec's
    /// names. Anything else is ``HeadUnitError/Code-swift.struct/invalidPolicy`` with the JSON path
    /// of the part at fault.
    public init(jsonText: String) throws(HeadUnitError) {
        let root: RPCValue
        do {
            root = try RPCValue(jsonText: jsonText)
        } catch {
            throw HeadUnitError(.invalidPolicy, detail: "not JSON: \(error)")
        }
        let reader = PolicyReader()
        self = try reader.table(root)
    }

    /// Parses a policy table from its bytes, which must be UTF-8 (see ``init(jsonText:)``).
    public init(json bytes: some Collection<UInt8>) throws(HeadUnitError) {
        // Decoding replaces invalid sequences, so the text re-encodes to the same bytes only when
        // they were valid UTF-8.
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.elementsEqual(bytes) else {
            throw HeadUnitError(.invalidPolicy, detail: "not UTF-8")
        }
        try self.init(jsonText: text)
    }
}

/// Reads the parts of a policy table the simulator applies, with the path of every part, so that
/// an error names where it is.
private struct PolicyReader {
    func table(_ root: RPCValue) throws(HeadUnitError) -> HeadUnitPolicy {
        let rootObject = try self.object(root, "")
        let table = try self.object(try self.member(rootObject, "policy_table", ""), "policy_table")
        let groupsPath = "policy_table.functional_groupings"
        var groups: [String: HeadUnitPolicy.FunctionalGroup] = [:]
        for entry in try self.object(try self.member(table, "functional_groupings", "policy_table"), groupsPath) {
            groups[entry.key] = try self.group(entry.value, "\(groupsPath).\(entry.key)")
        }

        let policiesPath = "policy_table.app_policies"
        let policies = try self.object(try self.member(table, "app_policies", "policy_table"), policiesPath)
        var parsed: [String: HeadUnitPolicy.AppPolicy] = [:]
        var references: [(key: String, target: String)] = []
        var revoked: Set<String> = []
        for entry in policies {
            let path = "\(policiesPath).\(entry.key)"
            switch entry.value {
            case .null:
                revoked.insert(entry.key)
            case .string(let target):
                references.append((entry.key, target))
            default:
                let policy = try self.appPolicy(entry.value, path)
                for (index, name) in policy.groups.enumerated() where groups[name] == nil {
                    throw HeadUnitError(
                        .invalidPolicy, path: "\(path).groups[\(index)]", detail: "no functional group named \"\(name)\"")
                }
                parsed[entry.key] = policy
            }
        }
        for reference in references {
            guard let target = parsed[reference.target] else {
                throw HeadUnitError(
                    .invalidPolicy, path: "\(policiesPath).\(reference.key)",
                    detail: "names \"\(reference.target)\", which is not an app policy object")
            }
            parsed[reference.key] = target
        }
        guard parsed["default"] != nil else {
            throw HeadUnitError(.invalidPolicy, path: policiesPath, detail: "no \"default\" app policy")
        }
        return HeadUnitPolicy(functionalGroupings: groups, appPolicies: parsed, revokedAppIDs: revoked)
    }

    func group(_ value: RPCValue, _ path: String) throws(HeadUnitError) -> HeadUnitPolicy.FunctionalGroup {
        let object = try self.object(value, path)
        var rpcs: [String: HeadUnitPolicy.RPCRule] = [:]
        // Core's stock table has groups with `"rpcs": null` (DataConsent-2): no RPCs.
        if let rpcsValue = object["rpcs"], rpcsValue != .null {
            for entry in try self.object(rpcsValue, "\(path).rpcs") {
                let rulePath = "\(path).rpcs.\(entry.key)"
                let rule = try self.object(entry.value, rulePath)
                let levels = try self.strings(try self.member(rule, "hmi_levels", rulePath), "\(rulePath).hmi_levels")
                var hmiLevels: Set<SDLHMILevel> = []
                for (index, name) in levels.enumerated() {
                    let level = SDLHMILevel(wireName: name)
                    guard level.isKnown else {
                        throw HeadUnitError(
                            .invalidPolicy, path: "\(rulePath).hmi_levels[\(index)]", detail: "\"\(name)\" is not an HMI level")
                    }
                    hmiLevels.insert(level)
                }
                let parameters = try rule["parameters"].map { (value) throws(HeadUnitError) in
                    try self.strings(value, "\(rulePath).parameters")
                }
                rpcs[entry.key] = HeadUnitPolicy.RPCRule(hmiLevels: hmiLevels, parameters: parameters)
            }
        }
        let prompt = try object["user_consent_prompt"].map { (value) throws(HeadUnitError) in
            try self.string(value, "\(path).user_consent_prompt")
        }
        return HeadUnitPolicy.FunctionalGroup(userConsentPrompt: prompt, rpcs: rpcs)
    }

    func appPolicy(_ value: RPCValue, _ path: String) throws(HeadUnitError) -> HeadUnitPolicy.AppPolicy {
        let object = try self.object(value, path)
        var policy = HeadUnitPolicy.AppPolicy(groups: try self.strings(try self.member(object, "groups", path), "\(path).groups"))
        if let types = object["AppHMIType"] {
            policy.appHMITypes = try self.enums(types, "\(path).AppHMIType", SDLAppHMIType.init(wireName:), \.isKnown, "an app HMI type")
        }
        if let modules = object["moduleType"] {
            policy.moduleTypes = try self.enums(modules, "\(path).moduleType", SDLModuleType.init(wireName:), \.isKnown, "a module type")
        }
        if let nicknames = object["nicknames"] {
            policy.nicknames = try self.strings(nicknames, "\(path).nicknames")
        }
        if let level = object["default_hmi"] {
            let name = try self.string(level, "\(path).default_hmi")
            policy.defaultHMI = SDLHMILevel(wireName: name)
            guard policy.defaultHMI.isKnown else {
                throw HeadUnitError(.invalidPolicy, path: "\(path).default_hmi", detail: "\"\(name)\" is not an HMI level")
            }
        }
        if let encryption = object["encryption_required"] {
            guard case .bool(let flag) = encryption else {
                throw HeadUnitError(.invalidPolicy, path: "\(path).encryption_required", detail: "not a boolean")
            }
            policy.encryptionRequired = flag
        }
        if let services = object["app_services"] {
            var rules: [String: HeadUnitPolicy.AppServiceRule] = [:]
            for entry in try self.object(services, "\(path).app_services") {
                rules[entry.key] = try self.serviceRule(entry.value, "\(path).app_services.\(entry.key)")
            }
            policy.appServices = rules
        }
        return policy
    }

    func serviceRule(_ value: RPCValue, _ path: String) throws(HeadUnitError) -> HeadUnitPolicy.AppServiceRule {
        let object = try self.object(value, path)
        var rule = HeadUnitPolicy.AppServiceRule()
        if let names = object["service_names"] {
            rule.serviceNames = try self.strings(names, "\(path).service_names")
        }
        if let handled = object["handled_rpcs"] {
            guard case .array(let items) = handled else {
                throw HeadUnitError(.invalidPolicy, path: "\(path).handled_rpcs", detail: "not an array")
            }
            for (index, item) in items.enumerated() {
                let itemPath = "\(path).handled_rpcs[\(index)]"
                let entry = try self.object(item, itemPath)
                guard case .int32(let id) = try self.member(entry, "function_id", itemPath) else {
                    throw HeadUnitError(.invalidPolicy, path: "\(itemPath).function_id", detail: "not a 32-bit integer")
                }
                rule.handledRPCs.append(id)
            }
        }
        return rule
    }

    // MARK: - Shapes

    func object(_ value: RPCValue, _ path: String) throws(HeadUnitError) -> RPCObject {
        guard case .object(let object) = value else {
            throw HeadUnitError(.invalidPolicy, path: path, detail: "not an object")
        }
        return object
    }

    func member(_ object: RPCObject, _ key: String, _ path: String) throws(HeadUnitError) -> RPCValue {
        guard let value = object[key] else {
            throw HeadUnitError(.invalidPolicy, path: path.isEmpty ? key : "\(path).\(key)", detail: "missing")
        }
        return value
    }

    func string(_ value: RPCValue, _ path: String) throws(HeadUnitError) -> String {
        guard case .string(let string) = value else {
            throw HeadUnitError(.invalidPolicy, path: path, detail: "not a string")
        }
        return string
    }

    func strings(_ value: RPCValue, _ path: String) throws(HeadUnitError) -> [String] {
        guard case .array(let items) = value else {
            throw HeadUnitError(.invalidPolicy, path: path, detail: "not an array")
        }
        var result: [String] = []
        for (index, item) in items.enumerated() {
            result.append(try self.string(item, "\(path)[\(index)]"))
        }
        return result
    }

    func enums<Value>(
        _ value: RPCValue, _ path: String, _ make: (String) -> Value, _ isKnown: KeyPath<Value, Bool>, _ what: String
    ) throws(HeadUnitError) -> [Value] {
        var result: [Value] = []
        for (index, name) in try self.strings(value, path).enumerated() {
            let item = make(name)
            guard item[keyPath: isKnown] else {
                throw HeadUnitError(.invalidPolicy, path: "\(path)[\(index)]", detail: "\"\(name)\" is not \(what)")
            }
            result.append(item)
        }
        return result
    }
}
