import NIOCore

/// The security of one session: a TLS (or other) context that the engine drives through the
/// handshake queries of protocol spec 5.4.1 §7 and then uses to protect and unprotect frames.
///
/// The head unit is the TLS client and starts the handshake; the app is the TLS server. The
/// engine calls the provider synchronously and owns no thread: a provider wrapping a TLS library
/// runs it in memory (BIO pairs), as sdl_ios and SDL Core do. ProtocolFrame payloads are protected one
/// by one (Single and Consecutive frames; First frames never), so `protect` must not grow a
/// payload beyond what ``maxPlaintextSize(fittingIn:)`` promised.
public protocol SecurityProvider: Sendable {
    /// Advances the handshake. The client side is first called with nil; each side is then called
    /// with the bytes the peer sent. Returns the bytes to send and whether this side is done.
    mutating func handshake(_ input: ByteBuffer?) throws(SecurityError) -> HandshakeStep

    /// Protects one frame payload.
    mutating func protect(_ plaintext: ByteBuffer) throws(SecurityError) -> ByteBuffer

    /// Unprotects one frame payload.
    mutating func unprotect(_ ciphertext: ByteBuffer) throws(SecurityError) -> ByteBuffer

    /// The most plaintext bytes whose protected form fits in `payloadLimit` bytes (the frame
    /// payload limit of the service's MTU). Must be at least 1 when `payloadLimit` is large.
    func maxPlaintextSize(fittingIn payloadLimit: Int) -> Int

    /// Forgets the context after a failure; the next protected start handshakes again.
    mutating func reset()
}

/// One step of a handshake.
public enum HandshakeStep: Hashable, Sendable {
    /// Send these bytes to the peer and wait for its answer.
    case send(ByteBuffer)
    /// This side is done; send the bytes, if any, as the last message.
    case finished(send: ByteBuffer?)
}

/// A failure of a security provider, with the internal error code of protocol spec 5.4.1 §7.3
/// that the engine sends in its "Send Internal Error" query.
public struct SecurityError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The spec's internal error code (the query's JSON `id` and its one binary byte).
    public var code: InternalErrorCode
    /// A human detail (the query's JSON `text`).
    public var detail: String

    /// Creates a provider failure.
    public init(_ code: InternalErrorCode, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `code: detail`.
    public var description: String { "\(self.code): \(self.detail)" }
}

/// The internal error codes of protocol spec 5.4.1 §7.3 (SDL Core's `SecurityManager` values).
public struct InternalErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8
    /// Wraps a byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01: the query is shorter than its header says.
    public static let invalidQuerySize = InternalErrorCode(rawValue: 0x01)
    /// 0x02: an unknown query id.
    public static let invalidQueryID = InternalErrorCode(rawValue: 0x02)
    /// 0x03: security is not supported (no provider).
    public static let notSupported = InternalErrorCode(rawValue: 0x03)
    /// 0x04: the service is already protected.
    public static let serviceAlreadyProtected = InternalErrorCode(rawValue: 0x04)
    /// 0x05: the service is not protected.
    public static let serviceNotProtected = InternalErrorCode(rawValue: 0x05)
    /// 0x06: a frame did not decrypt.
    public static let decryptionFailed = InternalErrorCode(rawValue: 0x06)
    /// 0x07: a frame did not encrypt.
    public static let encryptionFailed = InternalErrorCode(rawValue: 0x07)
    /// 0x08: invalid TLS data.
    public static let sslInvalidData = InternalErrorCode(rawValue: 0x08)
    /// 0x09: the handshake failed.
    public static let handshakeFailed = InternalErrorCode(rawValue: 0x09)
    /// 0x0A: an invalid certificate.
    public static let invalidCertificate = InternalErrorCode(rawValue: 0x0A)
    /// 0x0B: an expired certificate.
    public static let expiredCertificate = InternalErrorCode(rawValue: 0x0B)
    /// 0xFE: an unknown internal error.
    public static let unknownInternalError = InternalErrorCode(rawValue: 0xFE)
    /// 0xFF: an internal error.
    public static let internalError = InternalErrorCode(rawValue: 0xFF)

    /// The code in decimal, as the JSON `id` carries it.
    public var description: String { String(self.rawValue) }
}

