import Foundation

/// Byte helpers used throughout the PowerAuth constructions.
public enum Bytes {
    /// Cryptographically secure random bytes.
    public static func random(count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Folds 32 bytes to 16: byte `i` is `b[i] XOR b[i + 16]` (the spec's `c32to16`).
    static func fold32to16<D: DataProtocol>(_ bytes: D) -> Data {
        let array = Array(bytes)
        precondition(array.count == 32, "c32to16 takes exactly 32 bytes")
        return Data((0..<16).map { array[$0] ^ array[$0 + 16] })
    }

    /// The 8-byte big-endian encoding of `value`.
    public static func bigEndian(_ value: UInt64) -> Data {
        withUnsafeBytes(of: value.bigEndian) { Data($0) }
    }

    /// The 4-byte big-endian encoding of `value`.
    public static func bigEndian(_ value: UInt32) -> Data {
        withUnsafeBytes(of: value.bigEndian) { Data($0) }
    }

    /// Compares two byte strings in time that depends only on their lengths.
    public static func constantTimeEqual<A: DataProtocol, B: DataProtocol>(_ lhs: A, _ rhs: B) -> Bool {
        let left = Array(lhs)
        let right = Array(rhs)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices {
            difference |= left[index] ^ right[index]
        }
        return difference == 0
    }

    /// Joins parts, each prefixed by its 4-byte big-endian length; a `nil` part is four zero bytes.
    ///
    /// This is the `concatWithSizes` construction of PowerAuth's ECIES shared info and associated data.
    public static func concatenatingWithSizes(_ parts: [Data?]) -> Data {
        var result = Data()
        for part in parts {
            guard let part else {
                result.append(contentsOf: [0, 0, 0, 0])
                continue
            }
            result.append(bigEndian(UInt32(part.count)))
            result.append(part)
        }
        return result
    }

    /// Decodes standard Base64 (with padding), throwing a typed error for invalid text.
    ///
    /// - Parameters:
    ///   - text: the Base64 text.
    ///   - field: the name of the value, used in the error message.
    ///   - length: the required decoded length, if any.
    public static func base64(_ text: String, field: String, length: Int? = nil) throws -> Data {
        guard let data = Data(base64Encoded: text) else {
            throw AssentCryptoError(.invalidEncoding, "\(field) is not valid Base64.")
        }
        if let length, data.count != length {
            throw AssentCryptoError(
                .invalidLength,
                "\(field) must be \(length) bytes, got \(data.count)."
            )
        }
        return data
    }

    /// Throws unless `data` has exactly `length` bytes.
    static func requireLength<D: DataProtocol>(_ data: D, _ length: Int, _ field: String) throws {
        guard data.count == length else {
            throw AssentCryptoError(.invalidLength, "\(field) must be \(length) bytes, got \(data.count).")
        }
    }
}
