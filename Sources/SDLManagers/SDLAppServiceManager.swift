import NIOConcurrencyHelpers
import SDLRuntime
import SDLRPC

/// How a published app service answers what the head unit forwards to it: a consumer's
/// GetAppServiceData and PerformAppServiceInteraction, and the RPCs its manifest lists in
/// `handledRPCs` (e.g. ButtonPress for media, SendLocation and GetWayPoints for navigation).
/// Every request is answered: a missing handler answers as documented on each.
public struct SDLAppServiceHandlers: Sendable {
    /// Answers GetAppServiceData (its `subscribe` tells whether the consumer subscribes; the head
    /// unit keeps the subscription, the provider only pushes ``SDLAppServiceManager/updateData(_:)``).
    /// nil: answered with the last data given to `updateData`, DATA_NOT_AVAILABLE before any.
    public var serviceData: (@Sendable (SDLGetAppServiceDataRequest) async -> SDLGetAppServiceDataResponse)?
    /// Answers PerformAppServiceInteraction (`serviceUri`, and `originApp`, the consumer's app id
    /// as the head unit sets it). nil: UNSUPPORTED_REQUEST.
    public var interaction: (@Sendable (SDLPerformAppServiceInteractionRequest) async -> SDLPerformAppServiceInteractionResponse)?
    /// Answers an RPC of `handledRPCs` with a response of its function; nil (or no handler):
    /// UNSUPPORTED_REQUEST, and the head unit answers the consumer itself.
    public var rpc: (@Sendable (AnyRPCMessage) async -> (any RPCMessage)?)?

    /// Handlers from closures; each is optional.
    public init(
        serviceData: (@Sendable (SDLGetAppServiceDataRequest) async -> SDLGetAppServiceDataResponse)? = nil,
        interaction: (@Sendable (SDLPerformAppServiceInteractionRequest) async -> SDLPerformAppServiceInteractionResponse)? = nil,
        rpc: (@Sendable (AnyRPCMessage) async -> (any RPCMessage)?)? = nil
    ) {
        self.serviceData = serviceData
        self.interaction = interaction
        self.rpc = rpc
    }
}

/// A request the head unit forwarded to a service this app publishes, as the
/// ``SDLAppServiceManager`` answered it (``SDLAppServiceManager/servedRequests()``).
public struct SDLServedRequest: Sendable {
    /// The request as the head unit sent it: function, correlation id, parameters.
    public let request: SDLIncomingRequest
    /// The answer: a handler's, or the default documented on ``SDLAppServiceHandlers`` (a
    /// GenericResponse for a function the spec gives no response).
    public let response: (any RPCMessage)?
    /// The runtime's error when the answer could not be sent; nil when it went out.
    public let sendError: SDLConnectionError?

    /// The answer's `resultCode`, e.g. SUCCESS, DATA_NOT_AVAILABLE, UNSUPPORTED_REQUEST.
    public var resultCode: SDLResult? { self.response.flatMap { outcome(of: $0).resultCode } }

    /// Whether an answer reached the connection.
    public var answered: Bool { self.response != nil && self.sendError == nil }
}

