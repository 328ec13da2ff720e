import Foundation
import NIOCore
import SDLProtocol
import Testing

/// The package root: the folder that holds Package.swift.
let packageRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
            return url
        }
    }
    fatalError("no Package.swift above \(#filePath)")
}()

/// `../shared` next to the package root; the vectors and the RPC spec live there and are never
/// copied into the project.
let sharedRoot = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")

struct MissingTestData: Error, CustomStringConvertible {
    var path: String
    var description: String { "test data missing: \(path) (the tests read ../shared next to the package root)" }
}

/// Loads a vector file of ../shared/vectors as an array of JSON objects; throws (failing the test)
/// when the file is missing.
func loadVectors(_ name: String) throws -> [[String: Any]] {
    let url = sharedRoot.appendingPathComponent("vectors").appendingPathComponent(name)
    guard let data = FileManager.default.contents(atPath: url.path) else {
        throw MissingTestData(path: url.path)
    }
    return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
}

extension Array where Element == UInt8 {
    init(hex: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.utf8.count / 2)
        var iterator = hex.utf8.makeIterator()
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: preconditionFailure("bad hex digit \(c)")
            }
        }
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(nibble(high) << 4 | nibble(low))
        }
        self = bytes
    }

    var hex: String { self.map { String(format: "%02x", $0) }.joined() }
}

extension ByteBuffer {
    var bytes: [UInt8] { Array(self.readableBytesView) }
}

/// What a decoder run produced.
struct DecodeResult {
    var frames: [ProtocolFrame] = []
    var errors: [SDLProtocolError] = []
}

/// Runs a fresh decoder over `stream` cut into the given chunks, draining after every chunk and,
/// unless `finish` is false, after declaring the end of the stream.
func decode(_ chunks: [[UInt8]], limits: ProtocolLimits = ProtocolLimits(), mtus: MTUTable = MTUTable(),
            policy: FrameDecoder.InvalidHeaderPolicy = .resynchronize, finish: Bool = true) -> DecodeResult {
    var decoder = FrameDecoder(limits: limits, invalidHeaderPolicy: policy)
    var result = DecodeResult()
    for chunk in chunks {
        decoder.append(contentsOf: chunk)
        drain(&decoder, mtus: mtus, into: &result)
    }
    if finish {
        decoder.finish()
        drain(&decoder, mtus: mtus, into: &result)
    }
    return result
}

func drain(_ decoder: inout FrameDecoder, mtus: MTUTable = MTUTable(), into result: inout DecodeResult) {
    while true {
        do {
            guard let frame = try decoder.nextFrame(mtus: mtus) else { return }
            result.frames.append(frame)
        } catch {
            result.errors.append(error)
            if decoder.invalidHeaderPolicy == .fail { return }
        }
    }
}

/// The chunkings every stream vector is fed in: whole, one byte at a time, and split in two at
/// every offset. Streams above 8 KiB (a few vectors of one 128 KiB frame) are split at every
/// offset of their first and last 2 KiB and at every 509th offset between: a cut deep inside a
/// payload behaves like its neighbours, and all cuts would take minutes in a debug build.
func chunkings(of stream: [UInt8]) -> [(String, [[UInt8]])] {
    var result: [(String, [[UInt8]])] = [("whole", [stream]), ("byte by byte", stream.map { [$0] })]
    guard stream.count > 1 else { return result }
    for cut in 1..<stream.count {
        if stream.count > 8192, cut > 2048, cut < stream.count - 2048, cut % 509 != 0 { continue }
        result.append(("split at \(cut)", [Array(stream[..<cut]), Array(stream[cut...])]))
    }
    return result
}

/// Compares a header with a vector's `expect` object (the fields it lists).
func expectHeader(_ header: FrameHeader, _ expect: [String: Any], _ id: String,
                  sourceLocation: SourceLocation = #_sourceLocation) {
    func check<T: Equatable>(_ key: String, _ actual: T, _ transform: (Any) -> T?) {
        if let raw = expect[key] {
            #expect(actual == transform(raw), "\(id): \(key)", sourceLocation: sourceLocation)
        }
    }
    check("version", Int(header.version.rawValue)) { $0 as? Int }
    check("encrypted", header.protectionBit) { $0 as? Bool }
    check("frameTypeValue", Int(header.frameType.rawValue)) { $0 as? Int }
    check("serviceType", Int(header.serviceType.rawValue)) { $0 as? Int }
    check("frameInfo", Int(header.frameInfo)) { $0 as? Int }
    check("sessionId", Int(header.sessionID.rawValue)) { $0 as? Int }
    check("dataSize", Int(header.dataSize)) { $0 as? Int }
    check("headerSize", header.size) { $0 as? Int }
    if let frameType = expect["frameType"] as? String, !frameType.hasPrefix("invalid") {
        #expect(header.frameType.description == frameType, "\(id): frameType", sourceLocation: sourceLocation)
    }
    if let messageID = expect["messageId"] as? Int {
        #expect(header.messageID == MessageID(UInt32(messageID)), "\(id): messageId", sourceLocation: sourceLocation)
    } else if header.version == .v1 {
        #expect(header.messageID == nil, "\(id): v1 has no message id", sourceLocation: sourceLocation)
    }
}

/// Runs `body` and checks that it throws an `SDLProtocolError` with the expectation's code,
/// offset and detail (`==` compares codes only), and with `key` as its message key.
@discardableResult
func expectError<T>(_ expected: SDLProtocolError, key: MessageKey? = nil, _ comment: Comment? = nil,
                    sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: () throws -> T) -> SDLProtocolError? {
    do {
        _ = try body()
        Issue.record("expected \(expected), nothing thrown. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    } catch let error as SDLProtocolError {
        #expect(error.code == expected.code, comment, sourceLocation: sourceLocation)
        #expect(error.offset == expected.offset, comment, sourceLocation: sourceLocation)
        #expect(error.detail == expected.detail, comment, sourceLocation: sourceLocation)
        #expect(error.messageKey == key, comment, sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(expected), got \(error). \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    }
    return nil
}

/// A deterministic PRNG (SplitMix64) so that property tests are reproducible from their seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A JSON value's text with sorted keys, for comparing JSON values regardless of key order.
func canonicalJSON(_ value: Any) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
}
