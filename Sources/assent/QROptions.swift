import ArgumentParser
import AssentQR
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--qr` / `--no-qr`: draw a command's QR code on the terminal with Unicode half blocks, scannable from the screen.
struct QROptions: ParsableArguments {
    @Flag(
        inversion: .prefixedNo,
        help:
            "Draw the QR code with Unicode half blocks (default: when standard output is a terminal, not with --json).")
    var qr: Bool?

    /// Prints `text` as a QR code when asked, or by default when standard output is a terminal; never into JSON.
    func draw(_ text: String, json: Bool) throws {
        guard !json, qr ?? (isatty(STDOUT_FILENO) == 1) else { return }
        let code = try QRCode(text: text, errorCorrection: .medium)
        print()
        print(code.terminalText())
    }
}
