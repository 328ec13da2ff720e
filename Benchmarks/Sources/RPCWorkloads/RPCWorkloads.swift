import BSONWorkloads
import CLibBSONBench
import ComparisonKit
import Foundation
import NIOCore
import SDLBSON
import SDLRPC

// The RPC rows: SDLRPC's generated coding of a message's parameters
// - as JSON, against Foundation's JSONEncoder/JSONDecoder on an equivalent Codable model (checked
//   to carry the same JSON value before anything is timed);
// - as BSON, against libbson building the same document field by field, and walking it (reading
//   every field).

/// One message prepared for its rows.
struct RPCCase<M: RPCStruct, C: Codable & Sendable>: @unchecked Sendable {
    let name: String
    let message: M
    let codable: C
    let json: ByteBuffer
    let foundationJSON: Data
    let bson: ByteBuffer
    let libbson: LibbsonProgram

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
        self.libbson = LibbsonProgram(try! BSONDocument(validating: self.bson))
        precondition(libbsonWalk(self.libbson.bytes) != 0)
    }

    /// The four comparisons of the message.
    var comparisons: [Comparison] {
        let message = self.message
        let json = self.json
        let bson = self.bson
        let codable = self.codable
        let foundationJSON = self.foundationJSON
        let libbson = self.libbson
        let jsonEncodeGoal = RatioGoal(20, "RPC JSON at least 20× Foundation both ways")
        return [
            Comparison(
                "\(self.name) JSON encode (\(json.readableBytes) B)", group: "RPC",
                ours: Workload("SDLRPC") { { for _ in 0..<$0 { sink(try! message.jsonParameters()) } } },
                reference: Workload("Foundation JSONEncoder") {
                    let encoder = JSONEncoder()
                    return { for _ in 0..<$0 { sink(try! encoder.encode(codable)) } }
                },
                goal: jsonEncodeGoal, scale: .kilo),
            Comparison(
                "\(self.name) JSON decode (\(json.readableBytes) B)", group: "RPC",
                ours: Workload("SDLRPC") { { for _ in 0..<$0 { sink(try! M(jsonParameters: json)) } } },
                reference: Workload("Foundation JSONDecoder") {
                    let decoder = JSONDecoder()
                    return { for _ in 0..<$0 { sink(try! decoder.decode(C.self, from: foundationJSON)) } }
                },
                goal: jsonEncodeGoal, scale: .kilo),
            Comparison(
                "\(self.name) BSON encode (\(bson.readableBytes) B)", group: "RPC",
                ours: Workload("SDLRPC") { { for _ in 0..<$0 { sink(try! message.bsonParameters()) } } },
                reference: libbsonBuilding(libbson),
                goal: RatioGoal(1.5, "typed RPC BSON encode at least 1.5× libbson building the same document"), scale: .kilo),
            Comparison(
                "\(self.name) BSON decode (\(bson.readableBytes) B)", group: "RPC",
                ours: Workload("SDLRPC") { { for _ in 0..<$0 { sink(try! M(bsonParameters: bson)) } } },
                reference: libbsonWalking(libbson.bytes),
                scale: .kilo),
        ]
    }
}

/// The RPC comparisons.
public enum RPCWorkloads {
    public static var comparisons: [Comparison] {
        RPCCase("PublishAppService", RPCSamples.publishAppService(), CodablePublishAppService.self).comparisons
            + RPCCase("OnAppServiceData x24", RPCSamples.onAppServiceData(), CodableOnAppServiceData.self).comparisons
            + RPCCase(
                "GetInteriorVehicleData response", RPCSamples.getInteriorVehicleDataResponse(),
                CodableGetInteriorVehicleDataResponse.self
            ).comparisons
            + RPCCase("OnInteriorVehicleData", RPCSamples.onInteriorVehicleData(), CodableOnInteriorVehicleData.self).comparisons
    }
}
