import Crypto
import Foundation

/// A NIST P-256 private key, used both for ECDH and for ECDSA.
public struct ECPrivateKey: Sendable {
    let agreementKey: P256.KeyAgreement.PrivateKey

    /// Generates a new random key.
    public init() {
        agreementKey = P256.KeyAgreement.PrivateKey()
    }

    /// Creates a key from its big-endian scalar.
    ///
    /// Accepts the 32-byte form and the forms other implementations store: a leading sign byte
    /// (33 bytes starting with `0x00`) or a scalar shorter than 32 bytes.
    public init<D: DataProtocol>(scalar: D) throws {
        var bytes = Array(scalar)
        while bytes.count > 32, bytes.first == 0 {
            bytes.removeFirst()
        }
        guard !bytes.isEmpty, bytes.count <= 32 else {
            throw AssentCryptoError(.invalidKey, "A P-256 private key scalar must be at most 32 bytes.")
        }
        bytes.insert(contentsOf: [UInt8](repeating: 0, count: 32 - bytes.count), at: 0)
        do {
            agreementKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes)
        } catch {
            throw AssentCryptoError(.invalidKey, "The private key is not a valid P-256 scalar.", underlying: error)
        }
    }

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, e.g. an APNs `.p8` file) or SEC 1
    /// (`BEGIN EC PRIVATE KEY`).
    public init(pemRepresentation pem: String) throws {
        do {
            agreementKey = try P256.KeyAgreement.PrivateKey(pemRepresentation: pem)
        } catch {
            throw AssentCryptoError(.invalidKey, "The PEM text is not a P-256 private key.", underlying: error)
        }
    }

    /// The 32-byte big-endian scalar.
    public var scalar: Data { agreementKey.rawRepresentation }

    /// The key as PKCS#8 PEM.
    public var pemRepresentation: String { agreementKey.pemRepresentation }

    /// The matching public key.
    public var publicKey: ECPublicKey { ECPublicKey(agreementKey: agreementKey.publicKey) }

    /// The raw ECDH shared secret (the X coordinate of the shared point, 32 bytes).
    public func sharedSecret(with publicKey: ECPublicKey) throws -> Data {
        let secret = try AssentCryptoError.wrapping("ECDH") {
            try agreementKey.sharedSecretFromKeyAgreement(with: publicKey.agreementKey)
        }
        return secret.withUnsafeBytes { Data($0) }
    }

    var signingKey: P256.Signing.PrivateKey {
        // The raw representation of a valid key-agreement key is always a valid signing key.
        try! P256.Signing.PrivateKey(rawRepresentation: agreementKey.rawRepresentation)
    }
}

/// A NIST P-256 public key in X9.63 form.
public struct ECPublicKey: Sendable, Equatable {
    let agreementKey: P256.KeyAgreement.PublicKey

    init(agreementKey: P256.KeyAgreement.PublicKey) {
        self.agreementKey = agreementKey
    }

    /// Creates a key from its X9.63 encoding: uncompressed (65 bytes, `0x04 ‖ X ‖ Y`) or compressed (33 bytes).
    public init<D: DataProtocol>(x963 bytes: D) throws {
        let array = Array(bytes)
        do {
            switch (array.count, array.first) {
            case (65, 0x04):
                agreementKey = try P256.KeyAgreement.PublicKey(x963Representation: array)
            case (33, 0x02), (33, 0x03):
                agreementKey = try P256.KeyAgreement.PublicKey(compressedRepresentation: array)
            default:
                throw AssentCryptoError(
                    .invalidKey,
                    "A P-256 public key must be 65 bytes uncompressed or 33 bytes compressed X9.63."
                )
            }
        } catch let error as AssentCryptoError {
            throw error
        } catch {
            throw AssentCryptoError(.invalidKey, "The public key is not a point on P-256.", underlying: error)
        }
    }

    /// Creates a key from the Base64 text of its X9.63 encoding.
    public init(base64 text: String, field: String = "public key") throws {
        try self.init(x963: Bytes.base64(text, field: field))
    }

    /// The uncompressed X9.63 encoding (65 bytes), as servers send it.
    public var x963: Data { agreementKey.x963Representation }

    /// The compressed X9.63 encoding (33 bytes).
    public var compressed: Data { agreementKey.compressedRepresentation }

    /// The 32-byte X coordinate.
    public var xCoordinate: Data { x963.subdata(in: 1..<33) }

    /// The key as PEM (`BEGIN PUBLIC KEY`, SubjectPublicKeyInfo).
    public var pemRepresentation: String { agreementKey.pemRepresentation }

    /// Reads a PEM public key (`BEGIN PUBLIC KEY`).
    public init(pemRepresentation pem: String) throws {
        do {
            agreementKey = try P256.KeyAgreement.PublicKey(pemRepresentation: pem)
        } catch {
            throw AssentCryptoError(.invalidKey, "The PEM text is not a P-256 public key.", underlying: error)
        }
    }

    var signingKey: P256.Signing.PublicKey {
        // Same curve, same point: the conversion cannot fail.
        try! P256.Signing.PublicKey(x963Representation: agreementKey.x963Representation)
    }

    public static func == (lhs: ECPublicKey, rhs: ECPublicKey) -> Bool {
        lhs.x963 == rhs.x963
    }
}
