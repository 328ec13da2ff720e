import NIOCore
import SDLRPC

extension SimulatedHeadUnit {
    /// RegisterAppInterface, as SDL Core 8.2 answers it.
    ///
    /// Refusals, in Core's order: APPLICATION_REGISTERED_ALREADY (this connection, or another app
    /// with the app id), TOO_MANY_PENDING_REQUESTS (an app id that flooded), DISALLOWED (a name
    /// not among the policy's `nicknames`; WEB_VIEW absent from the policy's `AppHMIType`),
    /// DUPLICATE_NAME. The policy's `AppHMIType`, when it names types, replaces the app's; types
    /// the app asked for and the policy does not list make the result WARNINGS, with Core's info.
    /// WRONG_LANGUAGE when the app desires another language.
    ///
    /// Then, in Core's order: the response, OnHMIStatus at the policy's `default_hmi` (NONE),
    /// OnSystemCapabilityUpdated(DISPLAYS) (RPC 6.0+), OnRCStatus for a remote-control app (RPC
    /// 5.0+), OnPermissionsChange from the app's policy, then the activation the configuration
    /// asks for. Notifications the policy does not allow are not sent.
    mutating func register(_ request: AnyRPCMessage, _ registration: SDLRegisterAppInterfaceRequest, app: AppHandle) -> String {
        if self.isRegistered(app) {
            return self.fail(request, .applicationRegisteredAlready, reason: "this connection is registered already", app: app)
        }
        let policyAppID = registration.fullAppID?.lowercased() ?? registration.appID
        if self.floodedAppIDs.contains(policyAppID) {
            return self.fail(
                request, .tooManyPendingRequests, reason: "app id \(policyAppID) flooded the head unit", app: app)
        }
        for other in self.registeredApps {
            guard let existing = self.apps[other]?.registration else { continue }
            if existing.appID == registration.appID {
                return self.fail(
                    request, .applicationRegisteredAlready,
                    reason: "an app with app id \(registration.appID) is already registered", app: app)
            }
        }
        let policy = self.configuration.policy
        let appPolicy = policy.appPolicy(for: policyAppID)
        if let nicknames = appPolicy.nicknames, !nicknames.isEmpty,
            !nicknames.contains(where: { $0.lowercased() == registration.appName.lowercased() })
        {
            return self.fail(
                request, .disallowed, reason: "\(registration.appName) is not among the policy's nicknames", app: app)
        }
        var types = registration.appHMIType ?? []
        var warning: String?
        if let policyTypes = appPolicy.appHMITypes, !policyTypes.isEmpty {
            let missing = types.filter { !policyTypes.contains($0) }
            if missing.contains(.webView) {
                return self.fail(request, .disallowed, "WEB_VIEW AppHmiType is absent in application policies", app: app)
            }
            if !missing.isEmpty {
                warning = "Following AppHmiTypes are not present in policy table:" + missing.map { "\($0.wireName)," }.joined()
            }
            types = policyTypes
        } else if types.contains(.webView) {
            return self.fail(
                request, .disallowed, "WEB_VIEW AppHmiType is absent in application policies, because they are empty",
                app: app)
        }
        for other in self.registeredApps {
            guard let existing = self.apps[other]?.registration else { continue }
            if existing.appName.lowercased() == registration.appName.lowercased() {
                return self.fail(
                    request, .duplicateName, reason: "an app named \(registration.appName) is already registered", app: app)
            }
        }
        let headUnitVersion = self.configuration.rpcVersion
        let appVersion = RPCVersion(registration.syncMsgVersion)
        // Core: versions before 5.0 had no negotiation; such apps get the base version 4.5.
        let version = appVersion < .v5_0 ? min(.v4_5, headUnitVersion) : min(appVersion, headUnitVersion)
        var record = Registration(
            appID: registration.appID, appName: registration.appName, policyAppID: policyAppID, version: version,
            hmiTypes: types, isMedia: registration.isMediaApplication, policy: appPolicy,
            rules: policy.rules(of: appPolicy), isRevoked: policy.revokedAppIDs.contains(policyAppID),
            userLocation: self.vehicle.seats.first ?? SDLGrid(col: 0, row: 0))
        record.hmiLevel = appPolicy.defaultHMI
        record.audioState = Self.audioState(of: record, at: record.hmiLevel)
        record.videoState = Self.videoState(of: record, at: record.hmiLevel)
        self.apps[app, default: AppRecord()].registration = record
        self.registrationCount += 1

        let language = self.configuration.language
        let wrongLanguage =
            registration.languageDesired != language || registration.hmiDisplayLanguageDesired != language
        var response = self.registrationResponse(
            for: record, resultCode: wrongLanguage ? .wrongLanguage : warning != nil ? .warnings : .success)
        response.info = warning
        self.respond(to: request, with: response, app: app)
        self.outputs.append(.registered(app))
        self.notify(self.hmiStatus(for: record), to: app)
        if record.version >= .v6_0 {
            // Core 8.2 sends the display's capability to 6.0+ apps on registration once its HMI has
            // given it; app libraries (the JavaScript suite's screen manager) wait for it.
            self.notify(
                SDLOnSystemCapabilityUpdated(
                    systemCapability: SDLSystemCapability(
                        systemCapabilityType: .displays, displayCapabilities: Self.displays(at: record.version))),
                to: app)
        }
        if self.sendsRCStatus(to: record) {
            self.notify(self.rcStatus(for: app, record), to: app)
        }
        self.notify(SDLOnPermissionsChange(permissionItem: self.permissionItems(for: record)), to: app)
        if let level = self.configuration.activationLevel {
            self.changeLevel(of: app, to: level)
        }
        let level = self.apps[app]?.registration?.hmiLevel ?? .none_
        return "registered \"\(record.appName)\" (app id \(record.appID)), RPC \(version), HMI \(level)"
            + (wrongLanguage ? ", WRONG_LANGUAGE" : "") + (warning.map { ", WARNINGS: \($0)" } ?? "")
    }

