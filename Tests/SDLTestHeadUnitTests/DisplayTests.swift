import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

@Suite("The DISPLAYS capability and the JavaScript suite's flow")
struct DisplayTests {
    let app = AppHandle(1)

    @Test("a 6.0+ app gets OnSystemCapabilityUpdated(DISPLAYS) after OnHMIStatus and before OnPermissionsChange, as Core sends it, and GetSystemCapability(DISPLAYS) answers the same display")
    func displaysForNewApps() throws {
        var harness = Harness { $0.activationLevel = nil }
        let outputs = harness.register(self.app, name: "Screen", version: .v6_0)
        #expect(
            outputs.sends == [
                "app1 <- RegisterAppInterface response #1", "registered app1",
                "app1 <- OnHMIStatus notification #4294967295", "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app1 <- OnPermissionsChange notification #4294967295",
            ])
        let update = try outputs.only(SDLOnSystemCapabilityUpdated.self, to: self.app).systemCapability
        #expect(update.systemCapabilityType == .displays)
        let displays = try #require(update.displayCapabilities)
        #expect(displays.count == 1 && displays[0].displayName == "GENERIC_DISPLAY")
        #expect(displays[0].windowTypeSupported == [SDLWindowTypeCapabilities(type: .main, maximumNumberOfWindows: 1)])
        let window = try #require(displays[0].windowCapabilities?.first)
        #expect(window.windowID == 0 && window.imageTypeSupported == [.static_, .dynamic])
        #expect(window.templatesAvailable?.count == 19 && window.templatesAvailable?.contains("NON-MEDIA") == true)
        #expect(window.textFields?.map(\.name).contains(.templateTitle) == true)
        #expect(window.buttonCapabilities?.map(\.name).contains(.playPause) == true)
        #expect(window.menuLayoutsAvailable == [.list, .tiles])
        let registered = try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.app)
        #expect(registered.hmiCapabilities?.displays == true)
        #expect(registered.displayCapabilities?.templatesAvailable == window.templatesAvailable)

        let asked = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .displays), from: self.app)
        #expect(asked.sends == ["app1 <- GetSystemCapability response #2"])
        let answer = try asked.only(SDLGetSystemCapabilityResponse.self, to: self.app)
        #expect(answer.success && answer.systemCapability == update)
    }

    @Test("an app below 6.0 gets no DISPLAYS update, and GetSystemCapability(DISPLAYS) is DATA_NOT_AVAILABLE; so for any app of a 5.1 head unit", arguments: [
        (RPCVersion.v8_0, RPCVersion.v5_1), (RPCVersion.v5_1, RPCVersion.v8_0),
    ])
    func noDisplaysBelow6(headUnit: RPCVersion, app appVersion: RPCVersion) throws {
        var harness = Harness {
            $0.rpcVersion = headUnit
            $0.activationLevel = nil
        }
        let outputs = harness.register(self.app, name: "Screen", version: appVersion)
        #expect(
            outputs.sends == [
                "app1 <- RegisterAppInterface response #1", "registered app1",
                "app1 <- OnHMIStatus notification #4294967295", "app1 <- OnPermissionsChange notification #4294967295",
            ])
        #expect(try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.app).hmiCapabilities?.displays == nil)
        let asked = harness.send(SDLGetSystemCapabilityRequest(systemCapabilityType: .displays), from: self.app)
        expectFailure(asked, to: self.app, function: "GetSystemCapability", correlationID: 2, .dataNotAvailable)
    }

    @Test("the fields an app sees are those of its version: templateTitle and alertIcon from 6.0, secondaryGraphic from 5.0", arguments: [
        (RPCVersion.v4_5, 16, 8), (RPCVersion.v5_0, 16, 9), (RPCVersion.v6_0, 17, 10),
    ])
    func fieldsByVersion(version: RPCVersion, textFields: Int, imageFields: Int) throws {
        var harness = Harness()
        let outputs = harness.register(self.app, name: "Screen", version: version)
        let display = try #require(try outputs.only(SDLRegisterAppInterfaceResponse.self, to: self.app).displayCapabilities)
        let texts = display.textFields.map(\.name)
        let images = display.imageFields?.map(\.name) ?? []
        #expect(texts.count == textFields && images.count == imageFields)
        #expect(texts.contains(.templateTitle) == (version >= .v6_0))
        #expect(images.contains(.alertIcon) == (version >= .v6_0))
        #expect(images.contains(.secondaryGraphic) == (version >= .v5_0))
        #expect(display.displayName == (version >= .v5_0 ? "GENERIC_DISPLAY" : nil))
    }

    /// The requests the JavaScript suite's hello-sdl-tcp example (sdl_javascript_suite 1.8.0, RPC
    /// 8.0) sent to `sdl headunit`, in its order, with its parameters (bulk data shortened).
    static let javaScriptFlow: [(String, String)] = [
        ("ListFiles", #"{}"#),
        // The choice manager's check whether voice commands are optional.
        ("CreateInteractionChoiceSet", #"{"interactionChoiceSetID":0,"choiceSet":[{"choiceID":0,"menuName":"Test Cell"}]}"#),
        ("DeleteInteractionChoiceSet", #"{"interactionChoiceSetID":0}"#),
        ("SubscribeButton", #"{"buttonName":"PRESET_0"}"#),
        ("Show", #"{"mainField1":"Hello SDL!","mainField2":"","mainField3":"","mainField4":"","metadataTags":{},"templateTitle":""}"#),
        ("AddCommand", #"{"cmdID":1900000001,"vrCommands":["Option 1"]}"#),
        ("AddCommand", #"{"cmdID":1900000002,"vrCommands":["Option 2"]}"#),
        ("AddCommand", #"{"cmdID":1900000003,"vrCommands":["Option 3"]}"#),
        ("PutFile", #"{"syncFileName":"sdl-logo","fileType":"GRAPHIC_PNG","systemFile":false,"offset":0,"length":9,"crc":3421780262}"#),
        ("AddCommand", #"{"cmdID":1,"menuParams":{"position":0,"menuName":"Hello Menu 1"},"vrCommands":["Hello Menu One"],"cmdIcon":{"value":"sdl-logo","imageType":"DYNAMIC"}}"#),
        ("AddSubMenu", #"{"menuID":2,"position":1,"menuName":"Hello Menu 2"}"#),
        ("AddCommand", #"{"cmdID":3,"menuParams":{"parentID":2,"position":0,"menuName":"Submenu 1"}}"#),
        ("AddCommand", #"{"cmdID":4,"menuParams":{"parentID":2,"position":1,"menuName":"Submenu 2"}}"#),
        ("PutFile", #"{"syncFileName":"hello-sdl-tcp_icon","fileType":"GRAPHIC_PNG","persistentFile":true,"systemFile":false,"offset":0,"length":9,"crc":3421780262}"#),
        ("SetAppIcon", #"{"syncFileName":"hello-sdl-tcp_icon"}"#),
        ("Show", #"{"mainField1":"","mainField2":"","mainField3":"","mainField4":"","templateTitle":"","templateConfiguration":{"template":"NON-MEDIA"}}"#),
        ("Show", #"{"graphic":{"value":"sdl-logo","imageType":"DYNAMIC"}}"#),
        ("SubscribeButton", #"{"buttonName":"PLAY_PAUSE"}"#),
        ("SubscribeButton", #"{"buttonName":"OK"}"#),
        ("CreateInteractionChoiceSet", #"{"interactionChoiceSetID":1,"choiceSet":[{"choiceID":1,"menuName":"First Choice Cell"}]}"#),
        ("CreateInteractionChoiceSet", #"{"interactionChoiceSetID":2,"choiceSet":[{"choiceID":2,"menuName":"Second Choice Cell"}]}"#),
        ("PerformInteraction", #"{"initialText":"choice","interactionMode":"MANUAL_ONLY","interactionChoiceSetIDList":[1,2],"timeout":10000,"interactionLayout":"LIST_ONLY","cancelID":102}"#),
        ("PutFile", #"{"syncFileName":"logo","fileType":"GRAPHIC_PNG","systemFile":false,"offset":0,"length":9,"crc":3421780262}"#),
        ("Show", #"{"mainField1":"Hello SDL!","softButtons":[{"type":"BOTH","text":"rock","image":{"value":"logo","imageType":"DYNAMIC"},"softButtonID":1,"systemAction":"DEFAULT_ACTION"},{"type":"TEXT","text":"button","softButtonID":2,"systemAction":"DEFAULT_ACTION"}]}"#),
        ("Show", #"{"mainField1":"Exiting in 3","mainField2":"","mainField3":"","mainField4":"","alignment":"RIGHT_ALIGNED","metadataTags":{},"templateTitle":"JavaScript Library"}"#),
        ("Alert", #"{"alertText1":"Exit the Application?","duration":10000,"progressIndicator":false,"softButtons":[{"type":"TEXT","text":"exit app","softButtonID":3,"systemAction":"DEFAULT_ACTION"},{"type":"TEXT","text":"dismiss alert","softButtonID":4,"systemAction":"DEFAULT_ACTION"}],"cancelID":1}"#),
    ]

    @Test("the JavaScript suite's hello-sdl-tcp flow: every request answered with SUCCESS, in order")
    func javaScriptFlow() throws {
        var harness = Harness()
        let registration = try AnyRPCMessage(
            functionName: "RegisterAppInterface", rpcType: .request, correlationID: 0,
            jsonParameters: #"{"syncMsgVersion":{"majorVersion":8,"minorVersion":0,"patchVersion":0},"appName":"hello-sdl-tcp","isMediaApplication":true,"languageDesired":"EN-US","hmiDisplayLanguageDesired":"EN-US","appHMIType":["MEDIA"],"appID":"hellosdl-t","fullAppID":"hello-sdl-tcp"}"#)
        _ = harness.headUnit.appConnected(self.app)
        let registered = harness.headUnit.received(registration, from: self.app, now: harness.now)
        #expect(
            registered.sends == [
                "app1 <- RegisterAppInterface response #0", "registered app1",
                "app1 <- OnHMIStatus notification #4294967295", "app1 <- OnSystemCapabilityUpdated notification #4294967295",
                "app1 <- OnPermissionsChange notification #4294967295", "app1 <- OnHMIStatus notification #4294967295",
            ])
        #expect(registered.messages(SDLOnHMIStatus.self, to: self.app).last?.hmiLevel == .full)

        var answers: [String] = []
        for (index, (function, parameters)) in Self.javaScriptFlow.enumerated() {
            let correlationID = UInt32(index + 1)
            let request = try AnyRPCMessage(
                functionName: function, rpcType: .request, correlationID: correlationID, jsonParameters: parameters,
                bulkData: function == "PutFile" ? ByteBuffer(string: "123456789") : ByteBuffer())
            let outputs = harness.headUnit.received(request, from: self.app, now: harness.now)
            checkSent(outputs)
            #expect(outputs.sends == ["app1 <- \(function) response #\(correlationID)"])
            let response = try #require(outputs.sent.first?.message.message)
            guard case .object(let object) = try RPCValue(jsonObject: response.jsonParametersText()),
                case .string(let resultCode)? = object["resultCode"]
            else { continue }
            answers.append("\(function) \(resultCode)")
        }
        #expect(answers == Self.javaScriptFlow.map { "\($0.0) SUCCESS" })
    }
}
