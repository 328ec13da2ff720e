import NIOCore
import SDLRPC

extension SimulatedHeadUnit {
    /// RegisterAppInterface, as SDL Core 8.2 answers it: the response (negotiated version,
    /// capabilities), OnHMIStatus NONE, OnPermissionsChange, OnRCStatus for a remote-control app
    /// (RPC 5.0+), then the activation the configuration asks for.
    mutating func register(_ request: AnyRPCMessage, _ registration: SDLRegisterAppInterfaceRequest, app: AppHandle) -> String {
        if self.isRegistered(app) {
            return self.fail(request, .applicationRegisteredAlready, "the app is already registered", app: app)
        }
        for other in self.registeredApps {
            guard let existing = self.apps[other]?.registration else { continue }
            if existing.appID == registration.appID {
                return self.fail(
                    request, .applicationRegisteredAlready,
                    "an app with app id \(registration.appID) is already registered", app: app)
            }
            if existing.appName.lowercased() == registration.appName.lowercased() {
                return self.fail(
                    request, .duplicateName, "an app named \(registration.appName) is already registered", app: app)
            }
        }
        let headUnitVersion = self.configuration.rpcVersion
        let appVersion = RPCVersion(registration.syncMsgVersion)
        // Core: versions before 5.0 had no negotiation; such apps get the base version 4.5.
        let version = appVersion < .v5_0 ? min(.v4_5, headUnitVersion) : min(appVersion, headUnitVersion)
        let record = Registration(
            appID: registration.appID, appName: registration.appName, version: version,
            hmiTypes: registration.appHMIType ?? [], isMedia: registration.isMediaApplication,
            userLocation: self.vehicle.seats.first ?? SDLGrid(col: 0, row: 0))
        self.apps[app, default: AppRecord()].registration = record
        self.registrationCount += 1

        let language = self.configuration.language
        let wrongLanguage =
            registration.languageDesired != language || registration.hmiDisplayLanguageDesired != language
        self.respond(
            to: request, with: self.registrationResponse(for: record, resultCode: wrongLanguage ? .wrongLanguage : .success),
            app: app)
        self.outputs.append(.registered(app))
        self.notify(self.hmiStatus(for: record), to: app)
        self.notify(SDLOnPermissionsChange(permissionItem: self.permissionItems(for: record)), to: app)
        if self.sendsRCStatus(to: record) {
            self.notify(self.rcStatus(for: app, record), to: app)
        }
        if let level = self.configuration.activationLevel {
            self.changeLevel(of: app, to: level)
        }
        let level = self.apps[app]?.registration?.hmiLevel ?? .none_
        return "registered \"\(record.appName)\" (app id \(record.appID)), RPC \(version), HMI \(level)"
            + (wrongLanguage ? ", WRONG_LANGUAGE" : "")
    }

    /// Forgets an app's registration (UnregisterAppInterface, or its connection ended): its
    /// services are unpublished, its modules freed, requests waiting on it as a provider handed
    /// on, its own waiting requests dropped.
    mutating func unregister(_ app: AppHandle, now: NIODeadline) -> String {
        guard self.apps[app]?.registration != nil else {
            self.dropRequests(of: app)
            return "was not registered"
        }
        self.apps[app]?.registration = nil
        let removedServices = self.unpublishServices(of: app)
        let freedModules = self.releaseModules(of: app)
        self.dropRequests(of: app)
        self.handOnRequests(waitingFor: app, now: now)
        return "unregistered; \(removedServices) service(s) unpublished, \(freedModules) module(s) freed"
    }

    /// Moves an app to a level; an app entering FULL pushes the app in FULL to LIMITED (audio
    /// apps) or BACKGROUND, and activates its own app services (Core's `OnAppActivated`).
    mutating func changeLevel(of app: AppHandle, to level: SDLHMILevel) {
        guard let current = self.apps[app]?.registration, current.hmiLevel != level else { return }
        if level == .full {
            for other in self.registeredApps where other != app {
                guard let registration = self.apps[other]?.registration, registration.hmiLevel == .full else { continue }
                self.setLevel(of: other, to: registration.isAudio ? .limited : .background)
            }
        }
        self.setLevel(of: app, to: level)
        if level == .full {
            self.activateServices(of: app)
        }
    }

    private mutating func setLevel(of app: AppHandle, to level: SDLHMILevel) {
        guard var registration = self.apps[app]?.registration else { return }
        registration.hmiLevel = level
        self.apps[app]?.registration = registration
        self.notify(self.hmiStatus(for: registration), to: app)
    }

