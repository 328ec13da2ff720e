import SDLRPC

extension SimulatedHeadUnit {
    /// The text fields of the main window, as SDL Core 8.2's default HMI capabilities list them
    /// (`vectors/core82`), plus `templateTitle` (RPC 6.0), which app libraries look for to show a
    /// title.
    static let textFieldNames: [SDLTextFieldName] = [
        .mainField1, .mainField2, .mainField3, .mainField4, .statusBar, .mediaClock, .mediaTrack, .alertText1,
        .alertText2, .alertText3, .scrollableMessageBody, .initialInteractionText, .menuName, .secondaryText,
        .tertiaryText, .menuTitle, .templateTitle,
    ]

    /// The image fields of the main window, each with the image types it takes (mandatory in the
    /// spec, though Core leaves it out of ten of its twelve fields).
    static let imageFieldNames: [SDLImageFieldName] = [
        .softButtonImage, .choiceImage, .choiceSecondaryImage, .menuIcon, .cmdIcon, .appIcon, .graphic,
        .secondaryGraphic, .locationImage, .alertIcon,
    ]

    /// The templates the main window shows (Core 8.2's list, which SetDisplayLayout and Show
    /// `templateConfiguration` accept).
    static let templates: [String] = [
        "DEFAULT", "MEDIA", "NON-MEDIA", "ONSCREEN_PRESETS", "NAV_FULLSCREEN_MAP", "NAV_KEYBOARD", "GRAPHIC_WITH_TEXT",
        "TEXT_WITH_GRAPHIC", "TILES_ONLY", "TEXTBUTTONS_ONLY", "GRAPHIC_WITH_TILES", "TILES_WITH_GRAPHIC",
        "GRAPHIC_WITH_TEXT_AND_SOFTBUTTONS", "TEXT_AND_SOFTBUTTONS_WITH_GRAPHIC", "GRAPHIC_WITH_TEXTBUTTONS",
        "TEXTBUTTONS_WITH_GRAPHIC", "LARGE_GRAPHIC_WITH_SOFTBUTTONS", "DOUBLE_GRAPHIC_WITH_SOFTBUTTONS",
        "LARGE_GRAPHIC_ONLY",
    ]

    /// The hardware buttons apps may subscribe to at a version, Core 8.2's list: presets, OK,
    /// PLAY_PAUSE (RPC 5.0), seek and tune, CUSTOM_BUTTON (the soft buttons' events).
    static func buttonNames(at version: RPCVersion) -> [SDLButtonName] {
        var names: [SDLButtonName] = [
            .preset0, .preset1, .preset2, .preset3, .preset4, .preset5, .preset6, .preset7, .preset8, .preset9, .ok,
        ]
        if version >= .v5_0 {
            names.append(.playPause)
        }
        return names + [.seekleft, .seekright, .tuneup, .tunedown, .customButton]
    }

    /// The buttons only media apps may subscribe to (Core answers REJECTED to the others).
    static let mediaButtons: Set<SDLButtonName> = [.playPause, .seekleft, .seekright, .tuneup, .tunedown]

    /// The text fields an app of this version knows (`templateTitle` since 6.0).
    static func textFields(at version: RPCVersion) -> [SDLTextField] {
        Self.textFieldNames.filter { version >= .v6_0 || $0 != .templateTitle }.map {
            SDLTextField(name: $0, characterSet: .utf8, width: 500, rows: 1)
        }
    }

    /// The image fields an app of this version knows (`secondaryGraphic` since 5.0, `alertIcon`
    /// since 6.0).
    static func imageFields(at version: RPCVersion) -> [SDLImageField] {
        let since: [SDLImageFieldName: RPCVersion] = [.secondaryGraphic: .v5_0, .alertIcon: .v6_0]
        return Self.imageFieldNames.filter { since[$0].map { $0 <= version } ?? true }.map {
            SDLImageField(
                name: $0, imageTypeSupported: [.graphicPng, .graphicJpeg, .graphicBmp],
                imageResolution: SDLImageResolution(resolutionWidth: 35, resolutionHeight: 35))
        }
    }

    static func buttonCapabilities(at version: RPCVersion) -> [SDLButtonCapabilities] {
        Self.buttonNames(at: version).map {
            SDLButtonCapabilities(name: $0, shortPressAvailable: true, longPressAvailable: true, upDownAvailable: true)
        }
    }

    static func softButtonCapabilities(at version: RPCVersion) -> [SDLSoftButtonCapabilities] {
        [
            SDLSoftButtonCapabilities(
                shortPressAvailable: true, longPressAvailable: true, upDownAvailable: true, imageSupported: true,
                textSupported: version >= .v6_0 ? true : nil)
        ]
    }

    /// `displayCapabilities` of the RegisterAppInterface response (deprecated since 6.0, still
    /// sent, as Core sends it).
    static func displayCapabilities(at version: RPCVersion) -> SDLDisplayCapabilities {
        SDLDisplayCapabilities(
            displayType: .sdlGeneric, displayName: version >= .v5_0 ? "GENERIC_DISPLAY" : nil,
            textFields: Self.textFields(at: version), imageFields: Self.imageFields(at: version),
            mediaClockFormats: [.clock1, .clock2, .clock3, .clocktext1, .clocktext2, .clocktext3, .clocktext4],
            graphicSupported: true, templatesAvailable: Self.templates,
            screenParams: SDLScreenParams(
                resolution: SDLImageResolution(resolutionWidth: 800, resolutionHeight: 480),
                touchEventAvailable: SDLTouchEventCapabilities(
                    pressAvailable: true, multiTouchAvailable: false, doublePressAvailable: false)),
            numCustomPresetsAvailable: 8)
    }

    /// The `DISPLAYS` capability (RPC 6.0+): one display with one main window (id 0), which has
    /// the same fields, templates and buttons as the RegisterAppInterface response announces.
    /// Widgets are not offered (CreateWindow is not implemented).
    static func displays(at version: RPCVersion) -> [SDLDisplayCapability] {
        let window = SDLWindowCapability(
            windowID: 0, textFields: Self.textFields(at: version), imageFields: Self.imageFields(at: version),
            imageTypeSupported: [.static_, .dynamic], templatesAvailable: Self.templates, numCustomPresetsAvailable: 8,
            buttonCapabilities: Self.buttonCapabilities(at: version),
            softButtonCapabilities: Self.softButtonCapabilities(at: version),
            menuLayoutsAvailable: [.list, .tiles],
            dynamicUpdateCapabilities: SDLDynamicUpdateCapabilities(supportsDynamicSubMenus: false))
        return [
            SDLDisplayCapability(
                displayName: "GENERIC_DISPLAY",
                windowTypeSupported: [SDLWindowTypeCapabilities(type: .main, maximumNumberOfWindows: 1)],
                windowCapabilities: [window])
        ]
    }
}
