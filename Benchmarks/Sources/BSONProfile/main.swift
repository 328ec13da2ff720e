import BSONWorkloads
import NIOCore
import SDLBSON
import SDLProtocol

// A plain loop over one SDLBSON operation, for `valgrind --tool=callgrind` (instruction counts
// per function): `BSONProfile encode|decode|view|encode2|decode2|view2|typed-encode|typed-decode
// [iterations]`. The `typed` modes go through SDLProtocol's StartServiceACKPayload.
@inline(never)
func encode(into buffer: inout ByteBuffer) {
    encodeStartServiceACK(into: &buffer)
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "encode"
let iterations = arguments.count > 2 ? Int(arguments[2])! : 100_000
var buffer = ByteBufferAllocator().buffer(capacity: 4096)
var total: UInt64 = 0
if mode == "encode" {
    for _ in 0..<iterations {
        buffer.clear()
        encode(into: &buffer)
        total &+= UInt64(buffer.writerIndex)
    }
} else if mode == "encode2" {
    for _ in 0..<iterations {
        buffer.clear()
        encodeAppServiceDocument(hours: 6, into: &buffer)
        total &+= UInt64(buffer.writerIndex)
    }
} else if mode == "view2" {
    encodeAppServiceDocument(hours: 6, into: &buffer)
    for _ in 0..<iterations {
        let document = try! BSONDocument(validating: buffer)
        total &+= walkBorrowing(document)
    }
} else if mode == "view" {
    encode(into: &buffer)
    for _ in 0..<iterations {
        let document = try! BSONDocument(validating: buffer)
        total &+= walkBorrowing(document)
    }
} else if mode == "typed-encode" {
    let ack = StartServiceACKPayload(
        protocolVersion: "5.4.1", hashID: 0x1234567, mtu: 131_084, secondaryTransports: ["TCP_WIFI"],
        audioServiceTransports: [1, 2], videoServiceTransports: [2, 1]
    )
    for _ in 0..<iterations {
        buffer.clear()
        try! ack.write(to: &buffer)
        total &+= UInt64(buffer.writerIndex)
    }
} else if mode == "typed-decode" {
    encode(into: &buffer)
    for _ in 0..<iterations {
        let ack = try! StartServiceACKPayload(bson: buffer)
        total &+= UInt64(ack.mtu!) &+ UInt64(ack.videoServiceTransports!.count)
    }
} else if mode == "decode2" {
    encodeAppServiceDocument(hours: 6, into: &buffer)
    for _ in 0..<iterations {
        let document = try! BSONDocument(validating: buffer)
        total &+= walk(document)
    }
} else {
    encode(into: &buffer)
    for _ in 0..<iterations {
        let document = try! BSONDocument(validating: buffer)
        total &+= walk(document)
    }
}
print(total)
