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
    ],
    targets: [
        // libbson, the reference implementation; the root package keeps its own CLibBSON
        // internal, so the benchmarks carry their own system-library target.
        .systemLibrary(
            name: "CLibBSONBench",
            pkgConfig: "libbson-1.0",
            providers: [.apt(["libbson-dev"])]
        ),
        // A plain loop for callgrind profiles of the SDLBSON side (and of the typed control
        // payloads built on it).
        .executableTarget(
            name: "BSONProfile",
            dependencies: [
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // A plain loop over one RPC coding operation, for callgrind and quick readings.
        .executableTarget(
            name: "RPCProfile",
            dependencies: [.product(name: "SDLRPC", package: "swift-sdl"), .product(name: "NIOCore", package: "swift-nio")]
        ),
        .executableTarget(
            name: "BSONBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
                "CLibBSONBench",
            ],
            path: "Benchmarks/BSONBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "RPCBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SDLRPC", package: "swift-sdl"),
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
                "CLibBSONBench",
            ],
            path: "Benchmarks/RPCBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "FrameBenchmarks",
            dependencies: [
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
                "CHeapInUse",
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
                "SessionBenchSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SDLSession", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Benchmarks/SessionBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
