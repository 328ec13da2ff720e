import SDLRPC

extension SimulatedHeadUnit {
    /// The screen, menu, interaction and button requests, answered as SDL Core 8.2 answers them
    /// with its HMI: success where Core succeeds, Core's result codes for the ids and names it
    /// refuses. The simulated driver does not press anything: PerformInteraction picks the first
    /// choice at once, Alert is dismissed at once; no OnCommand, OnButtonEvent or OnButtonPress is
    /// sent.
    mutating func answerScreen(_ request: AnyRPCMessage, app: AppHandle) -> String? {
        let adds = request.message is SDLAddCommandRequest || request.message is SDLAddSubMenuRequest
            || request.message is SDLCreateInteractionChoiceSetRequest
        if adds, let count = self.apps[app]?.registration?.content.menuItemCount, count >= self.configuration.maxMenuItemsPerApp {
            return self.fail(request, .outOfMemory, "the app already holds \(count) commands, submenus and choice sets", app: app)
        }
        switch request.message {
        case let show as SDLShowRequest:
            return self.show(request, show, app: app)
        case let layout as SDLSetDisplayLayoutRequest:
            return self.setDisplayLayout(request, layout, app: app)
        case let command as SDLAddCommandRequest:
            return self.addCommand(request, command, app: app)
        case let delete as SDLDeleteCommandRequest:
            return self.deleteCommand(request, delete, app: app)
        case let subMenu as SDLAddSubMenuRequest:
            return self.addSubMenu(request, subMenu, app: app)
        case let delete as SDLDeleteSubMenuRequest:
            return self.deleteSubMenu(request, delete, app: app)
        case let choiceSet as SDLCreateInteractionChoiceSetRequest:
            return self.createChoiceSet(request, choiceSet, app: app)
        case let delete as SDLDeleteInteractionChoiceSetRequest:
            return self.deleteChoiceSet(request, delete, app: app)
        case let interaction as SDLPerformInteractionRequest:
            return self.performInteraction(request, interaction, app: app)
        case let alert as SDLAlertRequest:
            return self.alert(request, alert, app: app)
        case let subscribe as SDLSubscribeButtonRequest:
            return self.subscribeButton(request, subscribe.buttonName, app: app)
        case let unsubscribe as SDLUnsubscribeButtonRequest:
            return self.unsubscribeButton(request, unsubscribe.buttonName, app: app)
        case let change as SDLChangeRegistrationRequest:
            return self.changeRegistration(request, change, app: app)
        case is SDLPutFileRequest, is SDLListFilesRequest, is SDLDeleteFileRequest:
            if let refused = self.limitInNone(request, app: app) {
                return refused
            }
            return self.answerFile(request, app: app)
        case let icon as SDLSetAppIconRequest:
            return self.setAppIcon(request, icon, app: app)
        case is SDLSpeakRequest:
            self.respond(to: request, with: SDLSpeakResponse(success: true, resultCode: .success), app: app)
            return "spoken"
        case is SDLResetGlobalPropertiesRequest:
            self.respond(to: request, with: SDLResetGlobalPropertiesResponse(success: true, resultCode: .success), app: app)
            return "reset"
        case is SDLSetMediaClockTimerRequest:
            guard self.apps[app]?.registration?.isMedia == true else {
                return self.fail(request, .rejected, "the app is not a media app", app: app)
            }
            self.respond(to: request, with: SDLSetMediaClockTimerResponse(success: true, resultCode: .success), app: app)
            return "media clock set"
        default:
            return nil
        }
    }

