import Benchmark
import ComparisonRows
import RPCWorkloads

// The RPC rows (`RPCWorkloads`): PublishAppService, OnAppServiceData (24 hourly forecasts), a
// GetInteriorVehicleData response and OnInteriorVehicleData, each JSON-encoded and decoded by
// SDLRPC and by Foundation on an equivalent Codable model, and BSON-encoded and decoded by SDLRPC
// and by libbson.
let benchmarks: @Sendable () -> Void = {
    for comparison in RPCWorkloads.comparisons {
        comparison.registerRows()
    }
}
