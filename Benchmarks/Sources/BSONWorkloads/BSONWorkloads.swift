import CLibBSONBench
import ComparisonKit
import NIOCore
import SDLBSON
import SDLProtocol

/// A control payload of the spec, as a v5 session sends it.
public struct ControlPayloadSample: Sendable {
    public var name: String
    public var frameInfo: ControlFrameInfo
    public var payload: ControlPayload
}

/// Every control payload of protocol spec 5.4.1 §3.1.3 that has fields (EndServiceACK,
/// RegisterSecondaryTransport, its ACK and the heartbeats carry none), filled as SDL Core and the
/// official libraries fill them.
public let controlPayloadSamples: [ControlPayloadSample] = [
    ControlPayloadSample(
        name: "StartService (RPC)", frameInfo: .startService,
        payload: .startService(StartServicePayload(protocolVersion: "5.4.1"))),
    ControlPayloadSample(
        name: "StartService (video)", frameInfo: .startService,
        payload: .startService(StartServicePayload(height: 720, width: 1280, videoProtocol: "RAW", videoCodec: "H264"))),
    ControlPayloadSample(
        name: "StartServiceACK (RPC)", frameInfo: .startServiceACK,
        payload: .startServiceACK(StartServiceACKPayload(
            protocolVersion: "5.4.1", hashID: 0x1234567, mtu: 131_084, secondaryTransports: ["TCP_WIFI"],
            audioServiceTransports: [1, 2], videoServiceTransports: [2, 1]))),
    ControlPayloadSample(
        name: "StartServiceACK (video)", frameInfo: .startServiceACK,
        payload: .startServiceACK(StartServiceACKPayload(
            mtu: 131_072, height: 720, width: 1280, videoProtocol: "RAW", videoCodec: "H264"))),
    ControlPayloadSample(
        name: "StartServiceNAK", frameInfo: .startServiceNAK,
        payload: .startServiceNAK(ServiceNAKPayload(rejectedParams: ["height", "width"], reason: "unsupported resolution"))),
    ControlPayloadSample(
        name: "EndService", frameInfo: .endService,
        payload: .endService(EndServicePayload(hashID: 0x1234567))),
    ControlPayloadSample(
        name: "EndServiceNAK", frameInfo: .endServiceNAK,
        payload: .endServiceNAK(ServiceNAKPayload(rejectedParams: ["hashId"], reason: "hash id mismatch"))),
    ControlPayloadSample(
        name: "RegisterSecondaryTransportNAK", frameInfo: .registerSecondaryTransportNAK,
        payload: .registerSecondaryTransportNAK(RegisterSecondaryTransportNAKPayload(reason: "secondary transport not allowed"))),
    ControlPayloadSample(
        name: "TransportEventUpdate", frameInfo: .transportEventUpdate,
        payload: .transportEventUpdate(TransportEventUpdatePayload(tcpIPAddress: "192.168.1.20", tcpPort: 12345))),
]

/// The app-service documents of the BSON rows: (label, hourly forecasts).
public let appServiceDocuments: [(label: String, hours: Int)] = [("2 KB", 4), ("6 KB", 19)]