    /// Show: the main window only (`windowID` 0; other ids INVALID_ID, as no window is ever
    /// created); a template must be one of the window's; images the app has not uploaded give
    /// WARNINGS (success true), as on Core.
    private mutating func show(_ request: AnyRPCMessage, _ show: SDLShowRequest, app: AppHandle) -> String {
        if let window = show.windowID, window != 0 {
            return self.fail(request, .invalidId, "window \(window) does not exist", app: app)
        }
        let template = show.templateConfiguration?.template
        if let template, !Self.templates.contains(template) {
            return self.fail(request, .rejected, "the template \(template) is not available", app: app)
        }
        if let template {
            self.updateContent(of: app) { $0.template = template }
        }
        let images = [show.graphic, show.secondaryGraphic] + (show.softButtons ?? []).map(\.image)
        let text = [show.mainField1, show.mainField2, show.mainField3, show.mainField4].compactMap { $0 }
        let outcome = "shown " + (text.isEmpty ? "(no text)" : text.map { "\"\($0)\"" }.joined(separator: " "))
            + (template.map { ", template \($0)" } ?? "")
        return self.succeed(request, SDLShowResponse.self, imagesFound: self.imagesExist(images, for: app), outcome, app: app)
    }

    /// SetDisplayLayout (deprecated since 6.0, still answered): one of the window's templates.
    private mutating func setDisplayLayout(
        _ request: AnyRPCMessage, _ layout: SDLSetDisplayLayoutRequest, app: AppHandle
    ) -> String {
        guard let version = self.apps[app]?.registration?.version else { return "not registered" }
        guard Self.templates.contains(layout.displayLayout) else {
            return self.fail(request, .rejected, "the template \(layout.displayLayout) is not available", app: app)
        }
        self.updateContent(of: app) { $0.template = layout.displayLayout }
        self.respond(
            to: request,
            with: SDLSetDisplayLayoutResponse(
                success: true, resultCode: .success, displayCapabilities: Self.displayCapabilities(at: version),
                buttonCapabilities: Self.buttonCapabilities(at: version),
                softButtonCapabilities: Self.softButtonCapabilities(at: version),
                presetBankCapabilities: SDLPresetBankCapabilities(onScreenPresetsAvailable: true)),
            app: app)
        return "template \(layout.displayLayout)"
    }

    /// AddCommand: INVALID_ID for a `cmdID` in use or a `parentID` that is no submenu,
    /// DUPLICATE_NAME for a menu name already under that parent or a voice command already in
    /// use, INVALID_DATA for a command with neither menu params nor voice commands (Core's checks).
    private mutating func addCommand(_ request: AnyRPCMessage, _ command: SDLAddCommandRequest, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let id = command.cmdID
        let vrCommands = command.vrCommands ?? []
        if content.commands[id] != nil {
            return self.fail(request, .invalidId, "cmdID \(id) is already in use", app: app)
        }
        guard command.menuParams != nil || !vrCommands.isEmpty else {
            return self.fail(request, .invalidData, "a command needs menuParams or vrCommands", app: app)
        }
        let parent = command.menuParams?.parentID ?? 0
        if parent != 0 && content.subMenus[parent] == nil {
            return self.fail(request, .invalidId, "parentID \(parent) is not a submenu", app: app)
        }
        if let name = command.menuParams?.menuName, content.menuNames(under: parent).contains(name) {
            return self.fail(request, .duplicateName, "\"\(name)\" is already in this menu", app: app)
        }
        if let clash = Self.firstDuplicate(vrCommands, against: content.voiceCommands) {
            return self.fail(request, .duplicateName, "the voice command \"\(clash)\" is already in use", app: app)
        }
        self.updateContent(of: app) {
            $0.commands[id] = MenuCommand(parentID: parent, menuName: command.menuParams?.menuName, vrCommands: vrCommands)
        }
        let found = self.imagesExist([command.cmdIcon, command.secondaryImage], for: app)
        let label = command.menuParams.map { "\"\($0.menuName)\"" } ?? "voice-only"
        return self.succeed(request, SDLAddCommandResponse.self, imagesFound: found, "command \(id) \(label)", app: app)
    }

