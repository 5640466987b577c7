import Crypto
import CryptoExtras
import Foundation
import X509

/// A credential public key as a COSE_Key (RFC 9052 §7, RFC 9053, RFC 8230, and the AKP key type of the COSE ML-DSA
/// draft), decoded from the CBOR the authenticator sent and checked against its algorithm.
public struct COSEKey: Sendable, Equatable {
    /// The COSE algorithms this relying party knows (IANA COSE Algorithms registry values).
    public enum Algorithm: Int, Sendable, CaseIterable {
        case es256 = -7
        case es384 = -35
        case es512 = -36
        case edDSA = -8
        case rs256 = -257
        case rs384 = -258
        case rs512 = -259
        case ps256 = -37
        case ps384 = -38
        case ps512 = -39
        case mlDSA44 = -48
        case mlDSA65 = -49
        case mlDSA87 = -50

        /// The algorithms a relying party offers by default, most preferred first: the three WebAuthn requires
        /// relying parties to support.
        public static let defaults: [Algorithm] = [.es256, .edDSA, .rs256]

        /// The name used in documents and logs.
        public var name: String {
            switch self {
            case .es256: "ES256"
            case .es384: "ES384"
            case .es512: "ES512"
            case .edDSA: "EdDSA"
            case .rs256: "RS256"
            case .rs384: "RS384"
            case .rs512: "RS512"
            case .ps256: "PS256"
            case .ps384: "PS384"
            case .ps512: "PS512"
            case .mlDSA44: "ML-DSA-44"
            case .mlDSA65: "ML-DSA-65"
            case .mlDSA87: "ML-DSA-87"
            }
        }
    }

    /// The key material by key type.
    public enum Material: Sendable, Equatable {
        /// kty 2: an elliptic-curve point; `curve` 1 = P-256, 2 = P-384, 3 = P-521.
        case ec2(curve: Int, x: Data, y: Data)
        /// kty 1: an octet key pair; curve 6 = Ed25519.
        case okp(curve: Int, x: Data)
        /// kty 3: an RSA modulus and exponent.
        case rsa(n: Data, e: Data)
        /// kty 7: an algorithm key pair's public key (ML-DSA).
        case akp(publicKey: Data)
    }

    public let algorithm: Algorithm
    public let material: Material

    public init(algorithm: Algorithm, material: Material) {
        self.algorithm = algorithm
        self.material = material
    }

    /// Decodes COSE_Key bytes, or the 65-byte uncompressed P-256 point (`04 ‖ x ‖ y`) that FIDO U2F keys are.
    public init(decoding encoded: Data) throws(WebAuthnError) {
        if encoded.count == 65, encoded.first == 0x04 {
            let point = [UInt8](encoded)
            self.init(algorithm: .es256, material: .ec2(curve: 1, x: Data(point[1..<33]), y: Data(point[33..<65])))
            try check()
            return
        }
        let item: CBOR
        do {
            item = try CBORDecoder(maximumDepth: 4, maximumItems: 64).decode(encoded)
        } catch {
            throw WebAuthnError(.key, "The credential public key is not CBOR: \(error)")
        }
        guard case .map = item else { throw WebAuthnError(.key, "The credential public key is not a CBOR map.") }
        func integer(_ label: Int) throws(WebAuthnError) -> Int {
            guard let value = item[Self.label(label)]?.int else {
                throw WebAuthnError(.key, "The COSE key has no integer parameter \(label).")
            }
            return value
        }
        func bytes(_ label: Int) throws(WebAuthnError) -> Data {
            guard case .bytes(let value)? = item[Self.label(label)] else {
                throw WebAuthnError(.key, "The COSE key has no byte-string parameter \(label).")
            }
            return value
        }
        let keyType = try integer(1)
        let algorithmValue = try integer(3)
        guard let algorithm = Algorithm(rawValue: algorithmValue) else {
            throw WebAuthnError(.algorithm, "The COSE algorithm \(algorithmValue) is not one this relying party knows.")
        }
        let material: Material
        switch keyType {
        case 1: material = .okp(curve: try integer(-1), x: try bytes(-2))
        case 2: material = .ec2(curve: try integer(-1), x: try bytes(-2), y: try bytes(-3))
        case 3: material = .rsa(n: try bytes(-1), e: try bytes(-2))
        case 7: material = .akp(publicKey: try bytes(-1))
        default: throw WebAuthnError(.key, "The COSE key type \(keyType) is not one this relying party knows.")
        }
        self.init(algorithm: algorithm, material: material)
        try check()
    }

