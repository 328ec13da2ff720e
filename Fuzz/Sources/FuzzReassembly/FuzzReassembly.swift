import FuzzSupport
import NIOCore
import SDLProtocol

// The reassembler (protocol spec 5.4.1 §4.2) driven by a small op language: messages of several
// sessions, services and versions fragmented by `MessageFragmenter` at random sizes, their frames
// interleaved, some damaged (dropped, repeated, renumbered, resized, re-versioned, First frames
// lying about size or count), raw frames from the input, the clock moving, sessions, services
// and the transport discarded, limits and MTUs changing. Invariants:
// - after every step the reassembler holds no more than its limits: reserved bytes, messages
//   per transport and per session, and `activeCount(session:)` agrees with a count of its own;
// - a delivered multi-frame message is whole: exactly the payload, version, encryption flag and
//   frame count of one message whose frames all arrived undamaged and uninterrupted on its key;
//   on a key where frames were damaged or interleaved with another message's, it still has the
//   size its First frame declared;
// - nothing is dropped silently: every such undamaged, uninterrupted message is delivered, or
//   its key is named by an error (from `process`, `expire` or a `discard`), and every error
//   names the key of the frame that caused it;
// - `nextExpiry` is exact: expiring just before it drops nothing, at it drops something;
// - at the end, expiring (or discarding) everything leaves nothing reserved.

/// One message being sent: its frames, and what the harness knows of how they went out.
struct Outgoing {
    var key: MessageKey
    var frames: [ProtocolFrame]
    var payload: ByteBuffer
    var version: ProtocolVersion
    var encrypted: Bool
    var next = 0
    /// A frame of it was damaged, dropped or repeated, or another message's frame came between
    /// two of its frames on the same key.
    var disturbed = false
    /// Its key was named by an error or a discard after its First frame went out, or it was
    /// delivered.
    var reported = false
    /// Its last frame went out and was processed.
    var finished = false
}

struct Harness {
    var reassembler: Reassembler
    var limits: ProtocolLimits
    var mtus = MTUTable()
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var messages: [Outgoing] = []
    /// Per key, the message whose frames last went out on it.
    var owner: [MessageKey: Int] = [:]
    /// Per key, the total size the last First frame on it declared.
    var declared: [MessageKey: Int] = [:]
    /// Per key, whether anything but one message's undamaged frames went out on it since its
    /// last First frame (then a delivery on it can only be checked for its size).
    var keyDisturbed: Set<MessageKey> = []

    init(limits: ProtocolLimits) {
        self.limits = limits
        self.reassembler = Reassembler(limits: limits)
    }

    /// Marks the messages in flight on `key` (First frame out, last one not yet processed) as
    /// reported.
    mutating func report(_ key: MessageKey) {
        for index in self.messages.indices where self.messages[index].key == key {
            if self.messages[index].next > 0 && !self.messages[index].finished { self.messages[index].reported = true }
        }
    }

    /// Hands one frame to the reassembler and checks what comes back; `from` is the message
    /// whose (possibly damaged) frame it is.
    mutating func feed(_ frame: ProtocolFrame, from index: Int?, damaged: Bool) {
        let key = MessageKey(of: frame.header)
        let isData = frame.header.frameType == .first || frame.header.frameType == .consecutive
        if isData {
            if let previous = self.owner[key], previous != (index ?? -1) {
                // Another message's frame between two of this key's (or after a raw frame on
                // it): neither is checked whole.
                if previous >= 0 { self.messages[previous].disturbed = true }
                if let index { self.messages[index].disturbed = true }
                self.keyDisturbed.insert(key)
            }
            if damaged || index == nil {
                self.keyDisturbed.insert(key)
                if let index { self.messages[index].disturbed = true }
            }
            self.owner[key] = index ?? -1
            if frame.header.frameType == .first {
                if let (total, _) = frame.firstFramePayload { self.declared[key] = Int(total) }
                if !damaged, index != nil { self.keyDisturbed.remove(key) }
            }
        }
        defer {
            if let index, self.messages[index].next == self.messages[index].frames.count {
                self.messages[index].finished = true
                if self.owner[key] == index { self.owner[key] = nil }
            }
            self.checkLimits()
        }
        let delivered: ProtocolMessage?
        do {
            delivered = try self.reassembler.process(frame, now: self.now, mtus: self.mtus)
            trace("frame \(frame.header) of message \(index ?? -1)\(damaged ? " damaged" : ""): \(delivered.map { "delivered \($0.payload.readableBytes) bytes" } ?? "stored")")
        } catch {
            trace("frame \(frame.header) of message \(index ?? -1)\(damaged ? " damaged" : ""): \(error)")
            precondition(error.messageKey == key, "an error without its frame's key: \(error)")
            self.report(key)
            return
        }
        guard let message = delivered else { return }
        precondition(message.key == key, "a message delivered under another key")
        guard frame.header.frameType == .consecutive else {
            precondition(message.frameCount == 1 && message.payload == frame.payload, "a one-frame message changed")
            if let index { self.messages[index].reported = true }
            return
        }
        precondition(message.payload.readableBytes == self.declared[key], "a message of another size than its First frame declared")
        if let index {
            if !self.keyDisturbed.contains(key), !self.messages[index].disturbed {
                let sent = self.messages[index]
                precondition(sent.next == sent.frames.count, "a message delivered before its last frame")
                precondition(message.payload == sent.payload, "a delivered message differs from the one sent")
                precondition(message.frameCount == sent.frames.count, "frame count \(message.frameCount), sent \(sent.frames.count)")
                precondition(message.version == sent.version && message.isEncrypted == sent.encrypted, "version or encryption changed")
            }
            self.messages[index].reported = true
        }
        self.owner[key] = nil
        self.declared[key] = nil
    }