    /// DeleteCommand: INVALID_ID for a command the app did not add.
    private mutating func deleteCommand(_ request: AnyRPCMessage, _ delete: SDLDeleteCommandRequest, app: AppHandle) -> String {
        guard self.apps[app]?.registration?.content.commands[delete.cmdID] != nil else {
            return self.fail(request, .invalidId, "no command \(delete.cmdID)", app: app)
        }
        self.updateContent(of: app) { $0.commands[delete.cmdID] = nil }
        return self.succeed(request, SDLDeleteCommandResponse.self, "command \(delete.cmdID) deleted", app: app)
    }

    /// AddSubMenu: INVALID_ID for a `menuID` in use or an unknown `parentID` (ids start at 1: 0
    /// is the top level), DUPLICATE_NAME for a name already under that parent.
    private mutating func addSubMenu(_ request: AnyRPCMessage, _ subMenu: SDLAddSubMenuRequest, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let id = subMenu.menuID
        if content.subMenus[id] != nil {
            return self.fail(request, .invalidId, "menuID \(id) is already in use", app: app)
        }
        let parent = subMenu.parentID ?? 0
        if parent != 0 && content.subMenus[parent] == nil {
            return self.fail(request, .invalidId, "parentID \(parent) is not a submenu", app: app)
        }
        if content.menuNames(under: parent).contains(subMenu.menuName) {
            return self.fail(request, .duplicateName, "\"\(subMenu.menuName)\" is already in this menu", app: app)
        }
        self.updateContent(of: app) { $0.subMenus[id] = SubMenu(parentID: parent, menuName: subMenu.menuName) }
        let found = self.imagesExist([subMenu.menuIcon, subMenu.secondaryImage], for: app)
        return self.succeed(
            request, SDLAddSubMenuResponse.self, imagesFound: found, "submenu \(id) \"\(subMenu.menuName)\"", app: app)
    }

    /// DeleteSubMenu: INVALID_ID for a submenu the app did not add; its commands and nested
    /// submenus go with it.
    private mutating func deleteSubMenu(_ request: AnyRPCMessage, _ delete: SDLDeleteSubMenuRequest, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content, content.subMenus[delete.menuID] != nil else {
            return self.fail(request, .invalidId, "no submenu \(delete.menuID)", app: app)
        }
        var removed: Set<Int32> = [delete.menuID]
        var queue = [delete.menuID]
        while let parent = queue.popLast() {
            for (id, subMenu) in content.subMenus where subMenu.parentID == parent && removed.insert(id).inserted {
                queue.append(id)
            }
        }
        var commands = 0
        self.updateContent(of: app) {
            for id in removed {
                $0.subMenus[id] = nil
            }
            let before = $0.commands.count
            $0.commands = $0.commands.filter { !removed.contains($0.value.parentID) }
            commands = before - $0.commands.count
        }
        return self.succeed(
            request, SDLDeleteSubMenuResponse.self,
            "submenu \(delete.menuID) deleted with \(removed.count - 1) submenu(s) and \(commands) command(s)", app: app)
    }

