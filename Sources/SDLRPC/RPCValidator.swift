/// Collects the spec violations of a value: generated `validate(into:)` methods call one check per
/// constrained parameter and descend into struct parameters, which put their names in front of the
/// errors found inside, so each error names its parameter (`moduleData.climateControlData.fanSpeed`).
///
/// MOBILE_API.xml semantics: `minvalue`/`maxvalue` bound numbers inclusively; `minlength`/`maxlength`
/// bound a string's length in Unicode scalars, and `minlength` is 1 where the spec gives none, so an
/// empty string is invalid unless the spec says `minlength="0"`; for String arrays they bound each
/// element; `minsize`/`maxsize` bound an array's element count, with no bound where absent.
/// Unknown enum values and non-finite Floats are violations too, and so is every part lenient
/// decoding dropped (``RPCDroppedParameters``), reported as the violation it was dropped for, with
/// array elements by their index on the wire.
///
/// It also refuses what no decoder would read back, which encoders check even with validation off:
/// nesting deeper than `maxNestingDepth` (counted as decoders count it, the value's own object
/// being level 1), repeated keys in unknown parameters, and unknown parameters named like a spec
/// parameter of their struct. It never descends below `maxNestingDepth`, so a value built in code
/// with any nesting cannot exhaust the stack.
public struct RPCValidator: Sendable {
    /// The violations found so far, in parameter order.
    public private(set) var errors: [RPCError] = []
    /// For each of `errors`: how many components of its path lie inside the part lenient
    /// decoding dropped for it, or nil when it is about a value that was kept.
    private var depthsInsideDroppedParts: [Int?] = []
    /// Recording stops at this many errors, so a hostile value cannot grow the list without bound.
    public let limit: Int
    /// The deepest nesting allowed, as `RPCCodingOptions.maxNestingDepth` (and, as there, never
    /// more than `RPCCodingOptions.nestingDepthCeiling`).
    public let maxNestingDepth: Int
    /// False: only the checks above that encoders always make (nesting, unknown parameters), not
    /// the spec's constraints (what encoding with `validate` off runs).
    let checksConstraints: Bool
    /// The nesting level of the object whose parameters are being checked.
    private var depth = 1

    /// A validator that records at most `limit` errors and refuses nesting deeper than
    /// `maxNestingDepth`, clamped to `RPCCodingOptions.nestingDepthCeiling`.
    public init(limit: Int = 100, maxNestingDepth: Int = 32) {
        self.init(limit: limit, maxNestingDepth: maxNestingDepth, checksConstraints: true)
    }

    init(limit: Int, maxNestingDepth: Int, checksConstraints: Bool) {
        self.limit = limit
        self.maxNestingDepth = min(maxNestingDepth, RPCCodingOptions.nestingDepthCeiling)
        self.checksConstraints = checksConstraints
    }

    /// Records a violation of the parameter `key` (element `index` of it). Enclosing struct
    /// parameters put their names in front afterwards, so the happy path keeps no path stack.
    mutating func record(_ key: StaticString, index: Int? = nil, _ code: RPCError.Code, _ detail: String) {
        guard self.errors.count < self.limit else { return }
        var path: [RPCError.PathComponent] = [.key(key.description)]
        if let index {
            path.append(.index(index))
        }
        self.append(RPCError(code, path: path, detail))
    }

    mutating func record(path: [RPCError.PathComponent], _ code: RPCError.Code, _ detail: String) {
        guard self.errors.count < self.limit else { return }
        self.append(RPCError(code, path: path, detail))
    }

    private mutating func append(_ error: RPCError, depthInsideDroppedPart: Int? = nil) {
        self.errors.append(error)
        self.depthsInsideDroppedParts.append(depthInsideDroppedPart)
    }

    /// The violations found, as lenient decoding reports them.
    var violations: [RPCViolation] {
        zip(self.errors, self.depthsInsideDroppedParts).map { RPCViolation($0, depthInsideDroppedPart: $1) }
    }

    /// Records `nestingTooDeep` at `key` (element `index` of it) when a container there would sit at
    /// `level`, beyond the limit; true when it fits.
    mutating func fits(level: Int, _ key: StaticString, index: Int? = nil) -> Bool {
        guard level > self.maxNestingDepth else { return true }
        self.record(key, index: index, .nestingTooDeep, "nesting deeper than \(self.maxNestingDepth) levels")
        return false
    }