    /// Forgets an app's registration (UnregisterAppInterface, its connection ended, a flood), in
    /// SDL Core's order: its services are unpublished while it is still registered, then it is
    /// removed, its modules freed (OnRCStatus to the other remote-control apps), its questions to
    /// the driver and its waiting requests dropped, requests waiting on it as a provider handed on.
    mutating func unregister(_ app: AppHandle, now: NIODeadline) -> String {
        guard self.apps[app]?.registration != nil else {
            self.dropRequests(of: app)
            return "was not registered"
        }
        let removedServices = self.unpublishServices(of: app)
        self.apps[app]?.registration = nil
        let freedModules = self.releaseModules(of: app)
        self.dropWaiting(of: app)
        self.dropRequests(of: app)
        self.handOnRequests(waitingFor: app, now: now)
        return "unregistered; \(removedServices) service(s) unpublished, \(freedModules) module(s) freed"
    }

    /// Moves an app to a level as SDL Core's state controller does. Entering FULL activates the
    /// app's services first (Core's `ActivateApplication`); entering NONE (the user exits the app)
    /// frees its modules first (Core's `kApplicationExit`). The app's own OnHMIStatus comes before
    /// those of the apps it displaces (Core's `HmiLevelConflictResolver`, see
    /// ``resolveConflicts(with:)``).
    mutating func changeLevel(of app: AppHandle, to level: SDLHMILevel) {
        guard let current = self.apps[app]?.registration, current.hmiLevel != level else { return }
        if level == .full {
            self.activateServices(of: app)
        }
        if level == .none_ {
            _ = self.releaseModules(of: app)
        }
        self.setState(of: app, level: level, audio: Self.audioState(of: current, at: level), video: Self.videoState(of: current, at: level))
        if level == .full || level == .limited {
            self.resolveConflicts(with: app)
        }
    }

    /// The other apps in FULL or LIMITED after `applied` entered FULL or LIMITED (SDL Core's
    /// `HmiLevelConflictResolver`): an app keeps its audio when it is an audio app of another audio
    /// type (navigation, communication, media, none), its video when it is a video app and the
    /// applied one is not; keeping either it goes to LIMITED when the applied app is in FULL
    /// (else stays); keeping neither it goes to BACKGROUND, unless it is in FULL and the applied
    /// app only entered LIMITED.
    mutating func resolveConflicts(with applied: AppHandle) {
        guard let entered = self.apps[applied]?.registration else { return }
        for other in self.registeredApps where other != applied {
            guard let registration = self.apps[other]?.registration,
                registration.hmiLevel == .full || registration.hmiLevel == .limited
            else { continue }
            let audio: SDLAudioStreamingState =
                registration.isAudio && !Self.sameAudioType(entered, registration) ? .audible : .notAudible
            let video: SDLVideoStreamingState = registration.isVideo && !entered.isVideo ? .streamable : .notStreamable
            let level: SDLHMILevel
            if audio == .audible || video == .streamable {
                level = entered.hmiLevel == .full ? .limited : registration.hmiLevel
            } else {
                level = registration.hmiLevel == .full && entered.hmiLevel != .full ? .full : .background
            }
            if level != registration.hmiLevel || audio != registration.audioState || video != registration.videoState {
                self.setState(of: other, level: level, audio: audio, video: video)
            }
        }
    }

