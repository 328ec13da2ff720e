import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

@Suite("App services")
struct AppServiceTests {
    let provider = AppHandle(1)
    let consumer = AppHandle(2)
    let bystander = AppHandle(3)

    static let manifest = SDLAppServiceManifest(
        serviceName: "Music", serviceType: "MEDIA", allowAppConsumers: true, mediaServiceManifest: SDLMediaServiceManifest())

    static func data(_ title: String) -> SDLAppServiceData {
        SDLAppServiceData(serviceType: "MEDIA", serviceID: "media-1", mediaServiceData: SDLMediaServiceData(mediaTitle: title))
    }

    /// A media provider (in LIMITED) and a consumer (in FULL), both subscribed to APP_SERVICES
    /// updates, the provider's service published and active.
    static func published(
        manifest: SDLAppServiceManifest = Self.manifest, _ configure: (inout SimulatedHeadUnit.Configuration) -> Void = { _ in }
    ) -> Harness {
        var harness = Harness(configure)
        harness.register(AppHandle(1), name: "Music", isMedia: true)
        harness.register(AppHandle(2), name: "Dash", types: [.remoteControl])
        _ = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true), from: AppHandle(1))
        _ = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true), from: AppHandle(2))
        _ = harness.send(SDLPublishAppServiceRequest(appServiceManifest: manifest), from: AppHandle(1))
        return harness
    }

    static func updates(_ outputs: [HeadUnitOutput], to app: AppHandle) -> [[SDLAppServiceCapability]] {
        outputs.messages(SDLOnSystemCapabilityUpdated.self, to: app).map {
            $0.systemCapability.appServicesCapabilities?.appServices ?? []
        }
    }

    @Test("publishing: PUBLISHED then ACTIVATED to subscribers, the record in the response, listed by GetSystemCapability")
    func publish() throws {
        var harness = Harness()
        harness.register(self.provider, name: "Music", isMedia: true)
        harness.register(self.consumer, name: "Dash")
        let subscribe = harness.send(
            SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices, subscribe: true), from: self.consumer)
        #expect(
            try subscribe.only(SDLGetSystemCapabilityResponse.self, to: self.consumer)
                == SDLGetSystemCapabilityResponse(
                    systemCapability: SDLSystemCapability(
                        systemCapabilityType: .appServices, appServicesCapabilities: SDLAppServicesCapabilities(appServices: [])),
                    resultCode: .success, success: true))
        #expect(subscribe.transcript?.outcome == "APP_SERVICES, subscribed")

        // Publishing subscribes the provider to APP_SERVICES updates too, as on Core.
        let outputs = harness.send(SDLPublishAppServiceRequest(appServiceManifest: Self.manifest), from: self.provider)
        #expect(
            outputs.summary == [
                "log",
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnSystemCapabilityUpdated notification #4294967295",
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnSystemCapabilityUpdated notification #4294967295",
                "app1 <- PublishAppService response #2",
            ])
        let published = SDLAppServiceRecord(
            serviceID: "media-1", serviceManifest: Self.manifest, servicePublished: true, serviceActive: false)
        var active = published
        active.serviceActive = true
        #expect(
            Self.updates(outputs, to: self.consumer) == [
                [SDLAppServiceCapability(updateReason: .published, updatedAppServiceRecord: published)],
                [SDLAppServiceCapability(updateReason: .activated, updatedAppServiceRecord: active)],
            ])
        #expect(
            try outputs.only(SDLPublishAppServiceResponse.self, to: self.provider)
                == SDLPublishAppServiceResponse(success: true, resultCode: .success, appServiceRecord: active))
        #expect(harness.headUnit.serviceRecords == [active])

        let list = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .appServices), from: self.consumer)
        #expect(
            try list.only(SDLGetSystemCapabilityResponse.self, to: self.consumer).systemCapability?.appServicesCapabilities
                == SDLAppServicesCapabilities(appServices: [SDLAppServiceCapability(updatedAppServiceRecord: active)]))
    }

    @Test("a service without a name has none, as on Core; a name in use is REJECTED \"Failed to publish service\"; an app in FULL publishing activates its service")
    func names() throws {
        var harness = Self.published()
        harness.register(self.bystander, name: "Tunes", isMedia: true)
        var unnamed = Self.manifest
        unnamed.serviceName = nil
        let outputs = harness.send(SDLPublishAppServiceRequest(appServiceManifest: unnamed), from: self.bystander)
        let record = try #require(try outputs.only(SDLPublishAppServiceResponse.self, to: self.bystander).appServiceRecord)
        #expect(record.serviceManifest.serviceName == nil && record.serviceID == "media-2")
        // Tunes is in FULL: its service becomes the active one of its type (Core's rule).
        #expect(record.serviceActive)
        #expect(harness.headUnit.serviceRecords.map(\.serviceActive) == [false, true])
        #expect(Self.updates(outputs, to: self.consumer).map { $0.compactMap(\.updateReason) } == [[.published], [.deactivated, .activated]])

        var clash = Self.manifest
        clash.serviceType = "WEATHER"
        let refused = harness.send(SDLPublishAppServiceRequest(appServiceManifest: clash), from: self.consumer, correlationID: 40)
        expectFailure(refused, to: self.consumer, function: "PublishAppService", correlationID: 40, .rejected)
        #expect(try refused.only(SDLPublishAppServiceResponse.self, to: self.consumer).info == "Failed to publish service")
    }

    @Test("GetAppServiceData with subscribe: forwarded to the provider, its answer routed back; OnAppServiceData to subscribers only")
    func serviceDataSubscription() throws {
        var harness = Self.published()
        harness.register(self.bystander, name: "Other")
        let deadline = harness.now + .seconds(9)

        let get = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true), from: self.consumer, correlationID: 20)
        #expect(get.summary == ["log", "app1 <- GetAppServiceData request #1", "timer \(deadline.uptimeNanoseconds)"])
        #expect(try get.only(SDLGetAppServiceDataRequest.self, to: self.provider) == SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true))

        let answer = SDLGetAppServiceDataResponse(success: true, resultCode: .success, serviceData: Self.data("First"))
        let routed = harness.send(answer, from: self.provider, correlationID: 1)
        #expect(routed.sends == ["app2 <- GetAppServiceData response #20"])
        #expect(try routed.only(SDLGetAppServiceDataResponse.self, to: self.consumer) == answer)
        #expect(harness.headUnit.nextDeadline == nil)

        let update = SDLOnAppServiceData(serviceData: Self.data("Second"))
        let fanOut = harness.send(update, from: self.provider, correlationID: 0)
        #expect(fanOut.sends == ["app2 <- OnAppServiceData notification #4294967295"])
        #expect(try fanOut.only(SDLOnAppServiceData.self, to: self.consumer) == update)
        #expect(fanOut.transcript?.outcome == "sent to 1 subscriber(s)")

        // Unsubscribing, like subscribing, takes effect once the provider answers with success.
        let unsubscribe = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: false), from: self.consumer, correlationID: 21)
        #expect(unsubscribe.sends.first == "app1 <- GetAppServiceData request #2")
        let still = harness.send(SDLOnAppServiceData(serviceData: Self.data("Third")), from: self.provider, correlationID: 0)
        #expect(still.sends == ["app2 <- OnAppServiceData notification #4294967295"])
        _ = harness.send(SDLGetAppServiceDataResponse(success: true, resultCode: .success), from: self.provider, correlationID: 2)
        let after = harness.send(SDLOnAppServiceData(serviceData: Self.data("Fourth")), from: self.provider, correlationID: 0)
        #expect(after.sends.isEmpty)

        // The provider asking for its own type: IGNORED, as Core answers a producer.
        let own = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.provider, correlationID: 22)
        expectFailure(own, to: self.provider, function: "GetAppServiceData", correlationID: 22, .ignored)
        #expect(try own.only(SDLGetAppServiceDataResponse.self, to: self.provider).info == "Consumer app is same as producer app")
    }

    @Test("a subscription waits for the provider's success: a failed answer leaves the consumer unsubscribed")
    func failedSubscription() {
        var harness = Self.published()
        _ = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true), from: self.consumer, correlationID: 20)
        let refused = harness.send(
            SDLGetAppServiceDataResponse(success: false, resultCode: .rejected), from: self.provider, correlationID: 1)
        expectFailure(refused, to: self.consumer, function: "GetAppServiceData", correlationID: 20, .rejected)
        let update = harness.send(SDLOnAppServiceData(serviceData: Self.data("Song")), from: self.provider, correlationID: 0)
        #expect(update.sends.isEmpty)
    }

    @Test("PerformAppServiceInteraction: forwarded as sent (Core sets no originApp for an app), the answer routed back; the producer's own is IGNORED")
    func interaction() throws {
        var harness = Self.published()
        let request = SDLPerformAppServiceInteractionRequest(
            serviceUri: "music://play?track=7", serviceID: "media-1", originApp: "someone-else")
        let forwarded = harness.send(request, from: self.consumer, correlationID: 30)
        #expect(forwarded.sends == ["app1 <- PerformAppServiceInteraction request #1", "timer \((harness.now + .seconds(9)).uptimeNanoseconds)"])
        #expect(try forwarded.only(SDLPerformAppServiceInteractionRequest.self, to: self.provider) == request)

        let answer = SDLPerformAppServiceInteractionResponse(success: true, resultCode: .success, serviceSpecificResult: "playing")
        let routed = harness.send(answer, from: self.provider, correlationID: 1)
        #expect(routed.sends == ["app2 <- PerformAppServiceInteraction response #30"])
        #expect(try routed.only(SDLPerformAppServiceInteractionResponse.self, to: self.consumer) == answer)

        let unknown = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "x", serviceID: "nope", originApp: "dash"), from: self.consumer,
            correlationID: 31)
        expectFailure(unknown, to: self.consumer, function: "PerformAppServiceInteraction", correlationID: 31, .invalidId)
        #expect(try unknown.only(SDLPerformAppServiceInteractionResponse.self, to: self.consumer).info == "The requested service ID does not exist")

        let own = harness.send(request, from: self.provider, correlationID: 32)
        expectFailure(own, to: self.provider, function: "PerformAppServiceInteraction", correlationID: 32, .ignored)
        #expect(try own.only(SDLPerformAppServiceInteractionResponse.self, to: self.provider).info == "Consumer app is same as producer app")
    }

    @Test("a provider that does not answer: GENERIC_ERROR at the deadline, its late answer ignored")
    func providerTimeout() throws {
        var harness = Self.published { $0.providerTimeout = .seconds(5) }
        let deadline = harness.now + .seconds(5)
        let get = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.consumer, correlationID: 20)
        #expect(get.summary.last == "timer \(deadline.uptimeNanoseconds)")

        let early = harness.fireTimer(at: deadline - .nanoseconds(1))
        #expect(early.sends.isEmpty && early.transcript?.outcome == "nothing due")

        let expired = harness.fireTimer(at: deadline)
        #expect(expired.sends == ["app2 <- GetAppServiceData response #20"])
        expectFailure(expired, to: self.consumer, function: "GetAppServiceData", correlationID: 20, .genericError)
        #expect(harness.headUnit.nextDeadline == nil)

        let late = harness.send(
            SDLGetAppServiceDataResponse(success: true, resultCode: .success, serviceData: Self.data("Late")), from: self.provider,
            correlationID: 1)
        #expect(late.sends.isEmpty)
        #expect(late.transcript?.outcome == "ignored: no forwarded request #1 waits for this app")
    }

    @Test("handledRPCs: the request goes to the provider and its answer back; UNSUPPORTED_REQUEST or silence hands it to the head unit; the provider's own request goes to itself, as on Core")
    func handledRPCs() throws {
        var navigation = SDLAppServiceManifest(
            serviceName: "Maps", serviceType: "NAVIGATION", allowAppConsumers: true,
            handledRPCs: [Int32(FunctionID.sendLocation.rawValue), Int32(FunctionID.buttonPress.rawValue)])
        navigation.navigationServiceManifest = SDLNavigationServiceManifest(acceptsWayPoints: false)
        // RPC passing needs the function allowed by the asking app's policy: SendLocation is in
        // Core's SendLocation group.
        var harness = Self.published(manifest: navigation) { $0.policy.appPolicies["default"]?.groups.append("SendLocation") }
        let sendLocation = SDLSendLocationRequest(longitudeDegrees: 13.4, latitudeDegrees: 52.5, locationName: "Home")

        let forwarded = harness.send(sendLocation, from: self.consumer, correlationID: 50)
        #expect(forwarded.sends == ["app1 <- SendLocation request #1", "timer \((harness.now + .seconds(9)).uptimeNanoseconds)"])
        #expect(try forwarded.only(SDLSendLocationRequest.self, to: self.provider) == sendLocation)
        let answer = SDLSendLocationResponse(success: true, resultCode: .success, info: "routing")
        let routed = harness.send(answer, from: self.provider, correlationID: 1)
        #expect(routed.sends == ["app2 <- SendLocation response #50"])
        #expect(try routed.only(SDLSendLocationResponse.self, to: self.consumer) == answer)

        _ = harness.send(sendLocation, from: self.consumer, correlationID: 51)
        let declined = harness.send(SDLSendLocationResponse(success: false, resultCode: .unsupportedRequest), from: self.provider, correlationID: 2)
        #expect(declined.sends == ["app2 <- SendLocation response #51"])
        #expect(
            try declined.only(SDLSendLocationResponse.self, to: self.consumer)
                == SDLSendLocationResponse(
                    success: false, resultCode: .unsupportedRequest,
                    info: "SendLocation is not supported by this head unit (RPC 8.0.0)"))

        let press = SDLButtonPressRequest(moduleType: .climate, buttonName: .ac, buttonPressMode: .short)
        _ = harness.send(press, from: self.consumer, correlationID: 52)
        let silence = harness.fireTimer(at: harness.now + .seconds(9))
        #expect(silence.sends.first == "app2 <- ButtonPress response #52")
        #expect(try silence.only(SDLButtonPressResponse.self, to: self.consumer) == SDLButtonPressResponse(resultCode: .success, success: true))

        // Core's RPC passing does not leave the asking app out: the provider gets its own request.
        let own = harness.send(sendLocation, from: self.provider, correlationID: 60)
        #expect(own.sends.first == "app1 <- SendLocation request #4")

        // Without the policy's SendLocation group there is no passing: UNSUPPORTED_REQUEST here.
        var plain = Self.published(manifest: navigation)
        let refused = plain.send(sendLocation, from: self.consumer, correlationID: 61)
        expectFailure(refused, to: self.consumer, function: "SendLocation", correlationID: 61, .unsupportedRequest)
    }

    @Test("handledRPCs let a provider answer a function newer than the head unit (SubtleAlert, 7.0, on a 5.1 head unit)")
    func newerFunctionThroughProvider() throws {
        let manifest = SDLAppServiceManifest(
            serviceName: "Alerts", serviceType: "WEATHER", allowAppConsumers: true,
            handledRPCs: [Int32(FunctionID.subtleAlert.rawValue)])
        var harness = Self.published(manifest: manifest) { $0.rpcVersion = .v5_1 }
        let alert = SDLSubtleAlertRequest(alertText1: "Rain at 5")
        let forwarded = harness.send(alert, from: self.consumer, correlationID: 55)
        #expect(try forwarded.only(SDLSubtleAlertRequest.self, to: self.provider) == alert)
        let routed = harness.send(SDLSubtleAlertResponse(success: true, resultCode: .success), from: self.provider, correlationID: 1)
        #expect(routed.sends == ["app2 <- SubtleAlert response #55"])

        _ = harness.disconnect(self.provider)
        let direct = harness.send(alert, from: self.consumer, correlationID: 56)
        expectFailure(direct, to: self.consumer, function: "SubtleAlert", correlationID: 56, .unsupportedRequest)
    }

    @Test("requestServiceActive: an app in FULL activates the service (DEACTIVATED and ACTIVATED in one update); another app's request asks the driver")
    func activation() throws {
        var harness = Self.published()
        harness.register(self.bystander, name: "Tunes", isMedia: true)
        _ = harness.headUnit.setHMILevel(.background, of: self.bystander)
        _ = harness.send(SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(serviceName: "Tunes", serviceType: "MEDIA", allowAppConsumers: true)), from: self.bystander)
        #expect(harness.headUnit.serviceRecords.map(\.serviceActive) == [true, false])

        _ = harness.headUnit.setHMILevel(.full, of: self.consumer)
        let outputs = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "t://", serviceID: "media-2", originApp: "dash", requestServiceActive: true),
            from: self.consumer, correlationID: 71)
        #expect(
            outputs.sends == [
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnSystemCapabilityUpdated notification #4294967295",
                "app3 <- OnSystemCapabilityUpdated notification #4294967295",
                "app3 <- PerformAppServiceInteraction request #1",
                "timer \((harness.now + .seconds(9)).uptimeNanoseconds)",
            ])
        #expect(Self.updates(outputs, to: self.consumer).map { $0.map(\.updateReason) } == [[.deactivated, .activated]])
        #expect(Self.updates(outputs, to: self.consumer).first?.map(\.updatedAppServiceRecord.serviceID) == ["media-1", "media-2"])
        #expect(harness.headUnit.serviceRecords.map(\.serviceActive) == [false, true])
        // Forwarded without requestServiceActive.
        #expect(try outputs.only(SDLPerformAppServiceInteractionRequest.self, to: self.bystander).requestServiceActive == nil)

        // An app not in FULL: the driver is asked; the configured driver says yes at once.
        _ = harness.headUnit.setHMILevel(.full, of: self.bystander)
        let asked = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "t://", serviceID: "media-1", originApp: "dash", requestServiceActive: true),
            from: self.consumer, correlationID: 72)
        #expect(asked.transcript?.outcome.hasPrefix("asked the driver \"activate MEDIA service media-1\": forwarded to app1") == true)
        #expect(harness.headUnit.serviceRecords.map(\.serviceActive) == [true, false])

        let activated = harness.headUnit.setHMILevel(.full, of: self.bystander)
        #expect(activated.sends.isEmpty)
        _ = harness.headUnit.setHMILevel(.limited, of: self.bystander)
        let reactivated = harness.headUnit.setHMILevel(.full, of: self.bystander)
        #expect(Self.updates(reactivated, to: self.consumer).map { $0.compactMap(\.updateReason) } == [[.deactivated, .activated]])
        #expect(harness.headUnit.serviceRecords.map(\.serviceActive) == [false, true])
    }

    @Test("requestServiceActive from an app not in FULL waits for the driver: no is USER_DISALLOWED with Core's info")
    func activationRefused() throws {
        var harness = Self.published { $0.driverConsent = .ask }
        harness.register(self.bystander, name: "Tunes", isMedia: true)
        _ = harness.headUnit.setHMILevel(.background, of: self.bystander)
        _ = harness.send(SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(serviceName: "Tunes", serviceType: "MEDIA", allowAppConsumers: true)), from: self.bystander)
        let waiting = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "t://", serviceID: "media-2", originApp: "dash", requestServiceActive: true),
            from: self.consumer, correlationID: 73)
        #expect(waiting.sends.count == 1 && waiting.sends[0].hasPrefix("timer"))
        #expect(harness.headUnit.pendingQuestions.map(\.subjects) == [["media-2"]])
        let denied = harness.perform("answer media-2 deny")
        expectFailure(denied, to: self.consumer, function: "PerformAppServiceInteraction", correlationID: 73, .userDisallowed)
        #expect(try denied.only(SDLPerformAppServiceInteractionResponse.self, to: self.consumer).info == "Request to activate service was denied by driver")
        #expect(harness.headUnit.serviceRecords.map(\.serviceActive) == [true, false])
    }

    @Test("publishing the same type again updates the manifest from RPC 6.0 (MANIFEST_UPDATE), REJECTED at 5.1")
    func manifestUpdate() throws {
        var harness = Self.published()
        var updated = Self.manifest
        updated.serviceName = "Music Pro"
        let outputs = harness.send(SDLPublishAppServiceRequest(appServiceManifest: updated), from: self.provider)
        let record = SDLAppServiceRecord(serviceID: "media-1", serviceManifest: updated, servicePublished: true, serviceActive: true)
        #expect(Self.updates(outputs, to: self.consumer) == [[SDLAppServiceCapability(updateReason: .manifestUpdate, updatedAppServiceRecord: record)]])
        #expect(try outputs.only(SDLPublishAppServiceResponse.self, to: self.provider).appServiceRecord == record)

        var old = Self.published { $0.rpcVersion = .v5_1 }
        let refused = old.send(SDLPublishAppServiceRequest(appServiceManifest: updated), from: self.provider, correlationID: 9)
        expectFailure(refused, to: self.provider, function: "PublishAppService", correlationID: 9, .rejected)
        #expect(old.headUnit.serviceRecords.map(\.serviceManifest.serviceName) == ["Music"])
    }

    @Test("UnpublishAppService: REMOVED to subscribers; only the provider may, an unknown id is INVALID_ID")
    func unpublish() throws {
        var harness = Self.published()
        let foreign = harness.send(SDLUnpublishAppServiceRequest(serviceID: "media-1"), from: self.consumer, correlationID: 80)
        expectFailure(foreign, to: self.consumer, function: "UnpublishAppService", correlationID: 80, .invalidId)
        #expect(
            try foreign.only(SDLUnpublishAppServiceResponse.self, to: self.consumer).info
                == "No app service with the requested service ID was published by this application")
        let unknown = harness.send(SDLUnpublishAppServiceRequest(serviceID: "media-9"), from: self.provider, correlationID: 81)
        expectFailure(unknown, to: self.provider, function: "UnpublishAppService", correlationID: 81, .invalidId)

        let outputs = harness.send(SDLUnpublishAppServiceRequest(serviceID: "media-1"), from: self.provider, correlationID: 82)
        #expect(
            outputs.sends == [
                "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app2 <- OnSystemCapabilityUpdated notification #4294967295",
                "app1 <- UnpublishAppService response #82",
            ])
        let removed = SDLAppServiceRecord(serviceID: "media-1", serviceManifest: Self.manifest, servicePublished: false, serviceActive: false)
        #expect(Self.updates(outputs, to: self.consumer) == [[SDLAppServiceCapability(updateReason: .removed, updatedAppServiceRecord: removed)]])
        #expect(harness.headUnit.serviceRecords.isEmpty)
        let get = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.consumer, correlationID: 83)
        expectFailure(get, to: self.consumer, function: "GetAppServiceData", correlationID: 83, .dataNotAvailable)
        #expect(try get.only(SDLGetAppServiceDataResponse.self, to: self.consumer).info == "No app service provider with serviceType: MEDIA is available")
    }

    @Test("a service closed to app consumers: GetAppServiceData DATA_NOT_AVAILABLE (Core finds no provider for app consumers), its data not fanned out")
    func closedService() throws {
        var closed = Self.manifest
        closed.allowAppConsumers = false
        var harness = Self.published(manifest: closed)
        let get = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true), from: self.consumer, correlationID: 90)
        expectFailure(get, to: self.consumer, function: "GetAppServiceData", correlationID: 90, .dataNotAvailable)
        let interaction = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "m://", serviceID: "media-1", originApp: "dash"), from: self.consumer, correlationID: 91)
        expectFailure(interaction, to: self.consumer, function: "PerformAppServiceInteraction", correlationID: 91, .rejected)
        #expect(
            try interaction.only(SDLPerformAppServiceInteractionResponse.self, to: self.consumer).info
                == "The requested service ID does not allow mobile app consumers")
        let data = harness.send(SDLOnAppServiceData(serviceData: Self.data("Song")), from: self.provider, correlationID: 0)
        #expect(data.sends.isEmpty && data.transcript?.outcome == "dropped: media-1 does not allow app consumers")
    }

    @Test("OnAppServiceData from an inactive service or for another app's service is dropped")
    func droppedData() {
        var harness = Self.published()
        harness.register(self.bystander, name: "Tunes", isMedia: true)
        _ = harness.send(SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(serviceName: "Tunes", serviceType: "MEDIA", allowAppConsumers: true)), from: self.bystander)
        // The active MEDIA service is Tunes's now: the request goes to Tunes.
        _ = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA", subscribe: true), from: self.consumer, correlationID: 20)
        _ = harness.send(SDLGetAppServiceDataResponse(success: true, resultCode: .success), from: self.bystander, correlationID: 1)

        // Tunes published in FULL: its service is the active one, the provider's is not.
        let inactive = harness.send(SDLOnAppServiceData(serviceData: Self.data("Old")), from: self.provider, correlationID: 0)
        #expect(inactive.sends.isEmpty && inactive.transcript?.outcome == "dropped: media-1 is not active")
        let foreign = harness.send(SDLOnAppServiceData(serviceData: Self.data("Fake")), from: self.bystander, correlationID: 0)
        #expect(foreign.sends.isEmpty && foreign.transcript?.outcome == "dropped: media-1 is not a service of this app")
    }
}

