import Foundation
import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// Seeded random schedules through the in-memory pair: many sessions and services, random sizes,
/// MTUs, chunkings, write budgets and interleavings, a secondary transport that comes and goes,
/// and a hostile connection on the head unit aiming frames at the sessions. Every message carries
/// (session, service, sequence number) and a pattern derived from them, so the receiver can tell
/// a lost, duplicated, reordered, corrupted or misdelivered message.
@Suite("Randomized schedules")
struct RandomScheduleTests {
    /// The seeds run: 0..<10,000 in 16 parallel chunks; `SDL_RANDOM_SEEDS=N` (and
    /// `SDL_RANDOM_FIRST`) narrows them to replay a failure.
    static let seeds = (Int(ProcessInfo.processInfo.environment["SDL_RANDOM_FIRST"] ?? "") ?? 0)..<(Int(ProcessInfo.processInfo.environment["SDL_RANDOM_SEEDS"] ?? "") ?? 10_000)

    @Test("10,000 seeded schedules: exactly once, in order per service, byte-identical, never to another session", arguments: 0..<16)
    func randomSchedules(chunk: Int) async throws {
        // Minutes of CPU: on a thread of its own, not on the cooperative pool the async tests need.
        let failures = await onOwnThread { () -> [String] in
            var failures: [String] = []
            let size = (Self.seeds.count + 15) / 16
            let start = min(Self.seeds.lowerBound + chunk * size, Self.seeds.upperBound)
            for seed in start..<min(start + size, Self.seeds.upperBound) {
                if ProcessInfo.processInfo.environment["SDL_RANDOM_VERBOSE"] != nil { print("seed \(seed)") }
                if let failure = Self.run(seed: UInt64(seed)) {
                    failures.append("seed \(seed): \(failure)")
                    if failures.count >= 5 { break }
                }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    struct Sent {
        var session: UInt8
        var service: ServiceType
        var sequence: UInt32
        var size: Int
        var lossAllowed: Bool
    }

    static func payload(session: UInt8, service: ServiceType, sequence: UInt32, size: Int) -> ByteBuffer {
        // A 251-byte block derived from (session, service, sequence), repeated: cheap to build and
        // compare (memcpy, memcmp) even in a debug build, and different for every message.
        var block = [UInt8](repeating: 0, count: 251)
        var state = UInt32(session) &* 2_654_435_761 ^ UInt32(service.rawValue) &* 40503 ^ sequence &* 97
        for index in block.indices {
            state = state &* 1_664_525 &+ 1_013_904_223
            block[index] = UInt8(truncatingIfNeeded: state >> 24)
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(size)
        buffer.writeInteger(session)
        buffer.writeInteger(service.rawValue)
        buffer.writeInteger(sequence)
        while buffer.readableBytes < size {
            buffer.writeBytes(block.prefix(size - buffer.readableBytes))
        }
        return buffer
    }

    /// Runs one schedule; returns a description of the first violation, nil if none.
    static func run(seed: UInt64) -> String? {
        var random = SDLTestSupport.SplitMix64(seed: seed &* 0x9E37_79B9 &+ 1)
        func pick(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
        let sessionCount = seed % 2500 == 0 ? 255 : pick(1...6)
        let mtu = [64, 200, 1500, 4096, 131_072][pick(0...4)]
        let withSecondary = pick(0...2) == 0
        let protected = pick(0...4) == 0
        var attacker = Attacker(seed: seed)
        var appConfiguration = SessionConfiguration(role: .app)
        var huConfiguration = EnginePair.headUnitDefaults()
        huConfiguration.headUnit.advertisedMTU = Int64(mtu)
        huConfiguration.headUnit.floodLimit = nil
        if withSecondary {
            var offer = SecondaryTransportOffer(tcpAddress: "127.0.0.1", tcpPort: 2)
            offer.videoServiceTransports = [.secondary, .primary]
            offer.audioServiceTransports = [.secondary, .primary]
            huConfiguration.headUnit.secondaryTransport = offer
            appConfiguration.app.secondaryConnection = .eager
        }
        attacker.configure(headUnit: &huConfiguration, app: &appConfiguration)
        if protected {
            appConfiguration.makeSecurityProvider = { _ in FakeSecurityProvider(role: .server) }
            huConfiguration.makeSecurityProvider = { _ in FakeSecurityProvider(role: .client) }
        }
        var pair = EnginePair(app: appConfiguration, headUnit: huConfiguration)
        pair.app.recordsWrites = false
        pair.hu.recordsWrites = false
        // Tiny deliveries only with small MTUs: a 400 KB message one byte at a time is slow in a
        // debug build and proves nothing the small ones do not.
        pair.chunkSize = mtu <= 1500 ? [nil, 1, 7, 100, 4096][pick(0...4)] : [nil, 1448, 4096, 65_536][pick(0...3)]
        if sessionCount > 6 { pair.chunkSize = nil }
        if ProcessInfo.processInfo.environment["SDL_RANDOM_VERBOSE"] != nil {
            print("seed \(seed): sessions \(sessionCount) mtu \(mtu) chunk \(String(describing: pair.chunkSize)) secondary \(withSecondary) protected \(protected)")
        }
        let link = pair.openPrimary()
        var appHandles: [SessionHandle] = []
        for _ in 0..<sessionCount {
            appHandles.append(try! pair.app.engine.startSession(on: link, now: pair.now))
        }
        pair.pump()
        pair.advance(by: .milliseconds(200))
        var huHandles: [UInt8: SessionHandle] = [:]
        var appByID: [UInt8: SessionHandle] = [:]
        for event in pair.hu.events { if case .sessionStarted(let h, let info) = event { huHandles[info.sessionID.rawValue] = h } }
        for event in pair.app.events { if case .sessionStarted(let h, let info) = event { appByID[info.sessionID.rawValue] = h } }
        guard huHandles.count == sessionCount, appByID.count == sessionCount else {
            return "\(appByID.count)/\(huHandles.count) of \(sessionCount) sessions started"
        }
        for id in appByID.keys {
            try! pair.app.engine.sessionRegistered(appByID[id]!, now: pair.now)
            try! pair.hu.engine.sessionRegistered(huHandles[id]!, now: pair.now)
        }
        // Services.
        var running: [UInt8: Set<UInt8>] = [:]
        for id in appByID.keys where pick(0...1) == 0 {
            for service in [ServiceType.audio, .video] where pick(0...1) == 0 {
                try! pair.app.engine.startService(service, of: appByID[id]!, protection: protected && pick(0...1) == 0 ? .preferred : .none, now: pair.now)
                pair.pump()
                if pair.app.engine.serviceInfo(service, of: appByID[id]!) != nil {
                    running[id, default: []].insert(service.rawValue)
                }
            }
        }
        if protected, let id = appByID.keys.first {
            try? pair.app.engine.startService(.rpc, of: appByID[id]!, protection: .preferred, now: pair.now)
            pair.pump()
        }
        pair.app.events = []
        pair.hu.events = []
        var sentByApp: [Sent] = []
        var sentByHU: [Sent] = []
        var sequence: [String: UInt32] = [:]
        var secondaryLost = false
        let steps = sessionCount > 6 ? 300 : pick(5...40)
        let ids = appByID.keys.sorted()
        for _ in 0..<steps {
            if attacker.pick(0...1) == 0, let problem = attacker.act(&pair, sessions: ids, handles: huHandles) { return problem }
            let id = Array(appByID.keys)[pick(0...(appByID.count - 1))]
            let choice = pick(0...9)
            if choice == 9 && withSecondary && !secondaryLost {
                // The secondary vanishes: whatever is in flight on it may be lost, nothing else.
                let secondaries = pair.app.written.keys.filter { $0 != link }
                for transport in secondaries {
                    pair.severed.insert(transport)
                    pair.app.engine.transportClosed(transport, now: pair.now)
                    pair.hu.engine.transportClosed(transport, now: pair.now)
                }
                secondaryLost = !secondaries.isEmpty
                continue
            }
            var services: [ServiceType] = [.rpc, .hybrid]
            for raw in running[id] ?? [] where pair.app.engine.serviceInfo(ServiceType(rawValue: raw), of: appByID[id]!) != nil {
                services.append(ServiceType(rawValue: raw))
            }
            let service = services[pick(0...(services.count - 1))]
            // Mostly up to three frames of a moderate MTU; now and then up to three of the real one.
            let size = pick(0...9) == 0 ? pick(1...(mtu * 3 + 10)) : pick(1...(min(mtu, 8192) * 3 + 10))
            let fromApp = choice < 6 || service == .audio || service == .video
            let key = "\(fromApp)-\(id)-\(service.rawValue)"
            let next = sequence[key, default: 0]
            sequence[key] = next + 1
            let body = Self.payload(session: id, service: service, sequence: next, size: size)
            let lossAllowed = service == .audio || service == .video
            if fromApp {
                guard (try? pair.app.engine.send(body, on: service, of: appByID[id]!, now: pair.now)) != nil else { continue }
                sentByApp.append(Sent(session: id, service: service, sequence: next, size: size, lossAllowed: lossAllowed))
            } else {
                guard (try? pair.hu.engine.send(body, on: service, of: huHandles[id]!, now: pair.now)) != nil else { continue }
                sentByHU.append(Sent(session: id, service: service, sequence: next, size: size, lossAllowed: false))
            }
            if pick(0...2) == 0 { pair.pump() }
        }
        pair.pump()
        if let problem = attacker.finish(&pair) { return problem }
        if ProcessInfo.processInfo.environment["SDL_RANDOM_VERBOSE"] != nil {
            print(
                "seed \(seed): attacker (claims \(attacker.claimsTaken ? "taken" : "refused")): \(attacker.connections) connections, "
                    + "\(attacker.read) frames read, \(attacker.waited) waited, \(attacker.startedHere.count) services started, \(attacker.mediaTaken) media messages taken")
        }
        let hostile = Set(pair.headUnitOnly.keys)
        if let problem = Self.check(sent: sentByApp, events: pair.hu.events, handles: huHandles, direction: "app→hu", ignoring: hostile) { return problem }
        if let problem = Self.check(sent: sentByHU, events: pair.app.events, handles: appByID, direction: "hu→app") { return problem }
        return nil
    }

    /// `ignoring`: the attacker's connections, whose media a session it claimed may take (checked
    /// as it arrived, by ``Attacker``).
    static func check(
        sent: [Sent], events: [SessionEvent], handles: [UInt8: SessionHandle], direction: String, ignoring: Set<TransportID> = []
    ) -> String? {
        var received: [String: [UInt32]] = [:]
        for event in events {
            guard case .message(let handle, let message) = event, !ignoring.contains(message.transport) else { continue }
            var payload = message.payload
            guard let session = payload.readInteger(as: UInt8.self), let service = payload.readInteger(as: UInt8.self),
                let sequence = payload.readInteger(as: UInt32.self)
            else { return "\(direction): a message too short to be ours" }
            guard handles[session] == handle else { return "\(direction): session \(session)'s message delivered to \(handle)" }
            guard service == message.service.rawValue else { return "\(direction): service \(service) delivered as \(message.service)" }
            let expected = Self.payload(session: session, service: ServiceType(rawValue: service), sequence: sequence, size: message.payload.readableBytes)
            guard expected == message.payload else { return "\(direction): message \(session)/\(service)/\(sequence) corrupted" }
            received["\(session)-\(service)", default: []].append(sequence)
        }
        var expected: [String: [UInt32]] = [:]
        var lossy: Set<String> = []
        for item in sent {
            expected["\(item.session)-\(item.service.rawValue)", default: []].append(item.sequence)
            if item.lossAllowed { lossy.insert("\(item.session)-\(item.service.rawValue)") }
        }
        for (key, sequences) in received {
            guard zip(sequences, sequences.dropFirst()).allSatisfy({ $0 < $1 }) else { return "\(direction): \(key) out of order or duplicated: \(sequences)" }
        }
        for (key, sequences) in expected where !lossy.contains(key) {
            guard received[key] ?? [] == sequences else { return "\(direction): \(key) sent \(sequences.count), received \((received[key] ?? []).count)" }
        }
        for (key, sequences) in expected where lossy.contains(key) {
            guard Set(received[key] ?? []).isSubset(of: Set(sequences)) else { return "\(direction): \(key) received unknown messages" }
        }
        return nil
    }
}

extension RandomScheduleTests {
    /// A hostile connection on the head unit beside a schedule's app. At random points it writes
    /// a frame aimed at one of the schedule's live sessions (or any id): RegisterSecondaryTransport
    /// without the hash id or with a wrong one, EndService(RPC) at versions 1 and 5, StartService,
    /// EndService and its answers for audio and video, the RPC protection upgrade, data frames,
    /// heartbeats and security queries; now and then it stops reading what the head unit answers,
    /// which then reads no more of it once its queue passes `queueLimit`, until it drains (the
    /// runtime's throttle). When the head unit closes it, another one connects, three at most.
    /// It draws its own random numbers: the schedule is the one it would be without it.
    struct Attacker {
        /// The head unit's queue towards it past which its frames wait unread.
        static let queueLimit = 512
        var random: SDLTestSupport.SplitMix64
        /// Whether the head unit takes a secondary registration without the session's hash id;
        /// when it does, a session the attacker claimed may take its audio and video.
        let claimsTaken: Bool
        var transport: TransportID?
        var connections = 0
        /// Frames written and not yet read by the head unit.
        var held: [[UInt8]] = []
        var messageID: UInt32 = 1
        /// Sessions it registered as the secondary of without a hash id (whether or not the head
        /// unit took it).
        var claimed: [UInt8] = []
        /// Services (handle << 8 | service) the head unit started on an attacker's connection.
        var startedHere: Set<UInt64> = []
        /// What it did, for `SDL_RANDOM_VERBOSE`: frames read by the head unit, frames that had to
        /// wait for the head unit's queue to drain, media messages a claimed session took.
        var read = 0
        var waited = 0
        var mediaTaken = 0

        init(seed: UInt64) {
            self.random = SDLTestSupport.SplitMix64(seed: seed &* 0xD1B5_4A32_D192_ED03 &+ 7)
            self.claimsTaken = Int.random(in: 0...2, using: &self.random) != 0
        }

        /// The head unit's and the app's settings the attacker needs: claims taken or refused;
        /// half the time a malformed limit it takes long to reach (the head unit closes it
        /// otherwise after a few frames), and, with a secondary, an app that connects it only for
        /// a service (sessions without one then have none to displace a claim).
        mutating func configure(headUnit: inout SessionConfiguration, app: inout SessionConfiguration) {
            headUnit.headUnit.secondaryTransportProof = self.claimsTaken ? .hashIDWhenGiven : .hashIDRequired
            if self.pick(0...1) == 0 { headUnit.headUnit.malformedLimit = RateLimit(count: 1000, per: .seconds(1)) }
            if app.app.secondaryConnection == .eager, self.pick(0...1) == 0 { app.app.secondaryConnection = .lazy }
        }

        mutating func pick(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self.random) }

        /// One move: connect if needed, perhaps stop or resume reading, write a frame and let the
        /// head unit read what it may. Returns what went wrong, nil if nothing.
        mutating func act(_ pair: inout EnginePair, sessions: [UInt8], handles: [UInt8: SessionHandle]) -> String? {
            if let transport = self.transport, pair.hu.closed.contains(where: { $0.0 == transport }) {
                // The head unit closed it (its frames count as malformed input): that is its right.
                self.transport = nil
                self.held = []
            }
            if self.transport == nil {
                guard self.connections < 3 else { return nil }
                self.connections += 1
                self.transport = pair.openHeadUnitOnly()
            }
            let transport = self.transport!
            if pair.hu.unread.contains(transport) {
                if self.pick(0...5) == 0 {
                    pair.hu.unread.remove(transport)
                    pair.hu.pull(transport)
                }
            } else if self.pick(0...3) == 0 {
                pair.hu.unread.insert(transport)
            }
            for _ in 0..<self.pick(1...3) {
                self.held.append(self.frame(pair, sessions: sessions, handles: handles))
                if pair.hu.engine.queuedBytes(on: transport) > Self.queueLimit { self.waited += 1 }
                if let problem = self.deliver(&pair) { return problem }
            }
            return nil
        }

        /// Hands held frames to the head unit while its queue towards the attacker allows,
        /// checking what each does.
        mutating func deliver(_ pair: inout EnginePair) -> String? {
            // What the schedule did without draining (a severed secondary) is not the attacker's.
            pair.hu.drain()
            while !self.held.isEmpty, let transport = self.transport, pair.hu.engine.queuedBytes(on: transport) <= Self.queueLimit {
                let first = pair.hu.events.count
                let frame = self.held.removeFirst()
                self.read += 1
                pair.hu.engine.received(ByteBuffer(bytes: frame), on: transport, now: pair.now)
                pair.hu.drain()
                for event in pair.hu.events[first...] {
                    if let problem = self.problem(event, on: transport, pair) {
                        return "attacker on \(transport): \(problem), after \(decodeFrames(frame).map(\.header))"
                    }
                }
                // One frame's answers at most on top of the limit.
                let queued = pair.hu.engine.queuedBytes(on: transport)
                if queued > Self.queueLimit + 1024 { return "attacker: \(queued) bytes queued towards it" }
                if queued < 0 || (queued == 0) == pair.hu.engine.hasPendingWrites(on: transport) {
                    return "attacker: \(queued) bytes queued, pending writes \(pair.hu.engine.hasPendingWrites(on: transport))"
                }
                if pair.hu.closed.contains(where: { $0.0 == transport }) { self.transport = nil }
            }
            return nil
        }

        /// Whether a head-unit event caused by the attacker's frame is one it may cause.
        mutating func problem(_ event: SessionEvent, on transport: TransportID, _ pair: EnginePair) -> String? {
            let media = { (service: ServiceType) in service == .audio || service == .video }
            switch event {
            case .anomaly, .protocolError, .transportClosed:
                return nil
            case .serviceStarted(let handle, let service, let info) where self.claimsTaken && media(service) && info.transport == transport:
                self.startedHere.insert(UInt64(handle.rawValue) << 8 | UInt64(service.rawValue))
                return nil
            case .serviceEnded(let handle, let service, _) where self.startedHere.contains(UInt64(handle.rawValue) << 8 | UInt64(service.rawValue)):
                return nil
            case .serviceStartFailed(_, let service, _) where self.claimsTaken && media(service):
                return nil
            case .message(_, let message) where self.claimsTaken && media(message.service) && message.transport == transport:
                self.mediaTaken += 1
                return nil
            default:
                return "its frame reached a session: \(event)"
            }
        }

        /// A frame aimed at a live session (or, now and then, any id), often one it claimed.
        mutating func frame(_ pair: EnginePair, sessions: [UInt8], handles: [UInt8: SessionHandle]) -> [UInt8] {
            self.messageID &+= 1
            let id = self.messageID
            let media = [ServiceType.audio, .video][self.pick(0...1)]
            if !self.claimed.isEmpty, self.pick(0...1) == 0 {
                // Media for a session it claimed: a start, or data.
                let session = self.claimed[self.pick(0...(self.claimed.count - 1))]
                if self.pick(0...2) == 0 { return control(.startService, service: media, session: session, messageID: id) }
                return frameBytes(type: .single, service: media, session: session, messageID: id, payload: [0xEE, UInt8(truncatingIfNeeded: id)])
            }
            let session = sessions.isEmpty || self.pick(0...7) == 0 ? UInt8(self.pick(1...255)) : sessions[self.pick(0...(sessions.count - 1))]
            let hash = handles[session].flatMap { pair.hu.engine.sessionInfo($0)?.hashID }
            // Never the very hash id: a guess, or none.
            let guess = self.pick(0...1) == 0 ? nil : (hash ?? 0) &+ UInt32(self.pick(1...1000))
            let hashPayload = guess.map { guess in bson { $0.appendInt32("hashId", Int32(bitPattern: guess)) } } ?? []
            switch self.pick(0...9) {
            case 0, 1:
                if guess == nil, self.claimsTaken, !self.claimed.contains(session) { self.claimed.append(session) }
                return control(.registerSecondaryTransport, service: .control, session: session, messageID: id, payload: hashPayload)
            case 2:
                return control(.endService, version: .v1, service: .rpc, session: session)
            case 3:
                return control(.endService, service: .rpc, session: session, messageID: id, payload: hashPayload)
            case 4:
                let info = [ControlFrameInfo.endService, .endServiceACK, .endServiceNAK][self.pick(0...2)]
                return control(info, service: media, session: session, messageID: id)
            case 5:
                return control(.startService, encrypted: self.pick(0...3) == 0, service: media, session: session, messageID: id)
            case 6:
                return control(.startService, encrypted: true, service: .rpc, session: session, messageID: id)
            case 7:
                let service = [ServiceType.rpc, .hybrid, .audio, .video][self.pick(0...3)]
                let payload = (0..<self.pick(1...32)).map { UInt8(truncatingIfNeeded: $0 &* 37) }
                return frameBytes(encrypted: self.pick(0...7) == 0, type: .single, service: service, session: session, messageID: id, payload: payload)
            case 8:
                return control(.heartbeat, service: .control, session: session, messageID: id)
            default:
                // A security query: an internal error, which would reset the session's protection.
                return frameBytes(type: .single, service: .control, session: session, messageID: id, payload: [0x20, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 5])
            }
        }

        /// After the schedule: every attacker reads again, what it still held is read, and all it
        /// ever got back is control frames, every byte of its queue accounted for.
        mutating func finish(_ pair: inout EnginePair) -> String? {
            for transport in pair.headUnitOnly.keys.sorted(by: { $0.rawValue < $1.rawValue }) where pair.hu.unread.remove(transport) != nil {
                pair.hu.pull(transport)
            }
            if let problem = self.deliver(&pair) { return problem }
            pair.pump()
            for (transport, bytes) in pair.headUnitOnly {
                if pair.hu.engine.hasPendingWrites(on: transport) || pair.hu.engine.queuedBytes(on: transport) != 0 {
                    return "attacker: \(pair.hu.engine.queuedBytes(on: transport)) bytes left queued towards \(transport) once read"
                }
                if let frame = decodeFrames(bytes).first(where: { $0.header.frameType != .control }) {
                    return "attacker: the head unit wrote it a \(frame.header.frameType) frame of \(frame.header.serviceType)"
                }
            }
            return nil
        }
    }
}
