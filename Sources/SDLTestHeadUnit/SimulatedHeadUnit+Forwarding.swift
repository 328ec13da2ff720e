import NIOCore
import SDLRPC

/// A request the head unit forwarded to an app-service provider, waiting for its answer. Keyed by
/// the correlation id the head unit gave the forwarded copy.
struct PendingRequest: Sendable {
    enum Kind: Sendable {
        /// GetAppServiceData; once the provider answers with success the consumer subscribes
        /// (`subscribe` true) or unsubscribes (false), as Core's `HandleSubscribe`.
        case serviceData(serviceType: String, subscribe: Bool?)
        /// PerformAppServiceInteraction.
        case interaction
        /// A function in the provider's `handledRPCs`; these providers are asked next when this
        /// one answers UNSUPPORTED_REQUEST, then the head unit itself.
        case handledRPC(remaining: [AppHandle])
    }

    /// The app that sent the request.
    var consumer: AppHandle
    /// The request as the consumer sent it, with its correlation id.
    var request: AnyRPCMessage
    /// The app asked to answer.
    var provider: AppHandle
    var kind: Kind
    /// When the consumer gets its answer from the head unit instead.
    var deadline: NIODeadline
}

extension SimulatedHeadUnit {
    /// Functions the head unit always answers itself, whatever `handledRPCs` lists: registration,
    /// the app-service functions, capabilities.
    static let neverForwarded: Set<FunctionID> = [
        .registerAppInterface, .unregisterAppInterface, .publishAppService, .unpublishAppService,
        .getAppServiceData, .performAppServiceInteraction, .getSystemCapability,
    ]

    /// Whether an app may have one more request waiting for a provider.
    func mayWait(_ consumer: AppHandle) -> Bool {
        self.pending.values.count(where: { $0.consumer == consumer }) < self.configuration.maxPendingRequestsPerApp
    }

    /// Sends a request to a provider under a correlation id of the head unit's own, remembered
    /// until the provider answers or the deadline passes; returns that id.
    mutating func forward(
        _ message: any RPCMessage, of request: AnyRPCMessage, from consumer: AppHandle, to provider: AppHandle,
        kind: PendingRequest.Kind, deadline: NIODeadline
    ) -> UInt32 {
        var correlationID = self.nextCorrelationID
        while self.pending[correlationID] != nil || correlationID == self.configuration.notificationCorrelationID {
            correlationID &+= 1
        }
        self.nextCorrelationID = correlationID &+ 1
        self.pending[correlationID] = PendingRequest(
            consumer: consumer, request: request, provider: provider, kind: kind, deadline: deadline)
        self.send(AnyRPCMessage(message, correlationID: correlationID, bulkData: request.bulkData), to: provider)
        return correlationID
    }

    /// A request whose function an active app service lists in `handledRPCs` goes to that
    /// service's provider first (RPC passing, as Core's `RPCPassingHandler` does), when the app's
    /// policy allows the function at its level; nil when no provider handles it. As on Core, the
    /// providers are every provider of an active service that lists the function, the requester
    /// included: an app that publishes a service handling a function gets its own request back.
    mutating func forwardToHandlingProvider(_ request: AnyRPCMessage, from app: AppHandle, now: NIODeadline) -> String? {
        guard !Self.neverForwarded.contains(request.functionID) else { return nil }
        guard let registration = self.apps[app]?.registration, self.permits(request.functionName, registration) else {
            return nil
        }
        let providers = self.providers(handling: request.functionID)
        guard let provider = providers.first else { return nil }
        guard self.mayWait(app) else { return self.tooManyPending(request, app: app) }
        let correlationID = self.forward(
            request.message, of: request, from: app, to: provider,
            kind: .handledRPC(remaining: Array(providers.dropFirst())),
            deadline: now + self.configuration.providerTimeout)
        return "forwarded to \(provider) (handledRPCs) as #\(correlationID)"
    }

    /// The providers of active services that list the function in `handledRPCs`, in publishing
    /// order, each once.
    private func providers(handling function: FunctionID) -> [AppHandle] {
        var result: [AppHandle] = []
        for service in self.services where service.record.serviceActive {
            let handled = service.record.serviceManifest.handledRPCs ?? []
            if handled.contains(where: { UInt32(truncatingIfNeeded: $0) == function.rawValue }),
                !result.contains(service.provider), self.isRegistered(service.provider)
            {
                result.append(service.provider)
            }
        }
        return result
    }

