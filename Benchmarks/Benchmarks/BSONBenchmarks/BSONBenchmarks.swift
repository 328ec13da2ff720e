import Benchmark
import CLibBSONBench
import NIOCore
import SDLBSON
import SDLProtocol

// SDLBSON vs libbson, in the same run: encode and decode-and-read-every-field of
// (a) the StartServiceACK control payload and (b) a ~2 KB OnAppServiceData-shaped document.
// Run from this folder: `swift package benchmark`. Compare ratios within one run: the
// machines vary run to run.

@inline(__always)
func encodeStartServiceACK(into buffer: inout ByteBuffer) {
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

/// Reads every field of a validated document (recursing), folding the values into a checksum
/// the same way `sdl_bench_walk` does on the libbson side.
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

func libbsonBytes(_ encode: (UnsafeMutablePointer<UInt8>, Int) -> Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 4096)
    let n = out.withUnsafeMutableBufferPointer { encode($0.baseAddress!, $0.count) }
    return Array(out[..<n])
}

let benchmarks: @Sendable () -> Void = {
    // Wall clock and malloc counts; instruction counts need perf events, which some VMs lack (the
    // BSONProfile target under `valgrind --tool=callgrind` counts instructions instead).
    let metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal]
    let configuration = Benchmark.Configuration(metrics: metrics, scalingFactor: .kilo, maxDuration: .seconds(3))

    // Both sides must produce the same bytes, or the comparison is meaningless.
    var ackBuffer = ByteBuffer()
    encodeStartServiceACK(into: &ackBuffer)
    let ackBytes = Array(ackBuffer.readableBytesView)
    precondition(ackBytes == libbsonBytes { sdl_bench_encode_ack($0, $1) }, "StartServiceACK bytes differ from libbson's")
    var serviceBuffer = ByteBuffer()
    encodeOnAppServiceData(into: &serviceBuffer)
    let serviceBytes = Array(serviceBuffer.readableBytesView)
    precondition(walk(try! BSONDocument(validating: ByteBuffer(bytes: ackBytes))) == ackBytes.withUnsafeBufferPointer { sdl_bench_decode($0.baseAddress!, $0.count) }, "StartServiceACK checksums differ")
    precondition(
        serviceBytes == libbsonBytes { sdl_bench_encode_app_service_data($0, $1) },
        "OnAppServiceData bytes differ from libbson's"
    )

    let serviceDocument = try! BSONDocument(validating: ByteBuffer(bytes: serviceBytes))
    let libbsonServiceSum = serviceBytes.withUnsafeBufferPointer { sdl_bench_decode($0.baseAddress!, $0.count) }
    precondition(walk(serviceDocument) == libbsonServiceSum && walkBorrowing(serviceDocument) == libbsonServiceSum, "OnAppServiceData checksums differ")

    Benchmark("StartServiceACK encode SDLBSON", configuration: configuration) { benchmark in
        var buffer = ByteBufferAllocator().buffer(capacity: 1024)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            buffer.clear()
            encodeStartServiceACK(into: &buffer)
            blackHole(buffer.writerIndex)
        }
    }
    Benchmark("StartServiceACK encode libbson", configuration: configuration) { benchmark in
        var out = [UInt8](repeating: 0, count: 1024)
        out.withUnsafeMutableBufferPointer { out in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sdl_bench_encode_ack(out.baseAddress!, out.count))
            }
        }
    }
    Benchmark("StartServiceACK decode+read SDLBSON", configuration: configuration) { benchmark in
        let input = ByteBuffer(bytes: ackBytes)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let document = try! BSONDocument(validating: input)
            blackHole(walkBorrowing(document))
        }
    }
    Benchmark("StartServiceACK decode+read SDLBSON (owning iteration)", configuration: configuration) { benchmark in
        let input = ByteBuffer(bytes: ackBytes)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let document = try! BSONDocument(validating: input)
            blackHole(walk(document))
        }
    }
    Benchmark("StartServiceACK decode+read libbson", configuration: configuration) { benchmark in
        ackBytes.withUnsafeBufferPointer { input in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sdl_bench_decode(input.baseAddress!, input.count))
            }
        }
    }
    Benchmark("StartServiceACK decode+read libbson+validate", configuration: configuration) { benchmark in
        ackBytes.withUnsafeBufferPointer { input in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sdl_bench_validate_and_decode(input.baseAddress!, input.count))
            }
        }
    }

    // The same payload through SDLProtocol's typed API: what a session engine calls.
    let typedACK = try! StartServiceACKPayload(bson: ByteBuffer(bytes: ackBytes))
    var typedBuffer = ByteBuffer()
    try! typedACK.write(to: &typedBuffer)
    precondition(Array(typedBuffer.readableBytesView) == ackBytes, "StartServiceACKPayload writes other bytes")
    Benchmark("StartServiceACK encode SDLProtocol typed payload", configuration: configuration) { benchmark in
        var buffer = ByteBufferAllocator().buffer(capacity: 1024)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            buffer.clear()
            try! typedACK.write(to: &buffer)
            blackHole(buffer.writerIndex)
        }
    }
    Benchmark("StartServiceACK decode SDLProtocol typed payload", configuration: configuration) { benchmark in
        let input = ByteBuffer(bytes: ackBytes)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try! StartServiceACKPayload(bson: input))
        }
    }

    Benchmark("OnAppServiceData encode SDLBSON", configuration: configuration) { benchmark in
        var buffer = ByteBufferAllocator().buffer(capacity: 4096)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            buffer.clear()
            encodeOnAppServiceData(into: &buffer)
            blackHole(buffer.writerIndex)
        }
    }
    Benchmark("OnAppServiceData encode libbson", configuration: configuration) { benchmark in
        var out = [UInt8](repeating: 0, count: 4096)
        out.withUnsafeMutableBufferPointer { out in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sdl_bench_encode_app_service_data(out.baseAddress!, out.count))
            }
        }
    }
    Benchmark("OnAppServiceData decode+read SDLBSON", configuration: configuration) { benchmark in
        let input = ByteBuffer(bytes: serviceBytes)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let document = try! BSONDocument(validating: input)
            blackHole(walkBorrowing(document))
        }
    }
    Benchmark("OnAppServiceData decode+read SDLBSON (owning iteration)", configuration: configuration) { benchmark in
        let input = ByteBuffer(bytes: serviceBytes)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let document = try! BSONDocument(validating: input)
            blackHole(walk(document))
        }
    }
    Benchmark("OnAppServiceData decode+read libbson", configuration: configuration) { benchmark in
        serviceBytes.withUnsafeBufferPointer { input in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sdl_bench_decode(input.baseAddress!, input.count))
            }
        }
    }
    Benchmark("OnAppServiceData decode+read libbson+validate", configuration: configuration) { benchmark in
        serviceBytes.withUnsafeBufferPointer { input in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sdl_bench_validate_and_decode(input.baseAddress!, input.count))
            }
        }
    }
}
