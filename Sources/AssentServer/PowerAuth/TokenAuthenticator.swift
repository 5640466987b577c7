import AssentCrypto
import Foundation

/// Verifies `X-PowerAuth-Token` MAC-token headers: known token, digest, fresh timestamp, unused nonce, and an
/// activation that is still `ACTIVE`.
public struct TokenAuthenticator: Sendable {
    /// The part of the store this sees.
    let store: any ActivationStore & ReplayGuard
    let clock: WallClock
    let policy: SecurityPolicy

    /// Returns the token and its activation's identity, or throws `POWERAUTH_AUTH_FAIL`.
    public func authenticate(_ headerValue: String?) async throws -> (TokenRecord, DevicePrincipal) {
        guard let headerValue else {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Token header is missing.")
        }
        let header: TokenHeader
        do {
            header = try TokenHeader(parsing: headerValue)
        } catch {
            throw AssentServerError.authenticationFailed("The X-PowerAuth-Token header is malformed.")
        }
        guard let (token, principal, state) = try await store.tokenWithActivation(id: header.tokenId),
            header.isDigestValid(tokenSecret: token.secret)
        else { throw AssentServerError.authenticationFailed("The token is unknown or its digest is wrong.") }
        let now = clock.millis
        let tolerance = Millis(policy.timestampTolerance) * 1000
        guard header.timestamp <= UInt64(Int64.max), abs(Int64(header.timestamp) - now) <= tolerance else {
            throw AssentServerError.authenticationFailed("The token timestamp is too far from the server time.")
        }
        guard
            try await store.claimUnique(
                kind: "token", value: "\(token.id):\(header.nonce.base64EncodedString())",
                expiresAt: now + 2 * tolerance)
        else { throw AssentServerError.authenticationFailed("The token nonce was already used (replay).") }
        guard state == .active else {
            throw AssentServerError.authenticationFailed("The token's activation is not active.")
        }
        return (token, principal)
    }
}
