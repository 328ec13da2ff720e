import BSONWorkloads
import ComparisonKit
import Foundation
import FrameWorkloads
import RPCWorkloads
import SessionBenchSupport
import TransportWorkloads

// BenchmarkReport: every comparison of Benchmarks/ in one process, ours and the reference
// interleaved, the medians of several runs of each, printed as a table (default), as JSON
// (`--json`) and as an SVG chart (`--svg PATH`). `scripts/benchmark-report` builds and runs it.
//
//   BenchmarkReport [--json] [--svg PATH] [--runs N] [--run-ms MS] [--operations N] [--filter TEXT]... [--list]
//
// `--operations N` runs each side N times per run instead of calibrating: under
// `valgrind --tool=callgrind`, with `--runs 1`, a function's instructions per operation are its
// count divided by N (plus the warm-up run and the allocation count's run: N + 1 + N).

let usage = "usage: BenchmarkReport [--json] [--svg PATH] [--runs N] [--run-ms MS] [--operations N] [--filter TEXT]... [--list]"

/// Every comparison, in report order.
func allComparisons() -> [Comparison] {
    FrameWorkloads.comparisons + BSONWorkloads.comparisons + RPCWorkloads.comparisons + SessionWorkloads.comparisons
        + TransportWorkloads.comparisons
}

/// Idle registered apps for the memory figures.
let idleApps = 50

// The apps' side of the idle-memory figures: this executable run again as a child process.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == IdleMemory.childFlag,
    let port = Int(CommandLine.arguments[2]), let apps = Int(CommandLine.arguments[3])
{
    IdleMemory.runChild(port: port, apps: apps)
}

var plan = MeasurementPlan()
var printJSON = false
var svgPath: String?
var filters: [String] = []
var listOnly = false
var arguments = CommandLine.arguments.dropFirst()[...]
while let argument = arguments.popFirst() {
    switch argument {
    case "--json": printJSON = true
    case "--list": listOnly = true
    case "--svg":
        guard let path = arguments.popFirst() else { fatalError(usage) }
        svgPath = path
    case "--runs":
        guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else { fatalError(usage) }
        plan.runs = value
    case "--run-ms":
        guard let value = arguments.popFirst().flatMap({ Double($0) }), value > 0 else { fatalError(usage) }
        plan.runNanoseconds = value * 1e6
    case "--operations":
        guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else { fatalError(usage) }
        plan.operations = value
    case "--filter":
        guard let value = arguments.popFirst() else { fatalError(usage) }
        filters.append(value.lowercased())
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
}

let comparisons = allComparisons().filter { comparison in
    filters.isEmpty || filters.contains { comparison.name.lowercased().contains($0) || comparison.group.lowercased() == $0 }
}
// The figures (not timings) are filtered as a row of this name.
let figuresName = "Loopback: idle registered apps' memory, \(idleApps) apps"
let figuresWanted =
    filters.isEmpty || filters.contains { figuresName.lowercased().contains($0) || TransportWorkloads.group.lowercased() == $0 }
if listOnly {
    comparisons.forEach { print("\($0.group): \($0.name) — \($0.ours.name) vs \($0.reference?.name ?? "no reference")") }
    if figuresWanted { print("\(TransportWorkloads.group): \(figuresName) (figures)") }
    exit(0)
}
if !allocationsCounted {
    FileHandle.standardError.write(Data(
        "note: allocations are not counted: run with LD_PRELOAD=.build/release/libMallocInterposerSwift.so (scripts/benchmark-report does)\n".utf8))
}

let machine = Machine.current()
var results: [Result] = []
for (index, comparison) in comparisons.enumerated() {
    FileHandle.standardError.write(Data("[\(index + 1)/\(comparisons.count)] \(comparison.name)\n".utf8))
    results.append(measure(comparison, plan))
}

var figures: [Figure] = []
if figuresWanted {
    FileHandle.standardError.write(Data("[figures] \(figuresName)\n".utf8))
    figures = IdleMemory.figures(apps: idleApps)
}

if printJSON {
    print(json(results, figures: figures, machine: machine, plan: plan))
} else {
    print(table(results, figures: figures, machine: machine, plan: plan))
}
if let svgPath {
    try! svg(results, figures: figures, machine: machine, plan: plan).write(toFile: svgPath, atomically: true, encoding: .utf8)
}
