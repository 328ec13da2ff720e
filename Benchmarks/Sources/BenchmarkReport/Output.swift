import ComparisonKit
import Foundation

/// The machine a report was measured on.
struct Machine {
    let cpu: String
    let cores: Int
    let date: String
    /// The 1-minute load average when the report started: above the core count, other processes
    /// shared the cores and the times are noisier (the ratios less so: both sides share alike).
    let load: String

    static func current() -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n")
            .first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init)
        return Machine(
            cpu: model ?? "unknown CPU", cores: ProcessInfo.processInfo.activeProcessorCount,
            date: formatter.string(from: Date()), load: load ?? "unknown")
    }

    var summary: String { "\(self.cpu), \(self.cores) cores, \(self.date), load average \(self.load) at the start" }
}

extension Result {
    /// The row's unit and both sides' values in it: MB/s for bandwidth rows, items per second for
    /// throughput rows, else ns per item.
    var presented: (unit: String, ours: Double, reference: Double?) {
        let items = Double(self.comparison.items.count)
        let value: (Double) -> Double
        let unit: String
        if let bytes = self.comparison.bytesPerOperation {
            (unit, value) = ("MB/s", { Double(bytes) * 1e3 / $0 })
        } else if self.comparison.perSecond {
            (unit, value) = ("\(self.comparison.items.noun)s/s", { items * 1e9 / $0 })
        } else {
            (unit, value) = ("ns/\(self.comparison.items.noun)", { $0 / items })
        }
        return (unit, value(self.oursNanoseconds), self.referenceNanoseconds.map(value))
    }
}

private func format(_ value: Double) -> String {
    switch value {
    case 1000...: String(format: "%.0f", value)
    case 100..<1000: String(format: "%.1f", value)
    case 1..<100: String(format: "%.2f", value)
    default: String(format: "%.3f", value)
    }
}

private func formatRatio(_ ratio: Double) -> String {
    ratio >= 10 ? String(format: "%.1f×", ratio) : String(format: "%.2f×", ratio)
}

private func formatAllocations(_ value: Double?) -> String {
    value.map { String(format: "%.2f", $0) } ?? "n/a"
}

private func padded(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

/// The text table: ours, the reference, the ratio and the goal, then allocations per item; the
/// figures last.
func table(_ results: [Result], figures: [Figure], machine: Machine, plan: MeasurementPlan) -> String {
    var lines = [
        "swift-sdl benchmark report — \(machine.summary); medians of \(plan.runs) interleaved runs",
        "ratio = reference time / our time (above 1×: ours is faster); allocs = mallocs per item, ours / reference",
        "",
    ]
    let nameWidth = min(72, (results.map(\.comparison.name.count).max() ?? 10) + 2)
    var group = ""
    for result in results {
        if result.comparison.group != group {
            group = result.comparison.group
            lines.append("== \(group)")
        }
        let (unit, ours, reference) = result.presented
        var goal = ""
        if let target = result.comparison.goal {
            goal = "goal ≥ \(formatRatio(target.minimum)) " + (result.goalMet == true ? "met" : "MISSED")
        }
        var allocations = "allocs \(formatAllocations(result.oursAllocations)) / \(formatAllocations(result.referenceAllocations))"
        if let bound = result.comparison.allocationGoal {
            allocations += " (goal ≤ \(format(bound)) " + (result.allocationGoalMet == false ? "MISSED)" : "met)")
        }
        let referenceText = result.comparison.reference.map { "\($0.name) \(reference.map(format) ?? "")" } ?? "(no reference)"
        lines.append(
            padded(result.comparison.name, nameWidth)
                + padded("\(format(ours)) \(unit)", 22)
                + padded(referenceText, 36)
                + padded(result.ratio.map(formatRatio) ?? "", 9)
                + padded(goal, 22) + allocations)
    }
    for figure in figures {
        if figure.group != group {
            group = figure.group
            lines.append("== \(group)")
        }
        lines.append(padded(figure.name, nameWidth) + padded("\(format(figure.value)) \(figure.unit)", 26) + figure.note)
    }
    return lines.joined(separator: "\n")
}

/// The rows as a JSON array of `{name, ours, reference, referenceName, unit, ratio}`, each with
/// the group, our side's name, the goal, the allocations per item, the machine and the date; a
/// row without a reference and a figure have null `reference`, `referenceName` and `ratio`.
func json(_ results: [Result], figures: [Figure], machine: Machine, plan: MeasurementPlan) -> String {
    let rows: [[String: Any]] = results.map { result in
        let (unit, ours, reference) = result.presented
        var row: [String: Any] = [
            "name": result.comparison.name,
            "group": result.comparison.group,
            "ours": ours,
            "oursName": result.comparison.ours.name,
            "reference": reference ?? NSNull(),
            "referenceName": result.comparison.reference?.name ?? NSNull(),
            "unit": unit,
            "ratio": result.ratio ?? NSNull(),
            "allocationsPer": result.comparison.items.noun,
            "runs": plan.runs,
            "machine": "\(machine.cpu), \(machine.cores) cores",
            "date": machine.date,
            "loadAverage": machine.load,
        ]
        row["oursAllocations"] = result.oursAllocations ?? NSNull()
        row["referenceAllocations"] = result.referenceAllocations ?? NSNull()
        if let goal = result.comparison.goal {
            row["goal"] = goal.minimum
            row["goalMet"] = result.goalMet
        }
        if let bound = result.comparison.allocationGoal {
            row["allocationGoal"] = bound
            row["allocationGoalMet"] = result.allocationGoalMet ?? NSNull()
        }
        return row
    }
    let figureRows: [[String: Any]] = figures.map { figure in
        [
            "name": figure.name, "group": figure.group, "ours": figure.value, "reference": NSNull(),
            "referenceName": NSNull(), "unit": figure.unit, "ratio": NSNull(), "note": figure.note,
            "machine": "\(machine.cpu), \(machine.cores) cores", "date": machine.date,
        ]
    }
    let data = try! JSONSerialization.data(withJSONObject: rows + figureRows, options: [.prettyPrinted, .sortedKeys])
    return String(decoding: data, as: UTF8.self)
}