    /// A response from an app: the answer to a forwarded request goes back to its consumer under
    /// the consumer's correlation id; UNSUPPORTED_REQUEST to a `handledRPCs` request hands it on.
    mutating func handleProviderResponse(_ response: AnyRPCMessage, from app: AppHandle, now: NIODeadline) -> String {
        guard let entry = self.pending[response.correlationID], entry.provider == app else {
            return "ignored: no forwarded request #\(response.correlationID) waits for this app"
        }
        guard response.functionID == entry.request.functionID else {
            return "ignored: a \(response.functionName) response does not answer \(entry.request.functionName)"
        }
        self.pending[response.correlationID] = nil
        let result = Self.result(of: response.message)
        switch entry.kind {
        case .handledRPC(let remaining):
            if result.resultCode == SDLResult.unsupportedRequest.wireName {
                return "\(app) answered UNSUPPORTED_REQUEST; " + self.handOn(entry, to: remaining, now: now)
            }
        case .serviceData(let serviceType, let subscribe):
            if let subscribe, result.success {
                if subscribe {
                    self.apps[entry.consumer]?.registration?.serviceDataSubscriptions.insert(serviceType)
                } else {
                    self.apps[entry.consumer]?.registration?.serviceDataSubscriptions.remove(serviceType)
                }
            }
        case .interaction:
            break
        }
        guard self.isRegistered(entry.consumer) else { return "dropped: \(entry.consumer) is gone" }
        self.send(
            AnyRPCMessage(
                response.message, correlationID: entry.request.correlationID, bulkData: response.bulkData,
                isErroneousResponse: response.isErroneousResponse),
            to: entry.consumer)
        return "routed to \(entry.consumer) as #\(entry.request.correlationID)"
    }

    /// Passes a `handledRPCs` request to the next provider that still handles it, or answers it.
    private mutating func handOn(_ entry: PendingRequest, to remaining: [AppHandle], now: NIODeadline) -> String {
        guard self.isRegistered(entry.consumer) else { return "dropped: \(entry.consumer) is gone" }
        let next = remaining.filter { self.isRegistered($0) }
        if let provider = next.first {
            let correlationID = self.forward(
                entry.request.message, of: entry.request, from: entry.consumer, to: provider,
                kind: .handledRPC(remaining: Array(next.dropFirst())), deadline: entry.deadline)
            return "handed on to \(provider) as #\(correlationID)"
        }
        return "answered by the head unit: " + self.answer(entry.request, from: entry.consumer, now: now)
    }

    /// Answers the consumers whose providers did not answer in time: a `handledRPCs` request is
    /// answered by the head unit, the others with GENERIC_ERROR, as Core's request timeout does.
    mutating func expireForwardedRequests(now: NIODeadline) -> String {
        let expired = self.pending.filter { $0.value.deadline <= now }.keys.sorted()
        guard !expired.isEmpty else { return "nothing due" }
        var outcomes: [String] = []
        for correlationID in expired {
            guard let entry = self.pending.removeValue(forKey: correlationID) else { continue }
            let outcome = self.answerWithoutProvider(entry, reason: "did not answer in time", now: now)
            outcomes.append("#\(correlationID) from \(entry.provider) timed out; \(outcome)")
        }
        return outcomes.joined(separator: "; ")
    }

    /// Hands on the requests a provider that is leaving was to answer.
    mutating func handOnRequests(waitingFor provider: AppHandle, now: NIODeadline) {
        let waiting = self.pending.filter { $0.value.provider == provider }.keys.sorted()
        for correlationID in waiting {
            guard let entry = self.pending.removeValue(forKey: correlationID) else { continue }
            switch entry.kind {
            case .handledRPC(let remaining):
                _ = self.handOn(entry, to: remaining, now: now)
            default:
                _ = self.answerWithoutProvider(entry, reason: "left", now: now)
            }
        }
    }

    /// TOO_MANY_PENDING_REQUESTS.
    mutating func tooManyPending(_ request: AnyRPCMessage, app: AppHandle) -> String {
        self.fail(
            request, .tooManyPendingRequests,
            "\(self.configuration.maxPendingRequestsPerApp) requests of this app already wait for providers", app: app)
    }

    /// Forgets the requests an app that is leaving sent: their answers have no one to go to.
    mutating func dropRequests(of consumer: AppHandle) {
        self.pending = self.pending.filter { $0.value.consumer != consumer }
    }

    private mutating func answerWithoutProvider(_ entry: PendingRequest, reason: String, now: NIODeadline) -> String {
        guard self.isRegistered(entry.consumer) else { return "dropped: \(entry.consumer) is gone" }
        if case .handledRPC = entry.kind {
            return "answered by the head unit: " + self.answer(entry.request, from: entry.consumer, now: now)
        }
        return self.fail(
            entry.request, .genericError, "the service provider \(reason)", app: entry.consumer)
    }

    /// `success` and `resultCode` of any response, read through its JSON parameters: every
    /// response has both, but no protocol names them.
    static func result(of response: any RPCMessage) -> (success: Bool, resultCode: String?) {
        guard let parameters = try? response.jsonParametersText(options: RPCCodingOptions(validate: false)),
            case .object(let object)? = try? RPCValue(jsonObject: parameters)
        else { return (false, nil) }
        var resultCode: String?
        if case .string(let code)? = object["resultCode"] {
            resultCode = code
        }
        if case .bool(let success)? = object["success"] {
            return (success, resultCode)
        }
        return (false, resultCode)
    }
}
