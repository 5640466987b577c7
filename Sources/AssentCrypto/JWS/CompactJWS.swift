import Crypto
import CryptoExtras
import Foundation

/// Compact JSON Web Signatures (RFC 7515): HS256 and ES256 (raw `R ‖ S`, RFC 7518 §3.4), which PowerAuth's
/// temporary keys and the APNs provider token use, and RS256 (RSASSA-PKCS1-v1_5 with SHA-256) for Google's
/// service-account assertions.
public enum CompactJWS {
    /// A signing or verification key.
    public enum Key: Sendable {
        /// HMAC-SHA256 with a shared secret.
        case hs256(Data)
        /// ECDSA P-256 SHA-256 with a private key (signing) — verification uses ``VerificationKey``.
        case es256(ECPrivateKey)
        /// RSASSA-PKCS1-v1_5 SHA-256 with an RSA private key.
        case rs256(RSAPrivateKey)

        var algorithm: String {
            switch self {
            case .hs256: "HS256"
            case .es256: "ES256"
            case .rs256: "RS256"
            }
        }
    }

    /// A key that verifies a JWS.
    public enum VerificationKey: Sendable {
        /// HMAC-SHA256 with a shared secret.
        case hs256(Data)
        /// ECDSA P-256 SHA-256 with a public key.
        case es256(ECPublicKey)
        /// RSASSA-PKCS1-v1_5 SHA-256 with an RSA public key.
        case rs256(RSAPublicKey)

        var algorithm: String {
            switch self {
            case .hs256: "HS256"
            case .es256: "ES256"
            case .rs256: "RS256"
            }
        }
    }

    /// Signs `payload` (the JSON claims) and returns `header.payload.signature`; `keyId` becomes the header's
    /// `kid`, `type` its `typ`.
    public static func sign(payload: Data, with key: Key, keyId: String? = nil, type: String = "JWT") throws -> String {
        var header = #"{"alg":"\#(key.algorithm)""#
        if let keyId {
            guard let quoted = try? JSONEncoder().encode(keyId) else {
                throw AssentCryptoError(.invalidEncoding, "The key id cannot be encoded.")
            }
            header += #","kid":"# + String(decoding: quoted, as: UTF8.self)
        }
        guard let quotedType = try? JSONEncoder().encode(type) else {
            throw AssentCryptoError(.invalidEncoding, "The type cannot be encoded.")
        }
        header += #","typ":"# + String(decoding: quotedType, as: UTF8.self) + "}"
        let signingInput = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(payload)
        let signature: Data
        switch key {
        case .hs256(let secret):
            signature = HMACSHA256.mac(key: secret, data: Data(signingInput.utf8))
        case .es256(let privateKey):
            signature = try AssentCryptoError.wrapping("ES256 signing") {
                try privateKey.signingKey.signature(for: Data(signingInput.utf8)).rawRepresentation
            }
        case .rs256(let privateKey):
            signature = try AssentCryptoError.wrapping("RS256 signing") {
                try privateKey.key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
                    .rawRepresentation
            }
        }
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Verifies a compact JWS and returns its payload.
    ///
    /// The header must name exactly the algorithm of `key` (no `none`, no algorithm switching).
    ///
    /// - Throws: ``AssentCryptoError/Code/invalidEncoding`` for a malformed token,
    ///   ``AssentCryptoError/Code/invalidSignature`` when the algorithm or signature is wrong.
    public static func verify(_ token: String, with key: VerificationKey) throws -> Data {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16_384 else {
            throw AssentCryptoError(.invalidEncoding, "A JWS has three dot-separated parts.")
        }
        let header = try Base64URL.decode(String(parts[0]))
        let payload = try Base64URL.decode(String(parts[1]))
        let signature = try Base64URL.decode(String(parts[2]))
        struct Header: Decodable { let alg: String }
        guard let parsed = try? JSONDecoder().decode(Header.self, from: header) else {
            throw AssentCryptoError(.invalidEncoding, "The JWS header is not valid JSON.")
        }
        guard parsed.alg == key.algorithm else {
            throw AssentCryptoError(.invalidSignature, "The JWS uses an unexpected algorithm.")
        }
        let signingInput = Data("\(parts[0]).\(parts[1])".utf8)
        let valid: Bool
        switch key {
        case .hs256(let secret):
            valid = Bytes.constantTimeEqual(HMACSHA256.mac(key: secret, data: signingInput), signature)
        case .es256(let publicKey):
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
                throw AssentCryptoError(.invalidSignature, "The ES256 signature must be 64 bytes R ‖ S.")
            }
            valid = publicKey.signingKey.isValidSignature(ecdsa, for: signingInput)
        case .rs256(let publicKey):
            valid = publicKey.key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5)
        }
        guard valid else {
            throw AssentCryptoError(.invalidSignature, "The JWS signature does not verify.")
        }
        return payload
    }
}

/// Base64 with the URL-safe alphabet and no padding (RFC 4648 §5).
public enum Base64URL {
    /// Encodes bytes.
    public static func encode(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes text; padding is optional, the standard alphabet's `+` and `/` are rejected.
    public static func decode(_ text: String) throws -> Data {
        guard !text.contains("+"), !text.contains("/"), !text.contains("=") else {
            throw AssentCryptoError(.invalidEncoding, "Base64URL text uses - and _ and no padding.")
        }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while !standard.utf8.count.isMultiple(of: 4) { standard += "=" }
        guard let data = Data(base64Encoded: standard) else {
            throw AssentCryptoError(.invalidEncoding, "The text is not valid Base64URL.")
        }
        return data
    }
}
