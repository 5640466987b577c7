import AssentCrypto
import AssentModel
import Foundation
import NIOCore

extension OutboxChannel {
    /// Back-channel logouts: a logout token to each client a single-sign-on session served, when it ends.
    public static let logout = OutboxChannel(rawValue: "logout")
}

/// Delivers back-channel logouts from the outbox (OpenID Connect Back-Channel Logout 1.0 §2.5): a `logout_token`
/// form POST to the client's `backchannelLogoutUri`. The message names the session (`subject`), the client
/// (`target`) and the user (`payload`); the token is signed at each attempt and lives two minutes. Redirects are never
/// followed; a 4xx other than 408 and 429 is the client refusing the token, not retried.
struct LogoutSender: OutboxSender {
    /// The part of the store this sees.
    let store: any OpenIDStore
    let clock: WallClock
    let openID: OpenIDSettings
    let keys: SigningKeyService
    let post: CallbackPost

    static let event = "http://schemas.openid.net/event/backchannel-logout"

    var channel: OutboxChannel { .logout }

    func deliver(_ item: OutboxItem) async -> DeliveryOutcome {
        let endpoint: String
        let token: String
        do {
            guard let clientId = item.target, let userId = item.payload,
                let registered = try await store.client(id: clientId),
                let uri = registered.backchannelLogoutUri
            else { return .failed("The client or its back-channel logout URI no longer exists.") }
            endpoint = uri
            token = try await logoutToken(client: registered, userId: userId, sessionId: item.subject)
        } catch {
            return .retry("The logout token could not be signed: \(type(of: error))")
        }
        switch await post.send(
            FormEncoding.encode(["logout_token": token]), to: endpoint,
            contentType: "application/x-www-form-urlencoded", userAgent: "Assent-Logout")
        {
        case .success(let status): return CallbackPost.outcome(status, of: "The logout URI")
        case .failure(let failure): return CallbackPost.outcome(failure)
        }
    }

    /// The logout token (§2.4): `iss`, `aud`, `iat`, `exp`, `jti`, `sub`, `sid` and the back-channel logout event;
    /// never a `nonce`; typed `logout+jwt`.
    func logoutToken(client: OpenIDClientRecord, userId: String, sessionId: String) async throws -> String {
        let now = clock.millis / 1000
        let claims = LogoutTokenClaims(
            iss: openID.issuer, aud: client.id, iat: now, exp: now + 120,
            jti: Base64URL.encode(Bytes.random(count: 18)), sub: userId, sid: sessionId,
            events: [Self.event: [:]])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let signer = try await keys.signer(client.idTokenAlgorithm)
        return try CompactJWS.sign(
            payload: try encoder.encode(claims), with: signer.signingKey, keyId: signer.kid, type: "logout+jwt")
    }

}

/// The claims of a logout token.
struct LogoutTokenClaims: Codable {
    let iss: String
    let aud: String
    let iat: Int64
    let exp: Int64
    let jti: String
    let sub: String
    let sid: String
    let events: [String: [String: String]]
}
