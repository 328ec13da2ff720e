import NIOCore
import Testing

@testable import SDLProtocol

/// Reassembly errors and expiries name their message by `MessageKey`; pending messages can be
/// discarded by session, by service or all at once.
@Suite struct ReassemblerKeyTests {
    static let t0 = NIODeadline.uptimeNanoseconds(0)
    typealias M = MalformedInputTests

    static func key(session: UInt8 = 1, service: ServiceType = .rpc, message: UInt32 = 1) -> MessageKey {
        MessageKey(sessionID: SessionID(session), serviceType: service, messageID: MessageID(message))
    }

    @Test func everyReassemblyErrorCarriesItsKey() throws {
        var reassembler = Reassembler()
        let key = Self.key(session: 4, service: .video, message: 9)
        func frame(_ type: FrameType, info: UInt8 = 0, _ payload: [UInt8]) -> ProtocolFrame {
            M.frame(type, service: .video, session: 4, message: 9, info: info, payload: payload)
        }
        let first = M.first(total: 4, count: 2, session: 4, message: 9, service: .video)
        expectError(SDLProtocolError(
            .consecutiveWithoutFirst, "Consecutive frame 1 for message 9 of session 4 service VIDEO without a First frame"),
            key: key) { try reassembler.process(frame(.consecutive, info: 1, [1]), now: Self.t0) }
        _ = try reassembler.process(first, now: Self.t0)
        expectError(SDLProtocolError(
            .unexpectedSequenceNumber, "Consecutive frame 1 of 2 for message 9 of session 4 has sequence number 2, expected 1"),
            key: key) { try reassembler.process(frame(.consecutive, info: 2, [1]), now: Self.t0) }
        _ = reassembler.discardAll()
        _ = try reassembler.process(first, now: Self.t0)
        expectError(SDLProtocolError(
            .messageSizeMismatch, "message 9 of session 4: 5 bytes after frame 1 of 2, First frame declared 4"),
            key: key) { try reassembler.process(frame(.consecutive, info: 1, [1, 2, 3, 4, 5]), now: Self.t0) }
        _ = reassembler.discardAll()
        _ = try reassembler.process(first, now: Self.t0)
        expectError(SDLProtocolError(.duplicateFirstFrame, "second First frame for message 9 of session 4 service VIDEO"),
                    key: key) { try reassembler.process(first, now: Self.t0) }
        expectError(SDLProtocolError(
            .frameCountMismatch,
            "First frame declares 5 Consecutive frames for 4 bytes; 1...4 frames of at most 131084 bytes could carry them"),
            key: Self.key(message: 2)) { try reassembler.process(M.first(total: 4, count: 5, message: 2), now: Self.t0) }
        var tight = ProtocolLimits()
        tight.maxReassembliesPerSession = 0
        var refusing = Reassembler(limits: tight)
        let refused = expectError(SDLProtocolError(
            .tooManyReassemblies,
            "cannot start message 1 of session 1: 0 of 0 per session, 0 of 64 per transport, 0 + 4 of 67108864 bytes in use"),
            key: Self.key()) { try refusing.process(M.first(total: 4, count: 2), now: Self.t0) }
        #expect(refused?.offset == nil)
    }

    @Test func expiriesCarryTheirKeys() throws {
        var reassembler = Reassembler()
        _ = try reassembler.process(M.first(total: 10, count: 2, session: 1, message: 1), now: Self.t0)
        _ = try reassembler.process(M.first(total: 10, count: 2, session: 2, message: 7, service: .audio), now: Self.t0)
        let expired = reassembler.expire(now: Self.t0 + .seconds(10))
        #expect(Set(expired.compactMap(\.messageKey)) == [Self.key(), Self.key(session: 2, service: .audio, message: 7)])
        #expect(expired.allSatisfy { $0.code == .reassemblyExpired })
        let audio = try #require(expired.first { $0.messageKey?.serviceType == .audio })
        #expect(audio.detail == "message 7 of session 2 service AUDIO expired with 0 of 10 bytes, 0 of 2 frames")
    }

    /// Discarding releases the storage and the per-session and per-transport counts, and reports
    /// the keys of the messages that were still being reassembled.
    @Test func discardBySessionServiceOrAll() throws {
        var limits = ProtocolLimits()
        limits.maxReassembliesPerSession = 3
        var reassembler = Reassembler(limits: limits)
        func start(_ session: UInt8, _ service: ServiceType, _ message: UInt32) throws {
            _ = try reassembler.process(M.first(total: 1000, count: 4, session: session, message: message, service: service), now: Self.t0)
        }
        try start(1, .rpc, 1)
        try start(1, .video, 2)
        try start(1, .video, 3)
        try start(2, .rpc, 4)
        try start(3, .audio, 5)
        #expect(reassembler.activeCount == 5 && reassembler.reservedBytes == 5 * 1024)
        // A failed message is absorbing its frames: discarded, but not reported as pending.
        #expect(throws: SDLProtocolError.self) {
            try reassembler.process(M.frame(.consecutive, service: .audio, session: 3, message: 5, info: 2, payload: [1]), now: Self.t0)
        }

        #expect(Set(reassembler.discard(session: SessionID(1), service: .video))
            == [Self.key(service: .video, message: 2), Self.key(service: .video, message: 3)])
        #expect(reassembler.activeCount(session: SessionID(1)) == 1)
        #expect(reassembler.reservedBytes == 2 * 1024)
        #expect(reassembler.discard(session: SessionID(1)) == [Self.key()])
        #expect(reassembler.activeCount(session: SessionID(1)) == 0)
        // The session's slots are free again.
        try start(1, .video, 6)
        try start(1, .video, 7)
        try start(1, .video, 8)
        #expect(Set(reassembler.discardAll()).count == 4)
        #expect(reassembler.activeCount == 0 && reassembler.reservedBytes == 0 && reassembler.nextExpiry == nil)
        #expect(reassembler.assemblies.isEmpty)
        for session: UInt8 in 1...3 { #expect(reassembler.activeCount(session: SessionID(session)) == 0) }
        // A late frame of a discarded message has no First frame any more.
        #expect(throws: SDLProtocolError(.consecutiveWithoutFirst, "")) {
            try reassembler.process(M.frame(.consecutive, session: 2, message: 4, info: 1, payload: [1]), now: Self.t0)
        }
    }
}