    /// CreateInteractionChoiceSet: INVALID_ID for a set id in use or a choice id repeated in the
    /// set, DUPLICATE_NAME for a menu name or voice command repeated in the set.
    private mutating func createChoiceSet(
        _ request: AnyRPCMessage, _ create: SDLCreateInteractionChoiceSetRequest, app: AppHandle
    ) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let id = create.interactionChoiceSetID
        if content.choiceSets[id] != nil {
            return self.fail(request, .invalidId, "interactionChoiceSetID \(id) is already in use", app: app)
        }
        let choices = create.choiceSet
        if let repeated = Self.firstRepeated(choices.map(\.choiceID)) {
            return self.fail(request, .invalidId, "choiceID \(repeated) appears twice", app: app)
        }
        if let repeated = Self.firstRepeated(choices.map(\.menuName)) {
            return self.fail(request, .duplicateName, "the menu name \"\(repeated)\" appears twice", app: app)
        }
        if let repeated = Self.firstRepeated(choices.flatMap { $0.vrCommands ?? [] }.map { $0.lowercased() }) {
            return self.fail(request, .duplicateName, "the voice command \"\(repeated)\" appears twice", app: app)
        }
        self.updateContent(of: app) {
            $0.choiceSets[id] = choices.map {
                ChoiceEntry(choiceID: $0.choiceID, menuName: $0.menuName, hasVoiceCommands: !($0.vrCommands ?? []).isEmpty)
            }
        }
        let found = self.imagesExist(choices.flatMap { [$0.image, $0.secondaryImage] }, for: app)
        return self.succeed(
            request, SDLCreateInteractionChoiceSetResponse.self, imagesFound: found,
            "choice set \(id) with \(choices.count) choice(s)", app: app)
    }

    /// DeleteInteractionChoiceSet: INVALID_ID for a set the app did not create.
    private mutating func deleteChoiceSet(
        _ request: AnyRPCMessage, _ delete: SDLDeleteInteractionChoiceSetRequest, app: AppHandle
    ) -> String {
        let id = delete.interactionChoiceSetID
        guard self.apps[app]?.registration?.content.choiceSets[id] != nil else {
            return self.fail(request, .invalidId, "no choice set \(id)", app: app)
        }
        self.updateContent(of: app) { $0.choiceSets[id] = nil }
        return self.succeed(request, SDLDeleteInteractionChoiceSetResponse.self, "choice set \(id) deleted", app: app)
    }

    /// PerformInteraction: INVALID_ID for a set the app did not create, INVALID_DATA for a voice
    /// interaction over choices without voice commands; otherwise the simulated driver picks
    /// the first choice of the first set (by voice in VR_ONLY mode, on the screen otherwise).
    private mutating func performInteraction(
        _ request: AnyRPCMessage, _ interaction: SDLPerformInteractionRequest, app: AppHandle
    ) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        var choices: [ChoiceEntry] = []
        for id in interaction.interactionChoiceSetIDList {
            guard let set = content.choiceSets[id] else {
                return self.fail(request, .invalidId, "no choice set \(id)", app: app)
            }
            choices += set
        }
        let byVoice = interaction.interactionMode == .vrOnly
        if interaction.interactionMode != .manualOnly && choices.contains(where: { !$0.hasVoiceCommands }) {
            return self.fail(request, .invalidData, "some choices have no voice commands", app: app)
        }
        guard let choice = choices.first else {
            return self.fail(request, .invalidData, "there is no choice to pick", app: app)
        }
        self.respond(
            to: request,
            with: SDLPerformInteractionResponse(
                success: true, resultCode: .success, choiceID: choice.choiceID, triggerSource: byVoice ? .vr : .menu),
            app: app)
        return "the driver picked choice \(choice.choiceID) \"\(choice.menuName)\""
    }

    /// Alert: INVALID_DATA with neither text nor speech, as Core answers; the simulated driver
    /// dismisses it at once.
    private mutating func alert(_ request: AnyRPCMessage, _ alert: SDLAlertRequest, app: AppHandle) -> String {
        let text = [alert.alertText1, alert.alertText2, alert.alertText3].compactMap { $0 }
        if text.isEmpty && (alert.ttsChunks ?? []).isEmpty {
            return self.fail(request, .invalidData, "an alert needs alertText1, alertText2, alertText3 or ttsChunks", app: app)
        }
        let found = self.imagesExist([alert.alertIcon] + (alert.softButtons ?? []).map(\.image), for: app)
        return self.succeed(
            request, SDLAlertResponse.self, imagesFound: found,
            "alert " + text.map { "\"\($0)\"" }.joined(separator: " "), app: app)
    }

    /// SubscribeButton: UNSUPPORTED_RESOURCE for a button the head unit does not have, REJECTED
    /// for a media button from a non-media app, IGNORED when already subscribed (Core's answers).
    private mutating func subscribeButton(_ request: AnyRPCMessage, _ button: SDLButtonName, app: AppHandle) -> String {
        guard let registration = self.apps[app]?.registration else { return "not registered" }
        guard Self.buttonNames(at: registration.version).contains(button) else {
            return self.fail(request, .unsupportedResource, "the head unit has no \(button.wireName) button", app: app)
        }
        if Self.mediaButtons.contains(button) && !registration.isMedia {
            return self.fail(request, .rejected, "\(button.wireName) is for media apps", app: app)
        }
        if registration.content.buttons.contains(button) {
            return self.fail(request, .ignored, "already subscribed to \(button.wireName)", app: app)
        }
        self.updateContent(of: app) { $0.buttons.insert(button) }
        return self.succeed(request, SDLSubscribeButtonResponse.self, "subscribed to \(button.wireName)", app: app)
    }

    /// UnsubscribeButton: IGNORED when not subscribed.
    private mutating func unsubscribeButton(_ request: AnyRPCMessage, _ button: SDLButtonName, app: AppHandle) -> String {
        guard self.apps[app]?.registration?.content.buttons.contains(button) == true else {
            return self.fail(request, .ignored, "not subscribed to \(button.wireName)", app: app)
        }
        self.updateContent(of: app) { $0.buttons.remove(button) }
        return self.succeed(request, SDLUnsubscribeButtonResponse.self, "unsubscribed from \(button.wireName)", app: app)
    }

    /// ChangeRegistration: REJECTED for a language the head unit does not speak, DUPLICATE_NAME
    /// for the name of another registered app; otherwise the app's name changes.
    private mutating func changeRegistration(
        _ request: AnyRPCMessage, _ change: SDLChangeRegistrationRequest, app: AppHandle
    ) -> String {
        let language = self.configuration.language
        guard change.language == language && change.hmiDisplayLanguage == language else {
            return self.fail(request, .rejected, "the head unit speaks only \(language.wireName)", app: app)
        }
        if let name = change.appName {
            let taken = self.registeredApps.contains {
                $0 != app && self.apps[$0]?.registration?.appName.lowercased() == name.lowercased()
            }
            if taken {
                return self.fail(request, .duplicateName, "an app named \(name) is already registered", app: app)
            }
            self.apps[app]?.registration?.appName = name
        }
        return self.succeed(
            request, SDLChangeRegistrationResponse.self, "registration changed" + (change.appName.map { ", named \"\($0)\"" } ?? ""),
            app: app)
    }

    // MARK: - Helpers

    /// Answers success, or WARNINGS (still success) when an image is missing, as Core does when
    /// a dynamic image was not uploaded.
    private mutating func succeed<Response: RPCMessage>(
        _ request: AnyRPCMessage, _ type: Response.Type, imagesFound: Bool = true, _ outcome: String, app: AppHandle
    ) -> String {
        let resultCode: SDLResult = imagesFound ? .success : .warnings
        let info = imagesFound ? nil : "Reference image(s) not found"
        var parameters: RPCObject = ["success": .bool(true), "resultCode": .string(resultCode.wireName)]
        if let info {
            parameters.append(key: "info", value: .string(info))
        }
        if let response = try? Response(jsonParameters: RPCValue.object(parameters).jsonText()) {
            self.respond(to: request, with: response, app: app)
        }
        return outcome + (imagesFound ? "" : ", WARNINGS: image(s) not uploaded")
    }

    private func imagesExist(_ images: [SDLImage?], for app: AppHandle) -> Bool {
        images.allSatisfy { self.imageExists($0, for: app) }
    }

    /// The first voice command of `new` that is repeated in it or already in `existing`
    /// (compared without case, as speech is).
    static func firstDuplicate(_ new: [String], against existing: [String]) -> String? {
        var seen = Set(existing.map { $0.lowercased() })
        return new.first { !seen.insert($0.lowercased()).inserted }
    }

    static func firstRepeated<Value: Hashable>(_ values: [Value]) -> Value? {
        var seen: Set<Value> = []
        return values.first { !seen.insert($0).inserted }
    }
}
