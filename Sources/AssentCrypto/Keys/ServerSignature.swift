import Crypto
import Foundation

/// ECDSA P-256 with SHA-256 over server-signed data (activation-code QR, offline operations).
public enum ServerSignature {
    /// Signs `data`, returning the DER-encoded signature.
    public static func sign(_ data: Data, with privateKey: ECPrivateKey) throws -> Data {
        let signature = try AssentCryptoError.wrapping("ECDSA signing") {
            try privateKey.signingKey.signature(for: data)
        }
        return signature.derRepresentation
    }

    /// Whether `signature` (DER) is a valid signature of `data` by `publicKey`.
    ///
    /// - Throws: ``AssentCryptoError/Code/invalidSignature`` when the signature is not valid DER.
    public static func isValid(_ signature: Data, of data: Data, by publicKey: ECPublicKey) throws -> Bool {
        let parsed: P256.Signing.ECDSASignature
        do {
            parsed = try P256.Signing.ECDSASignature(derRepresentation: signature)
        } catch {
            throw AssentCryptoError(.invalidSignature, "The ECDSA signature is not valid DER.", underlying: error)
        }
        return publicKey.signingKey.isValidSignature(parsed, for: data)
    }

    /// Converts a DER signature to the 64-byte JOSE form `R ‖ S` used by ES256 JWTs.
    public static func rawRepresentation(ofDER signature: Data) throws -> Data {
        do {
            return try P256.Signing.ECDSASignature(derRepresentation: signature).rawRepresentation
        } catch {
            throw AssentCryptoError(.invalidSignature, "The ECDSA signature is not valid DER.", underlying: error)
        }
    }
}
