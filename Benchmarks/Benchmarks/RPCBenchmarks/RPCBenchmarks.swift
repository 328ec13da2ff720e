import Benchmark
import CLibBSONBench
import Foundation
import NIOCore
import SDLBSON
import SDLRPC

// The RPC figures of the project: encode and decode of PublishAppService (fully populated
// manifest) and OnAppServiceData (WeatherServiceData with 24 hourly forecasts)
// - as JSON: SDLRPC's generated coding against Foundation's JSONEncoder/JSONDecoder on an
//   equivalent Codable model (checked to produce the same JSON value before timing);
// - as BSON: SDLRPC against libbson building the same document field by field and walking it
//   (reading every field), with and without bson_validate.
// Compare ratios within one run.

/// What one benchmarked message needs, prepared once.
struct Case<M: RPCStruct, C: Codable>: @unchecked Sendable {
    let name: String
    let message: M
    let codable: C
    let json: ByteBuffer
    let foundationJSON: Data
    let bson: ByteBuffer
    let bsonBytes: [UInt8]
    /// libbson's build steps for the same document, their strings kept alive for the run.
    let ops: [sdl_bench_op]

    init(_ name: String, _ message: M, _ codable: C.Type) {
        self.name = name
        self.message = message
        self.json = try! message.jsonParameters()
        self.codable = try! JSONDecoder().decode(C.self, from: Data(self.json.readableBytesView))
        self.foundationJSON = try! JSONEncoder().encode(self.codable)
        // Like for like: both models carry the same JSON value.
        let ours = try! JSONSerialization.jsonObject(with: Data(self.json.readableBytesView)) as! NSDictionary
        let theirs = try! JSONSerialization.jsonObject(with: self.foundationJSON) as! NSDictionary
        precondition(ours == theirs, "\(name): the Codable model does not match the generated one")
        self.bson = try! message.bsonParameters()
        self.bsonBytes = Array(self.bson.readableBytesView)
        var ops: [sdl_bench_op] = []
        Self.collect(try! BSONDocument(validating: self.bson), into: &ops)
        self.ops = ops
        // libbson builds exactly our bytes from the steps.
        var out = [UInt8](repeating: 0, count: self.bsonBytes.count)
        let length = self.ops.withUnsafeBufferPointer { sdl_bench_build($0.baseAddress, $0.count, &out, out.count) }
        precondition(length == self.bsonBytes.count && out == self.bsonBytes, "\(name): libbson builds other bytes")
        precondition(self.bsonBytes.withUnsafeBufferPointer { sdl_bench_validate_and_decode($0.baseAddress, $0.count) } != 0)
    }

    static func collect(_ document: BSONDocument, into ops: inout [sdl_bench_op]) {
        for element in document {
            let key = UnsafePointer(strdup(element.key))
            var op = sdl_bench_op(op: 0, key: key, string: nil, integer: 0, number: 0)
            switch element.type {
            case .document, .array:
                op.op = UInt8(element.type == .array ? SDL_BENCH_OP_ARRAY : SDL_BENCH_OP_DOCUMENT)
                ops.append(op)
                collect(element.type == .array ? element.arrayValue! : element.documentValue!, into: &ops)
                ops.append(sdl_bench_op(op: UInt8(SDL_BENCH_OP_END), key: nil, string: nil, integer: 0, number: 0))
                continue
            case .string: op.op = UInt8(SDL_BENCH_OP_UTF8); op.string = UnsafePointer(strdup(element.stringValue!))
            case .int32: op.op = UInt8(SDL_BENCH_OP_INT32); op.integer = Int64(element.int32Value!)
            case .int64: op.op = UInt8(SDL_BENCH_OP_INT64); op.integer = element.int64Value!
            case .double: op.op = UInt8(SDL_BENCH_OP_DOUBLE); op.number = element.doubleValue!
            case .bool: op.op = UInt8(SDL_BENCH_OP_BOOL); op.integer = element.boolValue! ? 1 : 0
            default: preconditionFailure("unexpected BSON type \(element.type) in RPC parameters")
            }
            ops.append(op)
        }
    }
}

func register<M: RPCStruct, C: Codable>(_ c: Case<M, C>) {
    let unchecked = RPCCodingOptions(validate: false)
    let encoder = JSONEncoder()
    let decoder = JSONDecoder()

    Benchmark("\(c.name) JSON encode SDLRPC") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! c.message.jsonParameters()) }
    }
    Benchmark("\(c.name) JSON encode SDLRPC (no validation)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! c.message.jsonParameters(options: unchecked)) }
    }
    Benchmark("\(c.name) JSON encode Foundation") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! encoder.encode(c.codable)) }
    }
    Benchmark("\(c.name) JSON decode SDLRPC") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! M(jsonParameters: c.json)) }
    }
    Benchmark("\(c.name) JSON decode SDLRPC (no validation)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! M(jsonParameters: c.json, options: unchecked)) }
    }
    Benchmark("\(c.name) JSON decode Foundation") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! decoder.decode(C.self, from: c.foundationJSON)) }
    }
    Benchmark("\(c.name) BSON encode SDLRPC") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! c.message.bsonParameters()) }
    }
    Benchmark("\(c.name) BSON encode SDLRPC (no validation)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! c.message.bsonParameters(options: unchecked)) }
    }
    Benchmark("\(c.name) BSON encode libbson") { benchmark in
        var out = [UInt8](repeating: 0, count: c.bsonBytes.count)
        c.ops.withUnsafeBufferPointer { ops in
            for _ in benchmark.scaledIterations { blackHole(sdl_bench_build(ops.baseAddress, ops.count, &out, out.count)) }
        }
    }
    Benchmark("\(c.name) BSON decode SDLRPC") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! M(bsonParameters: c.bson)) }
    }
    Benchmark("\(c.name) BSON decode SDLRPC (no validation)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! M(bsonParameters: c.bson, options: unchecked)) }
    }
    Benchmark("\(c.name) BSON walk libbson") { benchmark in
        c.bsonBytes.withUnsafeBufferPointer { bytes in
            for _ in benchmark.scaledIterations { blackHole(sdl_bench_decode(bytes.baseAddress, bytes.count)) }
        }
    }
    Benchmark("\(c.name) BSON validate+walk libbson") { benchmark in
        c.bsonBytes.withUnsafeBufferPointer { bytes in
            for _ in benchmark.scaledIterations { blackHole(sdl_bench_validate_and_decode(bytes.baseAddress, bytes.count)) }
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal], warmupIterations: 10, scalingFactor: .kilo,
        maxDuration: .seconds(2), maxIterations: 1_000_000)
    register(Case("PublishAppService", MeasurementData.publishAppService(), CodablePublishAppService.self))
    register(Case("OnAppServiceData x24", MeasurementData.onAppServiceData(), CodableOnAppServiceData.self))
}