    /// OnHMIStatus for an app's current level, with the parameters of its version (SDL Core 8.2
    /// sends `videoStreamingState` and `windowID` 0 to 6.0+ apps).
    func hmiStatus(for registration: Registration) -> SDLOnHMIStatus {
        let foreground = registration.hmiLevel == .full || registration.hmiLevel == .limited
        let video: SDLVideoStreamingState = foreground && registration.isVideo ? .streamable : .notStreamable
        return SDLOnHMIStatus(
            hmiLevel: registration.hmiLevel,
            audioStreamingState: foreground && registration.isAudio ? .audible : .notAudible, systemContext: .main,
            videoStreamingState: registration.version >= .v5_0 ? video : nil,
            windowID: registration.version >= .v6_0 ? 0 : nil)
    }

    /// One permission item per function the head unit implements for this app at its version,
    /// allowed in every HMI level, in name order as Core lists them.
    func permissionItems(for registration: Registration) -> [SDLPermissionItem] {
        let allLevels: [SDLHMILevel] = [.background, .full, .limited, .none_]
        return Self.implementedFunctions
            .filter { self.implements($0, for: registration) }
            .compactMap(\.id.name)
            .sorted()
            .map {
                SDLPermissionItem(
                    rpcName: $0, hmiPermissions: SDLHMIPermissions(allowed: allLevels, userDisallowed: []),
                    parameterPermissions: SDLParameterPermissions(allowed: [], userDisallowed: []))
            }
    }

    /// The RegisterAppInterface response, modelled on SDL Core 8.2's (`vectors/core82`), with the
    /// parameters of the negotiated version.
    func registrationResponse(for registration: Registration, resultCode: SDLResult) -> SDLRegisterAppInterfaceResponse {
        let version = registration.version
        let configuration = self.configuration
        let textFields: [SDLTextFieldName] = [
            .mainField1, .mainField2, .mainField3, .mainField4, .statusBar, .mediaClock, .mediaTrack, .alertText1,
            .alertText2, .alertText3, .scrollableMessageBody, .initialInteractionText, .menuName, .secondaryText,
            .tertiaryText, .menuTitle, .templateTitle,
        ]
        let imageFields: [SDLImageFieldName] = [
            .softButtonImage, .choiceImage, .choiceSecondaryImage, .menuIcon, .cmdIcon, .appIcon, .graphic,
            .secondaryGraphic, .locationImage, .alertIcon,
        ]
        let display = SDLDisplayCapabilities(
            displayType: .sdlGeneric, displayName: version >= .v5_0 ? "GENERIC_DISPLAY" : nil,
            textFields: textFields.map { SDLTextField(name: $0, characterSet: .utf8, width: 500, rows: 1) },
            imageFields: imageFields.map {
                SDLImageField(
                    name: $0, imageTypeSupported: [.graphicPng, .graphicJpeg, .graphicBmp],
                    imageResolution: SDLImageResolution(resolutionWidth: 35, resolutionHeight: 35))
            },
            mediaClockFormats: [.clock1, .clock2, .clock3, .clocktext1, .clocktext2, .clocktext3, .clocktext4],
            graphicSupported: true,
            templatesAvailable: [
                "DEFAULT", "MEDIA", "NON-MEDIA", "ONSCREEN_PRESETS", "NAV_FULLSCREEN_MAP", "GRAPHIC_WITH_TEXT",
                "TEXT_WITH_GRAPHIC", "TILES_ONLY", "TEXTBUTTONS_ONLY", "LARGE_GRAPHIC_ONLY",
            ],
            screenParams: SDLScreenParams(
                resolution: SDLImageResolution(resolutionWidth: 800, resolutionHeight: 480),
                touchEventAvailable: SDLTouchEventCapabilities(
                    pressAvailable: true, multiTouchAvailable: false, doublePressAvailable: false)),
            numCustomPresetsAvailable: 8)
        var buttons: [SDLButtonName] = [.ok, .seekleft, .seekright, .tuneup, .tunedown, .preset0, .preset1, .preset2]
        if version >= .v5_0 {
            buttons.insert(.playPause, at: 1)
        }
        let hmiCapabilities = SDLHMICapabilities(
            navigation: false, phoneCall: false, videoStreaming: version >= .v4_5 ? false : nil,
            remoteControl: version >= .v4_5 ? configuration.remoteControl : nil,
            appServices: version >= .v6_0 ? configuration.rpcVersion >= .v5_1 : nil,
            displays: version >= .v6_0 ? false : nil,
            seatLocation: version >= .v6_0 ? configuration.remoteControl : nil,
            driverDistraction: version >= .v7_0 ? false : nil)
        return SDLRegisterAppInterfaceResponse(
            success: true, resultCode: resultCode, syncMsgVersion: version.syncMsgVersion,
            language: configuration.language, hmiDisplayLanguage: configuration.language,
            displayCapabilities: display,
            buttonCapabilities: buttons.map {
                SDLButtonCapabilities(name: $0, shortPressAvailable: true, longPressAvailable: true, upDownAvailable: true)
            },
            softButtonCapabilities: [
                SDLSoftButtonCapabilities(
                    shortPressAvailable: true, longPressAvailable: true, upDownAvailable: true, imageSupported: true,
                    textSupported: version >= .v6_0 ? true : nil)
            ],
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
