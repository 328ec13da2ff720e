// Wire values of the SDL transport protocol (protocol spec 5.4.1 §3.1).
//
// Every value is an open struct over its raw integer rather than a closed enum: a peer may send a
// value this library does not know, and such a value must decode, round-trip and be reported
// instead of crashing the decoder or vanishing.

/// The protocol version nibble of a frame header (protocol spec 5.4.1 §3.1.1).
///
/// Versions 1 to 5 are defined. Version 1 uses the 8-byte header without a message id; versions
/// 2 to 5 use the 12-byte header.
public struct ProtocolVersion: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The value on the wire.
    public var rawValue: UInt8

    /// A value from the wire; unknown values are kept.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Protocol version 1.
    public static let v1 = ProtocolVersion(rawValue: 1)
    /// Protocol version 2.
    public static let v2 = ProtocolVersion(rawValue: 2)
    /// Protocol version 3.
    public static let v3 = ProtocolVersion(rawValue: 3)
    /// Protocol version 4.
    public static let v4 = ProtocolVersion(rawValue: 4)
    /// Protocol version 5.
    public static let v5 = ProtocolVersion(rawValue: 5)

    /// The size of a frame header of this version: 8 bytes for version 1, 12 for the others.
    @inlinable
    public var headerSize: Int { self.rawValue == 1 ? FrameHeader.v1Size : FrameHeader.v2Size }

    /// Whether this version's header carries a message id.
    @inlinable
    public var hasMessageID: Bool { self.rawValue != 1 }

    @inlinable
    public static func < (lhs: ProtocolVersion, rhs: ProtocolVersion) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `v1` … `v5`, or `vN` for another nibble.
    public var description: String { "v\(self.rawValue)" }
}

/// The frame type field, 3 bits (protocol spec 5.4.1 §3.1.3). Values 4 to 7 are reserved.
public struct FrameType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value on the wire.
    public var rawValue: UInt8

    /// A value from the wire; unknown values are kept.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A control frame: a message of the protocol itself (start service, heartbeat, ...).
    public static let control = FrameType(rawValue: 0)
    /// A frame that carries a whole message.
    public static let single = FrameType(rawValue: 1)
    /// The first frame of a fragmented message; its 8-byte payload is the total size and frame count.
    public static let first = FrameType(rawValue: 2)
    /// A consecutive frame of a fragmented message.
    public static let consecutive = FrameType(rawValue: 3)

    /// The name used by the `sdl` tool's output: control, single, first, consecutive or reserved(N).
    public var description: String {
        switch self.rawValue {
        case 0: return "control"
        case 1: return "single"
        case 2: return "first"
        case 3: return "consecutive"
        default: return "reserved(\(self.rawValue))"
        }
    }
}

/// The service type byte (protocol spec 5.4.1 §3.1.4).
public struct ServiceType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value on the wire.
    public var rawValue: UInt8

    /// A value from the wire; unknown values are kept.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Control service: session-level control frames (heartbeat, secondary transport).
    public static let control = ServiceType(rawValue: 0x00)
    /// Remote procedure calls.
    public static let rpc = ServiceType(rawValue: 0x07)
    /// PCM audio streaming.
    public static let audio = ServiceType(rawValue: 0x0A)
    /// H.264 (and other) video streaming.
    public static let video = ServiceType(rawValue: 0x0B)
    /// Bulk data (hybrid service): RPCs with binary data.
    public static let hybrid = ServiceType(rawValue: 0x0F)

    /// The service types the spec defines.
    public static let known: [ServiceType] = [.control, .rpc, .audio, .video, .hybrid]

    /// Whether the spec defines this service type.
    @inlinable
    public var isKnown: Bool {
        switch self.rawValue {
        case 0x00, 0x07, 0x0A, 0x0B, 0x0F: return true
        default: return false
        }
    }

    /// The spec name (CONTROL, RPC, AUDIO, VIDEO, HYBRID), or nil for an unknown value.
    public var name: String? {
        switch self.rawValue {
        case 0x00: return "CONTROL"
        case 0x07: return "RPC"
        case 0x0A: return "AUDIO"
        case 0x0B: return "VIDEO"
        case 0x0F: return "HYBRID"
        default: return nil
        }
    }

    /// The spec's name, or the value in hex.
    public var description: String { self.name ?? "0x" + hexByte(self.rawValue) }
}

