import NIOCore
import SDLBSON
import SDLProtocol

// A plain loop over one SDLBSON operation, for `valgrind --tool=callgrind` (instruction counts
// per function): `BSONProfile encode|decode|view|encode2|decode2|view2|typed-encode|typed-decode
// [iterations]`. The `typed` modes go through SDLProtocol's StartServiceACKPayload.
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

@inline(__always)
func appendTemperature(_ doc: inout BSONDocumentWriter, _ key: String, _ value: Double) {
    doc.appendDocument(key) {
        $0.appendString("unit", "CELSIUS")
        $0.appendDouble("value", value)
    }
}

@inline(__always)
func appendTime(_ doc: inout BSONDocumentWriter, _ key: String, hour: Int32) {
    doc.appendDocument(key) {
        $0.appendInt32("year", 2026)
        $0.appendInt32("month", 11)
        $0.appendInt32("day", 23)
        $0.appendInt32("hour", hour)
        $0.appendInt32("minute", 0)
        $0.appendInt32("second", 0)
    }
}

/// The same fields, values and order as `sdl_bench_encode_app_service_data` in the C shim.
func encodeOnAppServiceData(into buffer: inout ByteBuffer) {
    buffer.writeBSONDocument { doc in
        doc.appendDocument("serviceData") { service in
            service.appendString("serviceType", "WEATHER")
            service.appendString("serviceID", "3f1e9a52-7c4b-4d2e-9b8a-6a0c5e1f2d34")
            service.appendDocument("weatherServiceData") { weather in
                weather.appendDocument("location") { location in
                    location.appendDocument("coordinate") {
                        $0.appendDouble("latitudeDegrees", 42.331427)
                        $0.appendDouble("longitudeDegrees", -83.045754)
                    }
                    location.appendString("locationName", "Detroit")
                    location.appendArray("addressLines") {
                        $0.appendString("1 Woodward Avenue")
                        $0.appendString("Detroit, MI 48226")
                    }
                    location.appendString("locationDescription", "Downtown, near the riverfront")
                }
                weather.appendDocument("currentForecast") { current in
                    appendTime(&current, "currentTime", hour: 14)
                    appendTemperature(&current, "temperatureHigh", 21.5)
                    appendTemperature(&current, "temperatureLow", 12.25)
                    appendTemperature(&current, "apparentTemperature", 19.75)
                    current.appendString("weatherSummary", "Partly cloudy with a light breeze from the west")
                    current.appendDouble("humidity", 0.65)
                    current.appendDouble("cloudCover", 0.4)
                    current.appendDouble("moonPhase", 0.5)
                    current.appendInt32("windBearing", 270)
                    current.appendDouble("windGust", 12.3)
                    current.appendDouble("windSpeed", 7.8)
                    current.appendDouble("precipProbability", 0.1)
                    current.appendDouble("visibility", 16.09)
                    current.appendString("weatherIconImageName", "partly-cloudy-day")
                }
                weather.appendArray("hourlyForecast") { hourly in
                    for i in 0..<6 {
                        hourly.appendDocument { hour in
                            appendTime(&hour, "currentTime", hour: Int32(15 + i))
                            appendTemperature(&hour, "temperatureHigh", 20.5 - Double(i))
                            hour.appendString("weatherSummary", "Mostly sunny")
                            hour.appendDouble("humidity", 0.6 + Double(i) * 0.01)
                            hour.appendDouble("precipProbability", 0.05 * Double(i))
                            hour.appendDouble("windSpeed", 6.5 + Double(i))
                            hour.appendInt32("windBearing", Int32(260 + i))
                            hour.appendInt64("timestamp", 1_795_000_000_000 + Int64(i) * 3_600_000)
                        }
                    }
                }
            }
        }
    }
}


/// The same walk through the borrowing API (`forEachElement`): no reference counting.
func visit(_ element: borrowing BSONElementView) -> UInt64 {
    var sum = UInt64(element.keyByteCount)
    switch element.type {
    case .int32: sum &+= UInt64(truncatingIfNeeded: element.int32Value!)
    case .int64: sum &+= UInt64(truncatingIfNeeded: element.int64Value!)
    case .double: sum &+= element.doubleValue!.bitPattern
    case .bool: sum &+= element.boolValue! ? 1 : 0
    case .string: sum &+= element.withUTF8 { UInt64($0.count) &+ UInt64($0.first ?? 0) }!
    case .document, .array: element.forEachElement { sum &+= visit($0) }
    default: sum &+= 1
    }
    return sum
}

func walkBorrowing(_ document: BSONDocument) -> UInt64 {
    var sum: UInt64 = 0
    document.forEachElement { sum &+= visit($0) }
    return sum
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
        encodeOnAppServiceData(into: &buffer)
        total &+= UInt64(buffer.writerIndex)
    }
} else if mode == "view2" {
    encodeOnAppServiceData(into: &buffer)
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
    encodeOnAppServiceData(into: &buffer)
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
