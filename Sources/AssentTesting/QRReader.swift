import AssentQR
import Foundation

/// Reads QR codes back the way a person's scanner would, with a decoder we did not write: `zbarimg` from Debian's
/// zbar-tools (`.ci/run` installs it).
public enum QRReader {
    public struct Missing: Error, CustomStringConvertible {
        public var description: String {
            "zbarimg is not installed: install Debian's zbar-tools (apt-get install zbar-tools; .ci/run does)."
        }
    }

    /// The payload of the one QR code in `png`, or nil when zbarimg finds none.
    public static func decode(png: Data) throws -> String? {
        guard let zbarimg = Spawn.program("zbarimg") else { throw Missing() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("assent-qr-\(UUID().uuidString).png")
        try png.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let outcome = try Spawn.run([zbarimg, "--raw", "-q", "-Sdisable", "-Sqrcode.enable", file.path])
        guard outcome.status == 0 else { return nil }
        return outcome.output.hasSuffix("\n") ? String(outcome.output.dropLast()) : outcome.output
    }

    /// ``decode(png:)`` with zbarimg waited for on a thread of its own (for async tests: see
    /// ``Spawn/runOnThread(_:environment:input:)``).
    public static func scan(png: Data) async throws -> String? {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try decode(png: png) }) }
        }
    }

    /// Draws text made of the half blocks `▀ ▄ █` and spaces as a terminal shows it — each character `scale`
    /// pixels wide and two modules of `scale` pixels high — as a PNG: black ink on white paper, or with
    /// `lightOnDark` light ink on a dark terminal.
    public static func terminalPNG(_ text: String, scale: Int = 4, lightOnDark: Bool = false) -> Data {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(Array.init)
        let width = (lines.map(\.count).max() ?? 0) * scale
        return PNG.blackAndWhite(width: width, height: lines.count * 2 * scale) { x, y in
            ink(lines, x, y) != lightOnDark
        }

        func ink(_ lines: [[Character]], _ x: Int, _ y: Int) -> Bool {
            let line = lines[y / (2 * scale)]
            guard x / scale < line.count else { return false }
            let upperHalf = (y / scale) % 2 == 0
            switch line[x / scale] {
            case "█": return true
            case "▀": return upperHalf
            case "▄": return !upperHalf
            default: return false
            }
        }
    }
}
