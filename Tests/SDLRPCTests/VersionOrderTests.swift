import SDLRPC
import Testing

@Suite("SDLSyncMsgVersion order")
struct VersionOrderTests {
    static func version(_ major: Int32, _ minor: Int32, _ patch: Int32?) -> SDLSyncMsgVersion {
        SDLSyncMsgVersion(majorVersion: major, minorVersion: minor, patchVersion: patch)
    }

    @Test("by major, minor and patch; a missing patch orders as 0")
    func order() {
        let shuffled = [Self.version(8, 0, 0), Self.version(4, 5, nil), Self.version(10, 0, 0), Self.version(5, 1, 2), Self.version(5, 1, 0), Self.version(5, 0, 9)]
        #expect(shuffled.sorted().map { [$0.majorVersion, $0.minorVersion, $0.patchVersion ?? -1] } == [
            [4, 5, -1], [5, 0, 9], [5, 1, 0], [5, 1, 2], [8, 0, 0], [10, 0, 0],
        ])
        #expect(Self.version(6, 0, nil) >= Self.version(6, 0, 0))
        #expect(Self.version(6, 0, nil) <= Self.version(6, 0, 0))
        #expect(Self.version(6, 0, nil) != Self.version(6, 0, 0))
        #expect(Self.version(5, 10, 0) > Self.version(5, 9, 99))
        // What an app and a head unit both speak.
        #expect(min(Self.version(8, 0, 0), Self.version(7, 1, 0)) == Self.version(7, 1, 0))
    }
}
