import CLibBSONBench
import NIOCore
import SDLBSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The documents of the BSON rows, written field by field with SDLBSON's writer (the C shim writes
// the same bytes with libbson), and the walks that read every field on both sides.

/// The StartServiceACK control payload `{protocolVersion "5.4.1", hashId int32, mtu int64,
/// secondaryTransports ["TCP_WIFI"], audioServiceTransports [1,2], videoServiceTransports [2,1]}`;
/// the same bytes as `sdl_bench_encode_ack`.
@inline(__always)
public func encodeStartServiceACK(into buffer: inout ByteBuffer) {
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

/// An OnAppServiceData-shaped weather document with `hours` hourly forecasts: 2,033 bytes with 4,
/// 2,589 with 6, 6,212 with 19. The same fields, values and order as
/// `sdl_bench_encode_app_service_data` in the C shim.
public func encodeAppServiceDocument(hours: Int, into buffer: inout ByteBuffer) {
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
                    for i in 0..<hours {
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

/// Reads every field of a validated document (recursing) through owning iteration, folding the
/// values into a checksum the same way `sdl_bench_walk` does on the libbson side.
public func walk(_ document: BSONDocument) -> UInt64 {
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
public func visit(_ element: borrowing BSONElementView) -> UInt64 {
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

/// `visit` over a whole document.
public func walkBorrowing(_ document: BSONDocument) -> UInt64 {
    var sum: UInt64 = 0
    document.forEachElement { sum &+= visit($0) }
    return sum
}

/// The bytes a libbson encoder writes into a 64 KiB scratch array.
public func libbsonBytes(_ encode: (UnsafeMutablePointer<UInt8>, Int) -> Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 64 << 10)
    let n = out.withUnsafeMutableBufferPointer { encode($0.baseAddress!, $0.count) }
    return Array(out[..<n])
}

/// libbson's checksum of every field of `bytes` (`sdl_bench_decode`).
public func libbsonWalk(_ bytes: [UInt8]) -> UInt64 {
    bytes.withUnsafeBufferPointer { sdl_bench_decode($0.baseAddress!, $0.count) }
}

/// The steps that make libbson build a given document field by field (`sdl_bench_build`), for
/// documents whose shape is only known at run time: the control payloads and RPC parameters.
/// Owns the C strings the steps point to.
public final class LibbsonProgram: @unchecked Sendable {
    public private(set) var ops: [sdl_bench_op] = []
    private var strings: [UnsafeMutablePointer<CChar>] = []
    /// The document's bytes, which `build` reproduces.
    public let bytes: [UInt8]

    /// Records the steps for `document`, then checks that libbson builds exactly its bytes.
    public init(_ document: BSONDocument) {
        self.bytes = Array(document.buffer.readableBytesView)
        self.collect(document)
        let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: self.bytes.count)
        defer { out.deallocate() }
        let length = self.build(into: out)
        precondition(length == self.bytes.count && Array(out) == self.bytes, "libbson builds other bytes than SDLBSON")
    }

    deinit {
        self.strings.forEach { free($0) }
    }

    private func string(_ value: String) -> UnsafePointer<CChar> {
        let copy = strdup(value)!
        self.strings.append(copy)
        return UnsafePointer(copy)
    }

    private func collect(_ document: BSONDocument) {
        for element in document {
            var op = sdl_bench_op(op: 0, key: self.string(element.key), string: nil, integer: 0, number: 0)
            switch element.type {
            case .document, .array:
                let isArray = element.type == .array
                op.op = UInt8(isArray ? SDL_BENCH_OP_ARRAY : SDL_BENCH_OP_DOCUMENT)
                self.ops.append(op)
                self.collect(isArray ? element.arrayValue! : element.documentValue!)
                self.ops.append(sdl_bench_op(op: UInt8(SDL_BENCH_OP_END), key: nil, string: nil, integer: 0, number: 0))
                continue
            case .string:
                op.op = UInt8(SDL_BENCH_OP_UTF8)
                op.string = self.string(element.stringValue!)
            case .int32:
                op.op = UInt8(SDL_BENCH_OP_INT32)
                op.integer = Int64(element.int32Value!)
            case .int64:
                op.op = UInt8(SDL_BENCH_OP_INT64)
                op.integer = element.int64Value!
            case .double:
                op.op = UInt8(SDL_BENCH_OP_DOUBLE)
                op.number = element.doubleValue!
            case .bool:
                op.op = UInt8(SDL_BENCH_OP_BOOL)
                op.integer = element.boolValue! ? 1 : 0
            default: preconditionFailure("no libbson step for BSON type \(element.type)")
            }
            self.ops.append(op)
        }
    }

    /// Builds the document with libbson and copies it to `out`; returns its length.
    @inline(__always)
    public func build(into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        self.ops.withUnsafeBufferPointer { ops in sdl_bench_build(ops.baseAddress, ops.count, out.baseAddress, out.count) }
    }
}
