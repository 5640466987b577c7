import Crypto
import CryptoExtras
import Foundation

/// A public JSON Web Key (RFC 7517, RFC 7518 §6): a P-256 key for ES256 or an RSA key for RS256, as an OpenID
/// provider publishes them in its JWKS and a relying party reads them back.
public struct JWK: Codable, Sendable, Equatable {
    /// `EC` or `RSA`.
    public var kty: String
    /// The key id: by default the RFC 7638 thumbprint.
    public var kid: String?
    /// `sig` for signing keys.
    public var use: String?
    /// `ES256` or `RS256`.
    public var alg: String?
    /// EC: the curve (`P-256`) and the coordinates, Base64URL.
    public var crv: String?
    public var x: String?
    public var y: String?
    /// RSA: the modulus and the public exponent, Base64URL big-endian without leading zeros.
    public var n: String?
    public var e: String?

    /// The JWK of an ES256 verification key; `kid` defaults to the thumbprint.
    public init(es256 key: ECPublicKey, kid: String? = nil) {
        let point = key.x963
        kty = "EC"
        crv = "P-256"
        x = Base64URL.encode(point.subdata(in: 1..<33))
        y = Base64URL.encode(point.subdata(in: 33..<65))
        use = "sig"
        alg = "ES256"
        self.kid = kid ?? thumbprint
    }

    /// The JWK of an RS256 verification key; `kid` defaults to the thumbprint.
    public init(rs256 key: RSAPublicKey, kid: String? = nil) throws {
        let primitives = try AssentCryptoError.wrapping("RSA key export") { try key.key.getKeyPrimitives() }
        kty = "RSA"
        n = Base64URL.encode(Self.unsigned(primitives.modulus))
        e = Base64URL.encode(Self.unsigned(primitives.publicExponent))
        use = "sig"
        alg = "RS256"
        self.kid = kid ?? thumbprint
    }

    /// The RFC 7638 thumbprint: Base64URL(SHA-256) of the required members in lexicographic order, no spaces.
    public var thumbprint: String {
        let canonical =
            kty == "RSA"
            ? #"{"e":"\#(e ?? "")","kty":"RSA","n":"\#(n ?? "")"}"#
            : #"{"crv":"\#(crv ?? "")","kty":"\#(kty)","x":"\#(x ?? "")","y":"\#(y ?? "")"}"#
        return Base64URL.encode(Data(SHA256.hash(data: Data(canonical.utf8))))
    }

    /// The key that verifies signatures made with it.
    /// - Throws: ``AssentCryptoError/Code/invalidKey`` for a key of another type, curve or size (RSA below 2048 bits).
    public func verificationKey() throws -> CompactJWS.VerificationKey {
        switch kty {
        case "EC":
            guard crv == "P-256", let x, let y, alg == nil || alg == "ES256" else {
                throw AssentCryptoError(.invalidKey, "An EC JWK must be a P-256 key for ES256.")
            }
            let point = Data([0x04]) + (try Base64URL.decode(x)) + (try Base64URL.decode(y))
            return .es256(try ECPublicKey(x963: point))
        case "RSA":
            guard let n, let e, alg == nil || alg == "RS256" else {
                throw AssentCryptoError(.invalidKey, "An RSA JWK must have n and e and be for RS256.")
            }
            let modulus = try Base64URL.decode(n)
            let exponent = try Base64URL.decode(e)
            do {
                return .rs256(RSAPublicKey(key: try _RSA.Signing.PublicKey(n: modulus, e: exponent)))
            } catch {
                throw AssentCryptoError(
                    .invalidKey, "The RSA JWK is not a key of at least 2048 bits.", underlying: error)
            }
        default:
            throw AssentCryptoError(.invalidKey, "JWK key type \(kty) is not supported (EC or RSA).")
        }
    }

    private static func unsigned(_ bytes: Data) -> Data {
        let trimmed = bytes.drop { $0 == 0 }
        return trimmed.isEmpty ? Data([0]) : Data(trimmed)
    }
}

/// A JWK Set (RFC 7517 §5): `{"keys": [...]}`.
public struct JWKSet: Codable, Sendable, Equatable {
    public var keys: [JWK]

    public init(keys: [JWK]) { self.keys = keys }

    /// The key with `kid`, or the only key for `alg` when the token names no key id.
    public func key(id kid: String?, algorithm: String) -> JWK? {
        if let kid { return keys.first { $0.kid == kid } }
        let candidates = keys.filter { $0.alg == algorithm }
        return candidates.count == 1 ? candidates[0] : nil
    }
}

extension CompactJWS {
    /// The protected header's `alg`, `kid` and `typ`, read without verifying anything.
    public struct Header: Codable, Sendable, Equatable {
        public var alg: String
        public var kid: String?
        public var typ: String?
    }

    /// Reads the header of a compact JWS.
    /// - Throws: ``AssentCryptoError/Code/invalidEncoding`` for a malformed token.
    public static func header(of token: String) throws -> Header {
        guard let first = token.split(separator: ".", omittingEmptySubsequences: false).first,
            token.utf8.count <= 16_384,
            let header = try? JSONDecoder().decode(Header.self, from: try Base64URL.decode(String(first)))
        else { throw AssentCryptoError(.invalidEncoding, "The JWS header is not valid Base64URL JSON.") }
        return header
    }

    /// Verifies a token against the key of a JWK set its header names.
    /// - Throws: ``AssentCryptoError/Code/invalidSignature`` when no key matches or the signature is wrong.
    public static func verify(_ token: String, keys: JWKSet) throws -> Data {
        let header = try header(of: token)
        guard let jwk = keys.key(id: header.kid, algorithm: header.alg) else {
            throw AssentCryptoError(.invalidSignature, "No published key matches the token's key id.")
        }
        return try verify(token, with: try jwk.verificationKey())
    }
}
