// swift-tools-version:6.1
import PackageDescription

// Benchmarks live in their own package so that the library's users never build package-benchmark.
// Run: cd Benchmarks && swift package benchmark
let package = Package(
    name: "swift-sdl-benchmarks",
    dependencies: [
        // `name:` is required: CI clones into a folder of another name.
        .package(name: "swift-sdl", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
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
    ]
)
