import Foundation

/// Ends what a person's sign-ins granted when what granted them ends: the refresh and access tokens a client holds,
/// the single-sign-on sessions (with their back-channel logouts) and the page sessions that keep the sign-in. A
/// consent taken back ends that client's tokens; a deleted account, a changed password, a phone reported lost and an
/// operator's "sign out everywhere" end everything the person holds in the application. Nothing is left to rotate:
/// a refresh token revoked here is refused, and presenting it again revokes nothing more.
struct GrantRevocation: Sendable {
    /// The part of the store this sees.
    let store: any OpenIDStore & WebStore
    let clock: WallClock
    let audit: Auditor

    /// Why everything a person holds ends.
    enum Reason: String, Sendable {
        case accountRemoved = "the login account was removed"
        case accountDisabled = "the login account was disabled"
        case passwordChanged = "the password was changed"
        case phoneLost = "a phone was reported lost"
        case signedOutEverywhere = "an operator signed the person out everywhere"
    }

    /// The owner a page session of `userId` signed in to `applicationId` is kept under.
    static func owner(_ applicationId: String, _ userId: String) -> String { "\(applicationId):\(userId)" }

    /// Ends everything `userId` holds in `applicationId`: tokens at every client, single-sign-on sessions (their
    /// clients' back-channel logouts queued) and every page session holding the sign-in but `keeping` (the page
    /// the person is on, when they made the change themselves). Audited as `openid.grants_revoked`.
    /// - Returns: how many refresh tokens and page sessions ended.
    @discardableResult
    func revokeAll(
        applicationId: String, userId: String, because reason: Reason, actor: String, keeping: Data? = nil
    ) async throws -> (refreshTokens: Int, sessions: Int) {
        let now = clock.millis
        let refreshTokens = try await store.revokeGrants(
            applicationId: applicationId, userId: userId, clientId: nil, at: now)
        try await store.endOpenIDSessions(applicationId: applicationId, userId: userId, at: now)
        let sessions = try await store.deleteWebSessions(owner: Self.owner(applicationId, userId), except: keeping)
        await audit(
            .openidGrantsRevoked, userId: userId, application: applicationId, actor: actor,
            "Signed out everywhere because \(reason.rawValue): \(refreshTokens) refresh token(s) revoked, "
                + "\(sessions) browser session(s) ended, back-channel logouts queued.")
        return (refreshTokens, sessions)
    }

    /// Ends the tokens `userId` holds at `clientId` (a consent taken back); returns how many refresh tokens.
    func revoke(applicationId: String, userId: String, clientId: String) async throws -> Int {
        try await store.revokeGrants(
            applicationId: applicationId, userId: userId, clientId: clientId, at: clock.millis)
    }
}
