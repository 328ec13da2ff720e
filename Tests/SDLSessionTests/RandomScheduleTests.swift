import Foundation
import NIOCore
import SDLProtocol
import SDLTestSupport
import Testing

@testable import SDLSession

/// Seeded random schedules through the in-memory pair: many sessions and services, random sizes,
/// MTUs, chunkings, write budgets and interleavings, a secondary transport that comes and goes.
/// Every message carries (session, service, sequence number) and a pattern derived from them, so
/// the receiver can tell a lost, duplicated, reordered, corrupted or misdelivered message.
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
        for _ in 0..<steps {
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
        if let problem = Self.check(sent: sentByApp, events: pair.hu.events, handles: huHandles, direction: "app→hu") { return problem }
        if let problem = Self.check(sent: sentByHU, events: pair.app.events, handles: appByID, direction: "hu→app") { return problem }
        return nil
    }

    static func check(sent: [Sent], events: [SessionEvent], handles: [UInt8: SessionHandle], direction: String) -> String? {
        var received: [String: [UInt32]] = [:]
        for event in events {
            guard case .message(let handle, let message) = event else { continue }
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
