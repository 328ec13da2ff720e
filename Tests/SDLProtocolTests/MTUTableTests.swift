import NIOCore
import Testing

@testable import SDLProtocol

/// MTUs negotiated per session, service and direction, owned by one caller and lent per call.
@Suite struct MTUTableTests {
    static let limits = ProtocolLimits()

    /// Unset entries mean the version's default MTU: 1500 bytes for v1/v2, 131,084 for v3+
    /// (spec §2.4.1); receive up to the MTU, send the MTU minus the header.
    @Test func defaultsPerVersion() {
        let table = MTUTable()
        #expect(table.entries.isEmpty)
        for (version, mtu) in [(ProtocolVersion.v1, 1500), (.v2, 1500), (.v3, 131_084), (.v4, 131_084), (.v5, 131_084)] {
            #expect(table.mtu(version: version, session: SessionID(9), service: .video, direction: .receive) == mtu)
            #expect(table.receivePayloadLimit(version: version, session: SessionID(9), service: .rpc, limits: Self.limits)
                == UInt32(mtu))
            #expect(table.sendPayloadLimit(version: version, session: SessionID(9), service: .rpc, limits: Self.limits)
                == mtu - version.headerSize)
        }
    }

    /// Each (session, service, direction) has its own entry; removing a session leaves the others.
    @Test func entriesAreIndependent() {
        var table = MTUTable()
        table[SessionID(1), .video, .receive] = 200_000
        table[SessionID(1), .video, .send] = 100_000
        table[SessionID(2), .video, .receive] = 50_000
        table[SessionID(255), .hybrid, .send] = 9_000
        #expect(table[SessionID(1), .video, .receive] == 200_000)
        #expect(table[SessionID(1), .video, .send] == 100_000)
        #expect(table[SessionID(1), .audio, .receive] == nil)
        #expect(table[SessionID(2), .video, .receive] == 50_000)
        #expect(table[SessionID(2), .video, .send] == nil)
        #expect(table.sendPayloadLimit(version: .v5, session: SessionID(1), service: .video, limits: Self.limits) == 99_988)
        #expect(table.sendPayloadLimit(version: .v5, session: SessionID(255), service: .hybrid, limits: Self.limits) == 8_988)
        table.removeAll(session: SessionID(1))
        #expect(table[SessionID(1), .video, .receive] == nil)
        #expect(table[SessionID(1), .video, .send] == nil)
        #expect(table[SessionID(2), .video, .receive] == 50_000)
        #expect(table[SessionID(255), .hybrid, .send] == 9_000)
        table[SessionID(2), .video, .receive] = nil
        #expect(table[SessionID(2), .video, .receive] == nil)
    }

    /// Values are stored within 1…2^31 − 1; services the spec does not define have no entry.
    @Test func storedValuesAreBounded() {
        var table = MTUTable()
        table[SessionID(3), .rpc, .receive] = 0
        table[SessionID(3), .audio, .receive] = -5
        table[SessionID(3), .video, .receive] = .max
        table[SessionID(3), ServiceType(rawValue: 0x42), .receive] = 1000
        #expect(table[SessionID(3), .rpc, .receive] == 1)
        #expect(table[SessionID(3), .audio, .receive] == 1)
        #expect(table[SessionID(3), .video, .receive] == Int(Int32.max))
        #expect(table[SessionID(3), ServiceType(rawValue: 0x42), .receive] == nil)
        // Removing from an empty table allocates nothing.
        var empty = MTUTable()
        empty[SessionID(1), .rpc, .send] = nil
        empty.removeAll(session: SessionID(1))
        #expect(empty.entries.isEmpty)
        #expect(empty == MTUTable())
    }

    /// One table serves every transport of a session: the video of session 1 arriving on a
    /// secondary transport is checked against the same entry as on the primary.
    @Test func oneTableServesSeveralTransports() throws {
        var mtus = MTUTable()
        mtus[SessionID(1), .video, .receive] = 300_000
        let frame = HostileStreamTests.frame(service: .video, payload: 250_000)
        var primary = FrameDecoder()
        var secondary = FrameDecoder()
        primary.append(contentsOf: frame)
        secondary.append(contentsOf: frame)
        #expect(try primary.nextFrame(mtus: mtus)?.payload.readableBytes == 250_000)
        #expect(try secondary.nextFrame(mtus: mtus)?.payload.readableBytes == 250_000)
        // Once the session ends, its MTUs are gone for every transport.
        mtus.removeAll(session: SessionID(1))
        secondary.append(contentsOf: frame)
        #expect(throws: SDLProtocolError.self) { try secondary.nextFrame(mtus: mtus) }
    }
}
