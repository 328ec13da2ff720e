import NIOCore
import SDLSession
import SessionBenchSupport

// The engine pair in a plain loop, for instruction profiles (callgrind) and quick readings:
// SessionProfile MODE [ROUNDS]
//   rpc    ROUNDS × 1,000 RPC messages of 1 KiB, app to head unit, 64 KiB writes
//   video  ROUNDS × 8 sessions × 16 video frames of 128 KiB, 256 KiB writes
//   idle   heap bytes per idle session (glibc), 255 sessions on 255 transports

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? "rpc"
let rounds = arguments.dropFirst().first.flatMap { Int($0) } ?? 100

switch mode {
case "rpc":
    var pair = EnginePair(sessions: 1, video: false)
    let payload = ByteBuffer(repeating: 0x42, count: 1024)
    var delivered = 0
    for _ in 0..<rounds {
        for _ in 0..<1000 { try! pair.app.send(payload, on: .rpc, of: pair.appSessions[0], now: pair.now) }
        delivered += pair.transfer(chunk: 64 << 10)
    }
    print("rpc: \(delivered) bytes delivered")
case "video":
    var pair = EnginePair(sessions: 8, video: true)
    let frame = ByteBuffer(repeating: 0x17, count: 128 << 10)
    var delivered = 0
    for _ in 0..<rounds {
        for _ in 0..<16 {
            for session in pair.appSessions { try! pair.app.send(frame, on: .video, of: session, now: pair.now) }
        }
        delivered += pair.transfer(chunk: 256 << 10)
    }
    print("video: \(delivered) bytes delivered")
case "idle":
    let idle = idleBytesPerSession()
    print("idle: \(idle.session) heap bytes per session, \(idle.transport) per accepted transport")
default:
    fatalError("unknown mode \(mode)")
}
