import SDLRPC
import SDLRPCGenerator
import Testing

/// A param of the spec named by its owner (a struct, or a function for top-level params) and its
/// own name, e.g. `WindowCapability.textFields`.
struct ParamID: Hashable, Comparable, Sendable, CustomStringConvertible {
    var owner: String
    var name: String

    var description: String { "\(self.owner).\(self.name)" }

    static func < (lhs: ParamID, rhs: ParamID) -> Bool { lhs.description < rhs.description }
}

/// Builds parameter objects for any message of the spec from the spec model alone, with values
/// that satisfy every constraint at its edge: Integers and Floats at maxvalue, strings of Unicode
/// scalars that take 1 to 4 UTF-8 bytes, combine, or need JSON escapes, arrays within
/// minsize...maxsize.
///
/// One instance cannot hold every array at its maxsize (displayCapabilities × windowCapabilities ×
/// textFields would be 10^8 values), so a message gets several (`instances(of:)`): a full one,
/// where every optional param is set and arrays have a few elements, and one per array param with
/// a maxsize beyond that (and per String param with a long maxlength) that stretches every
/// occurrence of it to the limit, with small elements.
///
/// Recursion (VideoStreamingCapability's `additionalVideoStreamingCapabilities`) is cut where a
/// struct type repeats on the path: its first repetition is built, that repetition's own
/// recursive params are not (`isRecursionCut`).
struct ExampleBuilder {
    let spec: Spec

    /// How much of a struct to fill.
    enum Shape: Hashable {
        /// Mandatory params only, arrays at minsize, short strings.
        case minimal
        /// Every param but the recursion cuts; arrays of `arrayCount` elements within
        /// minsize...maxsize; strings at maxlength up to `fullStringLimit` scalars.
        case full(arrayCount: Int)
    }

    /// What one instance stretches to the spec's limit, beyond its shape.
    enum Target: Hashable {
        case none
        /// Every occurrence of this array param has maxsize elements, built `.minimal`.
        case arraySize(ParamID)
        /// Every occurrence of this String param (each element, for an array) has maxlength scalars.
        case stringLength(ParamID)
    }

    /// Arrays of the full instance.
    var fullArrayCount = 2
    /// Strings of a full instance are at their maxlength when it is at most this; longer limits
    /// are reached by an instance of their own.
    var fullStringLimit = 500
    /// The length of strings the spec bounds with no maxlength.
    var unboundedStringLength = 24

    init(spec: Spec) {
        self.spec = spec
    }

    /// The full instance, then one per array param (reachable in this message) whose maxsize the
    /// full instance does not reach, then one per String param whose maxlength it does not reach.
    func instances(of function: SpecFunction) -> [(label: String, value: RPCValue)] {
        var result: [(label: String, value: RPCValue)] = [("full", self.parameters(of: function, shape: .full(arrayCount: self.fullArrayCount)))]
        let reachable = self.reachable(function)
        for (id, maxSize) in reachable.arrays.sorted(by: { $0.key < $1.key }) where maxSize > self.fullArrayCount {
            result.append(("\(id) at maxsize \(maxSize)", self.parameters(of: function, shape: .full(arrayCount: 1), target: .arraySize(id))))
        }
        for (id, maxLength) in reachable.strings.sorted(by: { $0.key < $1.key }) where maxLength > self.fullStringLimit {
            result.append(("\(id) at maxlength \(maxLength)", self.parameters(of: function, shape: .full(arrayCount: 1), target: .stringLength(id))))
        }
        return result
    }

    func parameters(of function: SpecFunction, shape: Shape, target: Target = .none) -> RPCValue {
        self.object(owner: function.name, structName: nil, params: function.params, ancestors: [], shape: shape, target: target)
    }

    /// Whether a param is where recursion stops: the struct being filled (`structName`) already
    /// appears among its ancestors, and the param's struct type is on the path too.
    static func isRecursionCut(_ param: SpecParam, structName: String?, ancestors: [String]) -> Bool {
        guard case .structure(let type) = param.type, let structName, ancestors.contains(structName) else { return false }
        return type == structName || ancestors.contains(type)
    }

    // MARK: Building

