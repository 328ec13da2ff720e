import Foundation
import NIOCore
import RPCWorkloads
import SDLRPC

// A plain loop over one RPC coding operation, for instruction profiles (callgrind) and quick
// ns/op readings while optimising: RPCProfile OPERATION [ITERATIONS]
// OPERATION: json-encode, json-decode, bson-encode, bson-decode, each of `publish` (default),
// `weather` (OnAppServiceData x24), `climate` (GetInteriorVehicleData response) or `seat`
// (OnInteriorVehicleData) as a second word, e.g. "bson-encode weather".

let arguments = Array(CommandLine.arguments.dropFirst())
let operation = arguments.first ?? "bson-encode"
let message = ["weather", "climate", "seat"].first(where: arguments.contains) ?? "publish"
let iterations = arguments.compactMap(Int.init).first ?? 100_000

func run<M: RPCStruct>(_ message: M) -> (Int, Duration) {
    let json = try! message.jsonParameters()
    let bson = try! message.bsonParameters()
    var sink = 0
    let clock = ContinuousClock()
    let elapsed = clock.measure {
        for _ in 0..<iterations {
            switch operation {
            case "json-encode": sink &+= try! message.jsonParameters().readableBytes
            case "json-decode": sink &+= try! M(jsonParameters: json).unknownParameters.count
            case "bson-encode": sink &+= try! message.bsonParameters().readableBytes
            case "bson-decode": sink &+= try! M(bsonParameters: bson).unknownParameters.count
            default: fatalError("unknown operation \(operation)")
            }
        }
    }
    return (sink, elapsed)
}

let (sink, elapsed) =
    switch message {
    case "weather": run(RPCSamples.onAppServiceData())
    case "climate": run(RPCSamples.getInteriorVehicleDataResponse())
    case "seat": run(RPCSamples.onInteriorVehicleData())
    default: run(RPCSamples.publishAppService())
    }
let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
print("\(operation) \(message): \(Int(ns / Double(iterations))) ns/op (\(sink))")