    /// Puts `key` (and `[index]`) in front of the paths of the errors recorded since `start`;
    /// builds nothing when there are none.
    mutating func prefix(since start: Int, key: StaticString, index: Int? = nil) {
        guard self.errors.count > start else { return }
        var components: [RPCError.PathComponent] = [.key(key.description)]
        if let index {
            components.append(.index(index))
        }
        for position in start..<self.errors.count {
            self.errors[position].path.insert(contentsOf: components, at: 0)
        }
    }

    // MARK: Scalars

    /// Checks an Integer parameter against `minvalue`/`maxvalue`.
    @inline(__always)
    public mutating func integer<Value: FixedWidthInteger>(
        _ value: Value, _ key: StaticString, min: Int64?, max: Int64?, index: Int? = nil
    ) {
        guard self.checksConstraints else { return }
        let value = Int64(value)
        if let min, value < min {
            self.record(key, index: index, .valueOutOfRange, "below minvalue \(min)")
        } else if let max, value > max {
            self.record(key, index: index, .valueOutOfRange, "above maxvalue \(max)")
        }
    }

    /// Checks a Float parameter: finite, and within `minvalue`/`maxvalue`.
    @inline(__always)
    public mutating func float(_ value: Double, _ key: StaticString, min: Double?, max: Double?, index: Int? = nil) {
        guard self.checksConstraints else { return }
        if !value.isFinite {
            self.record(key, index: index, .nonFiniteNumber, "not a finite number")
        } else if let min, value < min {
            self.record(key, index: index, .valueOutOfRange, "below minvalue \(Self.format(min))")
        } else if let max, value > max {
            self.record(key, index: index, .valueOutOfRange, "above maxvalue \(Self.format(max))")
        }
    }

    /// Checks a String parameter's length in Unicode scalars against `minlength`/`maxlength`.
    public mutating func string(_ value: String, _ key: StaticString, minLength: Int, maxLength: Int?, index: Int? = nil) {
        guard self.checksConstraints else { return }
        // A string has at most as many scalars as UTF-8 bytes, and at least a quarter as many:
        // count scalars only when the byte count cannot decide.
        let bytes = value.utf8.count
        if bytes < minLength {
            self.record(key, index: index, .lengthOutOfRange, "below minlength \(minLength) (\(value.unicodeScalars.count) characters)")
            return
        }
        if let maxLength, bytes > maxLength {
            let scalars = value.unicodeScalars.count
            if scalars > maxLength {
                self.record(key, index: index, .lengthOutOfRange, "above maxlength \(maxLength) (\(scalars) characters)")
                return
            }
        }
        if minLength > 1, bytes >= minLength {
            let scalars = value.unicodeScalars.count
            if scalars < minLength {
                self.record(key, index: index, .lengthOutOfRange, "below minlength \(minLength) (\(scalars) characters)")
            }
        }
    }

    /// Checks that an enum parameter holds a value the spec defines.
    public mutating func enumeration<Value: RPCEnum>(_ value: Value, _ key: StaticString, index: Int? = nil) {
        guard self.checksConstraints else { return }
        if !value.isKnown {
            self.record(key, index: index, .unknownEnumValue, "unknown \(Self.enumName(Value.self)) value \"\(value.wireName)\"")
        }
    }

    /// Checks a struct parameter's own constraints, with its name on the path.
    public mutating func structure<Value: RPCStruct>(_ value: Value, _ key: StaticString) {
        guard self.fits(level: self.depth + 1, key) else { return }
        let start = self.errors.count
        self.depth += 1
        value.validate(into: &self)
        self.depth -= 1
        self.prefix(since: start, key: key)
    }

    /// Checks the parameters a struct keeps without knowing them (`unknownParameters`): none may
    /// have the name of one of the struct's spec parameters (`knownNames`), no object among them
    /// may repeat a key, and none may nest too deep.
    public mutating func unknownParameters(_ parameters: RPCObject, knownNames: [String]) {
        var path: [RPCError.PathComponent] = []
        self.checkObject(parameters, knownNames: knownNames, level: self.depth, path: &path)
    }

    /// Checks a value tree as `unknownParameters` does, the value itself at nesting level 1.
    mutating func value(_ value: RPCValue) {
        var path: [RPCError.PathComponent] = []
        self.checkValue(value, level: 1, path: &path)
    }