    private static func label(_ value: Int) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-1 - value))
    }

    /// Refuses a key whose type, curve or size does not fit its algorithm, or that is not a valid key at all.
    private func check() throws(WebAuthnError) {
        // An ML-DSA-44 key can be read though not verified here: its size is all there is to check.
        if algorithm == .mlDSA44, case .akp(let key) = material {
            guard key.count == 1312 else { throw WebAuthnError(.key, "An ML-DSA-44 public key is 1312 bytes.") }
            return
        }
        do {
            _ = try verifier()
        } catch let error as WebAuthnError {
            throw error
        } catch {
            throw WebAuthnError(.key, "The \(algorithm.name) public key is not valid: \(error)")
        }
    }

    /// The key in the form swift-crypto verifies with.
    private enum Verifier {
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
        case p521(P521.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
        case mlDSA65(MLDSA65.PublicKey)
        case mlDSA87(MLDSA87.PublicKey)
    }

    private func verifier() throws -> Verifier {
        switch (algorithm, material) {
        case (.es256, .ec2(1, let x, let y)):
            return .p256(try P256.Signing.PublicKey(x963Representation: [0x04] + x + y))
        case (.es384, .ec2(2, let x, let y)):
            return .p384(try P384.Signing.PublicKey(x963Representation: [0x04] + x + y))
        case (.es512, .ec2(3, let x, let y)):
            return .p521(try P521.Signing.PublicKey(x963Representation: [0x04] + x + y))
        case (.edDSA, .okp(6, let x)):
            return .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: x))
        case (.rs256, .rsa(let n, let e)), (.rs384, .rsa(let n, let e)), (.rs512, .rsa(let n, let e)),
            (.ps256, .rsa(let n, let e)), (.ps384, .rsa(let n, let e)), (.ps512, .rsa(let n, let e)):
            return .rsa(try _RSA.Signing.PublicKey(n: n, e: e))
        case (.mlDSA65, .akp(let key)):
            return .mlDSA65(try MLDSA65.PublicKey(rawRepresentation: key))
        case (.mlDSA87, .akp(let key)):
            return .mlDSA87(try MLDSA87.PublicKey(rawRepresentation: key))
        case (.mlDSA44, .akp):
            throw WebAuthnError(
                .unsupported,
                "ML-DSA-44 is not available in this build's cryptography (swift-crypto offers ML-DSA-65 and -87).")
        default:
            throw WebAuthnError(.key, "The key's type or curve does not fit its algorithm \(algorithm.name).")
        }
    }

    /// Whether `signature` is this key's signature over `data` (WebAuthn's signature formats: ECDSA as DER, EdDSA
    /// and RSA raw, ML-DSA raw with an empty context).
    public func isValidSignature(_ signature: Data, for data: Data) throws(WebAuthnError) -> Bool {
        let key: Verifier
        do {
            key = try verifier()
        } catch let error as WebAuthnError {
            throw error
        } catch {
            throw WebAuthnError(.key, "The \(algorithm.name) public key is not valid: \(error)")
        }
        switch key {
        case .p256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .p384(let key):
            guard let parsed = try? P384.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .p521(let key):
            guard let parsed = try? P521.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .ed25519(let key):
            return key.isValidSignature(signature, for: data)
        case .rsa(let key):
            let parsed = _RSA.Signing.RSASignature(rawRepresentation: signature)
            switch algorithm {
            case .rs256: return key.isValidSignature(parsed, for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
            case .rs384: return key.isValidSignature(parsed, for: SHA384.hash(data: data), padding: .insecurePKCS1v1_5)
            case .rs512: return key.isValidSignature(parsed, for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
            case .ps256: return key.isValidSignature(parsed, for: SHA256.hash(data: data), padding: .PSS)
            case .ps384: return key.isValidSignature(parsed, for: SHA384.hash(data: data), padding: .PSS)
            default: return key.isValidSignature(parsed, for: SHA512.hash(data: data), padding: .PSS)
            }
        case .mlDSA65(let key):
            return key.isValidSignature(signature, for: data)
        case .mlDSA87(let key):
            return key.isValidSignature(signature, for: data)
        }
    }

    /// The key as an X.509 public key, to compare with an attestation certificate's (`nil` for ML-DSA, which
    /// swift-certificates does not model).
    public var certificatePublicKey: Certificate.PublicKey? {
        switch try? verifier() {
        case .p256(let key): Certificate.PublicKey(key)
        case .p384(let key): Certificate.PublicKey(key)
        case .p521(let key): Certificate.PublicKey(key)
        case .ed25519(let key): Certificate.PublicKey(key)
        case .rsa(let key): Certificate.PublicKey(key)
        default: nil
        }
    }
}