    func checkLimits() {
        precondition(self.reassembler.reservedBytes <= self.limits.maxReassemblyBytes, "reserved bytes over the limit")
        precondition(self.reassembler.activeCount <= self.limits.maxReassembliesPerTransport, "messages over the transport limit")
    }

    /// Checks the per-session counts: within the limit, and adding up to the total (every frame
    /// the harness makes is of one of `sessions`).
    func checkSessions(_ sessions: [SessionID]) {
        var total = 0
        for session in sessions {
            let count = self.reassembler.activeCount(session: session)
            precondition(count >= 0 && count <= self.limits.maxReassembliesPerSession, "session \(session) holds \(count)")
            total += count
        }
        precondition(total == self.reassembler.activeCount, "per-session counts add up to \(total), not \(self.reassembler.activeCount)")
    }

    /// A message whose frames all went out undamaged and uninterrupted must have been delivered
    /// or reported.
    func checkNothingSilentlyDropped() {
        for sent in self.messages where sent.next == sent.frames.count && !sent.disturbed {
            precondition(sent.reported, "message \(sent.key) of \(sent.frames.count) frames vanished without an error")
        }
    }

    mutating func expire(at time: NIODeadline) {
        let before = self.reassembler.activeCount
        for error in self.reassembler.expire(now: time) {
            trace("expired: \(error)")
            precondition(error.code == .reassemblyExpired, "expire reported \(error)")
            guard let key = error.messageKey else { preconditionFailure("an expiry without its key") }
            self.report(key)
            self.keyDisturbed.insert(key)
        }
        precondition(self.reassembler.activeCount <= before)
        self.checkLimits()
    }
}

