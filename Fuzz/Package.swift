// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets. Build and run with Fuzz/run (it passes --sanitize fuzzer --sanitize address
// and -DFUZZING; without -DFUZZING each target is a plain executable that replays files).
// Fuzz/oss-fuzz/build.sh builds the same targets for OSS-Fuzz and ClusterFuzzLite.
let nio = Target.Dependency.product(name: "NIOCore", package: "swift-nio")

func fuzzTarget(_ name: String, _ modules: [String], extra: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: modules.map { .product(name: $0, package: "swift-sdl") } + [nio, "FuzzSupport"] + extra
    )
}

let package = Package(
    name: "swift-sdl-fuzz",
    dependencies: [
        // `name:` is required: CI clones the repository into a folder of another name.
        .package(name: "swift-sdl", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // The input reader, the replay entry point and the heap probe every target shares.
        .target(name: "FuzzSupport", dependencies: ["CFuzzHooks", nio]),
        // AddressSanitizer's heap statistics, with a weak fallback for builds without it.
        .target(name: "CFuzzHooks"),
        // libbson (Debian/Ubuntu libbson-dev), linked statically so that the fuzzer runs where
        // libbson is not installed (the OSS-Fuzz runner images); its header is found under
        // /usr/include, as pkg-config's static flags would make SwiftPM warn. The reference side
        // of FuzzBSONDiff only.
        .systemLibrary(name: "CLibBSONFuzz"),
        fuzzTarget("FuzzFrames", ["SDLProtocol"]),
        fuzzTarget("FuzzBSON", ["SDLBSON", "SDLProtocol"]),
        fuzzTarget("FuzzRPC", ["SDLRPC"]),
        fuzzTarget("FuzzControl", ["SDLProtocol", "SDLBSON"]),
        fuzzTarget("FuzzReassembly", ["SDLProtocol"]),
        fuzzTarget("FuzzBSONDiff", ["SDLBSON"], extra: ["CLibBSONFuzz"]),
        fuzzTarget("FuzzSession", ["SDLSession", "SDLProtocol", "SDLBSON"]),
    ],
    swiftLanguageModes: [.v6]
)
