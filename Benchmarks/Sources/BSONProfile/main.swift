import NIOCore
import SDLBSON

// A plain loop over one SDLBSON operation, for `valgrind --tool=callgrind` (instruction counts
// per function): `BSONProfile encode|decode [iterations]`.
@inline(never)
func encode(into buffer: inout ByteBuffer) {
    buffer.writeBSONDocument { doc in
        doc.appendString("protocolVersion", "5.4.1")
        doc.appendInt32("hashId", 0x1234567)
        doc.appendInt64("mtu", 131_084)
        doc.appendArray("secondaryTransports") { $0.appendString("TCP_WIFI") }
        doc.appendArray("audioServiceTransports") {
            $0.appendInt32(1)
            $0.appendInt32(2)
        }
        doc.appendArray("videoServiceTransports") {
            $0.appendInt32(2)
            $0.appendInt32(1)
        }
    }
}

@inline(never)
func walk(_ document: BSONDocument) -> UInt64 {
    var sum: UInt64 = 0
    for element in document {
        sum &+= UInt64(element.keyByteCount)
        switch element.type {
        case .int32: sum &+= UInt64(truncatingIfNeeded: element.int32Value!)
        case .int64: sum &+= UInt64(truncatingIfNeeded: element.int64Value!)
        case .double: sum &+= element.doubleValue!.bitPattern
        case .bool: sum &+= element.boolValue! ? 1 : 0
        case .string: sum &+= element.withUTF8 { UInt64($0.count) &+ UInt64($0.first ?? 0) }!
        case .document: sum &+= walk(element.documentValue!)
        case .array: sum &+= walk(element.arrayValue!)
        default: sum &+= 1
        }
    }
    return sum
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "encode"
let iterations = arguments.count > 2 ? Int(arguments[2])! : 100_000
var buffer = ByteBufferAllocator().buffer(capacity: 1024)
var total: UInt64 = 0
if mode == "encode" {
    for _ in 0..<iterations {
        buffer.clear()
        encode(into: &buffer)
        total &+= UInt64(buffer.writerIndex)
    }
} else {
    encode(into: &buffer)
    for _ in 0..<iterations {
        let document = try! BSONDocument(validating: buffer)
        total &+= walk(document)
    }
}
print(total)
