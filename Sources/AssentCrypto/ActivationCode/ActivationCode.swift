import Foundation

/// A PowerAuth activation code such as `W65WE-3T7VI-7FBS2-A4OYA`.
///
/// Ten random bytes and their CRC-16/ARC (big-endian) are Base32-encoded to twenty characters in four
/// groups of five. The checksum catches typing mistakes before anything is sent to the server.
public struct ActivationCode: Sendable, Hashable, CustomStringConvertible {
    /// The code in its canonical `XXXXX-XXXXX-XXXXX-XXXXX` form.
    public let value: String

    /// Generates a new random code.
    public static func generate() -> ActivationCode {
        var bytes = Bytes.random(count: 10)
        let crc = CRC16.arc(bytes)
        bytes.append(contentsOf: [UInt8(crc >> 8), UInt8(crc & 0xFF)])
        let text = Base32.encode(bytes)
        let groups = stride(from: 0, to: 20, by: 5).map { start in
            let from = text.index(text.startIndex, offsetBy: start)
            return String(text[from..<text.index(from, offsetBy: 5)])
        }
        // A freshly encoded code always validates.
        return try! ActivationCode(groups.joined(separator: "-"))
    }

    /// Validates `text` (shape, alphabet, checksum) and wraps it.
    public init(_ text: String) throws {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.count == 4, groups.allSatisfy({ $0.utf8.count == 5 }) else {
            throw AssentCryptoError(
                .invalidActivationCode,
                "An activation code has four groups of five characters separated by dashes."
            )
        }
        let bytes: Data
        do {
            bytes = try Base32.decode(groups.joined())
        } catch {
            throw AssentCryptoError(.invalidActivationCode, "An activation code uses only A–Z and 2–7.")
        }
        let crc = CRC16.arc(bytes.prefix(10))
        guard bytes.count == 12, bytes[bytes.startIndex + 10] == UInt8(crc >> 8),
            bytes[bytes.startIndex + 11] == UInt8(crc & 0xFF)
        else {
            throw AssentCryptoError(
                .invalidActivationCode, "The activation code's checksum does not match: check for a typo.")
        }
        value = text
    }

    /// Whether `text` is a well-formed activation code with a valid checksum.
    public static func isValid(_ text: String) -> Bool {
        (try? ActivationCode(text)) != nil
    }

    public var description: String { value }
}

/// The scanned QR form of an activation code: `CODE#B64(signature)`.
public struct ActivationQRCode: Sendable, Hashable {
    /// The activation code.
    public let code: ActivationCode
    /// The DER signature of the code by the master server private key.
    public let signature: Data

    /// Parses `CODE#signature`; both parts must be present and well formed.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "#", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw AssentCryptoError(.invalidActivationCode, "An activation QR code reads CODE#SIGNATURE.")
        }
        code = try ActivationCode(String(parts[0]))
        signature = try Bytes.base64(String(parts[1]), field: "Activation code signature")
    }

    /// The QR text, `CODE#B64(signature)`.
    public var text: String { "\(code.value)#\(signature.base64EncodedString())" }
}
