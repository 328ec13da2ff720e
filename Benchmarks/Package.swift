// swift-tools-version:6.1
import PackageDescription

// Benchmarks live in their own package so that the library's users never resolve
// package-benchmark. Run: cd Benchmarks && swift package benchmark
let package = Package(
    name: "swift-sdl-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        // `name:` is required: CI clones the repository into a folder of another name.
        .package(name: "swift-sdl", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The allocation counter package-benchmark uses, for the report's allocation columns
        // (the same URL as package-benchmark's, so that it resolves to one package).
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.1"),
    ],
    targets: [
        // libbson, the reference implementation; the root package keeps its own CLibBSON
        // internal, so the benchmarks carry their own system-library target.
        .systemLibrary(
            name: "CLibBSONBench",
            pkgConfig: "libbson-1.0",
            providers: [.apt(["libbson-dev"])]
        ),
        // The comparison type shared by the suites and the report: our side and a reference side
        // of the same operation on the same bytes.
        .target(name: "ComparisonKit"),
        // Registers comparisons as package-benchmark rows.
        .target(
            name: "ComparisonRows",
            dependencies: ["ComparisonKit", .product(name: "Benchmark", package: "benchmark")]
        ),
        // The C reference of the frame header rows: a minimal parse and write loop.
        .target(name: "CFrameHeaderLoop"),
        .target(
            name: "FrameWorkloads",
            dependencies: [
                "ComparisonKit", "CFrameHeaderLoop",
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "BSONWorkloads",
            dependencies: [
                "ComparisonKit", "CLibBSONBench",
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "RPCWorkloads",
            dependencies: [
                "ComparisonKit", "BSONWorkloads", "CLibBSONBench",
                .product(name: "SDLRPC", package: "swift-sdl"),
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The loopback transports: SDLNIO's app and head unit over 127.0.0.1 (video against a plain
        // NIO copy, RPC round trips, idle memory per app).
        .target(
            name: "TransportWorkloads",
            dependencies: [
                "ComparisonKit", "CHeapInUse",
                .product(name: "SDLNIO", package: "swift-sdl"),
                .product(name: "SDLRPC", package: "swift-sdl"),
                .product(name: "SDLSession", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Every comparison in one process, interleaved: the table, JSON and SVG chart of
        // scripts/benchmark-report.
        .executableTarget(
            name: "BenchmarkReport",
            dependencies: [
                "ComparisonKit", "FrameWorkloads", "BSONWorkloads", "RPCWorkloads", "SessionBenchSupport", "TransportWorkloads",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
        // A plain loop for callgrind profiles of the SDLBSON side (and of the typed control
        // payloads built on it).
        .executableTarget(
            name: "BSONProfile",
            dependencies: [
                "BSONWorkloads",
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // A plain loop over one frame-layer operation (header parse, stream visit or decode),
        // for callgrind and quick readings.
        .executableTarget(
            name: "FrameProfile",
            dependencies: ["FrameWorkloads", .product(name: "SDLProtocol", package: "swift-sdl"), .product(name: "NIOCore", package: "swift-nio")]
        ),
        // A plain loop over one RPC coding operation, for callgrind and quick readings.
        .executableTarget(
            name: "RPCProfile",
            dependencies: ["RPCWorkloads", .product(name: "SDLRPC", package: "swift-sdl"), .product(name: "NIOCore", package: "swift-nio")]
        ),
        .executableTarget(
            name: "BSONBenchmarks",
            dependencies: ["ComparisonRows", "BSONWorkloads", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/BSONBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "RPCBenchmarks",
            dependencies: ["ComparisonRows", "RPCWorkloads", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/RPCBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "FrameBenchmarks",
            dependencies: [
                "ComparisonRows", "FrameWorkloads",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Benchmarks/FrameBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // glibc's heap statistics, which Swift's Glibc module does not export.
        .target(name: "CHeapInUse"),
        // The in-memory app and head-unit engine pair the session rows and SessionProfile drive.
        .target(
            name: "SessionBenchSupport",
            dependencies: [
                "CHeapInUse", "ComparisonKit",
                .product(name: "SDLSession", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // A plain loop through the engine pair for callgrind, and the idle-memory reading (glibc's
        // heap statistics are meaningless under the benchmark runner's allocator).
        .executableTarget(
            name: "SessionProfile",
            dependencies: ["SessionBenchSupport", .product(name: "SDLSession", package: "swift-sdl"), .product(name: "NIOCore", package: "swift-nio")]
        ),
        .executableTarget(
            name: "SessionBenchmarks",
            dependencies: [
                "SessionBenchSupport", "ComparisonRows",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SDLSession", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Benchmarks/SessionBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "TransportBenchmarks",
            dependencies: ["ComparisonRows", "TransportWorkloads", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/TransportBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
