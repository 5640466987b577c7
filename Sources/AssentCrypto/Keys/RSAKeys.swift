import CryptoExtras
import Foundation

/// An RSA private key for RS256 signatures (e.g. a Google service account's `private_key`).
public struct RSAPrivateKey: Sendable {
    let key: _RSA.Signing.PrivateKey

    /// Reads a PEM private key (PKCS#8 `BEGIN PRIVATE KEY` or PKCS#1 `BEGIN RSA PRIVATE KEY`) of 2048 bits or more.
    public init(pemRepresentation pem: String) throws {
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw AssentCryptoError(
                .invalidKey, "The PEM text is not an RSA private key of at least 2048 bits.", underlying: error)
        }
    }

    /// Generates a new key of `bits` (2048, 3072 or 4096).
    public init(bits: Int = 2048) throws {
        let size: _RSA.Signing.KeySize
        switch bits {
        case 2048: size = .bits2048
        case 3072: size = .bits3072
        case 4096: size = .bits4096
        default: throw AssentCryptoError(.invalidKey, "RSA keys are 2048, 3072 or 4096 bits.")
        }
        key = try AssentCryptoError.wrapping("RSA key generation") { try _RSA.Signing.PrivateKey(keySize: size) }
    }

    /// The key as PKCS#8 PEM.
    public var pemRepresentation: String { key.pkcs8PEMRepresentation }

    /// The matching public key.
    public var publicKey: RSAPublicKey { RSAPublicKey(key: key.publicKey) }
}

/// An RSA public key that verifies RS256 signatures.
public struct RSAPublicKey: Sendable {
    let key: _RSA.Signing.PublicKey
}
