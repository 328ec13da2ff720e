import ComparisonKit
import Foundation

/// The machine a report was measured on.
struct Machine {
    let cpu: String
    let cores: Int
    let date: String

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
        return Machine(
            cpu: model ?? "unknown CPU", cores: ProcessInfo.processInfo.activeProcessorCount,
            date: formatter.string(from: Date()))
    }

    var summary: String { "\(self.cpu), \(self.cores) cores, \(self.date)" }
}

extension Result {
    /// The row's unit and both sides' values in it: MB/s for bandwidth rows, else ns per item.
    var presented: (unit: String, ours: Double, reference: Double) {
        if let bytes = self.comparison.bytesPerOperation {
            return ("MB/s", Double(bytes) * 1e3 / self.oursNanoseconds, Double(bytes) * 1e3 / self.referenceNanoseconds)
        }
        let items = Double(self.comparison.items.count)
        return ("ns/\(self.comparison.items.noun)", self.oursNanoseconds / items, self.referenceNanoseconds / items)
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

/// The text table: ours, the reference, the ratio and the goal, then allocations per item.
func table(_ results: [Result], machine: Machine, plan: MeasurementPlan) -> String {
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
        lines.append(
            padded(result.comparison.name, nameWidth)
                + padded("\(format(ours)) \(unit)", 18)
                + padded("\(result.comparison.reference.name) \(format(reference))", 36)
                + padded(formatRatio(result.ratio), 9)
                + padded(goal, 22) + allocations)
    }
    return lines.joined(separator: "\n")
}

/// The rows as a JSON array of `{name, ours, reference, referenceName, unit, ratio}`, each with
/// the group, our side's name, the goal, the allocations per item, the machine and the date.
func json(_ results: [Result], machine: Machine, plan: MeasurementPlan) -> String {
    let rows: [[String: Any]] = results.map { result in
        let (unit, ours, reference) = result.presented
        var row: [String: Any] = [
            "name": result.comparison.name,
            "group": result.comparison.group,
            "ours": ours,
            "oursName": result.comparison.ours.name,
            "reference": reference,
            "referenceName": result.comparison.reference.name,
            "unit": unit,
            "ratio": result.ratio,
            "allocationsPer": result.comparison.items.noun,
            "runs": plan.runs,
            "machine": "\(machine.cpu), \(machine.cores) cores",
            "date": machine.date,
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
    let data = try! JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys])
    return String(decoding: data, as: UTF8.self)
}