/// The BSON comparisons: SDLProtocol's typed control payloads and SDLBSON's writer and validated
/// reads against libbson (Debian `libbson-dev`).
public enum BSONWorkloads {
    public static var comparisons: [Comparison] {
        var rows: [Comparison] = []
        let encodeGoal = RatioGoal(3, "control payloads encode at least 3× libbson")
        let decodeGoal = RatioGoal(2, "control payloads decode+read at least 2× libbson's walk")
        for sample in controlPayloadSamples {
            var buffer = ByteBuffer()
            try! sample.payload.write(to: &buffer)
            let bytes = buffer
            let program = LibbsonProgram(try! BSONDocument(validating: bytes))
            let decoded = try! ControlPayload(frameInfo: sample.frameInfo, version: .v5, payload: bytes)
            precondition(decoded == sample.payload, "\(sample.name) does not round-trip")
            rows.append(Comparison(
                "\(sample.name) encode (\(bytes.readableBytes) B)", group: "Control payloads",
                ours: writing("SDLProtocol") { try! sample.payload.write(to: &$0) },
                reference: libbsonBuilding(program),
                goal: encodeGoal, allocationGoal: 1, scale: .kilo))
            let decoding = Workload("SDLProtocol") {
                { count in
                    for _ in 0..<count {
                        sink(try! ControlPayload(frameInfo: sample.frameInfo, version: .v5, payload: bytes))
                    }
                }
            }
            rows.append(Comparison(
                "\(sample.name) decode+read (\(bytes.readableBytes) B)", group: "Control payloads",
                ours: decoding,
                reference: libbsonWalking(program.bytes),
                goal: decodeGoal, scale: .kilo))
            // Our decode always validates (hostile input gets a typed error), libbson's walk
            // does not: the like-for-like row.
            rows.append(Comparison(
                "\(sample.name) decode+read, both validating (\(bytes.readableBytes) B)", group: "Control payloads",
                ours: decoding,
                reference: libbsonValidatingAndWalking(program.bytes), scale: .kilo))
        }
        // The StartServiceACK again, written with SDLBSON's writer directly (no typed payload) against
        // libbson's macros written by hand: the two libraries alone.
        var ackBuffer = ByteBuffer()
        encodeStartServiceACK(into: &ackBuffer)
        let ackBytes = Array(ackBuffer.readableBytesView)
        precondition(ackBytes == libbsonBytes { sdl_bench_encode_ack($0, $1) }, "StartServiceACK bytes differ from libbson's")
        rows.append(Comparison(
            "StartServiceACK document encode (\(ackBytes.count) B)", group: "BSON documents",
            ours: writing("SDLBSON writer") { encodeStartServiceACK(into: &$0) },
            reference: Workload("libbson") {
                let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1024)
                return { count in
                    for _ in 0..<count { sink(sdl_bench_encode_ack(out.baseAddress, out.count)) }
                }
            },
            goal: encodeGoal, allocationGoal: 0, scale: .kilo))
        rows.append(Comparison(
            "StartServiceACK document decode+read (\(ackBytes.count) B)", group: "BSON documents",
            ours: validateAndVisit(ackBytes), reference: libbsonWalking(ackBytes), goal: decodeGoal, scale: .kilo))
        for (label, hours) in appServiceDocuments {
            var buffer = ByteBuffer()
            encodeAppServiceDocument(hours: hours, into: &buffer)
            let bytes = Array(buffer.readableBytesView)
            precondition(
                bytes == libbsonBytes { sdl_bench_encode_app_service_data($0, $1, Int32(hours)) },
                "the \(label) app-service document differs from libbson's")
            let document = try! BSONDocument(validating: buffer)
            precondition(walkBorrowing(document) == libbsonWalk(bytes) && walk(document) == libbsonWalk(bytes))
            let size = "\(label), \(bytes.count) B"
            rows.append(Comparison(
                "App-service document encode (\(size))", group: "BSON documents",
                ours: writing("SDLBSON") { encodeAppServiceDocument(hours: hours, into: &$0) },
                reference: Workload("libbson") {
                    let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 8192)
                    return { count in
                        for _ in 0..<count {
                            sink(sdl_bench_encode_app_service_data(out.baseAddress, out.count, Int32(hours)))
                        }
                    }
                },
                goal: RatioGoal(2, "app-service documents encode at least 2× libbson"), allocationGoal: 0, scale: .kilo))
            let readGoal = RatioGoal(2, "app-service documents decode+read at least 2× libbson")
            rows.append(Comparison(
                "App-service document decode+read (\(size))", group: "BSON documents",
                ours: validateAndVisit(bytes), reference: libbsonWalking(bytes),
                goal: readGoal, scale: .kilo))
            rows.append(Comparison(
                "App-service document decode+read, both validating (\(size))", group: "BSON documents",
                ours: validateAndVisit(bytes), reference: libbsonValidatingAndWalking(bytes), scale: .kilo))
        }
        return rows
    }
}

/// Our side of an encode row: `write` appends the document to a buffer that already has the
/// capacity (cleared before each operation).
func writing(_ name: String, _ write: @escaping @Sendable (inout ByteBuffer) -> Void) -> Workload {
    Workload(name) {
        let state = RunState(ByteBufferAllocator().buffer(capacity: 8192))
        return { count in
            state.withValue { out in
                for _ in 0..<count {
                    out.clear()
                    write(&out)
                }
                sink(out)
            }
        }
    }
}

/// SDLBSON's validation of the whole document, then every field read through borrowed views.
func validateAndVisit(_ bytes: [UInt8]) -> Workload {
    Workload("SDLBSON") {
        let input = ByteBuffer(bytes: bytes)
        return { count in
            for _ in 0..<count { sink(walkBorrowing(try! BSONDocument(validating: input))) }
        }
    }
}

/// libbson reading every field (bson_init_static + bson_iter), without bson_validate.
public func libbsonWalking(_ bytes: [UInt8]) -> Workload {
    Workload("libbson walk") {
        { count in
            bytes.withUnsafeBufferPointer { bytes in
                for _ in 0..<count { sink(sdl_bench_decode(bytes.baseAddress, bytes.count)) }
            }
        }
    }
}

/// libbson validating the document (bson_validate, UTF-8 included), then reading every field.
public func libbsonValidatingAndWalking(_ bytes: [UInt8]) -> Workload {
    Workload("libbson validate+walk") {
        { count in
            bytes.withUnsafeBufferPointer { bytes in
                for _ in 0..<count { sink(sdl_bench_validate_and_decode(bytes.baseAddress, bytes.count)) }
            }
        }
    }
}

/// libbson building the document of `program` field by field, copying it out.
public func libbsonBuilding(_ program: LibbsonProgram) -> Workload {
    Workload("libbson") {
        let out = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: program.bytes.count)
        return { count in
            for _ in 0..<count { sink(program.build(into: out)) }
        }
    }
}
