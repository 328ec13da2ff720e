import SDLProtocol
import Testing

/// The full protocol version the engine negotiates (ARCHITECTURE.md, D-versions).
@Suite struct SDLVersionTests {
    /// Lenient parsing: 1–3 components, the rest dropped; nil without a leading number or with
    /// a component above 65,535.
    @Test(arguments: [
        ("5", "5.0.0"), ("5.4", "5.4.0"), ("5.4.1", "5.4.1"), ("5.4.1-rc1", "5.4.1"), ("5.4.1.7", "5.4.1"),
        ("5.", "5.0.0"), ("5.x", "5.0.0"), ("5..4", "5.0.0"), ("05.04.01", "5.4.1"), ("5.4.1rc", "5.4.1"),
        ("65535.65535.65535", "65535.65535.65535"), ("0", "0.0.0"), ("10.2", "10.2.0"),
    ])
    func parses(text: String, expected: String) throws {
        let version = try #require(SDLVersion(parsing: text))
        #expect(version.description == expected)
    }

    @Test(arguments: ["", "x5", " 5", "-5", ".5", "v5.4.0", "65536", "5.65536", "5.4.99999", "99999999999999999999"])
    func refuses(text: String) {
        #expect(SDLVersion(parsing: text) == nil)
    }

    @Test func parsesSubstrings() throws {
        let text = "protocolVersion=5.2.0;"
        let value = text[text.index(after: text.firstIndex(of: "=")!)...]
        #expect(SDLVersion(parsing: value) == SDLVersion(major: 5, minor: 2))
    }

    /// Numeric, component by component: 5.10 is newer than 5.9, and a major beats any minor.
    @Test func comparesByComponent() throws {
        let ordered = ["4.9.9", "5.0.0", "5.1", "5.4.0", "5.4.1", "5.9.0", "5.10.0", "6"].map { SDLVersion(parsing: $0)! }
        #expect(ordered == ordered.sorted())
        for (lower, higher) in zip(ordered, ordered.dropFirst()) {
            #expect(lower < higher)
            #expect(!(higher < lower))
        }
        #expect(SDLVersion(parsing: "5.4") == SDLVersion(major: 5, minor: 4, patch: 0))
        #expect(Set(["5.4", "5.4.0", "5.4.0-rc"].compactMap { SDLVersion(parsing: $0) }).count == 1)
    }

    /// The feature gates: negotiating min(app, head unit) decides what a session may use.
    @Test func featureGates() {
        #expect([SDLVersion.bsonControlPayloads, .secondaryTransports, .authToken, .nakReason, .vehicleType, .latestSpecified]
            .map(\.description) == ["5.0.0", "5.1.0", "5.2.0", "5.3.0", "5.4.0", "5.4.1"])
        // An app at 5.4.1 and SDL Core at 5.4.0 (what Core answers) negotiate 5.4.0.
        let negotiated = min(SDLVersion.latestSpecified, SDLVersion(parsing: "5.4.0")!)
        #expect(negotiated >= .vehicleType)
        #expect(negotiated >= .nakReason)
        #expect(negotiated < .latestSpecified)
        // A head unit at "5.2" sends authToken but no NAK reason.
        let older = SDLVersion(parsing: "5.2")!
        #expect(older >= .authToken && older < .nakReason)
    }
}
