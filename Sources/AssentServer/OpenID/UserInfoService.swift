import AssentModel
import Foundation

/// The claims of the person an access token names (OpenID Connect Core §5.3, §5.4): `sub` always; then per scope
/// the token was granted — `profile`: `name` (the login account's display name, when it has one) and
/// `preferred_username` (the user id); `email`: `email` and `email_verified` of the account's first e-mail factor;
/// `phone`: `phone_number` and `phone_number_verified` of its phone factor. E-mail factors are addresses the operator
/// vouches for and a phone factor is registered by a code sent to it, so both count as verified.
struct UserInfoService: Sendable {
    /// The part of the store this sees.
    let store: any OpenIDStore & TFAStore

    /// The claims names this serves, for discovery.
    static let claims = [
        "sub", "name", "preferred_username", "email", "email_verified", "phone_number", "phone_number_verified",
    ]

    func claims(for token: AccessTokenRecord) async throws -> [String: JSONValue] {
        var claims: [String: JSONValue] = ["sub": .string(token.userId)]
        let scopes = Set(token.scope.split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: ["profile", "email", "phone"]),
            let client = try await store.client(id: token.clientId)
        else { return claims }
        let account = try await store.tfaAccount(applicationId: client.applicationId, userId: token.userId)
        let factors = try await store.tfaFactors(applicationId: client.applicationId, userId: token.userId)
            .filter { $0.state == .active }
            .sorted { $0.createdAt < $1.createdAt }
        if scopes.contains("profile") {
            claims["preferred_username"] = .string(token.userId)
            if let name = account?.displayName { claims["name"] = .string(name) }
        }
        if scopes.contains("email"), let email = factors.first(where: { $0.provider == .email })?.destination {
            claims["email"] = .string(email)
            claims["email_verified"] = .bool(true)
        }
        if scopes.contains("phone"), let phone = factors.first(where: { $0.provider == .phone })?.destination {
            claims["phone_number"] = .string(phone)
            claims["phone_number_verified"] = .bool(true)
        }
        return claims
    }
}