/// A deterministic stand-in for TLS, for tests: its "handshake" is `rounds` exchanges of short
/// tagged messages and its "protection" a byte-wise XOR with a 4-byte tag in front, so every
/// frame it touches is recognisable in a hex dump and a payload that was not protected by a
/// matching peer fails to unprotect.
public struct FakeSecurityProvider: SecurityProvider {
    /// Which side of the handshake this provider plays.
    public enum Role: Hashable, Sendable {
        /// Starts the handshake (the head unit).
        case client
        /// Answers it (the app).
        case server
    }

    /// The side played.
    public let role: Role
    /// Client and server exchanges before the client is done. Default 2.
    public var rounds: Int
    /// Fails the handshake with ``InternalErrorCode/handshakeFailed`` when it reaches this round.
    public var failAtRound: Int?
    /// The XOR key.
    public var key: UInt8
    private var round = 0

    /// The 4 bytes in front of every protected payload.
    public static let tag: [UInt8] = Array("FAKE".utf8)

    /// A provider for `role`.
    public init(role: Role, rounds: Int = 2, failAtRound: Int? = nil, key: UInt8 = 0x5A) {
        self.role = role
        self.rounds = max(1, rounds)
        self.failAtRound = failAtRound
        self.key = key
    }

    /// Client: nil → "C1"; "S<k>" → "C<k+1>", or done after `rounds`. Server: "C<k>" → "S<k>".
    public mutating func handshake(_ input: ByteBuffer?) throws(SecurityError) -> HandshakeStep {
        self.round += 1
        if let failAtRound, self.round >= failAtRound {
            throw SecurityError(.handshakeFailed, "fake handshake failed at round \(self.round)")
        }
        let text = input.map { String(buffer: $0) }
        switch self.role {
        case .client:
            let expected = self.round == 1 ? nil : "S\(self.round - 1)"
            guard text == expected else {
                throw SecurityError(.sslInvalidData, "expected \(expected ?? "nothing"), got \(text ?? "nothing")")
            }
            if self.round > self.rounds { return .finished(send: nil) }
            return .send(ByteBuffer(string: "C\(self.round)"))
        case .server:
            guard text == "C\(self.round)" else {
                throw SecurityError(.sslInvalidData, "expected C\(self.round), got \(text ?? "nothing")")
            }
            let reply = ByteBuffer(string: "S\(self.round)")
            return self.round >= self.rounds ? .finished(send: reply) : .send(reply)
        }
    }

    /// "FAKE" followed by the payload XOR the key.
    public mutating func protect(_ plaintext: ByteBuffer) throws(SecurityError) -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(plaintext.readableBytes + Self.tag.count)
        out.writeBytes(Self.tag)
        let key = self.key
        out.writeBytes(plaintext.readableBytesView.lazy.map { $0 ^ key })
        return out
    }

    /// Checks the tag and undoes the XOR.
    public mutating func unprotect(_ ciphertext: ByteBuffer) throws(SecurityError) -> ByteBuffer {
        let view = ciphertext.readableBytesView
        guard view.count >= Self.tag.count, view.prefix(Self.tag.count).elementsEqual(Self.tag) else {
            throw SecurityError(.decryptionFailed, "not protected by a FakeSecurityProvider")
        }
        let key = self.key
        return ByteBuffer(bytes: view.dropFirst(Self.tag.count).lazy.map { $0 ^ key })
    }

    /// `payloadLimit` minus the 4-byte tag.
    public func maxPlaintextSize(fittingIn payloadLimit: Int) -> Int { payloadLimit - Self.tag.count }

    /// Starts over.
    public mutating func reset() { self.round = 0 }
}
