import Foundation

extension QRCode {
    /// The recommended light margin around a symbol, in modules (ISO/IEC 18004 asks for four).
    public static let standardQuietZone = 4

    /// A PNG image: one-bit greyscale, black modules on white, `scale` pixels per module, with the quiet zone.
    public func png(scale: Int = 8, quietZone: Int = QRCode.standardQuietZone) -> Data {
        let scale = max(1, scale)
        let quietZone = max(0, quietZone)
        let side = (size + 2 * quietZone) * scale
        return PNG.blackAndWhite(width: side, height: side) { x, y in
            self[x / scale - quietZone, y / scale - quietZone]
        }
    }

    /// The PNG as a `data:image/png;base64,…` URL, for an `<img src>`.
    public func pngDataURL(scale: Int = 6, quietZone: Int = QRCode.standardQuietZone) -> String {
        "data:image/png;base64," + png(scale: scale, quietZone: quietZone).base64EncodedString()
    }

    /// An SVG image whose unit is one module: one path of the dark modules over a white square, scalable without
    /// blur.
    public func svg(quietZone: Int = QRCode.standardQuietZone) -> String {
        let quietZone = max(0, quietZone)
        let side = size + 2 * quietZone
        var path = ""
        for y in 0..<size {
            var x = 0
            while x < size {
                guard self[x, y] else {
                    x += 1
                    continue
                }
                let start = x
                while x < size && self[x, y] { x += 1 }
                path += "M\(start + quietZone) \(y + quietZone)h\(x - start)v1h-\(x - start)z"
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges">\
            <rect width="\(side)" height="\(side)" fill="#fff"/><path d="\(path)" fill="#000"/></svg>
            """
    }

    /// Text for a terminal: each character is two modules stacked, drawn with the Unicode half blocks
    /// `▀ ▄ █` and spaces. By default the *light* modules are inked (`invert`), so that on the usual light-on-dark
    /// terminal the code shows dark on light, as scanners expect; pass `false` for a dark-on-light terminal.
    public func terminalText(quietZone: Int = 2, invert: Bool = true) -> String {
        let quietZone = max(0, quietZone)
        let range = -quietZone..<(size + quietZone)
        var lines: [String] = []
        for top in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
            var line = ""
            for x in range {
                let upper = self[x, top] != invert
                let lower = top + 1 < range.upperBound && (self[x, top + 1] != invert)
                line.append(upper ? (lower ? "█" : "▀") : (lower ? "▄" : " "))
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