let sessions = [SessionID(0), SessionID(1), SessionID(2), SessionID(255)]
let services: [ServiceType] = [.rpc, .audio, .video, .hybrid, .control, ServiceType(rawValue: 0x42)]

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    var input = FuzzInput(bytes)
    var limits = ProtocolLimits()
    limits.maxMessageSize = input.int(in: 1...(1 << 16))
    limits.maxFramePayloadSize = input.int(in: 1...(1 << 16))
    limits.maxReassemblyBytes = input.int(in: 0...(1 << 18))
    limits.maxReassembliesPerSession = input.int(in: 0...6)
    limits.maxReassembliesPerTransport = input.int(in: 0...12)
    limits.reassemblyTimeout = .milliseconds(Int64(input.int(in: 1...10_000)))
    var harness = Harness(limits: limits)
    var steps = 0
    while !input.isExhausted && steps < 2000 {
        steps += 1
        switch input.int(in: 0...11) {
        case 0, 1:
            // A new message, fragmented by the library's own fragmenter.
            let version = ProtocolVersion(rawValue: UInt8(input.int(in: 1...5)))
            let key = MessageKey(
                sessionID: input.pick(sessions), serviceType: input.pick(services),
                messageID: MessageID(version.hasMessageID ? UInt32(input.int(in: 0...3)) : 0))
            let size = input.int(in: 1...(input.bool() ? 300 : 70_000))
            var payload = ByteBuffer()
            payload.writeInteger(UInt32(harness.messages.count))
            payload.writeRepeatingByte(UInt8(truncatingIfNeeded: harness.messages.count), count: max(0, size - 4))
            let encrypted = version.hasMessageID && input.bool()
            guard
                let fragmenter = try? MessageFragmenter(
                    payload: payload, version: version, serviceType: key.serviceType, sessionID: key.sessionID,
                    messageID: key.messageID, encrypted: encrypted,
                    maxPayloadPerFrame: input.int(in: max(1, size / 200)...(size + 1)))
            else { continue }
            harness.messages.append(
                Outgoing(key: key, frames: Array(fragmenter), payload: payload, version: version, encrypted: encrypted))
            trace("message \(harness.messages.count - 1): \(key), \(size) bytes in \(fragmenter.frameCount) frames")
        case 2, 3, 4, 5:
            // The next frame of a message, usually whole.
            guard !harness.messages.isEmpty else { continue }
            let index = input.int(in: 0...(harness.messages.count - 1))
            guard harness.messages[index].next < harness.messages[index].frames.count else { continue }
            let frame = harness.messages[index].frames[harness.messages[index].next]
            harness.messages[index].next += 1
            harness.feed(frame, from: index, damaged: false)
        case 6:
            // The next frame of a message, damaged, dropped or repeated.
            guard !harness.messages.isEmpty else { continue }
            let index = input.int(in: 0...(harness.messages.count - 1))
            let position = harness.messages[index].next
            guard position < harness.messages[index].frames.count else { continue }
            var frame = harness.messages[index].frames[position]
            harness.messages[index].disturbed = true
            switch input.int(in: 0...6) {
            case 0:
                harness.messages[index].next += 1
                continue  // dropped
            case 1: break  // repeated: the position does not advance
            case 2: frame.header.frameInfo = input.byte()
            case 3: frame.header.version = ProtocolVersion(rawValue: UInt8(input.int(in: 1...5)))
            case 4:
                frame.payload = frame.payload.getSlice(at: frame.payload.readerIndex, length: input.int(in: 0...frame.payload.readableBytes))!
                harness.messages[index].next += 1
            case 5:
                var first = ByteBuffer()
                first.writeMultipleIntegers(input.integer(UInt32.self), input.integer(UInt32.self), endianness: .big)
                frame.header.frameType = .first
                frame.payload = first
                harness.messages[index].next += 1
            default:
                frame.header.frameType = FrameType(rawValue: input.byte() & 3)
                harness.messages[index].next += 1
            }
            harness.feed(frame, from: index, damaged: true)
        case 7:
            // A frame made of the input's bytes.
            let header = FrameHeader(
                version: ProtocolVersion(rawValue: UInt8(input.int(in: 1...5))), encrypted: input.bool(),
                frameType: FrameType(rawValue: input.byte() & 3), serviceType: input.pick(services), frameInfo: input.byte(),
                sessionID: input.pick(sessions), dataSize: 0, messageID: MessageID(UInt32(input.int(in: 0...3))))
            let payload = input.bytes(input.int(in: 0...24))
            harness.feed(ProtocolFrame(header: header, payload: payload), from: nil, damaged: true)
        case 8:
            // Time passes; the expiry timer fires when it is due, or not at all.
            harness.now = harness.now + .milliseconds(Int64(input.int(in: 0...12_000)))
            if let due = harness.reassembler.nextExpiry {
                if due > harness.now { harness.expire(at: harness.now) } else { checkExpiryIsExact(&harness, due: due) }
            }
        case 9:
            let session = input.pick(sessions)
            let dropped: [MessageKey]
            switch input.int(in: 0...2) {
            case 0: dropped = harness.reassembler.discard(session: session)
            case 1:
                let service = input.pick(services)
                dropped = harness.reassembler.discard(session: session, service: service)
                precondition(dropped.allSatisfy { $0.serviceType == service }, "discarded another service")
            default: dropped = harness.reassembler.discardAll()
            }
            trace("discarded \(dropped)")
            for key in dropped {
                harness.report(key)
                harness.keyDisturbed.insert(key)
            }
            harness.checkLimits()
        case 10:
            // Limits change; they apply to First frames from now on.
            harness.limits.maxReassemblyBytes = input.int(in: 0...(1 << 18))
            harness.limits.maxReassembliesPerSession = input.int(in: 0...6)
            harness.limits.maxReassembliesPerTransport = input.int(in: 0...12)
            // Lowered below what is held, they would not hold until the excess drains: not a case.
            if harness.reassembler.reservedBytes <= harness.limits.maxReassemblyBytes,
                harness.reassembler.activeCount <= harness.limits.maxReassembliesPerTransport,
                sessions.allSatisfy({ harness.reassembler.activeCount(session: $0) <= harness.limits.maxReassembliesPerSession })
            {
                harness.reassembler.limits = harness.limits
            } else {
                harness.limits = harness.reassembler.limits
            }
        default:
            // A negotiated receive MTU, above or below the ceiling.
            harness.mtus[input.pick(sessions), input.pick(services), .receive] = input.bool() ? nil : input.int(in: 0...(1 << 17))
        }
        harness.checkSessions(sessions)
    }
    harness.checkNothingSilentlyDropped()
    if input.bool(), let due = harness.reassembler.nextExpiry {
        harness.expire(at: max(due, harness.now) + harness.limits.reassemblyTimeout)
    } else {
        for key in harness.reassembler.discardAll() { harness.report(key) }
    }
    precondition(harness.reassembler.activeCount == 0 && harness.reassembler.reservedBytes == 0, "memory held after the end")
    for session in sessions { precondition(harness.reassembler.activeCount(session: session) == 0) }
}

/// Expiring 1 ns before `due` drops nothing; expiring at `due` drops at least one message.
func checkExpiryIsExact(_ harness: inout Harness, due: NIODeadline) {
    let before = harness.reassembler.activeCount
    harness.expire(at: due - .nanoseconds(1))
    precondition(harness.reassembler.activeCount == before, "a message expired before nextExpiry")
    harness.expire(at: max(due, harness.now))
    precondition(harness.reassembler.activeCount < before, "nothing expired at nextExpiry")
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
