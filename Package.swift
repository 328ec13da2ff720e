// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "swift-sdl",
    products: [
        .library(name: "SDLBSON", targets: ["SDLBSON"]),
        .library(name: "SDLProtocol", targets: ["SDLProtocol"]),
        .library(name: "SDLRPC", targets: ["SDLRPC"]),
        .library(name: "SDLSession", targets: ["SDLSession"]),
        .library(name: "SDLTestHeadUnit", targets: ["SDLTestHeadUnit"]),
        .library(name: "SDLRuntime", targets: ["SDLRuntime"]),
        .library(name: "SDLNIO", targets: ["SDLNIO"]),
        .library(name: "SDLManagers", targets: ["SDLManagers"]),
        .executable(name: "sdl", targets: ["sdl"]),
        .executable(name: "sdl-rpc-gen", targets: ["sdl-rpc-gen"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-transport-services", from: "1.28.0"),
    ],
    targets: [
        // BSON codec. Knows nothing of SDL.
        .target(
            name: "SDLBSON",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        // Frames, fragmentation, reassembly, RPC binary header, control payloads.
        .target(
            name: "SDLProtocol",
            dependencies: ["SDLBSON", .product(name: "NIOCore", package: "swift-nio")]
        ),
        // RPC runtime (JSON and BSON coding, validation, envelope) + the generated RPC types.
        .target(
            name: "SDLRPC",
            dependencies: ["SDLBSON", "SDLProtocol", .product(name: "NIOCore", package: "swift-nio")]
        ),
        // The sans-IO session engine: negotiation, sessions, services, scheduling, secondary
        // transports, heartbeat, security hooks. Knows frames and control payloads, not RPCs.
        .target(
            name: "SDLSession",
            dependencies: ["SDLProtocol", "SDLBSON", .product(name: "NIOCore", package: "swift-nio")]
        ),
        // The simulated head unit behind `sdl headunit`, sans-IO: registration, HMI levels,
        // permissions, an app-service registry, a remote-control vehicle, older RPC versions on
        // request. Knows RPC messages, not frames, sessions or sockets.
        .target(
            name: "SDLTestHeadUnit",
            dependencies: ["SDLRPC", "SDLProtocol", .product(name: "NIOCore", package: "swift-nio")]
        ),
        // The app and head-unit runtimes over any transport: registration, correlation ids,
        // requests both ways, notifications, media with back-pressure, the session engine driven on
        // one event loop. Knows connections as byte streams (SDLTransportConnection), not sockets:
        // NIOCore only, no NIOPosix.
        .target(
            name: "SDLRuntime",
            dependencies: [
                "SDLSession", "SDLProtocol", "SDLRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // SwiftNIO socket transports for the runtimes: TCP (NIOPosix) and WebSocket (NIOWebSocket).
        .target(
            name: "SDLNIO",
            dependencies: [
                "SDLRuntime", "SDLSession",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // Network.framework's transport, where there is one.
                .product(
                    name: "NIOTransportServices", package: "swift-nio-transport-services",
                    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
            ]
        ),
        // `sdl headunit` as a library: the simulated head unit served by SDLRuntime's head-unit
        // server over SDLNIO's TCP (transcript, media byte counts). No product: the CLI and the
        // tests use it.
        .target(
            name: "SDLHeadUnitRuntime",
            dependencies: [
                "SDLNIO", "SDLRuntime", "SDLTestHeadUnit", "SDLSession", "SDLProtocol", "SDLRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `sdl app` as a library: scripted app sessions (app services and remote control on the
        // managers, video, ping) over SDLAppConnection, step by step with a transcript. No product.
        .target(
            name: "SDLAppScripts",
            dependencies: [
                "SDLManagers", "SDLNIO", "SDLSession", "SDLProtocol", "SDLRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The app-side managers on the app runtime: remote control (SDL-0327) and app services.
        // One module: both are the managers layer, and share the error type, the subscription
        // machinery (observers, head-unit subscribe and unsubscribe, caches) and the version rules.
        .target(
            name: "SDLManagers",
            dependencies: [
                "SDLRuntime", "SDLRPC", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // Reads MOBILE_API.xml and writes Sources/SDLRPC/Generated. No product: only sdl-rpc-gen
        // and the tests use it.
        .target(name: "SDLRPCGenerator"),
        .executableTarget(
            name: "sdl-rpc-gen",
            dependencies: [
                "SDLRPCGenerator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "sdl",
            dependencies: [
                "SDLProtocol",
                "SDLBSON",
                "SDLRPC",
                "SDLHeadUnitRuntime",
                "SDLAppScripts",
                "SDLTestHeadUnit",
                "SDLNIO",
                "SDLSession",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libbson, the reference BSON implementation. Tests, fuzzers and benchmarks only:
        // no library product depends on it.
        .systemLibrary(
            name: "CLibBSON",
            pkgConfig: "libbson-1.0",
            providers: [.apt(["libbson-dev"])]
        ),
        // What every test target shares: the ../shared fixture lookup and the typed models of the
        // vector files, hex, SplitMix64, stream chunkings, awkward buffer layouts, a small-stack
        // runner. Test targets only: no product, no library depends on it.
        .target(
            name: "SDLTestSupport",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            path: "Tests/SDLTestSupport"
        ),
        .testTarget(
            name: "SDLProtocolTests",
            dependencies: ["SDLProtocol", "SDLTestSupport", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .testTarget(
            name: "SDLBSONTests",
            dependencies: ["SDLBSON", "CLibBSON", "SDLTestSupport", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .testTarget(
            name: "SDLRPCTests",
            dependencies: [
                "SDLRPC", "SDLBSON", "CLibBSON", "SDLTestSupport", .product(name: "NIOCore", package: "swift-nio"),
                // The spec model drives the generic round-trip tests of every message.
                "SDLRPCGenerator",
            ]
        ),
        .testTarget(
            name: "SDLSessionTests",
            dependencies: ["SDLSession", "SDLProtocol", "SDLBSON", "SDLTestSupport", .product(name: "NIOCore", package: "swift-nio")],
            // The tests read their golden frames (a vector file of the project's own) in place.
            exclude: ["Vectors"]
        ),
        .testTarget(
            name: "SDLTestHeadUnitTests",
            dependencies: [
                "SDLTestHeadUnit", "SDLRPC", "SDLProtocol", "SDLTestSupport", .product(name: "NIOCore", package: "swift-nio"),
                // The spec model builds a request of every function for the UNSUPPORTED_REQUEST test.
                "SDLRPCGenerator",
            ],
            // The tests read their fixtures (a policy table of the project's own) in place.
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "SDLNIOTests",
            dependencies: [
                "SDLNIO", "SDLSession", "SDLProtocol", "SDLRPC", "SDLTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "SDLManagersTests",
            dependencies: [
                "SDLManagers", "SDLHeadUnitRuntime", "SDLNIO", "SDLRPC", "SDLTestHeadUnit", "SDLTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SDLRPCGeneratorTests",
            dependencies: ["SDLRPCGenerator", "SDLTestSupport"]
        ),
        .testTarget(
            name: "SDLRuntimeTests",
            dependencies: [
                "SDLHeadUnitRuntime", "SDLAppScripts", "SDLManagers", "SDLTestHeadUnit", "SDLNIO", "SDLSession", "SDLRPC", "SDLProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "sdlTests",
            dependencies: ["sdl", "SDLTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
