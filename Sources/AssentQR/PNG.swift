import Foundation

/// A minimal PNG writer for black-and-white images: one-bit greyscale, one IHDR, one IDAT with a zlib stream
/// (fixed-Huffman deflate), IEND.
public enum PNG {
    /// A `width` × `height` image whose pixel (x, y) is black when `isBlack(x, y)`; (0, 0) is the top left.
    public static func blackAndWhite(width: Int, height: Int, isBlack: (Int, Int) -> Bool) -> Data {
        let rowBytes = (width + 7) / 8
        var scanlines = [UInt8]()
        scanlines.reserveCapacity((rowBytes + 1) * height)
        for y in 0..<height {
            scanlines.append(0)  // filter: none
            var byte: UInt8 = 0
            for x in 0..<width {
                // In one-bit greyscale 1 is white.
                if !isBlack(x, y) { byte |= 0x80 >> UInt8(x % 8) }
                if x % 8 == 7 || x == width - 1 {
                    scanlines.append(byte)
                    byte = 0
                }
            }
        }
        var header = [UInt8]()
        header += bigEndian(UInt32(width))
        header += bigEndian(UInt32(height))
        header += [1, 0, 0, 0, 0]  // bit depth 1, greyscale, deflate, adaptive filtering, no interlace
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        png += chunk("IHDR", header)
        png += chunk("IDAT", Zlib.compress(scanlines, rowLength: rowBytes + 1))
        png += chunk("IEND", [])
        return png
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> Data {
        let typed = Array(type.utf8) + data
        return Data(bigEndian(UInt32(data.count)) + typed + bigEndian(CRC32.checksum(typed)))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

/// CRC-32 (reflected polynomial 0xEDB88320), as PNG chunks carry it.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// A zlib stream of one fixed-Huffman deflate block. Matches are looked for only where images repeat: the byte
/// before (runs of one colour) and the same byte one row up (rows repeated by scaling), which is what makes QR
/// images small.
enum Zlib {
    static func compress(_ input: [UInt8], rowLength: Int) -> [UInt8] {
        var writer = BitWriter()
        writer.write(1, bits: 1)  // final block
        writer.write(1, bits: 2)  // fixed Huffman codes
        var position = 0
        let distances = [rowLength, 1].filter { $0 >= 1 && $0 <= 32768 }
        while position < input.count {
            var best = (length: 0, distance: 0)
            for distance in distances where distance <= position {
                var length = 0
                while length < 258 && position + length < input.count
                    && input[position + length] == input[position + length - distance]
                {
                    length += 1
                }
                if length > best.length { best = (length, distance) }
            }
            if best.length >= 3 {
                writer.writeLength(best.length)
                writer.writeDistance(best.distance)
                position += best.length
            } else {
                writer.writeLiteral(Int(input[position]))
                position += 1
            }
        }
        writer.writeLiteral(256)  // end of block
        return [0x78, 0x01] + writer.bytes + PNG.bigEndian(adler32(input))
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    /// Deflate's bit order: values least significant bit first, Huffman codes most significant bit first.
    struct BitWriter {
        private(set) var bytes: [UInt8] = []
        private var used = 0

        mutating func write(_ value: Int, bits: Int) {
            for index in 0..<bits {
                if used % 8 == 0 { bytes.append(0) }
                if (value >> index) & 1 == 1 { bytes[bytes.count - 1] |= 1 << UInt8(used % 8) }
                used += 1
            }
        }

        mutating func writeCode(_ code: Int, bits: Int) {
            var reversed = 0
            for index in 0..<bits where (code >> index) & 1 == 1 { reversed |= 1 << (bits - 1 - index) }
            write(reversed, bits: bits)
        }

        /// A literal byte (0…255) or the end-of-block / length symbols (256…287) in the fixed code.
        mutating func writeLiteral(_ symbol: Int) {
            switch symbol {
            case 0...143: writeCode(0x30 + symbol, bits: 8)
            case 144...255: writeCode(0x190 + symbol - 144, bits: 9)
            case 256...279: writeCode(symbol - 256, bits: 7)
            default: writeCode(0xC0 + symbol - 280, bits: 8)
            }
        }

        private static let lengthBases = [
            3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195,
            227, 258,
        ]
        private static let lengthExtra = [
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
        ]
        private static let distanceBases = [
            1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
            4097, 6145, 8193, 12289, 16385, 24577,
        ]
        private static let distanceExtra = [
            0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
        ]

        /// A match length 3…258: its symbol 257…285 and extra bits.
        mutating func writeLength(_ length: Int) {
            let index = Self.lengthBases.lastIndex { $0 <= length }!
            writeLiteral(257 + index)
            write(length - Self.lengthBases[index], bits: Self.lengthExtra[index])
        }

        /// A match distance 1…32768: its five-bit code and extra bits.
        mutating func writeDistance(_ distance: Int) {
            let index = Self.distanceBases.lastIndex { $0 <= distance }!
            writeCode(index, bits: 5)
            write(distance - Self.distanceBases[index], bits: Self.distanceExtra[index])
        }
    }
}
