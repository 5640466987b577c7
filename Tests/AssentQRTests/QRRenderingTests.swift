import AssentTesting
import Foundation
import Testing

@testable import AssentQR

/// The images are read back by programs we did not write: `zbarimg` (Debian's zbar-tools) decodes the PNGs, and
/// Python's zlib checks every PNG chunk's CRC and inflates the image data.
@Suite("QR code: PNG, SVG and terminal images, read back by zbarimg")
struct QRRenderingTests {
    /// zbarimg's reading, waited for off the concurrency pool (many cases run in parallel).
    static func decode(_ png: Data) async throws -> String? { try await QRReader.scan(png: png) }

    /// Printable ASCII from a seeded generator, so a failure can be repeated.
    static func payload(length: Int, seed: UInt64) -> String {
        var generator = SeededGenerator(seed: seed)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -._~:/?#[]@!$&'()*+,;=%")
        return String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
    }

    struct Case: Sendable, CustomStringConvertible {
        let length: Int
        let level: QRErrorCorrection
        var description: String { "\(length) bytes at \(level)" }
    }

    /// Lengths across the versions (1, 2, 5, 7, 10, 15, 20, 27, 40) and every level, including each level's
    /// version-40 maximum.
    static let cases: [Case] =
        [1, 17, 80, 150, 250, 500, 800, 1200].flatMap { length in
            QRErrorCorrection.allCases.filter { length <= QRCode.capacity(version: 40, $0) }.map {
                Case(length: length, level: $0)
            }
        } + QRErrorCorrection.allCases.map { Case(length: QRCode.capacity(version: 40, $0), level: $0) }

    @Test("zbarimg reads back the PNG of random payloads of many sizes at every level", arguments: cases)
    func roundTrip(testCase: Case) async throws {
        let text = Self.payload(length: testCase.length, seed: UInt64(testCase.length * 4 + testCase.level.rawValue))
        let code = try QRCode(text: text, errorCorrection: testCase.level, boostErrorCorrection: false)
        let scale = code.version > 20 ? 3 : 4
        #expect(try await Self.decode(code.png(scale: scale)) == text, "version \(code.version), mask \(code.mask)")
    }

    @Test("Every forced mask reads back")
    func masks() async throws {
        let text = "otpauth://totp/Assent:alice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Assent"
        for mask in 0..<8 {
            let code = try QRCode(text: text, mask: mask)
            #expect(code.mask == mask)
            #expect(try await Self.decode(code.png()) == text, "mask \(mask)")
        }
    }

    @Test("A UTF-8 payload reads back")
    func utf8() async throws {
        let text = "Zahlung an Müller & Söhne: 120,00 € – Zürich"
        #expect(try await Self.decode(QRCode(text: text).png()) == text)
    }

    @Test("Each PNG chunk's CRC and the zlib stream check out with Python's zlib; the pixels are the modules")
    func pngStructure() async throws {
        let python = try #require(Spawn.program("python3"), "python3 is not installed")
        let code = try QRCode(text: "https://assent.example/approve/0f3c", errorCorrection: .high)
        let scale = 5
        let png = code.png(scale: scale, quietZone: 4)
        let script = """
            import struct, sys, zlib
            data = sys.stdin.buffer.read()
            assert data[:8] == b'\\x89PNG\\r\\n\\x1a\\n'
            pos, idat, width, height = 8, b'', 0, 0
            while pos < len(data):
                length, kind = struct.unpack('>I4s', data[pos:pos + 8])
                body = data[pos + 8:pos + 8 + length]
                crc, = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])
                assert crc == zlib.crc32(kind + body), kind
                if kind == b'IHDR':
                    width, height, depth, color = struct.unpack('>IIBB', body[:10])
                    assert (depth, color) == (1, 0)
                if kind == b'IDAT':
                    idat += body
                pos += 12 + length
            raw = zlib.decompress(idat)
            stride = (width + 7) // 8 + 1
            assert len(raw) == stride * height
            rows = []
            for y in range(height):
                line = raw[y * stride:(y + 1) * stride]
                assert line[0] == 0
                rows.append(''.join('.' if line[1 + x // 8] >> (7 - x % 8) & 1 else '#' for x in range(width)))
            print('\\n'.join(rows))
            """
        let outcome = try await Spawn.runOnThread([python, "-c", script], bytes: png)
        #expect(outcome.status == 0, "\(outcome.errors)")
        let rows = outcome.output.split(separator: "\n")
        let side = (code.size + 8) * scale
        #expect(rows.count == side)
        for (pixelY, row) in rows.enumerated() {
            let expected = String(
                (0..<side).map { code[$0 / scale - 4, pixelY / scale - 4] ? "#" : "." })
            #expect(row == expected[...], "pixel row \(pixelY)")
            if row != expected[...] { break }
        }
        #expect(png.count < side * side / 8 / 3, "the repeated rows compress")
    }

    @Test("Terminal half blocks: two modules a character; drawn as a terminal shows them, zbarimg reads them")
    func terminal() async throws {
        let text = "https://assent.example/activate?code=VVVVV-VVVVV-VVVVV-VTFVA"
        let code = try QRCode(text: text)
        let plain = code.terminalText(quietZone: 4, invert: false)
        let lines = plain.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == (code.size + 8 + 1) / 2)
        #expect(lines.allSatisfy { $0.count == code.size + 8 })
        #expect(Set(plain).isSubset(of: Set(" ▀▄█\n")))
        // Ink on a white page: dark modules are ink.
        #expect(try await Self.decode(QRReader.terminalPNG(plain)) == text)
        // The default inks light modules, for light text on a dark terminal: the ink is the page's background.
        let inverted = code.terminalText(quietZone: 4)
        let swapped = String(
            inverted.map { character -> Character in
                switch character {
                case "█": " "
                case " ": "█"
                case "▀": "▄"
                case "▄": "▀"
                default: character
                }
            })
        // The last line's lower half lies below the image (the side is odd) and stays blank in both.
        #expect(swapped.split(separator: "\n").dropLast() == lines.dropLast())
    }

    @Test("The SVG's path covers exactly the dark modules")
    func svg() throws {
        let code = try QRCode(text: "Hello, world!", errorCorrection: .low, boostErrorCorrection: false)
        let svg = code.svg(quietZone: 4)
        #expect(svg.hasPrefix(#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 29 29""#))
        let path = try #require(svg.split(separator: "\"").first { $0.hasPrefix("M") })
        var dark = Set<[Int]>()
        for rectangle in path.split(separator: "z") {
            let numbers = rectangle.split(whereSeparator: { "Mhv- ".contains($0) }).map { Int($0)! }
            for x in numbers[0]..<(numbers[0] + numbers[2]) { dark.insert([x - 4, numbers[1] - 4]) }
        }
        for y in 0..<code.size {
            for x in 0..<code.size {
                #expect(dark.contains([x, y]) == code[x, y], "module (\(x), \(y))")
            }
        }
    }
}
