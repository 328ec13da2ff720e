import NIOCore
import SDLRPC
import SDLRPCGenerator
import SDLTestHeadUnit
import SDLTestSupport
import Testing

/// A simulated head unit driven by a test: apps send typed messages with their own correlation
/// ids (1, 2, … per app unless given), the clock stands still unless a test moves it, and every
/// message the head unit sends is checked against the spec and encoded, as a driver would.
struct Harness {
    var headUnit: SimulatedHeadUnit
    /// The time of the next input.
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private var lastCorrelationID: [AppHandle: UInt32] = [:]

    init(_ configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in }) {
        var configuration = SimulatedHeadUnit.Configuration()
        configure(&configuration)
        self.headUnit = SimulatedHeadUnit(configuration: configuration)
    }

    /// A message from an app; a request without a correlation id gets the app's next one.
    mutating func send(
        _ message: any RPCMessage, from app: AppHandle, correlationID: UInt32? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [HeadUnitOutput] {
        let correlationID = correlationID ?? self.nextCorrelationID(of: app)
        let outputs = self.headUnit.received(AnyRPCMessage(message, correlationID: correlationID), from: app, now: self.now)
        checkSent(outputs, sourceLocation: sourceLocation)
        return outputs
    }

    /// The correlation id the app's next request gets.
    mutating func nextCorrelationID(of app: AppHandle) -> UInt32 {
        let next = (self.lastCorrelationID[app] ?? 0) + 1
        self.lastCorrelationID[app] = next
        return next
    }

    /// Connects and registers an app (correlation id 1).
    @discardableResult
    mutating func register(
        _ app: AppHandle, name: String, version: RPCVersion = .v8_0, types: [SDLAppHMIType]? = nil,
        isMedia: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [HeadUnitOutput] {
        _ = self.headUnit.appConnected(app)
        return self.send(
            registration(name: name, version: version, types: types, isMedia: isMedia), from: app,
            sourceLocation: sourceLocation)
    }

    mutating func disconnect(_ app: AppHandle, sourceLocation: SourceLocation = #_sourceLocation) -> [HeadUnitOutput] {
        let outputs = self.headUnit.appDisconnected(app, now: self.now)
        checkSent(outputs, sourceLocation: sourceLocation)
        return outputs
    }

    mutating func fireTimer(at deadline: NIODeadline, sourceLocation: SourceLocation = #_sourceLocation) -> [HeadUnitOutput] {
        self.now = deadline
        let outputs = self.headUnit.timerFired(now: deadline)
        checkSent(outputs, sourceLocation: sourceLocation)
        return outputs
    }
}

/// A RegisterAppInterface request; the app id is the name lowercased unless given.
func registration(
    name: String, appID: String? = nil, version: RPCVersion = .v8_0, types: [SDLAppHMIType]? = nil,
    isMedia: Bool = false, language: SDLLanguage = .enUs
) -> SDLRegisterAppInterfaceRequest {
    SDLRegisterAppInterfaceRequest(
        syncMsgVersion: version.syncMsgVersion, appName: name, isMediaApplication: isMedia, languageDesired: language,
        hmiDisplayLanguageDesired: language, appHMIType: types, appID: appID ?? name.lowercased())
}

/// Checks that every message sent is valid per the spec and encodes in JSON and BSON, as the
/// driver encodes it: the head unit must never send what a strict app would refuse.
func checkSent(_ outputs: [HeadUnitOutput], sourceLocation: SourceLocation = #_sourceLocation) {
    for case .send(let message, _) in outputs {
        let errors = message.message.validationErrors()
        #expect(errors.isEmpty, "\(message.functionName) \(message.rpcType): \(errors)", sourceLocation: sourceLocation)
        for format in [RPCParameterFormat.json, .bson] {
            #expect(throws: Never.self, "\(message.functionName) in \(format)", sourceLocation: sourceLocation) {
                try message.payload(format: format)
            }
        }
    }
}

