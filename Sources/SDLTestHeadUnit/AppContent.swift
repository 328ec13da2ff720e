import SDLRPC

/// What a registered app has put on the head unit: its files, its menu, its choice sets, the
/// buttons it listens to. It goes with the registration (an app that registers again starts
/// empty; Core keeps persistent files in the app's folder, which this head unit does not model).
struct AppContent: Sendable {
    /// Files by `syncFileName`. Only sizes are kept, never the bytes: the quota bounds what an
    /// app may claim, not what the head unit holds.
    var files: [String: StoredFile] = [:]
    /// The bytes the app's files take, against ``SimulatedHeadUnit/Configuration/appStorageQuota``.
    var storedBytes = 0
    /// The file set as the app's icon (SetAppIcon).
    var icon: String?
    /// AddCommand entries by `cmdID`.
    var commands: [Int32: MenuCommand] = [:]
    /// AddSubMenu entries by `menuID`.
    var subMenus: [Int32: SubMenu] = [:]
    /// CreateInteractionChoiceSet sets by `interactionChoiceSetID`: their choices in order.
    var choiceSets: [Int32: [ChoiceEntry]] = [:]
    /// The buttons the app subscribed to.
    var buttons: Set<SDLButtonName> = []
    /// The template of the main window (SetDisplayLayout, Show `templateConfiguration`).
    var template = "DEFAULT"
    /// PutFile, ListFiles and DeleteFile requests sent in HMI NONE, by function.
    var requestsInNone: [FunctionID: Int] = [:]

    /// The menu entries (commands and submenus) whose parent is `parent` (0: the top level).
    func menuNames(under parent: Int32) -> [String] {
        self.commands.values.filter { $0.parentID == parent }.compactMap(\.menuName)
            + self.subMenus.values.filter { $0.parentID == parent }.map(\.menuName)
    }

    /// Commands, submenus and choice sets, against ``SimulatedHeadUnit/Configuration/maxMenuItemsPerApp``.
    var menuItemCount: Int { self.commands.count + self.subMenus.count + self.choiceSets.count }

    /// Every voice command of the app's menu.
    var voiceCommands: [String] { self.commands.values.flatMap(\.vrCommands) }
}

/// A file an app uploaded with PutFile, possibly in several parts (`offset`, `length`).
struct StoredFile: Sendable, Equatable {
    var fileType: SDLFileType
    var isPersistent: Bool
    /// The bytes received so far.
    var size: Int
    /// The size the app announced (`length`); the file is complete when `size` reaches it.
    var length: Int
}

/// An AddCommand entry.
struct MenuCommand: Sendable {
    /// The submenu it sits in; 0: the top level (or a voice-only command).
    var parentID: Int32
    /// nil for a voice-only command.
    var menuName: String?
    var vrCommands: [String]
}

/// An AddSubMenu entry.
struct SubMenu: Sendable {
    /// The submenu it sits in (RPC 7.0 nested submenus); 0: the top level.
    var parentID: Int32
    var menuName: String
}

/// One choice of a choice set.
struct ChoiceEntry: Sendable {
    var choiceID: Int32
    var menuName: String
    /// Whether the choice can be picked by voice (PerformInteraction in VR_ONLY or BOTH mode needs it).
    var hasVoiceCommands: Bool
}