/// App services (RPC 5.1+) for both sides of an app: a provider publishes a media, weather or
/// navigation service, pushes its data, updates its manifest and unpublishes it, and answers what
/// consumers send it through ``SDLAppServiceHandlers``; a consumer discovers the services (the
/// APP_SERVICES capability with its update reasons, the active service of each type), reads and
/// subscribes to a service's data as an `AsyncSequence`, and sends actions and RPCs to providers.
///
/// ```swift
/// let services = SDLAppServiceManager(connection: app, appID: "weather-now")
/// let record = try await services.publish(manifest, handlers: SDLAppServiceHandlers(interaction: { … }))
/// try await services.updateData(SDLAppServiceData(serviceType: "WEATHER", serviceID: record.serviceID, …))
///
/// // Another app:
/// let available = try await consumer.discoverServices()
/// for try await data in consumer.serviceDataUpdates(ofType: "WEATHER") { … }
/// ```
public actor SDLAppServiceManager {
    /// The connection the manager works on.
    public nonisolated let connection: SDLAppConnection
    private let requests: ManagerRequests
    private let appID: String
    private let hub: SubscriptionHub<String, SDLAppServiceData>
    private let listeners = NIOLockedValueBox<[Task<Void, Never>]>([])

    private struct Published {
        var record: SDLAppServiceRecord
        var handlers: SDLAppServiceHandlers
        var lastData: SDLAppServiceData?
    }

    private var published: [String: Published] = [:]
    private var publishOrder: [String] = []
    private var listenedFunctions: Set<UInt32> = []
    private var servicesByID: [String: SDLAppServiceRecord] = [:]
    private var serviceOrder: [String] = []
    private var discovered = false
    private let updateBroadcast = Broadcast<SDLAppServiceCapability>(bufferSize: 64)
    private let servedBroadcast = Broadcast<SDLServedRequest>(bufferSize: 64)
    private var ended: SDLManagerError?

    /// A manager on `connection` for the app registered (or about to register) as `appID`, which
    /// interactions carry as `originApp`. It listens for OnAppServiceData and APP_SERVICES updates
    /// at once; nothing is sent before a call. `bufferSize` bounds each data observer's unread
    /// updates.
    public init(connection: SDLAppConnection, appID: String, bufferSize: Int = 16) {
        self.connection = connection
        let requests = ManagerRequests(connection)
        self.requests = requests
        self.appID = appID
        self.hub = SubscriptionHub(bufferSize: bufferSize) { (serviceType, subscribe) throws(SDLManagerError) in
            let response: SDLGetAppServiceDataResponse = try await requests.succeed(
                SDLGetAppServiceDataRequest(serviceType: serviceType, subscribe: subscribe))
            return response.serviceData
        }
        let data = connection.notifications(of: SDLOnAppServiceData.self)
        let updates = connection.systemCapabilityUpdates(of: .appServices)
        self.listeners.withLockedValue {
            $0 = [
                Task { [weak self] in
                    for await notification in data { await self?.received(notification.serviceData) }
                    await self?.sessionEnded()
                },
                Task { [weak self] in
                    for await capability in updates { await self?.received(capability.appServicesCapabilities?.appServices ?? []) }
                },
            ]
        }
    }

    deinit {
        for listener in self.listeners.withLockedValue({ $0 }) { listener.cancel() }
    }

    /// How many of the manager's requests the head unit answered (with `success` true or false),
    /// subscriptions' GetAppServiceData included: the manager's share of the connection's round
    /// trips. The answers the manager gives providers' requests are not counted.
    public nonisolated var answeredRequests: Int { self.requests.answeredCount }

    /// The negotiated version, after the version floor of app services and `appServices` in the
    /// head unit's HMI capabilities (RPC 6.0+).
    private func ready(_ what: String, since minimum: SDLSyncMsgVersion = .v5_1) async throws(SDLManagerError) -> SDLSyncMsgVersion {
        if let ended = self.ended { throw ended }
        guard let registration = await self.connection.registration, let negotiated = await self.connection.rpcVersion else {
            throw SDLManagerError(.notRegistered, "app services start once RegisterAppInterface succeeded")
        }
        let version = negotiated
        guard version >= minimum else {
            throw SDLManagerError(.unsupportedVersion, "\(what) needs RPC \(minimum.versionText); the head unit speaks \(version.versionText)")
        }
        if registration.hmiCapabilities?.appServices == false {
            throw SDLManagerError(.appServicesUnavailable, "the head unit's hmiCapabilities.appServices is false")
        }
        return version
    }

    // MARK: - Provider

    /// Publishes a service (PublishAppService) and returns its record as the head unit made it
    /// (`serviceID`, whether it is active). From then on the requests for it reach `handlers`,
    /// and the service's record is kept current (``publishedServices``) from the APP_SERVICES
    /// capability, which the first publication subscribes to.
    @discardableResult
    public func publish(
        _ manifest: SDLAppServiceManifest, handlers: SDLAppServiceHandlers = SDLAppServiceHandlers()
    ) async throws(SDLManagerError) -> SDLAppServiceRecord {
        _ = try await self.ready("PublishAppService")
        self.listen(for: manifest)
        let response: SDLPublishAppServiceResponse = try await self.requests.succeed(SDLPublishAppServiceRequest(appServiceManifest: manifest))
        guard let record = response.appServiceRecord else {
            throw SDLManagerError(.requestFailed, "PublishAppService: no appServiceRecord in a successful response")
        }
        if self.published[record.serviceID] == nil {
            self.publishOrder.append(record.serviceID)
        }
        self.published[record.serviceID, default: Published(record: record, handlers: handlers)].record = record
        self.published[record.serviceID]?.handlers = handlers
        if !self.discovered {
            _ = try? await self.discoverServices()
        }
        return self.published[record.serviceID]?.record ?? record
    }

    /// Replaces a published service's manifest (PublishAppService again with the same type, RPC
    /// 6.0+); consumers see MANIFEST_UPDATE.
    @discardableResult
    public func updateManifest(
        _ manifest: SDLAppServiceManifest, handlers: SDLAppServiceHandlers? = nil
    ) async throws(SDLManagerError) -> SDLAppServiceRecord {
        _ = try await self.ready("a manifest update", since: .v6_0)
        guard let existing = self.published.values.first(where: { $0.record.serviceManifest.serviceType == manifest.serviceType }) else {
            throw SDLManagerError(.unknownService, "this app publishes no \(manifest.serviceType) service")
        }
        return try await self.publish(manifest, handlers: handlers ?? existing.handlers)
    }

    /// Unpublishes a service of this app (UnpublishAppService, RPC 6.0+); consumers see REMOVED.
    public func unpublish(_ serviceID: String) async throws(SDLManagerError) {
        _ = try await self.ready("UnpublishAppService", since: .v6_0)
        guard self.published[serviceID] != nil else {
            throw SDLManagerError(.unknownService, "this app publishes no service \(serviceID)")
        }
        let _: SDLUnpublishAppServiceResponse = try await self.requests.succeed(SDLUnpublishAppServiceRequest(serviceID: serviceID))
        self.published[serviceID] = nil
        self.publishOrder.removeAll { $0 == serviceID }
    }

    /// Pushes a service's data to its subscribers (OnAppServiceData) and keeps it for the default
    /// GetAppServiceData answer. The data must name a service this app publishes, with its type.
    public func updateData(_ data: SDLAppServiceData) async throws(SDLManagerError) {
        guard let service = self.published[data.serviceID], service.record.serviceManifest.serviceType == data.serviceType else {
            throw SDLManagerError(.unknownService, "this app publishes no \(data.serviceType) service \(data.serviceID)")
        }
        self.published[data.serviceID]?.lastData = data
        do {
            try await self.connection.sendNotification(SDLOnAppServiceData(serviceData: data))
        } catch {
            throw SDLManagerError(error)
        }
    }

    /// The services this app publishes, in publishing order, as the head unit last reported them.
    public var publishedServices: [SDLAppServiceRecord] {
        self.publishOrder.compactMap { self.published[$0]?.record }
    }

    /// Listens for the requests a manifest brings: GetAppServiceData, PerformAppServiceInteraction
    /// and its `handledRPCs`, each function once (a stream per new set, kept for the session, so
    /// that no request waits in a stream nobody reads).
    private func listen(for manifest: SDLAppServiceManifest) {
        var functions: [FunctionID] = [.getAppServiceData, .performAppServiceInteraction]
        functions += (manifest.handledRPCs ?? []).map { FunctionID(rawValue: UInt32(truncatingIfNeeded: $0)) }
        let new = functions.filter { self.listenedFunctions.insert($0.rawValue).inserted }
        guard !new.isEmpty else { return }
        let requests = self.connection.incomingRequests(of: new)
        let task = Task { [weak self] in
            for await request in requests {
                guard let self else { return }
                Task { await self.serve(request) }
            }
        }
        self.listeners.withLockedValue { $0.append(task) }
    }

    private func serve(_ request: SDLIncomingRequest) async {
        let response: (any RPCMessage)?
        switch request.message.message {
        case let get as SDLGetAppServiceDataRequest:
            guard let service = self.published.values.first(where: { $0.record.serviceManifest.serviceType == get.serviceType }) else {
                response = failureResponse(to: .getAppServiceData, .dataNotAvailable, info: "no \(get.serviceType) service here")
                break
            }
            if let handler = service.handlers.serviceData {
                response = await handler(get)
            } else if let data = service.lastData {
                response = SDLGetAppServiceDataResponse(success: true, resultCode: .success, serviceData: data)
            } else {
                response = failureResponse(to: .getAppServiceData, .dataNotAvailable, info: "no data yet")
            }
        case let interaction as SDLPerformAppServiceInteractionRequest:
            if let handler = self.published[interaction.serviceID]?.handlers.interaction {
                response = await handler(interaction)
            } else {
                response = failureResponse(to: .performAppServiceInteraction, .unsupportedRequest, info: "no interactions")
            }
        default:
            let function = Int32(truncatingIfNeeded: request.message.functionID.rawValue)
            let handler = self.published.values.first { $0.record.serviceManifest.handledRPCs?.contains(function) == true }?.handlers.rpc
            response = await handler?(request.message)
        }
        let answer = response ?? failureResponse(to: request.message.functionID, .unsupportedRequest, info: "not handled")
        var sendError: SDLConnectionError?
        do {
            try await self.connection.respond(answer, to: request)
        } catch {
            sendError = error
        }
        self.servedBroadcast.yield(SDLServedRequest(request: request, response: answer, sendError: sendError))
    }

    /// Every request the head unit forwards to this app's services from now on, once the manager
    /// answered it, with the answer and whether it went out (a handler's response that breaks the
    /// spec, a session that ended first); ends with the session. A provider's log of what its
    /// consumers asked.
    public func servedRequests() -> AsyncStream<SDLServedRequest> {
        self.servedBroadcast.makeStream()
    }

    // MARK: - Consumer

    /// Asks for the APP_SERVICES capability and subscribes to its updates (RPC 5.1+); returns
    /// every published service. ``services`` stays current from then on.
    @discardableResult
    public func discoverServices() async throws(SDLManagerError) -> [SDLAppServiceRecord] {
        _ = try await self.ready("app-service discovery")
        let capability = try await self.requests.capability(.appServices, subscribe: true)
        self.discovered = true
        self.servicesByID = [:]
        self.serviceOrder = []
        self.apply(capability.appServicesCapabilities?.appServices ?? [])
        return self.services
    }

    /// The published services the head unit last reported, in the order it first listed them.
    public var services: [SDLAppServiceRecord] { self.serviceOrder.compactMap { self.servicesByID[$0] } }

    /// The active service of a type (e.g. "MEDIA"), the one the head unit routes to.
    public func activeService(ofType serviceType: String) -> SDLAppServiceRecord? {
        self.services.first { $0.serviceManifest.serviceType == serviceType && $0.serviceActive }
    }

    /// Every change to the published services from now on, each with its update reason
    /// (PUBLISHED, REMOVED, ACTIVATED, DEACTIVATED, MANIFEST_UPDATE); needs
    /// ``discoverServices()`` (or a publication) to subscribe. Ends with the session.
    public func serviceUpdates() -> AsyncStream<SDLAppServiceCapability> {
        self.updateBroadcast.makeStream()
    }

    /// Reads the data of the active service of a type once (GetAppServiceData without
    /// `subscribe`); while subscribed, returns the cached data without sending anything.
    public func serviceData(ofType serviceType: String) async throws(SDLManagerError) -> SDLAppServiceData {
        _ = try await self.ready("GetAppServiceData")
        if await self.hub.isSubscribed(serviceType), let cached = await self.hub.value(for: serviceType) {
            return cached
        }
        let response: SDLGetAppServiceDataResponse = try await self.requests.succeed(SDLGetAppServiceDataRequest(serviceType: serviceType))
        guard let data = response.serviceData else {
            throw SDLManagerError(.requestFailed, "GetAppServiceData \(serviceType): no serviceData in a successful response")
        }
        await self.hub.received(data, for: serviceType)
        return data
    }

    /// The data of the active service of a type as it changes: the first observer's first
    /// `next()` subscribes (GetAppServiceData `subscribe` true, answered by the provider with its
    /// current data), every OnAppServiceData of the type follows, and the last observer leaving
    /// unsubscribes (`subscribe` false).
    public nonisolated func serviceDataUpdates(ofType serviceType: String) -> SDLSubscription<SDLAppServiceData> {
        SDLSubscription { () throws(SDLManagerError) in
            _ = try await self.ready("GetAppServiceData")
            return try await self.hub.observe(serviceType)
        }
    }

    /// The app services the head unit subscribed this app to, by type.
    public var subscribedServiceTypes: [String] {
        get async { await self.hub.subscribedKeys.sorted() }
    }

    /// Sends an action to a service's provider (PerformAppServiceInteraction with a URI, as the
    /// provider documents its actions); returns the provider's `serviceSpecificResult`.
    /// `requestServiceActive` asks the head unit to make the service active first (from an app
    /// in FULL).
    @discardableResult
    public func performInteraction(
        serviceID: String, uri: String, requestServiceActive: Bool? = nil
    ) async throws(SDLManagerError) -> String? {
        _ = try await self.ready("PerformAppServiceInteraction")
        let response: SDLPerformAppServiceInteractionResponse = try await self.requests.succeed(
            SDLPerformAppServiceInteractionRequest(
                serviceUri: uri, serviceID: serviceID, originApp: self.appID, requestServiceActive: requestServiceActive))
        return response.serviceSpecificResult
    }

    /// Sends an RPC that an active service lists in `handledRPCs` (the head unit passes it to the
    /// provider) and returns its response; throws ``SDLManagerError/Code/requestFailed`` when it
    /// says `success` false.
    public func send<Response: RPCMessage>(
        _ request: some RPCMessage, as responseType: Response.Type = Response.self
    ) async throws(SDLManagerError) -> Response {
        _ = try await self.ready(type(of: request).functionName)
        return try await self.requests.succeed(request)
    }

    // MARK: - What the head unit reports

    private func received(_ data: SDLAppServiceData) async {
        await self.hub.received(data, for: data.serviceType)
    }

    private func received(_ updates: [SDLAppServiceCapability]) {
        self.apply(updates)
        for update in updates {
            self.updateBroadcast.yield(update)
        }
    }

    private func apply(_ updates: [SDLAppServiceCapability]) {
        for update in updates {
            let record = update.updatedAppServiceRecord
            let id = record.serviceID
            if update.updateReason == .removed || !record.servicePublished {
                self.servicesByID[id] = nil
                self.serviceOrder.removeAll { $0 == id }
            } else {
                if self.servicesByID[id] == nil {
                    self.serviceOrder.append(id)
                }
                self.servicesByID[id] = record
            }
            self.published[id]?.record = record
        }
    }

    private func sessionEnded() async {
        let error = SDLManagerError(.disconnected, "the session ended")
        self.ended = error
        await self.hub.end(error)
        self.updateBroadcast.finish()
        self.servedBroadcast.finish()
    }
}
