import Foundation

/// One encrypted message: a request (with the sender's ephemeral key) or a response (without).
public struct ECIESCryptogram: Sendable, Equatable {
    /// The sender's ephemeral public key (X9.63, as sent); `nil` in responses.
    public var ephemeralPublicKey: Data?
    /// AES-128-CBC/PKCS#7 ciphertext.
    public var encryptedData: Data
    /// `HMAC-SHA256(macKey, encryptedData ‖ sharedInfo2)`.
    public var mac: Data
    /// The 16-byte nonce the IV is derived from.
    public var nonce: Data
    /// Milliseconds since 1970, bound into the MAC.
    public var timestamp: UInt64

    /// Creates a cryptogram from its parts.
    public init(ephemeralPublicKey: Data?, encryptedData: Data, mac: Data, nonce: Data, timestamp: UInt64) {
        self.ephemeralPublicKey = ephemeralPublicKey
        self.encryptedData = encryptedData
        self.mac = mac
        self.nonce = nonce
        self.timestamp = timestamp
    }
}
