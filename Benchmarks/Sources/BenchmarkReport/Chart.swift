import ComparisonKit
import Foundation

// The SVG chart of the ratios, written by hand: one bar per comparison on a logarithmic axis, a
// line at 1× (as fast as the reference), each row's goal as a tick on its bar, and the machine and
// date it was measured on. Rows without a reference and the figures are listed under the chart.

private func escaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
}

private func number(_ value: Double) -> String { String(format: "%.1f", value) }

func svg(_ allResults: [Result], figures: [Figure], machine: Machine, plan: MeasurementPlan) -> String {
    let results = allResults.filter { $0.ratio != nil }
    let alone =
        allResults.filter { $0.ratio == nil }.map { result in
            let (unit, ours, _) = result.presented
            return "\(result.comparison.name), \(result.comparison.ours.name): \(String(format: "%.0f", ours)) \(unit)"
        } + figures.map { "\($0.name): \(String(format: "%.0f", $0.value)) \($0.unit)" }
    let labelWidth = 470.0
    let plotWidth = 520.0
    let valueWidth = 90.0
    let width = labelWidth + plotWidth + valueWidth + 20
    let rowHeight = 17.0
    let groupHeight = 22.0
    let top = 78.0
    // The axis spans 1/1000× to 100×, in decades.
    let lowDecade = -3.0
    let highDecade = 2.0
    func x(_ ratio: Double) -> Double {
        let decade = min(max(log10(max(ratio, 1e-9)), lowDecade), highDecade)
        return labelWidth + (decade - lowDecade) / (highDecade - lowDecade) * plotWidth
    }
    let groups = Set(results.map(\.comparison.group)).count
    let noteHeight = 16.0
    let height = top + Double(results.count) * rowHeight + Double(groups) * groupHeight + 60
        + (alone.isEmpty ? 0 : Double(alone.count + 1) * noteHeight + 10)

    var body: [String] = []
    body.append(
        "<text x=\"10\" y=\"22\" class=\"title\">swift-sdl against reference implementations: reference time / our time (log scale, higher is better)</text>")
    body.append(
        "<text x=\"10\" y=\"42\" class=\"note\">Measured on \(escaped(machine.cpu)), \(machine.cores) cores, \(machine.date) (load average \(machine.load) at the start); medians of \(plan.runs) interleaved runs in one process (Benchmarks/BenchmarkReport).</text>")
    body.append(
        "<text x=\"10\" y=\"58\" class=\"note\">Green: goal met; red: goal missed (the black tick marks the goal); grey: no goal stated.</text>")

    var y = top
    var group = ""
    var rows: [String] = []
    for result in results {
        if result.comparison.group != group {
            group = result.comparison.group
            y += groupHeight
            rows.append("<text x=\"10\" y=\"\(number(y - 6))\" class=\"group\">\(escaped(group))</text>")
        }
        let colour =
            switch result.goalMet {
            case true?: "#3a9d5d"
            case false?: "#d0543f"
            case nil: "#9aa3ad"
            }
        let start = x(1)
        let ratio = result.ratio!
        let end = x(ratio)
        let barTop = y + 2
        rows.append("<text x=\"\(number(labelWidth - 8))\" y=\"\(number(y + 12))\" class=\"label\">\(escaped(result.comparison.name))</text>")
        rows.append(
            "<rect x=\"\(number(min(start, end)))\" y=\"\(number(barTop))\" width=\"\(number(max(abs(end - start), 1)))\" height=\"\(number(rowHeight - 4))\" fill=\"\(colour)\"/>")
        if let goal = result.comparison.goal {
            let goalX = x(goal.minimum)
            rows.append(
                "<line x1=\"\(number(goalX))\" y1=\"\(number(barTop - 1))\" x2=\"\(number(goalX))\" y2=\"\(number(barTop + rowHeight - 3))\" class=\"goal\"/>")
        }
        let ratioText = ratio >= 10 ? String(format: "%.1f×", ratio) : String(format: "%.2f×", ratio)
        rows.append("<text x=\"\(number(labelWidth + plotWidth + 8))\" y=\"\(number(y + 12))\" class=\"value\">\(ratioText)</text>")
        y += rowHeight
    }

    // The axis: a gridline per decade, the 1× line over the bars.
    var axis: [String] = []
    for decade in stride(from: lowDecade, through: highDecade, by: 1) {
        let gridX = labelWidth + (decade - lowDecade) / (highDecade - lowDecade) * plotWidth
        let label = decade >= 0 ? String(format: "%.0f×", pow(10, decade)) : "1/\(String(format: "%.0f", pow(10, -decade)))×"
        axis.append("<line x1=\"\(number(gridX))\" y1=\"\(number(top))\" x2=\"\(number(gridX))\" y2=\"\(number(y + 4))\" class=\"grid\"/>")
        axis.append("<text x=\"\(number(gridX))\" y=\"\(number(y + 20))\" class=\"axis\">\(label)</text>")
    }
    let one = x(1)
    rows.append("<line x1=\"\(number(one))\" y1=\"\(number(top))\" x2=\"\(number(one))\" y2=\"\(number(y + 4))\" class=\"one\"/>")
    if !alone.isEmpty {
        var noteY = y + 50
        rows.append("<text x=\"10\" y=\"\(number(noteY))\" class=\"group\">Measured alone (no reference does the same work)</text>")
        for line in alone {
            noteY += noteHeight
            rows.append("<text x=\"10\" y=\"\(number(noteY))\" class=\"note\">\(escaped(line))</text>")
        }
    }

    return """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(number(width))" height="\(number(height))" viewBox="0 0 \(number(width)) \(number(height))" font-family="Helvetica, Arial, sans-serif">
        <style>
        .title { font-size: 15px; font-weight: bold; fill: #222; }
        .note { font-size: 11.5px; fill: #444; }
        .group { font-size: 13px; font-weight: bold; fill: #222; }
        .label { font-size: 11px; fill: #222; text-anchor: end; }
        .value { font-size: 11px; fill: #222; }
        .axis { font-size: 11px; fill: #444; text-anchor: middle; }
        .grid { stroke: #dde1e5; stroke-width: 1; }
        .one { stroke: #222; stroke-width: 1.5; }
        .goal { stroke: #111; stroke-width: 2; }
        </style>
        <rect width="100%" height="100%" fill="#ffffff"/>
        \((body + axis + rows).joined(separator: "\n"))
        </svg>

        """
}
