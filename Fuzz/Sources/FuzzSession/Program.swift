import FuzzSupport
import NIOCore
import SDLProtocol
import SDLSession

/// The two engines' settings, from the input's first bytes.
func configurations(_ input: inout FuzzInput) -> (app: SessionConfiguration, headUnit: SessionConfiguration, queueLimit: Int) {
    var app = SessionConfiguration(role: .app)
    var hu = SessionConfiguration(role: .headUnit)
    app.maxProtocolVersion = input.pick([
        SDLVersion(major: 5, minor: 4, patch: 1), SDLVersion(major: 5, minor: 0, patch: 0), SDLVersion(major: 5, minor: 2, patch: 0),
        SDLVersion(major: 4), SDLVersion(major: 3), SDLVersion(major: 2), SDLVersion(major: 5, minor: 1), SDLVersion(major: 6),
    ])
    hu.maxProtocolVersion = input.pick([SDLVersion(major: 5, minor: 4, patch: 1), SDLVersion(major: 5, minor: 1), SDLVersion(major: 4)])
    var limits = ProtocolLimits()
    limits.maxMessageSize = input.pick([4096, 65_536])
    limits.maxFramePayloadSize = input.pick([1 << 20, 2048])
    limits.maxReassemblyBytes = input.pick([1 << 20, 16_384])
    limits.maxReassembliesPerSession = input.int(in: 1...16)
    app.protocolLimits = limits
    hu.protocolLimits = limits
    // Bit 0 of these two bytes as before; the bits above it choose what came later (the proof a
    // secondary registration needs, the throttle's limit), so that older programs still parse.
    let connection = input.byte()
    app.app.secondaryConnection = connection & 1 == 1 ? .eager : .lazy
    hu.headUnit.secondaryTransportProof = connection & 2 == 0 ? .hashIDWhenGiven : .hashIDRequired
    let closing = input.byte()
    app.app.closePrimaryWithLastSession = closing & 1 == 1
    let queueLimit = [65_536, 512, 4096, 512 << 10][Int(closing >> 1 & 3)]
    app.app.transportEventDebounce = .milliseconds(Int64(input.pick([0, 100])))
    hu.headUnit.hashSeed = 7
    hu.headUnit.negotiationPolicy = input.bool() ? .spec : .coreCompatible
    // Down to 200 bytes: below the size of a control payload (a video StartService with its
    // parameters is 72 bytes) the head unit refuses the app's control frames as too large, and
    // the app's start times out; control frames cannot be fragmented, and no head unit advertises
    // less than the 1,500 bytes of version 1.
    hu.headUnit.advertisedMTU = input.pick([131_072, 1500, 200, 1024, 4096])
    hu.headUnit.maxSessions = input.pick([255, 1, 2, 3])
    hu.headUnit.sessionIDPolicy = input.bool() ? .leastRecentlyFreed : .lowestFree
    if input.bool() {
        var offer = SecondaryTransportOffer(tcpAddress: input.pick(["10.0.0.1", ""]), tcpPort: input.pick([12345, nil]))
        offer.audioServiceTransports = input.pick([[.primary, .secondary], [.secondary], [.secondary, .primary], [.primary], []])
        offer.videoServiceTransports = input.pick([[.primary, .secondary], [.secondary], [.secondary, .primary], [.primary], []])
        hu.headUnit.secondaryTransport = offer
    }
    hu.headUnit.registrationTimeout = input.pick([.seconds(30), nil, .seconds(2)])
    hu.headUnit.floodLimit = input.pick([RateLimit(count: 1000, per: .seconds(1)), nil, RateLimit(count: 8, per: .seconds(1))])
    hu.headUnit.malformedLimit = input.pick([RateLimit(count: 10, per: .seconds(1)), nil, RateLimit(count: 1, per: .seconds(1))])
    hu.headUnit.streamingGracePeriod = .milliseconds(Int64(input.pick([1000, 0, 50])))
    hu.headUnit.closeSessionOnViolation = input.bool()
    hu.heartbeat.origination = input.pick([.afterPeerHeartbeat, .always, .off])
    app.heartbeat.origination = input.pick([.off, .always])
    if input.bool() {
        let failAt = input.pick([nil, 1, 2, 3])
        app.makeSecurityProvider = { _ in FakeSecurityProvider(role: .server) }
        hu.makeSecurityProvider = { _ in FakeSecurityProvider(role: .client, failAtRound: failAt) }
        hu.headUnit.forceProtectedServices = input.pick([[], [.video], [.rpc, .audio]])
    }
    return (app, hu, queueLimit)
}