    /// Whether two apps have the same audio type (SDL Core's `IsSameAudioAppType`): both
    /// navigation, both communication, both media only, or both without audio.
    static func sameAudioType(_ first: Registration, _ second: Registration) -> Bool {
        func onlyMedia(_ app: Registration) -> Bool { app.isMedia && !app.isNavigation && !app.isCommunication }
        return (first.isNavigation && second.isNavigation) || (first.isCommunication && second.isCommunication)
            || (onlyMedia(first) && onlyMedia(second)) || (!first.isAudio && !second.isAudio)
    }

    /// An app's audio state at a level of its own choosing (SDL Core's `CalcAudioState`): AUDIBLE
    /// for an audio app in FULL or LIMITED.
    static func audioState(of registration: Registration, at level: SDLHMILevel) -> SDLAudioStreamingState {
        registration.isAudio && (level == .full || level == .limited) ? .audible : .notAudible
    }

    /// An app's video state at a level of its own choosing (SDL Core's `CalcVideoState`):
    /// STREAMABLE for a video app in FULL or LIMITED.
    static func videoState(of registration: Registration, at level: SDLHMILevel) -> SDLVideoStreamingState {
        registration.isVideo && (level == .full || level == .limited) ? .streamable : .notStreamable
    }

    private mutating func setState(
        of app: AppHandle, level: SDLHMILevel, audio: SDLAudioStreamingState, video: SDLVideoStreamingState
    ) {
        guard var registration = self.apps[app]?.registration else { return }
        registration.hmiLevel = level
        registration.audioState = audio
        registration.videoState = video
        self.apps[app]?.registration = registration
        self.notify(self.hmiStatus(for: registration), to: app)
    }

    /// Whether a navigation app's media data flows: SDL Core then lays its navigation-streaming
    /// state over every other app, which loses its audio (the stock HMI capabilities do not
    /// support attenuation).
    var navigationStreams: Bool {
        self.apps.values.contains { $0.registration.map { $0.isNavigation && !$0.streaming.isEmpty } ?? false }
    }

    /// OnHMIStatus for an app's current state, with the parameters of its version (SDL Core 8.2
    /// sends `videoStreamingState` to 5.0+ apps and `windowID` 0 to 6.0+ apps).
    func hmiStatus(for registration: Registration) -> SDLOnHMIStatus {
        var audio = registration.audioState
        if self.navigationStreams && !registration.isNavigation {
            audio = .notAudible
        }
        return SDLOnHMIStatus(
            hmiLevel: registration.hmiLevel, audioStreamingState: audio, systemContext: .main,
            videoStreamingState: registration.version >= .v5_0 ? registration.videoState : nil,
            windowID: registration.version >= .v6_0 ? 0 : nil)
    }

    /// The RegisterAppInterface response, modelled on SDL Core 8.2's (`vectors/core82`), with the
    /// parameters of the negotiated version.
    func registrationResponse(for registration: Registration, resultCode: SDLResult) -> SDLRegisterAppInterfaceResponse {
        let version = registration.version
        let configuration = self.configuration
        let hmiCapabilities = SDLHMICapabilities(
            navigation: false, phoneCall: false, videoStreaming: version >= .v4_5 ? false : nil,
            remoteControl: version >= .v4_5 ? configuration.remoteControl : nil,
            appServices: version >= .v6_0 ? configuration.rpcVersion >= .v5_1 : nil,
            displays: version >= .v6_0 ? true : nil,
            seatLocation: version >= .v6_0 ? configuration.remoteControl : nil,
            driverDistraction: version >= .v7_0 ? false : nil)
        return SDLRegisterAppInterfaceResponse(
            success: true, resultCode: resultCode, syncMsgVersion: version.syncMsgVersion,
            language: configuration.language, hmiDisplayLanguage: configuration.language,
            displayCapabilities: Self.displayCapabilities(at: version),
            buttonCapabilities: Self.buttonCapabilities(at: version),
            softButtonCapabilities: Self.softButtonCapabilities(at: version),
            presetBankCapabilities: SDLPresetBankCapabilities(onScreenPresetsAvailable: true),
            hmiZoneCapabilities: [.front], speechCapabilities: [.text, .silence], prerecordedSpeech: [.helpJingle],
            vrCapabilities: [.text],
            audioPassThruCapabilities: [SDLAudioPassThruCapabilities(samplingRate: ._44khz, bitsPerSample: ._8Bit, audioType: .pcm)],
            pcmStreamCapabilities: SDLAudioPassThruCapabilities(samplingRate: ._16khz, bitsPerSample: ._16Bit, audioType: .pcm),
            vehicleType: configuration.vehicleType, supportedDiagModes: [1, 2, 3, 5, 6, 7, 9, 10, 24, 25, 34, 62],
            hmiCapabilities: hmiCapabilities, sdlVersion: configuration.sdlVersion,
            systemSoftwareVersion: configuration.systemSoftwareVersion, iconResumed: version >= .v5_0 ? false : nil)
    }
}
