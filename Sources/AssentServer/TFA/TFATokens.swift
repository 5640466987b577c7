import AssentCrypto
import Crypto
import Foundation

/// The signed tokens of two-factor login, all ES256 JWS with the OpenID provider's keys (published at
/// `/oauth2/jwks`), told apart by their `use` claim so that one kind can never stand for another:
/// - `tfa-reg`: the `regToken` of an interrupted login (`jti` = the flow; single use is the flow's row);
/// - `tfa-device`: a remembered device (`jti` = its row, which can be revoked);
/// - `login`: the success a relying party verifies (`aud` = the application).
struct TFATokens: Sendable {
    let clock: WallClock
    let openID: OpenIDSettings
    let keys: SigningKeyService

    enum Use: String, Codable {
        case registration = "tfa-reg"
        case device = "tfa-device"
        case login
    }

    struct Claims: Codable {
        var iss: String
        var sub: String
        var aud: String
        var iat: Int64
        var exp: Int64
        var jti: String
        var use: Use
        var amr: [String]?
        var tfa: String?
    }

    /// Signs a token of `use` for `userId` of `applicationId`, valid for `lifetime` seconds.
    func sign(
        _ use: Use, id: String, userId: String, applicationId: String, lifetime: Int, amr: [String]? = nil,
        provider: String? = nil
    ) async throws -> (token: String, expiresAt: Millis) {
        let now = clock.millis
        let claims = Claims(
            iss: openID.issuer, sub: userId, aud: applicationId, iat: now / 1000,
            exp: now / 1000 + Int64(lifetime), jti: id, use: use, amr: amr, tfa: provider)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let signer = try await keys.signer("ES256")
        let token = try CompactJWS.sign(payload: try encoder.encode(claims), with: signer.signingKey, keyId: signer.kid)
        return (token, now + Millis(lifetime) * 1000)
    }

    /// The claims of a token of `use` that this provider signed and that has not expired; `nil` otherwise.
    func verify(_ token: String, use: Use) async throws -> Claims? {
        guard token.utf8.count <= 4096, (try? CompactJWS.header(of: token))?.alg == "ES256",
            let payload = try? CompactJWS.verify(token, keys: try await keys.jwks()),
            let claims = try? JSONDecoder().decode(Claims.self, from: payload),
            claims.use == use, claims.iss == openID.issuer,
            claims.exp * 1000 > clock.millis
        else { return nil }
        return claims
    }

    /// A random bearer value (192 bits, Base64URL) and the SHA-256 that is stored in its place.
    static func bearer() -> (value: String, hash: Data) {
        let value = Base64URL.encode(Bytes.random(count: 24))
        return (value, hash(value))
    }

    static func hash(_ value: String) -> Data { Data(SHA256.hash(data: Data(value.utf8))) }

    /// A random row id (128 bits, Base64URL).
    static func id() -> String { Base64URL.encode(Bytes.random(count: 16)) }
}
