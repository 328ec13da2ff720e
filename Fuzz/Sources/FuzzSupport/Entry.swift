import CFuzzHooks

#if !FUZZING
import Foundation
#endif

/// Runs one input through `check` (the body of every target's `LLVMFuzzerTestOneInput`).
@inline(__always)
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int, _ check: (UnsafeRawBufferPointer) -> Void) -> CInt {
    check(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Without libFuzzer: runs `check` over each file named on the command line (saved crashers,
/// corpus entries), printing `ok PATH` after each.
public func replayFiles(_ check: (UnsafeRawBufferPointer) -> Void) {
    #if FUZZING
    preconditionFailure("a fuzzing build is driven by libFuzzer")
    #else
    for path in CommandLine.arguments.dropFirst() {
        guard let data = FileManager.default.contents(atPath: path) else { fatalError("cannot read \(path)") }
        data.withUnsafeBytes { check($0) }
        print("ok \(path)")
    }
    #endif
}

/// Bytes held on the heap now, as AddressSanitizer counts them; nil in a build without it (the
/// plain replay build), where heap bounds are not checked.
public func liveHeapBytes() -> Int? {
    let bytes = sdl_fuzz_live_heap_bytes()
    return bytes == 0 ? nil : Int(bytes)
}

#if !FUZZING
/// Whether the replay build prints what the structured targets do (`SDL_FUZZ_TRACE=1`).
private let tracing = ProcessInfo.processInfo.environment["SDL_FUZZ_TRACE"] != nil
#endif

/// Prints a step of a structured target's program when replaying with `SDL_FUZZ_TRACE=1` (to
/// read a crasher); nothing in a fuzzing build.
@inline(__always)
public func trace(_ message: @autoclosure () -> String) {
    #if !FUZZING
    // To stderr, unbuffered: a crash must not swallow the last steps.
    if tracing { FileHandle.standardError.write(Data((message() + "\n").utf8)) }
    #endif
}
