import Crypto
import Foundation
import Testing

@testable import AssentQR

/// The facts and vectors of ../shared/spec/qr.md: Reed–Solomon (nayuki's C unit vectors and the ISO/IEC 18004
/// worked example), the version tables, format and version bits, and whole symbols checked by their SHA-256.
@Suite("QR code: vectors and tables")
struct QRVectorTests {
    static func hex(_ text: String) -> [UInt8] {
        text.split(separator: " ").map { UInt8($0, radix: 16)! }
    }

    @Test("GF(256) multiplication, generator polynomials and remainders")
    func reedSolomon() {
        let products: [(UInt8, UInt8, UInt8)] = [
            (0xB2, 0xDD, 0xE6), (0x41, 0x11, 0x25), (0xB0, 0x1F, 0x11), (0x05, 0x75, 0xBC), (0xFF, 0xFF, 0xE2),
            (0x02, 0x02, 0x04),
        ]
        for (x, y, product) in products {
            #expect(ReedSolomon.multiply(x, y) == product)
        }
        #expect(ReedSolomon.divisor(degree: 2) == [0x03, 0x02])
        #expect(ReedSolomon.divisor(degree: 5) == Self.hex("1F C6 3F 93 74"))
        let thirty = ReedSolomon.divisor(degree: 30)
        #expect(thirty.count == 30)
        #expect(
            [thirty[0], thirty[1], thirty[5], thirty[12], thirty[13], thirty[20], thirty[27], thirty[29]]
                == [0xD4, 0xF6, 0xC0, 0x16, 0xD9, 0x12, 0x6A, 0x96])
        #expect(
            ReedSolomon.remainder(Self.hex("03 3A 60 12 C7"), divisor: ReedSolomon.divisor(degree: 5))
                == Self.hex("CB 36 16 FA 9D"))
        // ISO/IEC 18004's worked example "01234567", 1-M.
        #expect(
            ReedSolomon.remainder(
                Self.hex("10 20 0C 56 61 80 EC 11 EC 11 EC 11 EC 11 EC 11"), divisor: ReedSolomon.divisor(degree: 10)
            ) == Self.hex("A5 24 D4 C1 ED 36 C7 87 2C 55"))
    }

    /// spec/qr.md §6: `version raw|data L M Q H|max bytes L M Q H` for all 40 versions.
    static let capacityTable = """
        1 26|19 16 13 9|17 14 11 7        2 44|34 28 22 16|32 26 20 14      3 70|55 44 34 26|53 42 32 24
        4 100|80 64 48 36|78 62 46 34     5 134|108 86 62 46|106 84 60 44   6 172|136 108 76 60|134 106 74 58
        7 196|156 124 88 66|154 122 86 64 8 242|194 154 110 86|192 152 108 84 9 292|232 182 132 100|230 180 130 98
        10 346|274 216 154 122|271 213 151 119   11 404|324 254 180 140|321 251 177 137  12 466|370 290 206 158|367 287 203 155
        13 532|428 334 244 180|425 331 241 177   14 581|461 365 261 197|458 362 258 194  15 655|523 415 295 223|520 412 292 220
        16 733|589 453 325 253|586 450 322 250   17 815|647 507 367 283|644 504 364 280  18 901|721 563 397 313|718 560 394 310
        19 991|795 627 445 341|792 624 442 338   20 1085|861 669 485 385|858 666 482 382 21 1156|932 714 512 406|929 711 509 403
        22 1258|1006 782 568 442|1003 779 565 439  23 1364|1094 860 614 464|1091 857 611 461  24 1474|1174 914 664 514|1171 911 661 511
        25 1588|1276 1000 718 538|1273 997 715 535 26 1706|1370 1062 754 596|1367 1059 751 593 27 1828|1468 1128 808 628|1465 1125 805 625
        28 1921|1531 1193 871 661|1528 1190 868 658 29 2051|1631 1267 911 701|1628 1264 908 698 30 2185|1735 1373 985 745|1732 1370 982 742
        31 2323|1843 1455 1033 793|1840 1452 1030 790 32 2465|1955 1541 1115 845|1952 1538 1112 842 33 2611|2071 1631 1171 901|2068 1628 1168 898
        34 2761|2191 1725 1231 961|2188 1722 1228 958 35 2876|2306 1812 1286 986|2303 1809 1283 983 36 3034|2434 1914 1354 1054|2431 1911 1351 1051
        37 3196|2566 1992 1426 1096|2563 1989 1423 1093 38 3362|2702 2102 1502 1142|2699 2099 1499 1139 39 3532|2812 2216 1582 1222|2809 2213 1579 1219
        40 3706|2956 2334 1666 1276|2953 2331 1663 1273
        """

    @Test("Raw, data and byte capacity of every version and level")
    func capacities() throws {
        let numbers = Self.capacityTable.split(whereSeparator: { " |\n".contains($0) }).map { Int($0)! }
        #expect(numbers.count == 40 * 10)
        for row in stride(from: 0, to: numbers.count, by: 10) {
            let version = numbers[row]
            #expect(QRTables.rawDataModules(version) / 8 == numbers[row + 1], "version \(version)")
            for level in QRErrorCorrection.allCases {
                #expect(QRTables.dataCodewords(version, level) == numbers[row + 2 + level.rawValue], "v\(version)")
                #expect(QRCode.capacity(version: version, level) == numbers[row + 6 + level.rawValue], "v\(version)")
            }
        }
        let rawModules = [1: 208, 2: 359, 3: 567, 6: 1383, 7: 1568, 12: 3728, 15: 5243, 18: 7211, 22: 10068]
            .merging([26: 13652, 32: 19723, 37: 25568, 40: 29648]) { $1 }
        for (version, modules) in rawModules {
            #expect(QRTables.rawDataModules(version) == modules)
        }
    }

    @Test("Alignment pattern positions of every version")
    func alignment() {
        let list = """
            2:6,18 3:6,22 4:6,26 5:6,30 6:6,34 7:6,22,38 8:6,24,42 9:6,26,46 10:6,28,50 11:6,30,54 12:6,32,58 13:6,34,62
            14:6,26,46,66 15:6,26,48,70 16:6,26,50,74 17:6,30,54,78 18:6,30,56,82 19:6,30,58,86 20:6,34,62,90
            21:6,28,50,72,94 22:6,26,50,74,98 23:6,30,54,78,102 24:6,28,54,80,106 25:6,32,58,84,110 26:6,30,58,86,114
            27:6,34,62,90,118 28:6,26,50,74,98,122 29:6,30,54,78,102,126 30:6,26,52,78,104,130 31:6,30,56,82,108,134
            32:6,34,60,86,112,138 33:6,30,58,86,114,142 34:6,34,62,90,118,146 35:6,30,54,78,102,126,150
            36:6,24,50,76,102,128,154 37:6,28,54,80,106,132,158 38:6,32,58,84,110,136,162 39:6,26,54,82,110,138,166
            40:6,30,58,86,114,142,170
            """
        let entries = list.split(whereSeparator: \.isWhitespace)
        #expect(entries.count == 39)
        for entry in entries {
            let parts = entry.split(separator: ":")
            let version = Int(parts[0])!
            #expect(QRTables.alignmentPositions(version) == parts[1].split(separator: ",").map { Int($0)! })
        }
        #expect(QRTables.alignmentPositions(1).isEmpty)
    }

    @Test("Format bits for every level and mask; version bits for versions 7–40")
    func formatAndVersionBits() {
        let format: [QRErrorCorrection: String] = [
            .low: "111011111000100 111001011110011 111110110101010 111100010011101 110011000101111 110001100011000 "
                + "110110001000001 110100101110110",
            .medium: "101010000010010 101000100100101 101111001111100 101101101001011 100010111111001 "
                + "100000011001110 100111110010111 100101010100000",
            .quartile: "011010101011111 011000001101000 011111100110001 011101000000110 010010010110100 "
                + "010000110000011 010111011011010 010101111101101",
            .high: "001011010001001 001001110111110 001110011100111 001100111010000 000011101100010 "
                + "000001001010101 000110100001100 000100000111011",
        ]
        for (level, values) in format {
            for (mask, value) in values.split(separator: " ").enumerated() {
                #expect(QRMatrix.formatBits(level: level, mask: mask) == Int(value, radix: 2), "\(level) mask \(mask)")
            }
        }
        let versions = """
            7:07C94 8:085BC 9:09A99 10:0A4D3 11:0BBF6 12:0C762 13:0D847 14:0E60D 15:0F928 16:10B78 17:1145D 18:12A17
            19:13532 20:149A6 21:15683 22:168C9 23:177EC 24:18EC4 25:191E1 26:1AFAB 27:1B08E 28:1CC1A 29:1D33F 30:1ED75
            31:1F250 32:209D5 33:216F0 34:228BA 35:2379F 36:24B0B 37:2542E 38:26A64 39:27541 40:28C69
            """
        for entry in versions.split(whereSeparator: \.isWhitespace) {
            let parts = entry.split(separator: ":")
            #expect(QRMatrix.versionBits(Int(parts[0])!) == Int(parts[1], radix: 16), "version \(parts[0])")
        }
    }

    /// A symbol as the spec's vectors print it: `#` dark, `.` light, rows joined by newlines, a trailing newline.
    static func picture(_ code: QRCode) -> String {
        (0..<code.size).map { y in String((0..<code.size).map { code[$0, y] ? "#" : "." }) }.joined(separator: "\n")
            + "\n"
    }

    static func sha256(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    struct Vector: Sendable, CustomStringConvertible {
        let name: String
        let text: String
        let level: QRErrorCorrection
        let version: Int
        let mask: Int
        let sha256: String
        var description: String { name }
    }

    static let vectors: [Vector] = [
        Vector(
            name: "V1", text: "Hello, world!", level: .low, version: 1, mask: 2,
            sha256: "a4994e96680e98a01047ccbdcb0c3e161970e00e08254137fd30e2620c3da9d7"),
        Vector(
            name: "V3", text: "Hello, world!", level: .high, version: 2, mask: 2,
            sha256: "4e5de59421730d4ca742c25eaf6e53d198091abe826b11abe02d23e5f19aff62"),
        Vector(
            name: "V4", text: "otpauth://totp/Assent:alice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Assent",
            level: .medium, version: 5, mask: 4,
            sha256: "316ce9f7dbb296d200257f2aae6f7f49e130ff66e6799f3de0e94bf0826f87a0"),
        Vector(
            name: "V5",
            text: "otpauth://totp/ACME%20Co:john.doe@email.com?secret=HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ"
                + "&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30",
            level: .medium, version: 8, mask: 2,
            sha256: "21ef0db2f379e8f55c06151c3ac61d2e488eb503ce3ebea8a3e9cc845462a984"),
        Vector(
            name: "V6", text: String(repeating: "A", count: 200), level: .medium, version: 10, mask: 3,
            sha256: "231d1f90afd81b0d54936c081ebe592f3a974f5d7e2277fd4f085364496fa2bb"),
        Vector(
            name: "V7", text: "https://example.com/" + String(repeating: "x", count: 1000), level: .quartile,
            version: 31, mask: 0, sha256: "ee25b326720823bc7beffcc992ad9fb59160d49c23f2d59e4f4414fcbb8a7eca"),
    ]

    @Test("Whole symbols: version, chosen mask and every module", arguments: vectors)
    func symbols(vector: Vector) throws {
        let automatic = try QRCode(text: vector.text, errorCorrection: vector.level, boostErrorCorrection: false)
        #expect(automatic.version == vector.version)
        #expect(automatic.mask == vector.mask)
        #expect(Self.sha256(Self.picture(automatic)) == vector.sha256)
        let forced = try QRCode(
            text: vector.text, errorCorrection: vector.level, boostErrorCorrection: false, mask: vector.mask)
        #expect(forced == automatic)
    }

    @Test("V1 codewords and matrix, and V2: the same text with mask 0 forced")
    func helloWorld() throws {
        #expect(
            QRCode.codewords(bytes: Array("Hello, world!".utf8), version: 1, level: .low)
                == Self.hex("40 D4 86 56 C6 C6 F2 C2 07 76 F7 26 C6 42 10 EC 11 EC 11 F5 13 98 BA DB 72 2D"))
        let code = try QRCode(text: "Hello, world!", errorCorrection: .low, boostErrorCorrection: false)
        let rows = Self.picture(code).split(separator: "\n")
        #expect(rows.first == "#######...###.#######")
        #expect(rows[8] == "#####.###..#.#.#.#.#.")
        #expect(rows.last == "#######.##.#..#.#..#.")
        let masked = try QRCode(text: "Hello, world!", errorCorrection: .low, boostErrorCorrection: false, mask: 0)
        #expect(
            Self.sha256(Self.picture(masked)) == "c605361b54173f4f2d8e08724e1a0ac794a8a3849db451f68c50b35aed35293b")
        #expect(Self.picture(masked).hasPrefix("#######..#.##.#######\n#.....#..###..#.....#\n"))
    }

    @Test("V4's 134 interleaved codewords: two blocks of 43 data and 24 error-correction codewords")
    func interleaving() {
        let expected = Self.hex(
            """
            44 F7 F6 36 F7 56 47 37 06 26 17 57 57 43 46 D4 83 A4 A2 25 F2 35 F7 75 46 93 F7 34 47 45 02 04 F4 54 \
            17 85 37 04 36 B3 56 35 E7 05 43 85 A6 02 16 66 C6 97 96 37 36 37 52 56 53 57 43 23 06 D4 57 17 86 37 \
            16 36 D7 56 06 E7 C6 40 52 EC E6 11 36 EC F6 11 D3 EC 14 44 29 35 53 6E 9A D3 C5 22 D6 17 CB 66 6A 3A \
            2B 89 FF 5F 35 06 F6 38 3C 65 33 0D 3C D8 1E 17 0B D1 5C DD AC E7 84 90 F7 F0 D2 49 51 BB 50 2F
            """)
        #expect(expected.count == 134)
        let text = "otpauth://totp/Assent:alice%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Assent"
        #expect(QRCode.codewords(bytes: Array(text.utf8), version: 5, level: .medium) == expected)
    }

    @Test("The largest payload of each level fits version 40; one byte more is refused with the capacity")
    func capacityEdges() throws {
        for level in QRErrorCorrection.allCases {
            let capacity = QRCode.capacity(version: 40, level)
            let code = try QRCode(
                bytes: Array(repeating: 0x61, count: capacity), errorCorrection: level, boostErrorCorrection: false)
            #expect(code.version == 40 && code.size == 177)
            #expect(throws: QRCodeError.dataTooLong(bytes: capacity + 1, capacity: capacity)) {
                try QRCode(bytes: Array(repeating: 0x61, count: capacity + 1), errorCorrection: level)
            }
        }
        #expect(throws: QRCodeError.self) { try QRCode(text: "x", mask: 8) }
    }

    /// 13 bytes use 116 bits: version 1 holds 152 at L, 128 at M, 104 at Q.
    @Test("Boosting raises the level while the data still fits its version")
    func boost() throws {
        let boosted = try QRCode(text: "Hello, world!", errorCorrection: .low)
        #expect(boosted.version == 1 && boosted.errorCorrection == .medium)
        let kept = try QRCode(text: "Hello, world!", errorCorrection: .low, boostErrorCorrection: false)
        #expect(kept.errorCorrection == .low)
    }
}
