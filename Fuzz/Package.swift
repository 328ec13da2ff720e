// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets. Build and run with Fuzz/run (it passes --sanitize fuzzer --sanitize address
// and -DFUZZING; without -DFUZZING each target is a plain executable that replays files).
let package = Package(
    name: "swift-sdl-fuzz",
    dependencies: [
        // `name:` is required: CI clones the repository into a folder of another name.
        .package(name: "swift-sdl", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "FuzzFrames",
            dependencies: [
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "FuzzBSON",
            dependencies: [
                .product(name: "SDLBSON", package: "swift-sdl"),
                .product(name: "SDLProtocol", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "FuzzRPC",
            dependencies: [
                .product(name: "SDLRPC", package: "swift-sdl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
