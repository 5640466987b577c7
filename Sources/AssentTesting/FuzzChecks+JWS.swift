import AssentCrypto
import AssentModel
import Foundation

extension FuzzChecks {
    /// What an OpenID client sends: any bytes decode as a JWK set or a client registration, or fail; whatever
    /// decodes survives a JSON round trip, and every key of a set becomes a verification key or is refused with an
    /// error. As a compact JWS, the input's header parses or fails, and it never verifies under keys that signed
    /// nothing — HS256, ES256 and RS256, alone or found in a key set by the token's `kid` and `alg`.
    @Sendable public static func jws(_ input: Data) throws {
        try roundTripsJSON(JWKSet.self, input)
        if let set = try? JSONDecoder().decode(JWKSet.self, from: input) {
            for key in set.keys {
                _ = key.thumbprint
                _ = try? key.verificationKey()
            }
        }
        try roundTripsJSON(CreateClientRequest.self, input)
        let token = String(decoding: input, as: UTF8.self)
        _ = try? CompactJWS.header(of: token)
        for key in UnusedKeys.shared.verificationKeys where (try? CompactJWS.verify(token, with: key)) != nil {
            throw Violation("A JWS verified under a key that signed nothing.")
        }
        if (try? CompactJWS.verify(token, keys: UnusedKeys.shared.set)) != nil {
            throw Violation("A JWS verified under a key set whose keys signed nothing.")
        }
    }

    /// Keys whose private halves sign nothing, made once per process.
    private struct UnusedKeys: Sendable {
        static let shared = UnusedKeys()
        let verificationKeys: [CompactJWS.VerificationKey]
        let set: JWKSet

        init() {
            let ec = ECPrivateKey().publicKey
            // A fixed RSA public key: generating one would leak 16 bytes in swift-crypto (its exponent's BIGNUM is
            // cleared, not freed), which the leak checker reports at exit.
            // The constant is a valid 2048-bit key.
            let rsa = try! JSONDecoder().decode(
                JWK.self,
                from: Data(#"{"kty":"RSA","kid":"rsa","alg":"RS256","e":"AQAB","n":"\#(Self.modulus)"}"#.utf8))
            verificationKeys = [.hs256(Data("fuzz".utf8)), .es256(ec), try! rsa.verificationKey()]
            set = JWKSet(keys: [JWK(es256: ec, kid: "ec"), rsa, JWK(es256: ec)])
        }

        /// Base64URL of a 2048-bit modulus whose private key was discarded.
        static let modulus =
            "yzdlVHa73MEfOHXsjaq8GCJAnOz9X9dfm38CAqRJ88X76zrrNNLFZdBfLOqXzDcUNm5TwrmjE9n9JT8qdIhNAHg6tEag_gG3aG4b"
            + "8nVuBa1CJTZU3sR8QH1gOs2HMnAwfhkJ4iEcR9T--x7aAbgnqGyk328b7KvKwC1iq1mJ1Nvc58kyq2jBQWX_sqYOd_dY5-4cROBj"
            + "mrJYsNISZVBhg6_3cWbU6uOR5z0HA9PG3KC35um-JhnI98I_5-uHBlZYj5ZkABFmSg__5iQjSVaN2ZwxyN_IIGcDxBbCS8I6CA_D"
            + "Ev7poKb9Ef3cKbwu9lI2XPX9mIcAdQt34MztuP7fFw"
    }
}