let services: [ServiceType] = [.rpc, .hybrid, .audio, .video]

@inline(never)
func check(_ bytes: UnsafeRawBufferPointer) {
    var input = FuzzInput(bytes)
    let (appConfiguration, huConfiguration, queueLimit) = configurations(&input)
    var pair = Pair(app: appConfiguration, headUnit: huConfiguration, queueLimit: queueLimit)
    pair.openPrimary()
    var steps = 0
    while !input.isExhausted && steps < 400 {
        steps += 1
        run(&pair, &input)
    }
    // Every peer reads again: everything must arrive.
    pair.stalled = []
    pair.pump()
    pair.checkQuiet()
    // Every transport goes: no session may outlive them all.
    for transport in pair.open { pair.hangUp(transport) }
    while !pair.app.connects.isEmpty { pair.answerConnect(grant: false) }
    pair.pump()
    pair.advance(by: .seconds(120))
    for side in [pair.app, pair.hu] {
        precondition(side.engine.sessionHandles.isEmpty, "\(side.name): sessions \(side.engine.sessionHandles) left without a transport")
        for handle in side.handles {
            let track = side.tracks[handle]!
            precondition(!track.isLive, "\(side.name): \(handle) never reported ended")
            precondition(track.ended || track.failed, "\(side.name): \(handle) neither ended nor failed to start")
        }
    }
}

