import Foundation

/// RFC 4648 Base32 (alphabet `A–Z2–7`), used by activation codes and OTP secrets.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    static let lookup: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, character) in alphabet.enumerated() {
            table[Int(character)] = Int8(index)
        }
        return table
    }()

    /// Encodes `bytes`; with `padding`, `=` fills the output to a multiple of eight characters.
    public static func encode<D: DataProtocol>(_ bytes: D, padding: Bool = false) -> String {
        var output = [UInt8]()
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1F)])
            }
        }
        if bits > 0 {
            output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1F)])
        }
        if padding {
            while !output.count.isMultiple(of: 8) { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes Base32 text. Trailing `=` padding is accepted; lowercase letters are accepted only when
    /// `caseInsensitive` is set. Leftover bits must be zero, so every byte string has exactly one encoding.
    public static func decode(_ text: String, caseInsensitive: Bool = false) throws -> Data {
        var characters = Array(text.utf8)
        while characters.last == UInt8(ascii: "=") { characters.removeLast() }
        var output = Data()
        var buffer: UInt32 = 0
        var bits = 0
        for character in characters {
            var value = character
            if caseInsensitive, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(value) {
                value -= 32
            }
            let digit = lookup[Int(value)]
            guard digit >= 0 else {
                throw AssentCryptoError(.invalidEncoding, "The text contains a character that is not Base32.")
            }
            buffer = (buffer << 5) | UInt32(digit)
            bits += 5
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
            }
        }
        guard bits < 5, buffer & ((1 << UInt32(bits)) - 1) == 0 else {
            throw AssentCryptoError(.invalidEncoding, "The Base32 text has a malformed ending.")
        }
        return output
    }
}

/// CRC-16/ARC (polynomial 0x8005 reflected, initial value 0, no final XOR).
public enum CRC16 {
    /// The checksum of `bytes`.
    public static func arc<D: DataProtocol>(_ bytes: D) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 {
                crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1
            }
        }
        return crc
    }
}
