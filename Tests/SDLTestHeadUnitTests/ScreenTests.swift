import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

@Suite("Screen, menus, choice sets and buttons")
struct ScreenTests {
    let app = AppHandle(1)
    let other = AppHandle(2)

    /// The response's `success` and `resultCode`, whatever its function.
    func result(_ outputs: [HeadUnitOutput], sourceLocation: SourceLocation = #_sourceLocation) throws -> (Bool, String) {
        let responses = outputs.sent.filter { $0.message.rpcType == .response }
        try #require(responses.count == 1, "\(outputs.sends)", sourceLocation: sourceLocation)
        guard case .object(let object) = try RPCValue(jsonObject: responses[0].message.message.jsonParametersText()),
            case .bool(let success)? = object["success"], case .string(let code)? = object["resultCode"]
        else { return (false, "?") }
        return (success, code)
    }

    func command(_ id: Int32, _ name: String? = nil, parent: Int32? = nil, voice: [String]? = nil) -> SDLAddCommandRequest {
        SDLAddCommandRequest(cmdID: id, menuParams: name.map { SDLMenuParams(parentID: parent, menuName: $0) }, vrCommands: voice)
    }

    @Test("AddCommand and DeleteCommand: INVALID_ID for an id in use, an unknown parent or command; DUPLICATE_NAME for a name or voice command in use; INVALID_DATA for neither")
    func commands() throws {
        var harness = Harness()
        harness.register(self.app, name: "Menu")
        let added = harness.send(self.command(1, "A", voice: ["Go"]), from: self.app)
        #expect(added.sends == ["app1 <- AddCommand response #2"])
        #expect(try self.result(added) == (true, "SUCCESS"))
        #expect(added.transcript?.outcome == "command 1 \"A\"")
        #expect(try self.result(harness.send(self.command(1, "B"), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(self.command(2, "A"), from: self.app)) == (false, "DUPLICATE_NAME"))
        #expect(try self.result(harness.send(self.command(3, "C", parent: 99), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(self.command(4), from: self.app)) == (false, "INVALID_DATA"))
        #expect(try self.result(harness.send(self.command(5, voice: ["go"]), from: self.app)) == (false, "DUPLICATE_NAME"))
        #expect(try self.result(harness.send(self.command(6, voice: ["Stop", "stop"]), from: self.app)) == (false, "DUPLICATE_NAME"))
        let voiceOnly = harness.send(self.command(7, voice: ["Stop"]), from: self.app)
        #expect(try self.result(voiceOnly) == (true, "SUCCESS"))
        #expect(voiceOnly.transcript?.outcome == "command 7 voice-only")

        #expect(try self.result(harness.send(SDLDeleteCommandRequest(cmdID: 8), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(SDLDeleteCommandRequest(cmdID: 1), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(self.command(1, "A", voice: ["Go"]), from: self.app)) == (true, "SUCCESS"))
        // Ids are per app.
        harness.register(self.other, name: "Other")
        #expect(try self.result(harness.send(self.command(1, "A", voice: ["Go"]), from: self.other)) == (true, "SUCCESS"))
    }