extension Array where Element == HeadUnitOutput {
    /// The messages sent, with their receivers.
    var sent: [(app: AppHandle, message: AnyRPCMessage)] {
        self.compactMap {
            if case .send(let message, let app) = $0 { return (app, message) }
            return nil
        }
    }

    /// One line per output: `app1 <- OnHMIStatus notification #4294967295`, `registered app1`,
    /// `timer <n>`, `log`; for exact sequences.
    var summary: [String] {
        self.map {
            switch $0 {
            case .send(let message, let app): "\(app) <- \(message.functionName) \(message.rpcType) #\(message.correlationID)"
            case .registered(let app): "registered \(app)"
            case .armTimer(let deadline): "timer \(deadline.uptimeNanoseconds)"
            case .log: "log"
            }
        }
    }

    /// The summary without the transcript line.
    var sends: [String] { self.summary.filter { $0 != "log" } }

    /// The messages of a type sent to an app, in order.
    func messages<Message: RPCMessage>(_ type: Message.Type, to app: AppHandle) -> [Message] {
        self.sent.filter { $0.app == app }.compactMap { $0.message.message as? Message }
    }

    /// The one message of a type sent to an app.
    func only<Message: RPCMessage>(
        _ type: Message.Type, to app: AppHandle, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Message {
        let found = self.messages(type, to: app)
        try #require(found.count == 1, "\(found.count) \(Message.functionName) sent to \(app)", sourceLocation: sourceLocation)
        return found[0]
    }

    /// The transcript line.
    var transcript: TranscriptLine? {
        for case .log(let line) in self { return line }
        return nil
    }
}

/// `success` false with this result code: what every failure response carries.
func expectFailure(
    _ outputs: [HeadUnitOutput], to app: AppHandle, function: String, correlationID: UInt32, _ resultCode: SDLResult,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let responses = outputs.sent.filter { $0.app == app && $0.message.rpcType == .response }
    guard responses.count == 1, let response = responses.first?.message else {
        Issue.record("expected one response to \(app), got \(outputs.sends)", sourceLocation: sourceLocation)
        return
    }
    #expect(response.functionName == function, sourceLocation: sourceLocation)
    #expect(response.correlationID == correlationID, sourceLocation: sourceLocation)
    let parameters = try? RPCValue(jsonObject: response.message.jsonParametersText())
    guard case .object(let object)? = parameters else {
        Issue.record("\(response.functionName) does not encode", sourceLocation: sourceLocation)
        return
    }
    #expect(object["success"] == .bool(false), sourceLocation: sourceLocation)
    #expect(object["resultCode"] == .string(resultCode.wireName), sourceLocation: sourceLocation)
}

/// Builds the parameters of any message from the spec model with mandatory parameters only:
/// booleans false, numbers at their minimum, strings of their minimum length, the first element
/// of enums, arrays at their minimum size.
struct MandatoryParameters {
    let spec: Spec

    func parameters(of function: SpecFunction) -> RPCValue { self.object(function.params) }

    private func object(_ params: [SpecParam]) -> RPCValue {
        var object = RPCObject()
        for param in params where param.mandatory {
            let value = self.scalar(param)
            object.append(key: param.name, value: param.isArray ? .array(Array(repeating: value, count: param.minSize ?? 0)) : value)
        }
        return .object(object)
    }

    private func scalar(_ param: SpecParam) -> RPCValue {
        switch param.type {
        case .boolean: .bool(false)
        case .integer: param.needsInt64 ? .int64(Int64(param.minValueText ?? "0") ?? 0) : .int32(Int32(param.minValueText ?? "0") ?? 0)
        case .float: .double(param.minValue ?? 0)
        case .string: .string(String(repeating: "a", count: param.effectiveMinLength))
        case .enumeration(let name): .string(self.spec.enumNamed(name)?.elements.first?.name ?? "")
        case .structure(let name): self.object(self.spec.structNamed(name)?.params ?? [])
        }
    }
}
