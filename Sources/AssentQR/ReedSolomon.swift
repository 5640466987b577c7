/// Reed–Solomon error correction over GF(2⁸) modulo x⁸ + x⁴ + x³ + x² + 1, as QR codes use it.
enum ReedSolomon {
    /// The product of two field elements.
    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var z = 0
        for bit in stride(from: 7, through: 0, by: -1) {
            z = (z << 1) ^ ((z >> 7) * 0x11D)
            z ^= ((Int(y) >> bit) & 1) * Int(x)
        }
        return UInt8(z)
    }

    /// The generator polynomial ∏(x − αⁱ), i = 0 ..< degree, without its leading 1, highest power first.
    static func divisor(degree: Int) -> [UInt8] {
        precondition((1...255).contains(degree), "Reed–Solomon degree out of range")
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                result[j] = multiply(result[j], root)
                if j + 1 < degree { result[j] ^= result[j + 1] }
            }
            root = multiply(root, 0x02)
        }
        return result
    }

    /// The error-correction codewords of `data`: the remainder of data(x)·xⁿ divided by the generator.
    static func remainder(_ data: some Sequence<UInt8>, divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result[0]
            result.removeFirst()
            result.append(0)
            for index in result.indices {
                result[index] ^= multiply(divisor[index], factor)
            }
        }
        return result
    }
}