/// One op of the program.
func run(_ pair: inout Pair, _ input: inout FuzzInput) {
    let now = pair.now
    let op = input.int(in: 0...23)
    trace("op \(op) at \(now.uptimeNanoseconds / 1_000_000) ms")
    switch op {
    case 0:
        if pair.open.count - pair.attackers.count < 4 { pair.openPrimary() }
    case 1, 2:
        guard let transport = pick(pair.open, &input), pair.app.handles.count < 12 else { return }
        if let handle = try? pair.app.engine.startSession(on: transport, now: now) {
            pair.app.addHandle(handle)
        }
        pair.drain()
    case 3:
        guard let handle = pick(pair.app.handles, &input) else { return }
        if (try? pair.app.engine.endSession(handle, now: now)) != nil { pair.app.tracks[handle]!.endRequested = true }
        pair.drain()
    case 4:
        guard let handle = pick(pair.hu.handles, &input) else { return }
        try? pair.hu.engine.endSession(handle, now: now)
        pair.drain()
    case 5:
        // The layer above saw RegisterAppInterface succeed, on both sides.
        guard let handle = pick(pair.app.liveHandles(), &input), let id = pair.app.tracks[handle]?.sessionID else { return }
        try? pair.app.engine.sessionRegistered(handle, now: now)
        if let peer = pair.hu.liveHandles().first(where: { pair.hu.tracks[$0]?.sessionID == id }) {
            try? pair.hu.engine.sessionRegistered(peer, now: now)
        }
        pair.drain()
    case 6:
        guard let handle = pick(pair.app.handles, &input) else { return }
        let service = input.pick([ServiceType.audio, .video, .video, .rpc, .hybrid])
        let video = input.bool()
            ? VideoParameters(height: 480, width: 800, videoProtocol: input.pick(["RAW", "RTP", "XYZ"]), videoCodec: input.pick(["H264", "VP9", "bad"]))
            : nil
        try? pair.app.engine.startService(service, of: handle, video: video, protection: input.pick([.none, .preferred, .required]), now: now)
        pair.drain()
    case 7:
        let fromApp = input.bool()
        guard let handle = pick(pair[fromApp].handles, &input) else { return }
        try? pair[fromApp].engine.endService(input.pick([.audio, .video, .rpc]), of: handle, now: now)
        pair.drain()
    case 8, 9, 10:
        send(&pair, &input)
    case 11, 12:
        pair.pump(chunk: input.pick([.max, 1, 7, 12, 100, 1500]))
    case 13:
        // Part of one direction of one transport: a write of up to N bytes, delivered in pieces.
        guard let transport = pick(pair.open, &input) else { return }
        let fromApp = input.bool()
        pair.pull(fromApp: fromApp, transport, maxBytes: input.int(in: 1...4096))
        let count = input.int(in: 1...4096)
        if pair.reads(fromApp: !fromApp, transport), let bytes = pair[fromApp].take(transport, upTo: count) {
            pair.deliver(bytes, fromApp: fromApp, on: transport)
        }
    case 14:
        pair.advance(by: .milliseconds(Int64(input.pick([1, 50, 150, 999, 1000, 2500, 5001, 10_001, 30_001, 60_000]))))
    case 15:
        // An early timer call is harmless.
        let fromApp = input.bool()
        pair[fromApp].engine.timerFired(now: now)
        pair.drain()
    case 16:
        // Hostile bytes into one engine on one transport.
        guard let transport = pick(pair.open, &input) else { return }
        let fromApp = input.bool()
        let bytes = input.bytes(input.int(in: 1...300))
        pair.tainted.insert(transport)
        if pair.attackers.contains(transport) { pair.garbled.insert(transport) }
        pair.inputBytes += bytes.readableBytes
        pair[!fromApp].engine.received(bytes, on: transport, now: now)
        pair.drain()
    case 17:
        guard let transport = pick(pair.open, &input) else { return }
        switch input.int(in: 0...2) {
        case 0: pair.hangUp(transport)
        case 1:
            pair.app.engine.closeTransport(transport, now: now)
            pair.drain()
        default:
            pair.hu.engine.closeTransport(transport, now: now)
            pair.drain()
        }
    case 18:
        pair.answerConnect(grant: input.int(in: 0...3) != 0)
    case 19:
        let offer: SecondaryTransportOffer? = input.bool() ? nil : SecondaryTransportOffer(tcpAddress: input.pick(["10.0.0.2", ""]), tcpPort: input.pick([2, nil]))
        try? pair.hu.engine.updateSecondaryTransport(offer, now: now)
        pair.drain()
    case 20, 21, 22:
        hijack(&pair, &input)
    default:
        stopReading(&pair, &input)
    }
}

/// A tagged message from one side's session, of a size that fragments at small MTUs.
func send(_ pair: inout Pair, _ input: inout FuzzInput) {
    let fromApp = input.bool()
    guard let handle = pick(pair[fromApp].handles, &input), let id = pair[fromApp].tracks[handle]?.sessionID else { return }
    let service = input.pick(services)
    let key = UInt64(fromApp ? 1 : 0) << 40 | UInt64(handle.rawValue) << 8 | UInt64(service.rawValue)
    let sequence = pair.sequences[key, default: 0]
    let size = input.int(in: Tag.size...(input.bool() ? 64 : 3000))
    let payload = Tag(fromApp: fromApp, sender: handle, service: service, sequence: sequence, sessionID: id).payload(size: size)
    guard (try? pair[fromApp].engine.send(payload, on: service, of: handle, now: pair.now)) != nil else { return }
    pair.sequences[key] = sequence + 1
    pair.inputBytes += size
    if service == .rpc || service == .hybrid { pair.unanswered[fromApp]![handle, default: 0] += 1 }
    pair.drain()
}

func pick<T>(_ items: [T], _ input: inout FuzzInput) -> T? {
    items.isEmpty ? nil : input.pick(items)
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput") public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size, check) }
#else
@main enum Replay { static func main() { replayFiles(check) } }
#endif