    @Test("AddSubMenu and DeleteSubMenu: ids and names as Core checks them; deleting a submenu deletes what is in it")
    func subMenus() throws {
        var harness = Harness()
        harness.register(self.app, name: "Menu")
        #expect(try self.result(harness.send(SDLAddSubMenuRequest(menuID: 10, menuName: "Sub"), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLAddSubMenuRequest(menuID: 10, menuName: "Other"), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(SDLAddSubMenuRequest(menuID: 11, menuName: "Sub"), from: self.app)) == (false, "DUPLICATE_NAME"))
        #expect(
            try self.result(harness.send(SDLAddSubMenuRequest(menuID: 12, menuName: "Deep", parentID: 77), from: self.app))
                == (false, "INVALID_ID"))
        #expect(
            try self.result(harness.send(SDLAddSubMenuRequest(menuID: 13, menuName: "Nested", parentID: 10), from: self.app))
                == (true, "SUCCESS"))
        #expect(try self.result(harness.send(self.command(20, "Inside", parent: 10), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(self.command(21, "Inside", parent: 10), from: self.app)) == (false, "DUPLICATE_NAME"))
        #expect(try self.result(harness.send(self.command(22, "Inside"), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(self.command(23, "Deeper", parent: 13), from: self.app)) == (true, "SUCCESS"))

        let deleted = harness.send(SDLDeleteSubMenuRequest(menuID: 10), from: self.app)
        #expect(deleted.sends == ["app1 <- DeleteSubMenu response #11"])
        #expect(try self.result(deleted) == (true, "SUCCESS"))
        #expect(deleted.transcript?.outcome == "submenu 10 deleted with 1 submenu(s) and 2 command(s)")
        #expect(try self.result(harness.send(self.command(24, "Late", parent: 13), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(SDLDeleteSubMenuRequest(menuID: 10), from: self.app)) == (false, "INVALID_ID"))
        // The top-level command stays; the ones inside are gone, so their ids are free again.
        #expect(try self.result(harness.send(self.command(22, "Again"), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(self.command(20, "Inside"), from: self.app)) == (false, "DUPLICATE_NAME"))
        #expect(try self.result(harness.send(self.command(20, "Free"), from: self.app)) == (true, "SUCCESS"))
    }

    @Test("commands, submenus and choice sets together are bounded per app: OUT_OF_MEMORY beyond, room again after a delete")
    func menuBound() throws {
        var harness = Harness { $0.maxMenuItemsPerApp = 3 }
        harness.register(self.app, name: "Menu")
        #expect(try self.result(harness.send(self.command(1, "A"), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLAddSubMenuRequest(menuID: 2, menuName: "Sub"), from: self.app)) == (true, "SUCCESS"))
        let set = SDLCreateInteractionChoiceSetRequest(interactionChoiceSetID: 3, choiceSet: [SDLChoice(choiceID: 1, menuName: "One")])
        #expect(try self.result(harness.send(set, from: self.app)) == (true, "SUCCESS"))
        let fourth = harness.send(self.command(4, "D"), from: self.app)
        #expect(try self.result(fourth) == (false, "OUT_OF_MEMORY"))
        #expect(fourth.transcript?.outcome == "OUT_OF_MEMORY: the app already holds 3 commands, submenus and choice sets")
        #expect(try self.result(harness.send(SDLAddSubMenuRequest(menuID: 5, menuName: "E"), from: self.app)) == (false, "OUT_OF_MEMORY"))
        #expect(try self.result(harness.send(SDLDeleteCommandRequest(cmdID: 1), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(self.command(4, "D"), from: self.app)) == (true, "SUCCESS"))
    }

    @Test("choice sets and PerformInteraction: ids and names checked in the set; the driver picks the first choice, by voice in VR_ONLY")
    func choiceSets() throws {
        var harness = Harness()
        harness.register(self.app, name: "Choices")
        func choice(_ id: Int32, _ name: String, _ voice: [String]? = nil) -> SDLChoice {
            SDLChoice(choiceID: id, menuName: name, vrCommands: voice)
        }
        func create(_ id: Int32, _ choices: [SDLChoice]) -> SDLCreateInteractionChoiceSetRequest {
            SDLCreateInteractionChoiceSetRequest(interactionChoiceSetID: id, choiceSet: choices)
        }
        func perform(_ ids: [Int32], _ mode: SDLInteractionMode) -> SDLPerformInteractionRequest {
            SDLPerformInteractionRequest(initialText: "Pick", interactionMode: mode, interactionChoiceSetIDList: ids)
        }
        let one = create(1, [choice(1, "One", ["one"]), choice(2, "Two", ["two"])])
        #expect(try self.result(harness.send(one, from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(one, from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(create(2, [choice(3, "A"), choice(3, "B")]), from: self.app)) == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(create(3, [choice(4, "A"), choice(5, "A")]), from: self.app)) == (false, "DUPLICATE_NAME"))
        #expect(
            try self.result(harness.send(create(4, [choice(6, "A", ["x"]), choice(7, "B", ["X"])]), from: self.app))
                == (false, "DUPLICATE_NAME"))
        #expect(try self.result(harness.send(create(5, [choice(8, "Silent")]), from: self.app)) == (true, "SUCCESS"))

        let manual = harness.send(perform([5, 1], .manualOnly), from: self.app)
        #expect(manual.sends == ["app1 <- PerformInteraction response #8"])
        #expect(
            try manual.only(SDLPerformInteractionResponse.self, to: self.app)
                == SDLPerformInteractionResponse(success: true, resultCode: .success, choiceID: 8, triggerSource: .menu))
        #expect(manual.transcript?.outcome == "the driver picked choice 8 \"Silent\"")
        let voice = harness.send(perform([1], .vrOnly), from: self.app)
        #expect(
            try voice.only(SDLPerformInteractionResponse.self, to: self.app)
                == SDLPerformInteractionResponse(success: true, resultCode: .success, choiceID: 1, triggerSource: .vr))
        #expect(try self.result(harness.send(perform([1, 5], .both), from: self.app)) == (false, "INVALID_DATA"))
        #expect(try self.result(harness.send(perform([9], .manualOnly), from: self.app)) == (false, "INVALID_ID"))

        let deleted = harness.send(SDLDeleteInteractionChoiceSetRequest(interactionChoiceSetID: 1), from: self.app)
        #expect(try self.result(deleted) == (true, "SUCCESS"))
        #expect(
            try self.result(harness.send(SDLDeleteInteractionChoiceSetRequest(interactionChoiceSetID: 1), from: self.app))
                == (false, "INVALID_ID"))
        #expect(try self.result(harness.send(perform([1], .manualOnly), from: self.app)) == (false, "INVALID_ID"))
    }

    @Test("Show: the main window only, one of its templates; a dynamic image not uploaded gives WARNINGS with success, as on Core")
    func show() throws {
        var harness = Harness()
        harness.register(self.app, name: "Screen")
        let shown = harness.send(SDLShowRequest(mainField1: "Hello", mainField2: "こんにちは"), from: self.app)
        #expect(shown.sends == ["app1 <- Show response #2"])
        #expect(try shown.only(SDLShowResponse.self, to: self.app) == SDLShowResponse(success: true, resultCode: .success))
        #expect(shown.transcript?.outcome == "shown \"Hello\" \"こんにちは\"")
        #expect(try self.result(harness.send(SDLShowRequest(mainField1: "x", windowID: 1), from: self.app)) == (false, "INVALID_ID"))
        let layout = harness.send(SDLShowRequest(templateConfiguration: SDLTemplateConfiguration(template: "NON-MEDIA")), from: self.app)
        #expect(try self.result(layout) == (true, "SUCCESS"))
        #expect(layout.transcript?.outcome == "shown (no text), template NON-MEDIA")
        let unknown = SDLShowRequest(templateConfiguration: SDLTemplateConfiguration(template: "HOLOGRAM"))
        #expect(try self.result(harness.send(unknown, from: self.app)) == (false, "REJECTED"))

        let logo = SDLShowRequest(graphic: SDLImage(value: "logo", imageType: .dynamic))
        let missing = harness.send(logo, from: self.app)
        #expect(
            try missing.only(SDLShowResponse.self, to: self.app)
                == SDLShowResponse(success: true, resultCode: .warnings, info: "Reference image(s) not found"))
        _ = harness.put("logo", ByteBuffer(bytes: [1, 2, 3]), from: self.app)
        #expect(try self.result(harness.send(logo, from: self.app)) == (true, "SUCCESS"))
        let builtIn = SDLShowRequest(graphic: SDLImage(value: "0x11", imageType: .static_))
        #expect(try self.result(harness.send(builtIn, from: self.app)) == (true, "SUCCESS"))
        let button = SDLSoftButton(type: .image, image: SDLImage(value: "gone", imageType: .dynamic), softButtonID: 1)
        #expect(try self.result(harness.send(SDLShowRequest(softButtons: [button]), from: self.app)) == (true, "WARNINGS"))
    }

    @Test("SetDisplayLayout: one of the templates, answered with the display's capabilities; another is REJECTED")
    func displayLayout() throws {
        var harness = Harness()
        harness.register(self.app, name: "Screen")
        let media = harness.send(SDLSetDisplayLayoutRequest(displayLayout: "MEDIA"), from: self.app)
        let response = try media.only(SDLSetDisplayLayoutResponse.self, to: self.app)
        #expect(response.success && response.resultCode == .success)
        #expect(response.displayCapabilities?.templatesAvailable?.contains("MEDIA") == true)
        #expect(response.buttonCapabilities?.count == 17)
        #expect(try self.result(harness.send(SDLSetDisplayLayoutRequest(displayLayout: "HOLOGRAM"), from: self.app)) == (false, "REJECTED"))
    }

    @Test("SubscribeButton and UnsubscribeButton: IGNORED twice, REJECTED for a media button from a non-media app, UNSUPPORTED_RESOURCE for a button the head unit lacks")
    func buttons() throws {
        var harness = Harness()
        harness.register(self.app, name: "Plain")
        harness.register(self.other, name: "Player", isMedia: true)
        let ok = harness.send(SDLSubscribeButtonRequest(buttonName: .ok), from: self.app)
        #expect(ok.sends == ["app1 <- SubscribeButton response #2"])
        #expect(try self.result(ok) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .ok), from: self.app)) == (false, "IGNORED"))
        #expect(try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .playPause), from: self.app)) == (false, "REJECTED"))
        #expect(try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .playPause), from: self.other)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .search), from: self.app)) == (false, "UNSUPPORTED_RESOURCE"))
        #expect(try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .customButton), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLUnsubscribeButtonRequest(buttonName: .ok), from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLUnsubscribeButtonRequest(buttonName: .ok), from: self.app)) == (false, "IGNORED"))
    }

    @Test("PLAY_PAUSE exists from RPC 5.0: a 4.5 app cannot subscribe to it and does not see it")
    func playPauseByVersion() throws {
        var harness = Harness()
        let outputs = harness.register(self.app, name: "Old", version: RPCVersion(4, 5), isMedia: true)
        let response = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.app)
        #expect(response.buttonCapabilities?.map(\.name).contains(.playPause) == false)
        #expect(response.buttonCapabilities?.count == 16)
        #expect(
            try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .playPause), from: self.app))
                == (false, "UNSUPPORTED_RESOURCE"))
        #expect(try self.result(harness.send(SDLSubscribeButtonRequest(buttonName: .seekleft), from: self.app)) == (true, "SUCCESS"))
    }

    @Test("ChangeRegistration: REJECTED for a language the head unit does not speak, DUPLICATE_NAME for another app's name; a new name holds from then on")
    func changeRegistration() throws {
        var harness = Harness()
        harness.register(self.app, name: "First")
        harness.register(self.other, name: "Second")
        let french = SDLChangeRegistrationRequest(language: .frFr, hmiDisplayLanguage: .frFr)
        #expect(try self.result(harness.send(french, from: self.app)) == (false, "REJECTED"))
        let taken = SDLChangeRegistrationRequest(language: .enUs, hmiDisplayLanguage: .enUs, appName: "second")
        #expect(try self.result(harness.send(taken, from: self.app)) == (false, "DUPLICATE_NAME"))
        let renamed = harness.send(
            SDLChangeRegistrationRequest(language: .enUs, hmiDisplayLanguage: .enUs, appName: "Hello JS"), from: self.app)
        #expect(renamed.sends == ["app1 <- ChangeRegistration response #4"])
        #expect(try self.result(renamed) == (true, "SUCCESS"))
        #expect(renamed.transcript?.outcome == "registration changed, named \"Hello JS\"")
        let third = AppHandle(3)
        _ = harness.headUnit.appConnected(third)
        let clash = harness.send(registration(name: "Hello JS", appID: "other-id"), from: third)
        expectFailure(clash, to: third, function: "RegisterAppInterface", correlationID: 1, .duplicateName)
    }

    @Test("Alert needs text or speech (INVALID_DATA) and is dismissed at once; SetMediaClockTimer is for media apps; Speak and ResetGlobalProperties succeed")
    func alertsAndOthers() throws {
        var harness = Harness()
        // Plain in FULL (Alert and Speak are FULL and LIMITED only in Core's Base-4), the media
        // player LIMITED.
        harness.register(self.other, name: "Player", isMedia: true)
        harness.register(self.app, name: "Plain")
        #expect(try self.result(harness.send(SDLAlertRequest(duration: 3000), from: self.app)) == (false, "INVALID_DATA"))
        let alert = harness.send(SDLAlertRequest(alertText1: "Exit the Application?"), from: self.app)
        #expect(try alert.only(SDLAlertResponse.self, to: self.app) == SDLAlertResponse(success: true, resultCode: .success))
        #expect(alert.transcript?.outcome == "alert \"Exit the Application?\"")
        let clock = SDLSetMediaClockTimerRequest(updateMode: .pause)
        #expect(try self.result(harness.send(clock, from: self.app)) == (false, "REJECTED"))
        #expect(try self.result(harness.send(clock, from: self.other)) == (true, "SUCCESS"))
        let speak = SDLSpeakRequest(ttsChunks: [SDLTTSChunk(text: "Hello", type: .text)])
        #expect(try self.result(harness.send(speak, from: self.app)) == (true, "SUCCESS"))
        #expect(try self.result(harness.send(SDLResetGlobalPropertiesRequest(properties: [.menuname]), from: self.app)) == (true, "SUCCESS"))
    }
}
