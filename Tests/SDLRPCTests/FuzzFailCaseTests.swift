import Foundation
import NIOCore
import SDLRPC
import Testing

/// Every input FuzzRPC found that broke an invariant, replayed (Fuzz/FailCases/FuzzRPC/).
@Suite struct FuzzFailCaseTests {
    static func failCase(_ name: String) throws -> ByteBuffer {
        let path = SharedData.packageRoot.appendingPathComponent("Fuzz/FailCases/FuzzRPC/\(name)").path
        return ByteBuffer(bytes: try #require(FileManager.default.contents(atPath: path), "missing \(path)"))
    }

    /// A PublishAppService request whose manifest carries an unknown parameter with a NUL in its
    /// key ("handledcurr\nd83d\u0000…"). JSON can carry that key, so the message decodes and
    /// round-trips as JSON; BSON cannot, so encoding it as BSON is a typed error naming the key.
    @Test func unknownParameterWithANulInItsKey() throws {
        let message = try AnyRPCMessage(payload: try Self.failCase("unknown-key-with-nul"))
        let request = try #require(message.message as? SDLPublishAppServiceRequest)
        #expect(request.appServiceManifest.serviceType == "WEATHER")
        let key = "handledcurr\nd83d\u{0}03d\"\n"
        #expect(request.appServiceManifest.unknownParameters.entries.map(\.key).contains(key))
        let json = try message.payload(format: .json)
        #expect(try AnyRPCMessage(payload: json, format: .json).jsonParametersText() == message.jsonParametersText())
        do {
            _ = try message.payload(format: .bson)
            Issue.record("a key with a NUL was written as BSON")
        } catch {
            #expect(error.code == .invalidPayload)
            #expect(error.description.contains("a BSON key cannot contain a NUL byte"))
        }
    }

    /// "11E311E3", which the number invariant of FuzzRPC reads as the value of a parameter: the
    /// reader refuses 11E311 as out of range before it meets the second E (the invariant, not the
    /// reader, was wrong: it expected Swift's `Double(String)` to read the whole text).
    @Test func numberOutOfRangeThenMore() throws {
        let text = String(buffer: try Self.failCase("number-out-of-range-then-more"))
        #expect(text == "11E311E3")
        let error = try #require(throws: RPCError.self) { try RPCValue(jsonObject: #"{"x":"# + text + "}") }
        #expect(error.code == .numberOutOfRange)
        #expect(error.offset == 5)
        #expect(error.pathString == "x")
        #expect(Double(text) == nil)
        #expect(try RPCValue(jsonObject: #"{"x":11E3}"#) == .object(["x": .double(11_000)]))
    }
}
