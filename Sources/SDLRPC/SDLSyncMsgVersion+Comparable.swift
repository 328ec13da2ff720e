/// RPC spec versions in order: by major, minor and patch, a missing patch read as 0 (before 4.3
/// peers leave it out). The order is on versions, not values: 8.0 without a patch and 8.0.0 are
/// neither before nor after each other, though `==` tells the two values apart.
extension SDLSyncMsgVersion: Comparable {
    public static func < (lhs: SDLSyncMsgVersion, rhs: SDLSyncMsgVersion) -> Bool {
        (lhs.majorVersion, lhs.minorVersion, lhs.patchVersion ?? 0) < (rhs.majorVersion, rhs.minorVersion, rhs.patchVersion ?? 0)
    }
}
