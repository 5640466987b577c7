import Foundation

/// How a PowerAuth signature is written.
public enum SignatureFormat: Sendable, Hashable {
    /// Protocol 3.1 and later (online): Base64 of the last 16 bytes of every factor component.
    case base64
    /// Protocol 3.0 and offline signatures: every component as `length` decimal digits (4–8), joined with `-`.
    case decimal(length: Int)

    /// The format of online signatures in protocol 3.0 (8 digits per factor).
    public static let decimalV30 = SignatureFormat.decimal(length: 8)
    /// The default format of offline signatures (8 digits per factor).
    public static let offline = SignatureFormat.decimal(length: 8)

    /// The format used by a protocol version: decimal for `3.0`, Base64 for `3.1` and later.
    public init(protocolVersion: String) throws {
        switch protocolVersion {
        case "3.0": self = .decimalV30
        case "3.1", "3.2", "3.3": self = .base64
        default: throw AssentCryptoError(.invalidHeader, "Unsupported protocol version.")
        }
    }
}