    private func object(
        owner: String, structName: String?, params: [SpecParam], ancestors: [String], shape: Shape, target: Target
    ) -> RPCValue {
        // The spec has no mandatory recursion (the generator refuses a struct that contains itself
        // other than through an optional array), so this bound only guards a broken spec.
        precondition(ancestors.count < 64, "runaway recursion below \(owner)")
        let inner = structName.map { ancestors + [$0] } ?? ancestors
        var object = RPCObject()
        for param in params {
            if !param.mandatory {
                if shape == .minimal || Self.isRecursionCut(param, structName: structName, ancestors: ancestors) { continue }
            }
            let id = ParamID(owner: owner, name: param.name)
            object.append(key: param.name, value: self.value(param, id: id, ancestors: inner, shape: shape, target: target))
        }
        return .object(object)
    }

    private func value(_ param: SpecParam, id: ParamID, ancestors: [String], shape: Shape, target: Target) -> RPCValue {
        guard param.isArray else {
            return self.scalar(param, id: id, ancestors: ancestors, shape: shape, target: target, salt: 0)
        }
        var count: Int
        var elementShape = shape
        if target == .arraySize(id), let maxSize = param.maxSize {
            count = maxSize
            elementShape = .minimal
        } else {
            switch shape {
            case .minimal: count = param.minSize ?? 0
            case .full(let arrayCount): count = max(arrayCount, param.minSize ?? 0)
            }
            count = min(count, param.maxSize ?? count)
        }
        return .array((0..<count).map { index in
            self.scalar(param, id: id, ancestors: ancestors, shape: elementShape, target: target, salt: index)
        })
    }

    private func scalar(_ param: SpecParam, id: ParamID, ancestors: [String], shape: Shape, target: Target, salt: Int) -> RPCValue {
        switch param.type {
        case .boolean:
            return .bool(salt % 2 == 0)
        case .integer:
            let value = Int64(param.maxValueText ?? param.minValueText ?? "42")!
            if let int32 = Int32(exactly: value), !param.needsInt64 {
                return .int32(int32)
            }
            return .int64(value)
        case .float:
            return .double(param.maxValue ?? param.minValue ?? 1.25)
        case .string:
            return .string(Self.string(scalars: self.stringLength(param, id: id, shape: shape, target: target)))
        case .enumeration(let name):
            let elements = self.spec.enumNamed(name)!.elements
            return .string(elements[(param.name.utf8.count + salt) % elements.count].name)
        case .structure(let name):
            let item = self.spec.structNamed(name)!
            return self.object(owner: name, structName: name, params: item.params, ancestors: ancestors, shape: shape, target: target)
        }
    }

    private func stringLength(_ param: SpecParam, id: ParamID, shape: Shape, target: Target) -> Int {
        let minimum = param.effectiveMinLength
        if target == .stringLength(id), let maxLength = param.maxLength {
            return maxLength
        }
        switch shape {
        case .minimal:
            return max(minimum, min(param.maxLength ?? 4, 4))
        case .full:
            guard let maxLength = param.maxLength else { return max(minimum, self.unboundedStringLength) }
            return max(minimum, min(maxLength, self.fullStringLimit))
        }
    }

    /// A string of exactly `scalars` Unicode scalars mixing ASCII, 2-, 3- and 4-byte UTF-8, a
    /// combining mark (two scalars, one Character) and characters JSON must escape.
    static func string(scalars: Int) -> String {
        let alphabet: [Unicode.Scalar] = ["a", "é", "€", "😀", "\u{301}", "\"", "\\", "\n", "/", "Z", "\u{01}"]
        var text = String.UnicodeScalarView()
        for index in 0..<scalars {
            text.append(alphabet[index % alphabet.count])
        }
        return String(text)
    }

    // MARK: What a message reaches

