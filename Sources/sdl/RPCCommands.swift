import ArgumentParser
import Foundation
import NIOCore
import SDLProtocol
import SDLRPC

/// `sdl rpc encode|decode`: RPC payloads (12-byte binary header + JSON or BSON parameters + bulk
/// data) from and to JSON parameters, validated against the spec (ARCHITECTURE.md §5).
struct RPCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpc",
        abstract: "Build and read RPC payloads, validated against the RPC spec (MOBILE_API.xml 8.0.0).",
        subcommands: [Encode.self, Decode.self])

    enum MessageKind: String, ExpressibleByArgument, CaseIterable {
        case request, response, notification, erroneousResponse

        var rpcType: RPCType {
            switch self {
            case .request: .request
            case .response: .response
            case .notification: .notification
            case .erroneousResponse: .erroneousResponse
            }
        }
    }

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, bson

        var parameterFormat: RPCParameterFormat { self == .json ? .json : .bson }
    }

    struct Encode: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate JSON parameters and print the RPC payload (binary header + parameters) as hex.")

        @Option(help: "The function's spec name (e.g. PublishAppService) or function id.")
        var function: String

        @Option(name: .customLong("type"), help: "request, response, notification or erroneousResponse (a response's parameters).")
        var kind: MessageKind

        @Option(help: "How the parameters travel: json, or bson (protocol version 5).")
        var format: Format = .json

        @Option(help: "The correlation id.")
        var correlationID: UInt32 = 0

        @Option(help: "Bulk data appended after the parameters, as hex.")
        var bulkHex: String?

        @Argument(help: "The parameters as a JSON object, or - for standard input.")
        var parameters: String

        func run() throws {
            try SDLTool.run {
                let json = self.parameters == "-" ? try readText("-") : self.parameters
                guard let bulk = parseHex(self.bulkHex ?? "") else { throw ToolError("--bulk-hex is not hex") }
                let message = try rpcMessage(
                    function: self.function, rpcType: self.kind.rpcType, correlationID: self.correlationID, json: json,
                    bulk: bulk)
                let payload = try message.payload(format: self.format.parameterFormat)
                print(payload.readableBytesView.hexString)
            }
        }
    }

    struct Decode: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print an RPC payload (hex) as {rpcType, functionId, functionName, correlationId, encoding, params}.")

        @Flag(help: "Print the parameters even when they break the spec (the violations go to stderr).")
        var noValidate = false

        @Argument(help: "The payload as hex (whitespace ignored), or - for standard input.")
        var hex: String

        func run() throws {
            try SDLTool.run {
                let text = self.hex == "-" ? try readText("-") : self.hex
                guard let bytes = parseHex(text) else { throw ToolError("not hex") }
                let description = RPCDescription(payload: try RPCPayload(parsing: ByteBuffer(bytes: bytes)))
                if let problem = description.problems.first, !self.noValidate {
                    throw ToolError(problem.detail)
                }
                for problem in description.problems {
                    FileHandle.standardError.write(Data("sdl: \(problem.detail)\n".utf8))
                }
                print(OutputJSON.object(description.fields).text)
            }
        }
    }
}

/// A typed RPC message from a function name (or id), an RPC type and JSON parameters, validated.
func rpcMessage(function: String, rpcType: RPCType, correlationID: UInt32, json: String, bulk: [UInt8]) throws -> AnyRPCMessage {
    do {
        if let id = UInt32(function) {
            return try AnyRPCMessage(
                functionID: FunctionID(rawValue: id), rpcType: rpcType, correlationID: correlationID, jsonParameters: json,
                bulkData: ByteBuffer(bytes: bulk))
        }
        return try AnyRPCMessage(
            functionName: function, rpcType: rpcType, correlationID: correlationID, jsonParameters: json,
            bulkData: ByteBuffer(bytes: bulk))
    } catch {
        throw ToolError(error.description)
    }
}