@Suite("Bounds on what apps can make the head unit hold")
struct HeadUnitLimitTests {
    let provider = AppHandle(1)
    let consumer = AppHandle(2)

    @Test("requests waiting for providers are bounded per app: TOO_MANY_PENDING_REQUESTS beyond the limit")
    func pendingRequests() {
        var harness = AppServiceTests.published { $0.maxPendingRequestsPerApp = 3 }
        for correlationID: UInt32 in 10..<13 {
            let forwarded = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.consumer, correlationID: correlationID)
            #expect(forwarded.sent.map(\.app) == [self.provider])
        }
        let refused = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.consumer, correlationID: 13)
        expectFailure(refused, to: self.consumer, function: "GetAppServiceData", correlationID: 13, .tooManyPendingRequests)
        let interaction = harness.send(
            SDLPerformAppServiceInteractionRequest(serviceUri: "m://", serviceID: "media-1", originApp: "dash"), from: self.consumer,
            correlationID: 14)
        expectFailure(interaction, to: self.consumer, function: "PerformAppServiceInteraction", correlationID: 14, .tooManyPendingRequests)
        // Another app is not held back by this one's requests.
        harness.register(AppHandle(3), name: "Third")
        let other = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: AppHandle(3))
        #expect(other.sent.map(\.message.rpcType) == [.request])

        _ = harness.send(SDLGetAppServiceDataResponse(success: true, resultCode: .success), from: self.provider, correlationID: 1)
        let again = harness.send(SDLGetAppServiceDataRequest(serviceType: "MEDIA"), from: self.consumer, correlationID: 15)
        #expect(again.sent.map(\.app) == [self.provider])
    }

    @Test("services are bounded per app: REJECTED beyond the limit")
    func services() {
        var harness = Harness {
            $0.maxServicesPerApp = 2
            // Service types are open strings; the policy must list each one an app publishes.
            $0.policy.appPolicies["default"]?.appServices?["FUTURE"] = HeadUnitPolicy.AppServiceRule()
        }
        harness.register(self.provider, name: "Many")
        for (index, type) in ["MEDIA", "WEATHER", "FUTURE"].enumerated() {
            let outputs = harness.send(
                SDLPublishAppServiceRequest(appServiceManifest: SDLAppServiceManifest(serviceName: type, serviceType: type)),
                from: self.provider, correlationID: UInt32(20 + index))
            if index < 2 {
                #expect(outputs.messages(SDLPublishAppServiceResponse.self, to: self.provider).first?.success == true)
            } else {
                expectFailure(outputs, to: self.provider, function: "PublishAppService", correlationID: 22, .rejected)
            }
        }
        #expect(harness.headUnit.serviceRecords.map(\.serviceID) == ["media-1", "weather-2"])
    }
}