    /// The array params with a maxsize and the String params with a maxlength that a message
    /// reaches (recursion cut as the builder cuts it), with that limit.
    func reachable(_ function: SpecFunction) -> (arrays: [ParamID: Int], strings: [ParamID: Int]) {
        var arrays: [ParamID: Int] = [:]
        var strings: [ParamID: Int] = [:]
        func visit(owner: String, structName: String?, params: [SpecParam], ancestors: [String]) {
            let inner = structName.map { ancestors + [$0] } ?? ancestors
            for param in params where param.mandatory || !Self.isRecursionCut(param, structName: structName, ancestors: ancestors) {
                let id = ParamID(owner: owner, name: param.name)
                if param.isArray, let maxSize = param.maxSize { arrays[id] = maxSize }
                if param.type == .string, let maxLength = param.maxLength { strings[id] = maxLength }
                if case .structure(let name) = param.type, let item = self.spec.structNamed(name) {
                    visit(owner: name, structName: name, params: item.params, ancestors: inner)
                }
            }
        }
        visit(owner: function.name, structName: nil, params: function.params, ancestors: [])
        return (arrays, strings)
    }
}

/// Walks the spec model alongside a parameters value and records what it holds: optional params
/// left unset (other than at a recursion cut), the largest size each array param reached and the
/// longest (in Unicode scalars) each String param reached.
struct FullnessReport {
    let spec: Spec
    private(set) var unsetOptionals: [String] = []
    private(set) var largestSize: [ParamID: Int] = [:]
    private(set) var longestString: [ParamID: Int] = [:]
    /// Values whose shape does not match the spec (the walk cannot go on there).
    private(set) var mismatches: [String] = []

    init(spec: Spec) {
        self.spec = spec
    }

    mutating func walk(_ value: RPCValue, of function: SpecFunction) {
        self.walkObject(value, owner: function.name, structName: nil, params: function.params, ancestors: [], path: "")
    }

    private mutating func walkObject(
        _ value: RPCValue, owner: String, structName: String?, params: [SpecParam], ancestors: [String], path: String
    ) {
        guard case .object(let object) = value else {
            self.mismatches.append("\(path): not an object")
            return
        }
        let inner = structName.map { ancestors + [$0] } ?? ancestors
        for param in params {
            let paramPath = path.isEmpty ? param.name : "\(path).\(param.name)"
            guard let member = object[param.name] else {
                if !param.mandatory && !ExampleBuilder.isRecursionCut(param, structName: structName, ancestors: ancestors) {
                    self.unsetOptionals.append(paramPath)
                }
                continue
            }
            let id = ParamID(owner: owner, name: param.name)
            if param.isArray {
                guard case .array(let elements) = member else {
                    self.mismatches.append("\(paramPath): not an array")
                    continue
                }
                self.largestSize[id] = max(self.largestSize[id] ?? 0, elements.count)
                for (index, element) in elements.enumerated() {
                    self.walkScalar(element, param: param, id: id, ancestors: inner, path: "\(paramPath)[\(index)]")
                }
            } else {
                self.walkScalar(member, param: param, id: id, ancestors: inner, path: paramPath)
            }
        }
    }

    private mutating func walkScalar(_ value: RPCValue, param: SpecParam, id: ParamID, ancestors: [String], path: String) {
        switch param.type {
        case .string:
            guard case .string(let text) = value else {
                self.mismatches.append("\(path): not a string")
                return
            }
            self.longestString[id] = max(self.longestString[id] ?? 0, text.unicodeScalars.count)
        case .structure(let name):
            let item = self.spec.structNamed(name)!
            self.walkObject(value, owner: name, structName: name, params: item.params, ancestors: ancestors, path: path)
        default:
            return
        }
    }

    /// The array params of `reachable` that never had their maxsize, and the String params that
    /// never had their maxlength, as readable lines.
    func limitsNotReached(_ reachable: (arrays: [ParamID: Int], strings: [ParamID: Int])) -> [String] {
        var lines: [String] = []
        for (id, maxSize) in reachable.arrays.sorted(by: { $0.key < $1.key }) where self.largestSize[id] != maxSize {
            lines.append("array \(id) never reached maxsize \(maxSize) (largest: \(self.largestSize[id].map(String.init) ?? "never set"))")
        }
        for (id, maxLength) in reachable.strings.sorted(by: { $0.key < $1.key }) where self.longestString[id] != maxLength {
            lines.append("string \(id) never reached maxlength \(maxLength) (longest: \(self.longestString[id].map(String.init) ?? "never set"))")
        }
        return lines
    }
}
