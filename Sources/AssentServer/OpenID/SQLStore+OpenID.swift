import AssentCrypto
import Crypto
import Foundation
import SQLKit

extension SQLStore {
    // MARK: Signing keys

    public func insertSigningKey(_ key: SigningKeyRecord) async throws {
        let material: Data =
            switch key.material {
            case .es256(let privateKey): privateKey.scalar
            case .rs256(let privateKey): Data(privateKey.pemRepresentation.utf8)
            }
        let sealed = try box.seal(material, context: SealedColumn.openIDSigningKey.context(key.kid))
        try await database.raw(
            """
            INSERT INTO openid_keys (kid, alg, private_key, created_at, retired_at)
            VALUES (\(bind: key.kid), \(bind: key.algorithm), \(bind: sealed), \(bind: key.createdAt), \
            \(bind: key.retiredAt))
            """
        ).run()
    }

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await database.raw("SELECT * FROM openid_keys ORDER BY created_at DESC, kid").all().map { row in
            let kid = try row.decode(column: "kid", as: String.self)
            let opened = try box.open(
                try row.decode(column: "private_key", as: Data.self),
                context: SealedColumn.openIDSigningKey.context(kid))
            let material: SigningKeyRecord.Material
            switch try row.decode(column: "alg", as: String.self) {
            case "ES256": material = .es256(try ECPrivateKey(scalar: opened))
            case "RS256":
                material = .rs256(try RSAPrivateKey(pemRepresentation: String(decoding: opened, as: UTF8.self)))
            case let other:
                throw AssentServerError.internalError("Signing key \(kid) has an unknown algorithm \(other).")
            }
            return SigningKeyRecord(
                kid: kid, material: material, createdAt: try row.decode(column: "created_at", as: Int64.self),
                retiredAt: try row.decode(column: "retired_at", as: Int64?.self))
        }
    }

    public func retireSigningKeys(algorithm: String, except keep: String, at now: Millis) async throws {
        try await database.raw(
            """
            UPDATE openid_keys SET retired_at = \(bind: now) WHERE alg = \(bind: algorithm) \
            AND kid <> \(bind: keep) AND retired_at IS NULL
            """
        ).run()
    }

    public func deleteSigningKeys(retiredBefore before: Millis) async throws {
        try await database.raw("DELETE FROM openid_keys WHERE retired_at < \(bind: before)").run()
    }

    // MARK: Clients

    public func insertClient(_ c: OpenIDClientRecord) async throws {
        try await database.raw(
            """
            INSERT INTO openid_clients (id, name, secret_hash, auth_method, delivery_mode, notification_endpoint,
            scopes, id_token_alg, application_id, created_at, jwks, redirect_uris, client_type, grant_types,
            post_logout_redirect_uris, backchannel_logout_uri, third_party)
            VALUES (\(bind: c.id), \(bind: c.name), \(bind: c.secretHash), \(bind: c.authMethod), \
            \(bind: c.deliveryMode), \(bind: c.notificationEndpoint), \(bind: c.scopes.joined(separator: " ")), \
            \(bind: c.idTokenAlgorithm), \(bind: c.applicationId), \(bind: c.createdAt), \
            \(bind: try c.jwks.map(Self.jwksText)), \(bind: c.redirectUris.joined(separator: " ")), \(bind: c.type), \
            \(bind: c.grantTypes.joined(separator: " ")), \(bind: c.postLogoutRedirectUris.joined(separator: " ")), \
            \(bind: c.backchannelLogoutUri), \(bind: Int64(c.thirdParty ? 1 : 0)))
            """
        ).run()
    }

    public func client(id: String) async throws -> OpenIDClientRecord? {
        try await database.raw("SELECT * FROM openid_clients WHERE id = \(bind: id)").first().map(decodeClient)
    }

    public func clients() async throws -> [OpenIDClientRecord] {
        try await database.raw("SELECT * FROM openid_clients ORDER BY created_at, id").all().map(decodeClient)
    }

    public func deleteClient(id: String) async throws -> Bool {
        try await database.raw("DELETE FROM openid_consents WHERE client_id = \(bind: id)").run()
        return !(try await database.raw("DELETE FROM openid_clients WHERE id = \(bind: id) RETURNING id").all()).isEmpty
    }

    private func decodeClient(_ row: any SQLRow) throws -> OpenIDClientRecord {
        OpenIDClientRecord(
            id: try row.decode(column: "id", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            secretHash: try row.decode(column: "secret_hash", as: Data.self),
            authMethod: try row.decode(column: "auth_method", as: String.self),
            deliveryMode: try row.decode(column: "delivery_mode", as: String.self),
            notificationEndpoint: try row.decode(column: "notification_endpoint", as: String?.self),
            scopes: try row.decode(column: "scopes", as: String.self).split(separator: " ").map(String.init),
            idTokenAlgorithm: try row.decode(column: "id_token_alg", as: String.self),
            applicationId: try row.decode(column: "application_id", as: String.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            jwks: try row.decode(column: "jwks", as: String?.self).map {
                try JSONDecoder().decode(JWKSet.self, from: Data($0.utf8))
            },
            redirectUris: Self.words(try row.decode(column: "redirect_uris", as: String.self)),
            type: try row.decode(column: "client_type", as: String.self),
            grantTypes: Self.words(try row.decode(column: "grant_types", as: String.self)),
            postLogoutRedirectUris: Self.words(try row.decode(column: "post_logout_redirect_uris", as: String.self)),
            backchannelLogoutUri: try row.decode(column: "backchannel_logout_uri", as: String?.self),
            thirdParty: try row.decode(column: "third_party", as: Int64.self) != 0)
    }

    /// A space-separated column's values.
    private static func words(_ text: String) -> [String] { text.split(separator: " ").map(String.init) }

    private static func jwksText(_ keys: JWKSet) throws -> String {
        String(decoding: try JSONEncoder().encode(keys), as: UTF8.self)
    }

    // MARK: CIBA requests

    static func requestHash(_ authReqId: String) -> Data { Data(SHA256.hash(data: Data(authReqId.utf8))) }

    public func insertCIBARequest(_ r: CIBARequestRecord) async throws {
        let sealedId = try box.seal(Data(r.authReqId.utf8), context: SealedColumn.cibaAuthReqId.context(r.id))
        let sealedToken = try r.notificationToken.map {
            try box.seal(Data($0.utf8), context: SealedColumn.cibaNotificationToken.context(r.id))
        }
        try await database.raw(
            """
            INSERT INTO ciba_requests (id, request_hash, auth_req_id, client_id, user_id, operation_id, scope,
            acr_values, binding_message, notification_token, delivery_mode, poll_interval, last_poll_at, expires_at,
            created_at, redeemed_at)
            VALUES (\(bind: r.id), \(bind: Self.requestHash(r.authReqId)), \(bind: sealedId), \(bind: r.clientId), \
            \(bind: r.userId), \(bind: r.operationId), \(bind: r.scope), \(bind: r.acrValues), \
            \(bind: r.bindingMessage), \(bind: sealedToken), \(bind: r.deliveryMode), \(bind: Int64(r.pollInterval)), \
            \(bind: r.lastPollAt), \(bind: r.expiresAt), \(bind: r.createdAt), \(bind: r.redeemedAt))
            """
        ).run()
    }

    public func cibaRequest(authReqId: String) async throws -> CIBARequestRecord? {
        try await database.raw(
            "SELECT * FROM ciba_requests WHERE request_hash = \(bind: Self.requestHash(authReqId))"
        ).first().map(decodeCIBARequest)
    }

    public func cibaRequest(id: String) async throws -> CIBARequestRecord? {
        try await database.raw("SELECT * FROM ciba_requests WHERE id = \(bind: id)").first().map(decodeCIBARequest)
    }

    public func cibaRequests(operationId: String) async throws -> [CIBARequestRecord] {
        try await database.raw(
            "SELECT * FROM ciba_requests WHERE operation_id = \(bind: operationId) ORDER BY created_at"
        ).all().map(decodeCIBARequest)
    }

    public func recordPoll(id: String, now: Millis, penalty: Int) async throws -> Bool {
        let onTime = try await database.raw(
            """
            UPDATE ciba_requests SET last_poll_at = \(bind: now) WHERE id = \(bind: id) \
            AND (last_poll_at IS NULL OR last_poll_at + poll_interval * 1000 <= \(bind: now)) RETURNING id
            """
        ).all()
        if !onTime.isEmpty { return true }
        try await database.raw(
            """
            UPDATE ciba_requests SET poll_interval = poll_interval + \(bind: Int64(penalty)), \
            last_poll_at = \(bind: now) WHERE id = \(bind: id)
            """
        ).run()
        return false
    }

    public func redeemCIBARequest(id: String, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE ciba_requests SET redeemed_at = \(bind: now) WHERE id = \(bind: id) AND redeemed_at IS NULL \
            RETURNING id
            """
        ).all()).isEmpty
    }

    private func decodeCIBARequest(_ row: any SQLRow) throws -> CIBARequestRecord {
        let id = try row.decode(column: "id", as: String.self)
        let authReqId = try box.open(
            try row.decode(column: "auth_req_id", as: Data.self), context: SealedColumn.cibaAuthReqId.context(id))
        let token = try row.decode(column: "notification_token", as: Data?.self).map {
            String(decoding: try box.open($0, context: SealedColumn.cibaNotificationToken.context(id)), as: UTF8.self)
        }
        return CIBARequestRecord(
            id: id, authReqId: String(decoding: authReqId, as: UTF8.self),
            clientId: try row.decode(column: "client_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            operationId: try row.decode(column: "operation_id", as: String.self),
            scope: try row.decode(column: "scope", as: String.self),
            acrValues: try row.decode(column: "acr_values", as: String?.self),
            bindingMessage: try row.decode(column: "binding_message", as: String?.self),
            notificationToken: token,
            deliveryMode: try row.decode(column: "delivery_mode", as: String.self),
            pollInterval: Int(try row.decode(column: "poll_interval", as: Int64.self)),
            lastPollAt: try row.decode(column: "last_poll_at", as: Int64?.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            redeemedAt: try row.decode(column: "redeemed_at", as: Int64?.self))
    }

    // MARK: Access tokens

    public func insertAccessToken(_ t: AccessTokenRecord) async throws {
        try await database.raw(
            """
            INSERT INTO openid_access_tokens (token_hash, client_id, user_id, scope, ciba_request_id, created_at,
            expires_at, code_hash)
            VALUES (\(bind: t.tokenHash), \(bind: t.clientId), \(bind: t.userId), \(bind: t.scope), \
            \(bind: t.cibaRequestId), \(bind: t.createdAt), \(bind: t.expiresAt), \(bind: t.codeHash))
            """
        ).run()
    }

    public func accessToken(hash: Data) async throws -> AccessTokenRecord? {
        guard
            let row = try await database.raw("SELECT * FROM openid_access_tokens WHERE token_hash = \(bind: hash)")
                .first()
        else { return nil }
        return AccessTokenRecord(
            tokenHash: hash, clientId: try row.decode(column: "client_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            scope: try row.decode(column: "scope", as: String.self),
            cibaRequestId: try row.decode(column: "ciba_request_id", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self),
            codeHash: try row.decode(column: "code_hash", as: Data?.self))
    }

    // MARK: Authorization codes

    public func insertAuthorizationCode(_ c: AuthorizationCodeRecord) async throws {
        try await database.raw(
            """
            INSERT INTO openid_codes (code_hash, client_id, user_id, redirect_uri, scope, nonce, code_challenge, acr,
            amr, auth_time, session_id, created_at, expires_at)
            VALUES (\(bind: c.codeHash), \(bind: c.clientId), \(bind: c.userId), \(bind: c.redirectUri), \
            \(bind: c.scope), \(bind: c.nonce), \(bind: c.codeChallenge), \(bind: c.acr), \
            \(bind: c.amr.joined(separator: " ")), \(bind: c.authTime), \(bind: c.sessionId), \(bind: c.createdAt), \
            \(bind: c.expiresAt))
            """
        ).run()
    }

    public func redeemAuthorizationCode(hash: Data, clientId: String, at now: Millis) async throws -> CodeRedemption {
        // The conditional update is the single use: of two concurrent redemptions, one row comes back. A code
        // presented by another client is not spent: a leaked value alone cannot void the grant of its owner.
        if let row = try await database.raw(
            """
            UPDATE openid_codes SET redeemed_at = \(bind: now) WHERE code_hash = \(bind: hash) \
            AND client_id = \(bind: clientId) AND redeemed_at IS NULL RETURNING *
            """
        ).first() {
            return .redeemed(
                AuthorizationCodeRecord(
                    codeHash: hash, clientId: try row.decode(column: "client_id", as: String.self),
                    userId: try row.decode(column: "user_id", as: String.self),
                    redirectUri: try row.decode(column: "redirect_uri", as: String.self),
                    scope: try row.decode(column: "scope", as: String.self),
                    nonce: try row.decode(column: "nonce", as: String?.self),
                    codeChallenge: try row.decode(column: "code_challenge", as: String?.self),
                    acr: try row.decode(column: "acr", as: String.self),
                    amr: Self.words(try row.decode(column: "amr", as: String.self)),
                    authTime: try row.decode(column: "auth_time", as: Int64.self),
                    sessionId: try row.decode(column: "session_id", as: String.self),
                    createdAt: try row.decode(column: "created_at", as: Int64.self),
                    expiresAt: try row.decode(column: "expires_at", as: Int64.self)))
        }
        guard
            let spent = try await database.raw(
                """
                SELECT client_id FROM openid_codes WHERE code_hash = \(bind: hash) AND client_id = \(bind: clientId)
                """
            ).first()
        else { return .unknown }
        try await revokeTokenFamily(hash, at: now)
        return .replayed(clientId: try spent.decode(column: "client_id", as: String.self))
    }

    /// Revokes every refresh token and deletes every access token issued from the code `codeHash`.
    private func revokeTokenFamily(_ codeHash: Data, at now: Millis) async throws {
        try await database.raw(
            """
            UPDATE openid_refresh_tokens SET revoked_at = \(bind: now) WHERE code_hash = \(bind: codeHash) \
            AND revoked_at IS NULL
            """
        ).run()
        try await database.raw("DELETE FROM openid_access_tokens WHERE code_hash = \(bind: codeHash)").run()
    }

    // MARK: Consents

    public func consent(userId: String, clientId: String) async throws -> String? {
        try await database.raw(
            """
            SELECT scope FROM openid_consents WHERE user_id = \(bind: userId) AND client_id = \(bind: clientId)
            """
        ).first().map { try $0.decode(column: "scope", as: String.self) }
    }

    public func saveConsent(userId: String, clientId: String, scope: String, at now: Millis) async throws {
        try await database.raw(
            """
            INSERT INTO openid_consents (user_id, client_id, scope, created_at) \
            VALUES (\(bind: userId), \(bind: clientId), \(bind: scope), \(bind: now)) \
            ON CONFLICT (user_id, client_id) DO UPDATE SET scope = \(bind: scope), created_at = \(bind: now)
            """
        ).run()
    }

    public func consents(applicationId: String, userId: String) async throws -> [(clientId: String, scope: String)] {
        try await database.raw(
            """
            SELECT k.client_id, k.scope FROM openid_consents k JOIN openid_clients c ON c.id = k.client_id \
            WHERE k.user_id = \(bind: userId) AND c.application_id = \(bind: applicationId) \
            ORDER BY k.created_at, k.client_id
            """
        ).all().map {
            (try $0.decode(column: "client_id", as: String.self), try $0.decode(column: "scope", as: String.self))
        }
    }

    public func deleteConsent(applicationId: String, userId: String, clientId: String) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM openid_consents WHERE user_id = \(bind: userId) AND client_id = \(bind: clientId) \
            AND client_id IN (SELECT id FROM openid_clients WHERE application_id = \(bind: applicationId)) \
            RETURNING client_id
            """
        ).all()).isEmpty
    }

    public func revokeGrants(applicationId: String, userId: String, clientId: String?, at now: Millis) async throws
        -> Int
    {
        // The clients whose grants go: the application's, or the one named (if it is the application's).
        let clients: SQLQueryString =
            if let clientId {
                "SELECT id FROM openid_clients WHERE application_id = \(bind: applicationId) AND id = \(bind: clientId)"
            } else {
                "SELECT id FROM openid_clients WHERE application_id = \(bind: applicationId)"
            }
        let revoked = try await database.raw(
            """
            UPDATE openid_refresh_tokens SET revoked_at = \(bind: now) \
            WHERE user_id = \(bind: userId) AND revoked_at IS NULL AND used_at IS NULL AND client_id IN (\(clients)) \
            RETURNING client_id
            """
        ).all().count
        try await database.raw(
            "DELETE FROM openid_access_tokens WHERE user_id = \(bind: userId) AND client_id IN (\(clients))"
        ).run()
        return revoked
    }

    public func endOpenIDSessions(applicationId: String, userId: String, at now: Millis) async throws {
        // Queued first: a crash between the two statements leaves the logouts queued, never lost.
        try await database.raw(
            """
            INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
            SELECT 'logout', 'openid.logout', s.session_id, s.client_id, s.user_id, \(bind: now), \(bind: now)
            FROM openid_session_clients s JOIN openid_clients c ON c.id = s.client_id
            WHERE s.user_id = \(bind: userId) AND c.application_id = \(bind: applicationId) \
            AND c.backchannel_logout_uri IS NOT NULL
            """
        ).run()
        try await database.raw(
            """
            DELETE FROM openid_session_clients WHERE user_id = \(bind: userId) \
            AND client_id IN (SELECT id FROM openid_clients WHERE application_id = \(bind: applicationId))
            """
        ).run()
    }

    // MARK: Single-sign-on sessions

    public func recordSessionClient(sessionId: String, clientId: String, userId: String, at now: Millis) async throws {
        try await database.raw(
            """
            INSERT INTO openid_session_clients (session_id, client_id, user_id, created_at)
            VALUES (\(bind: sessionId), \(bind: clientId), \(bind: userId), \(bind: now)) ON CONFLICT DO NOTHING
            """
        ).run()
    }

    public func endOpenIDSession(sessionId: String, at now: Millis) async throws {
        // Queued first: a crash between the two statements leaves the logouts queued, never lost.
        try await database.raw(
            """
            INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
            SELECT 'logout', 'openid.logout', s.session_id, s.client_id, s.user_id, \(bind: now), \(bind: now)
            FROM openid_session_clients s JOIN openid_clients c ON c.id = s.client_id
            WHERE s.session_id = \(bind: sessionId) AND c.backchannel_logout_uri IS NOT NULL
            """
        ).run()
        try await database.raw("DELETE FROM openid_session_clients WHERE session_id = \(bind: sessionId)").run()
    }

    // MARK: Refresh tokens

    public func insertRefreshToken(_ r: RefreshTokenRecord) async throws {
        try await database.raw(
            """
            INSERT INTO openid_refresh_tokens (token_hash, code_hash, client_id, user_id, scope, acr, amr, auth_time,
            session_id, created_at, expires_at)
            VALUES (\(bind: r.tokenHash), \(bind: r.codeHash), \(bind: r.clientId), \(bind: r.userId), \
            \(bind: r.scope), \(bind: r.acr), \(bind: r.amr.joined(separator: " ")), \(bind: r.authTime), \
            \(bind: r.sessionId), \(bind: r.createdAt), \(bind: r.expiresAt))
            """
        ).run()
    }

    public func rotateRefreshToken(hash: Data, clientId: String, at now: Millis) async throws -> RefreshRotation {
        // The conditional update is the single use: of two concurrent refreshes, one row comes back. A token
        // presented by another client is not spent, nor its family revoked.
        if let row = try await database.raw(
            """
            UPDATE openid_refresh_tokens SET used_at = \(bind: now) WHERE token_hash = \(bind: hash) \
            AND client_id = \(bind: clientId) AND used_at IS NULL AND revoked_at IS NULL RETURNING *
            """
        ).first() {
            return .rotated(
                RefreshTokenRecord(
                    tokenHash: hash, codeHash: try row.decode(column: "code_hash", as: Data.self),
                    clientId: try row.decode(column: "client_id", as: String.self),
                    userId: try row.decode(column: "user_id", as: String.self),
                    scope: try row.decode(column: "scope", as: String.self),
                    acr: try row.decode(column: "acr", as: String.self),
                    amr: Self.words(try row.decode(column: "amr", as: String.self)),
                    authTime: try row.decode(column: "auth_time", as: Int64.self),
                    sessionId: try row.decode(column: "session_id", as: String.self),
                    createdAt: try row.decode(column: "created_at", as: Int64.self),
                    expiresAt: try row.decode(column: "expires_at", as: Int64.self)))
        }
        guard
            let spent = try await database.raw(
                """
                SELECT client_id, code_hash FROM openid_refresh_tokens WHERE token_hash = \(bind: hash) \
                AND client_id = \(bind: clientId)
                """
            ).first()
        else { return .unknown }
        try await revokeTokenFamily(try spent.decode(column: "code_hash", as: Data.self), at: now)
        return .reused(clientId: try spent.decode(column: "client_id", as: String.self))
    }

    public func purgeOpenID(before: Millis) async throws {
        try await database.raw("DELETE FROM ciba_requests WHERE expires_at < \(bind: before)").run()
        try await database.raw("DELETE FROM openid_refresh_tokens WHERE expires_at < \(bind: before)").run()
        // A session's record outlives any session (8 hours after its latest use) by far after a month.
        try await database.raw(
            "DELETE FROM openid_session_clients WHERE created_at < \(bind: before - 30 * 86_400_000)"
        ).run()
        // A spent code is kept as long as the tokens it issued, so that its replay still revokes them.
        try await database.raw(
            """
            DELETE FROM openid_codes WHERE expires_at < \(bind: before) AND NOT EXISTS \
            (SELECT 1 FROM openid_access_tokens t WHERE t.code_hash = openid_codes.code_hash) AND NOT EXISTS \
            (SELECT 1 FROM openid_refresh_tokens r WHERE r.code_hash = openid_codes.code_hash)
            """
        ).run()
        try await database.raw("DELETE FROM openid_access_tokens WHERE expires_at < \(bind: before)").run()
    }
}