    private mutating func checkObject(
        _ object: RPCObject, knownNames: [String], level: Int, path: inout [RPCError.PathComponent]
    ) {
        if let key = object.firstRepeatedKey {
            self.record(path: path + [.key(key)], .duplicateParameter, "parameter appears more than once")
        }
        for entry in object.entries {
            guard self.errors.count < self.limit else { return }
            path.append(.key(entry.key))
            if knownNames.contains(where: { RPCKeyBytes.equal(entry.key, $0) }) {
                self.record(
                    path: path, .unknownParameterNamedLikeKnown,
                    "an unknown parameter cannot have the name of a spec parameter")
            }
            self.checkValue(entry.value, level: level + 1, path: &path)
            path.removeLast()
        }
    }

    /// `level` is where the value sits if it is an object or array.
    private mutating func checkValue(_ value: RPCValue, level: Int, path: inout [RPCError.PathComponent]) {
        switch value {
        case .object, .array:
            guard level <= self.maxNestingDepth else {
                self.record(path: path, .nestingTooDeep, "nesting deeper than \(self.maxNestingDepth) levels")
                return
            }
        default:
            return
        }
        switch value {
        case .object(let object):
            self.checkObject(object, knownNames: [], level: level, path: &path)
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                guard self.errors.count < self.limit else { return }
                path.append(.index(index))
                self.checkValue(element, level: level + 1, path: &path)
                path.removeLast()
            }
        default:
            return
        }
    }

    // MARK: Arrays

    /// Checks an array's element count against `minsize`/`maxsize`.
    public mutating func size(_ count: Int, _ key: StaticString, minSize: Int?, maxSize: Int?) {
        guard self.checksConstraints else { return }
        if let minSize, count < minSize {
            self.record(key, .sizeOutOfRange, "below minsize \(minSize) (\(count) elements)")
        } else if let maxSize, count > maxSize {
            self.record(key, .sizeOutOfRange, "above maxsize \(maxSize) (\(count) elements)")
        }
    }

    /// Checks a Boolean array's nesting and size.
    public mutating func booleans(_ value: [Bool], _ key: StaticString, minSize: Int?, maxSize: Int?) {
        self.booleans(value, key, minSize: minSize, maxSize: maxSize, dropped: RPCExtraParameters())
    }

    /// `booleans` with the elements lenient decoding dropped from `key`, for generated code.
    mutating func booleans(
        _ value: [Bool], _ key: StaticString, minSize: Int?, maxSize: Int?, dropped extras: RPCExtraParameters
    ) {
        guard self.fits(level: self.depth + 1, key) else { return }
        if !extras.isEmpty, self.mergingDropped(value, key, minSize, maxSize, extras.dropped, { _, _, _ in }) { return }
        self.size(value.count, key, minSize: minSize, maxSize: maxSize)
    }

    /// Checks an Integer array's nesting, size and each element's range.
    public mutating func integers<Value: FixedWidthInteger>(
        _ value: [Value], _ key: StaticString, minSize: Int?, maxSize: Int?, min: Int64?, max: Int64?
    ) {
        self.integers(value, key, minSize: minSize, maxSize: maxSize, min: min, max: max, dropped: RPCExtraParameters())
    }

    /// `integers` with the elements lenient decoding dropped from `key`, for generated code.
    mutating func integers<Value: FixedWidthInteger>(
        _ value: [Value], _ key: StaticString, minSize: Int?, maxSize: Int?, min: Int64?, max: Int64?, dropped extras: RPCExtraParameters
    ) {
        guard self.fits(level: self.depth + 1, key) else { return }
        if !extras.isEmpty, self.mergingDropped(value, key, minSize, maxSize, extras.dropped, { validator, element, index in
            validator.integer(element, key, min: min, max: max, index: index)
        }) {
            return
        }
        self.size(value.count, key, minSize: minSize, maxSize: maxSize)
        if (min == nil && max == nil) || !self.checksConstraints { return }
        for (index, element) in value.enumerated() {
            self.integer(element, key, min: min, max: max, index: index)
        }
    }

    /// Checks a Float array's nesting, size and each element.
    public mutating func floats(
        _ value: [Double], _ key: StaticString, minSize: Int?, maxSize: Int?, min: Double?, max: Double?
    ) {
        self.floats(value, key, minSize: minSize, maxSize: maxSize, min: min, max: max, dropped: RPCExtraParameters())
    }

    /// `floats` with the elements lenient decoding dropped from `key`, for generated code.
    mutating func floats(
        _ value: [Double], _ key: StaticString, minSize: Int?, maxSize: Int?, min: Double?, max: Double?, dropped extras: RPCExtraParameters
    ) {
        guard self.fits(level: self.depth + 1, key) else { return }
        if !extras.isEmpty, self.mergingDropped(value, key, minSize, maxSize, extras.dropped, { validator, element, index in
            validator.float(element, key, min: min, max: max, index: index)
        }) {
            return
        }
        self.size(value.count, key, minSize: minSize, maxSize: maxSize)
        guard self.checksConstraints else { return }
        for (index, element) in value.enumerated() {
            self.float(element, key, min: min, max: max, index: index)
        }
    }

    /// Checks a String array's nesting, size and each element's length.
    public mutating func strings(
        _ value: [String], _ key: StaticString, minSize: Int?, maxSize: Int?, minLength: Int, maxLength: Int?
    ) {
        self.strings(value, key, minSize: minSize, maxSize: maxSize, minLength: minLength, maxLength: maxLength, dropped: RPCExtraParameters())
    }

    /// `strings` with the elements lenient decoding dropped from `key`, for generated code.
    mutating func strings(
        _ value: [String], _ key: StaticString, minSize: Int?, maxSize: Int?, minLength: Int, maxLength: Int?, dropped extras: RPCExtraParameters
    ) {
        guard self.fits(level: self.depth + 1, key) else { return }
        if !extras.isEmpty, self.mergingDropped(value, key, minSize, maxSize, extras.dropped, { validator, element, index in
            validator.string(element, key, minLength: minLength, maxLength: maxLength, index: index)
        }) {
            return
        }
        self.size(value.count, key, minSize: minSize, maxSize: maxSize)
        guard self.checksConstraints else { return }
        for (index, element) in value.enumerated() {
            self.string(element, key, minLength: minLength, maxLength: maxLength, index: index)
        }
    }

    /// Checks an enum array's nesting, size and each element's value.
    public mutating func enumerations<Value: RPCEnum>(_ value: [Value], _ key: StaticString, minSize: Int?, maxSize: Int?) {
        self.enumerations(value, key, minSize: minSize, maxSize: maxSize, dropped: RPCExtraParameters())
    }

    /// `enumerations` with the elements lenient decoding dropped from `key`, for generated code.
    mutating func enumerations<Value: RPCEnum>(
        _ value: [Value], _ key: StaticString, minSize: Int?, maxSize: Int?, dropped extras: RPCExtraParameters
    ) {
        guard self.fits(level: self.depth + 1, key) else { return }
        if !extras.isEmpty, self.mergingDropped(value, key, minSize, maxSize, extras.dropped, { validator, element, index in
            validator.enumeration(element, key, index: index)
        }) {
            return
        }
        self.size(value.count, key, minSize: minSize, maxSize: maxSize)
        guard self.checksConstraints else { return }
        for (index, element) in value.enumerated() {
            self.enumeration(element, key, index: index)
        }
    }

    /// Checks a struct array's nesting, size and each element, with `name[i]` on the path.
    public mutating func structures<Value: RPCStruct>(_ value: [Value], _ key: StaticString, minSize: Int?, maxSize: Int?) {
        self.structures(value, key, minSize: minSize, maxSize: maxSize, dropped: RPCExtraParameters())
    }

    /// `structures` with the elements lenient decoding dropped from `key`, for generated code.
    mutating func structures<Value: RPCStruct>(
        _ value: [Value], _ key: StaticString, minSize: Int?, maxSize: Int?, dropped extras: RPCExtraParameters
    ) {
        guard self.fits(level: self.depth + 1, key) else { return }
        if !extras.isEmpty, self.structuresMergingDropped(value, key, minSize, maxSize, extras.dropped) { return }
        self.size(value.count, key, minSize: minSize, maxSize: maxSize)
        guard !value.isEmpty, self.fits(level: self.depth + 2, key, index: 0) else { return }
        self.depth += 2
        // By index: the elements are validated in place, not copied out as `enumerated()` does.
        for index in value.indices {
            guard self.errors.count < self.limit else { break }
            let start = self.errors.count
            value[index].validate(into: &self)
            self.prefix(since: start, key: key, index: index)
        }
        self.depth -= 2
    }

    /// `structures` when lenient decoding dropped elements of `key` (see `mergingDropped`). Out of
    /// line, so that the common path of `structures` stays as small as it was: inlined, this made
    /// the optimizer copy every element the loop there validates.
    @inline(never)
    private mutating func structuresMergingDropped<Value: RPCStruct>(
        _ value: [Value], _ key: StaticString, _ minSize: Int?, _ maxSize: Int?, _ dropped: RPCDroppedParameters
    ) -> Bool {
        let elementsFit = value.isEmpty || self.fits(level: self.depth + 2, key, index: 0)
        return self.mergingDropped(value, key, minSize, maxSize, dropped) { validator, element, index in
            if elementsFit {
                validator.element(element, key, index: index)
            }
        }
    }

    /// Checks element `index` of a struct array.
    private mutating func element<Value: RPCStruct>(_ element: Value, _ key: StaticString, index: Int) {
        let start = self.errors.count
        self.depth += 2
        element.validate(into: &self)
        self.depth -= 2
        self.prefix(since: start, key: key, index: index)
    }

    // MARK: Dropped parts

    /// Reports what lenient decoding dropped for the optional parameter `key` of the struct being
    /// checked, whose typed property is nil: its violation, and its raw value's nesting.
    @inline(__always)
    mutating func droppedParameter(_ extras: RPCExtraParameters, _ key: StaticString) {
        if !extras.isEmpty {
            self.droppedParameter(extras.dropped, key)
        }
    }

    @inline(never)
    private mutating func droppedParameter(_ dropped: RPCDroppedParameters, _ key: StaticString) {
        let entries = dropped.entries[dropped.range(forKey: key.description)]
        // Encoding writes a whole value rather than elements (see `RPCDroppedParameters`).
        for entry in entries {
            self.report(entry)
            if entry.index == nil { return }
        }
    }

    /// The array checks when lenient decoding dropped elements of `key`: the size counts the
    /// elements on the wire, each kept element is checked (`check`) with its index on the wire,
    /// each dropped one reported where it was. False, having done nothing, when none of `key`'s
    /// elements was dropped. Out of line: only leniently decoded values come here.
    @inline(never)
    private mutating func mergingDropped<Element>(
        _ value: [Element], _ key: StaticString, _ minSize: Int?, _ maxSize: Int?, _ dropped: RPCDroppedParameters,
        _ check: (inout RPCValidator, Element, Int) -> Void
    ) -> Bool {
        let elements = dropped.elements(forKey: key.description)
        if elements.isEmpty { return false }
        self.size(value.count + elements.count, key, minSize: minSize, maxSize: maxSize)
        for (position, source) in RPCDroppedParameters.merge(typedCount: value.count, elements) {
            guard self.errors.count < self.limit else { break }
            switch source {
            case .typed(let index): check(&self, value[index], position)
            case .dropped(let entry): self.report(entry)
            }
        }
        return true
    }

    /// Reports a dropped part as the violation it was dropped for (with constraints checked), and
    /// checks its raw value as unknown parameters are checked, which encoding always does.
    private mutating func report(_ entry: RPCDroppedParameters.Entry) {
        let violation = entry.violation
        let droppedPath = violation.droppedPath ?? []
        if self.checksConstraints, self.errors.count < self.limit {
            self.append(
                RPCError(violation.code, path: violation.path, violation.detail),
                depthInsideDroppedPart: violation.path.count - droppedPath.count)
        }
        var path = droppedPath
        self.checkValue(entry.value, level: self.depth + droppedPath.count, path: &path)
    }

    // MARK: Formatting

    /// Integral bounds print without a fraction (`100`, not `100.0`), as the spec writes most of them.
    static func format(_ value: Double) -> String {
        if value.rounded() == value, abs(value) < 1e15 {
            return String(Int64(value))
        }
        return value.description
    }

    /// The spec name of a generated enum: its Swift name without the `SDL` prefix.
    static func enumName<Value: RPCEnum>(_ type: Value.Type) -> String {
        let name = String(describing: type)
        return name.hasPrefix("SDL") ? String(name.dropFirst(3)) : name
    }
}