/// The frame info byte of a control frame (protocol spec 5.4.1 §3.1.5).
///
/// For Consecutive frames the same byte is the sequence number; for Single and First frames it is
/// reserved (0).
public struct ControlFrameInfo: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value on the wire.
    public var rawValue: UInt8

    /// A value from the wire; unknown values are kept.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Keeps the session alive; answered by HeartbeatACK.
    public static let heartbeat = ControlFrameInfo(rawValue: 0x00)
    /// Asks to start a service (the RPC service starts the session).
    public static let startService = ControlFrameInfo(rawValue: 0x01)
    /// Accepts a StartService; its payload carries the negotiated parameters.
    public static let startServiceACK = ControlFrameInfo(rawValue: 0x02)
    /// Refuses a StartService.
    public static let startServiceNAK = ControlFrameInfo(rawValue: 0x03)
    /// Asks to end a service (the RPC service ends the session).
    public static let endService = ControlFrameInfo(rawValue: 0x04)
    /// Accepts an EndService.
    public static let endServiceACK = ControlFrameInfo(rawValue: 0x05)
    /// Refuses an EndService.
    public static let endServiceNAK = ControlFrameInfo(rawValue: 0x06)
    /// Registers a secondary transport for a session.
    public static let registerSecondaryTransport = ControlFrameInfo(rawValue: 0x07)
    /// Accepts a RegisterSecondaryTransport.
    public static let registerSecondaryTransportACK = ControlFrameInfo(rawValue: 0x08)
    /// Refuses a RegisterSecondaryTransport.
    public static let registerSecondaryTransportNAK = ControlFrameInfo(rawValue: 0x09)
    /// Tells the app which secondary transports are available.
    public static let transportEventUpdate = ControlFrameInfo(rawValue: 0xFD)
    /// Acknowledges received service data (protocol version 2; obsolete).
    public static let serviceDataACK = ControlFrameInfo(rawValue: 0xFE)
    /// Answers a Heartbeat.
    public static let heartbeatACK = ControlFrameInfo(rawValue: 0xFF)

    /// Whether the spec defines this control frame info (0x00–0x09, 0xFD–0xFF).
    @inlinable
    public var isKnown: Bool { self.rawValue <= 0x09 || self.rawValue >= 0xFD }

    /// The spec name, e.g. "StartServiceACK", or nil for an unknown value.
    public var name: String? {
        switch self.rawValue {
        case 0x00: return "Heartbeat"
        case 0x01: return "StartService"
        case 0x02: return "StartServiceACK"
        case 0x03: return "StartServiceNAK"
        case 0x04: return "EndService"
        case 0x05: return "EndServiceACK"
        case 0x06: return "EndServiceNAK"
        case 0x07: return "RegisterSecondaryTransport"
        case 0x08: return "RegisterSecondaryTransportACK"
        case 0x09: return "RegisterSecondaryTransportNAK"
        case 0xFD: return "TransportEventUpdate"
        case 0xFE: return "ServiceDataACK"
        case 0xFF: return "HeartbeatACK"
        default: return nil
        }
    }

    /// Looks a control frame info up by its spec name (as `name` spells it).
    public init?(name: String) {
        for raw in Array(0x00...0x09) + [0xFD, 0xFE, 0xFF] {
            let info = ControlFrameInfo(rawValue: UInt8(raw))
            if info.name == name {
                self = info
                return
            }
        }
        return nil
    }

    /// The spec's name, or the value in hex.
    public var description: String { self.name ?? "0x" + hexByte(self.rawValue) }
}

/// The session id byte of a frame header, assigned by the head unit in StartServiceACK.
public struct SessionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value on the wire.
    public var rawValue: UInt8

    /// A value from the wire; unknown values are kept.
    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A session id from its byte.
    @inlinable
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// The number in decimal.
    public var description: String { String(self.rawValue) }
}

/// The 32-bit message id of a version 2–5 frame header; all frames of one message share it.
public struct MessageID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value on the wire.
    public var rawValue: UInt32

    /// A value from the wire.
    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A message id from its value.
    @inlinable
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// The number in decimal.
    public var description: String { String(self.rawValue) }
}

@usableFromInline
func hexByte(_ byte: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
