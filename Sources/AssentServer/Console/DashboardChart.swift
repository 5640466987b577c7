import AssentModel
import Foundation

/// The dashboard's chart: operations approved, rejected and expired per hour over the last 24 hours, drawn on the
/// server as inline SVG (stacked bars, a hover title per hour, hour labels in UTC) — no script, no image request.
enum DashboardChart {
    /// The statuses the chart stacks, bottom up, with their colours.
    static let statuses: [OperationStatus] = [.approved, .rejected, .expired]
    static let colours: [OperationStatus: String] = [.approved: "#2e7d32", .rejected: "#c62828", .expired: "#9e9e9e"]

    static func svg(_ rows: [(hour: Int64, status: OperationStatus, count: Int)], lastHour: Int64) -> String {
        let hours = Array((lastHour - 23)...lastHour)
        var counts: [Int64: [OperationStatus: Int]] = [:]
        for row in rows { counts[row.hour, default: [:]][row.status, default: 0] += row.count }
        let totals = hours.map { hour in statuses.reduce(0) { $0 + (counts[hour]?[$1] ?? 0) } }
        let top = max(1, totals.max() ?? 1)
        let (width, height, left, bottom, bar) = (720, 220, 40, 24, 26)
        let plot = Double(height - bottom - 10)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 \(width) \(height)" role="img" \
            aria-labelledby="chart-title"><title id="chart-title">Operations approved, rejected and expired per \
            hour, last 24 hours (UTC); the highest hour has \(top)</title>
            <line x1="\(left)" y1="\(height - bottom)" x2="\(width)" y2="\(height - bottom)" stroke="currentColor" \
            stroke-opacity="0.4"/>
            <text x="\(left - 6)" y="16" text-anchor="end" font-size="11" fill="currentColor">\(top)</text>
            <text x="\(left - 6)" y="\(height - bottom)" text-anchor="end" font-size="11" fill="currentColor">0</text>

            """
        for (index, hour) in hours.enumerated() {
            let x = left + 6 + index * (bar + 2)
            var y = Double(height - bottom)
            let label = String(format: "%02d:00", Int((hour % 24 + 24) % 24))
            let parts = statuses.map { "\(counts[hour]?[$0] ?? 0) \($0.rawValue.lowercased())" }
            svg += "<g><title>\(label) UTC: \(parts.joined(separator: ", "))</title>"
            for status in statuses {
                let count = counts[hour]?[status] ?? 0
                guard count > 0 else { continue }
                let h = plot * Double(count) / Double(top)
                y -= h
                svg += """
                    <rect class="bar-\(status.rawValue.lowercased())" x="\(x)" y="\(String(format: "%.1f", y))" \
                    width="\(bar)" height="\(String(format: "%.1f", h))" fill="\(colours[status] ?? "#000")"/>
                    """
            }
            svg += "</g>"
            if index % 6 == 0 || index == hours.count - 1 {
                svg += """
                    <text x="\(x + bar / 2)" y="\(height - 8)" text-anchor="middle" font-size="11" \
                    fill="currentColor">\(label)</text>
                    """
            }
            svg += "\n"
        }
        return svg + "</svg>"
    }
}
