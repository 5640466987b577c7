import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// The PowerAuth protocol's own rows in SQL: MAC tokens, temporary keys and the replay guard's used values.
extension SQLStore {
    // MARK: Tokens

    public func insertToken(_ token: TokenRecord) async throws {
        let secret = try box.seal(token.secret, context: SealedColumn.tokenSecret.context(token.id))
        try await database.raw(
            """
            INSERT INTO tokens (id, activation_id, secret, signature_type, created_at)
            VALUES (\(bind: token.id), \(bind: token.activationId), \(bind: secret), \
            \(bind: token.signatureType.rawValue), \(bind: token.createdAt))
            """
        ).run()
    }

    public func token(id: String) async throws -> TokenRecord? {
        guard let row = try await database.raw("SELECT * FROM tokens WHERE id = \(bind: id)").first() else {
            return nil
        }
        return TokenRecord(
            id: id,
            activationId: try row.decode(column: "activation_id", as: String.self),
            secret: try box.open(
                try row.decode(column: "secret", as: Data.self), context: SealedColumn.tokenSecret.context(id)),
            signatureType: try SignatureType(parsing: try row.decode(column: "signature_type", as: String.self)),
            createdAt: try row.decode(column: "created_at", as: Int64.self)
        )
    }

    public func tokenWithActivation(id: String) async throws -> (TokenRecord, DevicePrincipal, ActivationState)? {
        guard
            let row = try await database.raw(
                """
                SELECT t.activation_id, t.secret, t.signature_type, t.created_at, a.application_id, a.user_id, a.state
                FROM tokens t JOIN activations a ON a.id = t.activation_id WHERE t.id = \(bind: id)
                """
            ).first()
        else { return nil }
        let token = TokenRecord(
            id: id,
            activationId: try row.decode(column: "activation_id", as: String.self),
            secret: try box.open(
                try row.decode(column: "secret", as: Data.self), context: SealedColumn.tokenSecret.context(id)),
            signatureType: try SignatureType(parsing: try row.decode(column: "signature_type", as: String.self)),
            createdAt: try row.decode(column: "created_at", as: Int64.self)
        )
        guard let state = ActivationState(rawValue: UInt8(clamping: try row.decode(column: "state", as: Int64.self)))
        else { throw AssentServerError.internalError("Activation \(token.activationId) has an invalid stored state.") }
        let principal = DevicePrincipal(
            activationId: token.activationId, applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self))
        return (token, principal, state)
    }

    public func claimTokenUse(tokenId: String, nonce: String, expiresAt: Millis, pendingOf userId: String?)
        async throws -> (TokenUse, [OperationRecord])
    {
        let value = "\(tokenId):\(nonce)"
        let claim: SQLQueryString = """
            INSERT INTO used_values (kind, value, expires_at) SELECT 'token', \(bind: value), \(bind: expiresAt) \
            WHERE EXISTS (SELECT 1 FROM tokens t JOIN activations a ON a.id = t.activation_id \
            WHERE t.id = \(bind: tokenId) AND a.state = \(bind: Int64(ActivationState.active.rawValue))) \
            ON CONFLICT DO NOTHING RETURNING kind
            """
        let claimed: Bool
        var pending: [OperationRecord] = []
        // What a device's list shows: its user's newest pending operations.
        let newest = userId.map { Self.operationsQuery(userId: $0, status: .pending, limit: 100) }
        switch (backend, newest) {
        case (.postgres, let newest?):
            // One statement: the claim, and the operations beside it (one row with no operation when there are none).
            let rows = try await database.raw(
                "WITH claim AS (" + claim + ") SELECT (SELECT count(*) FROM claim) AS claimed, o.* FROM (SELECT 1) one "
                    + "LEFT JOIN LATERAL (" + newest + ") o ON true"
            ).all()
            claimed = try rows.first?.decode(column: "claimed", as: Int64.self) == 1
            if claimed {
                pending = try rows.filter { try $0.decodeNil(column: "id") == false }.map(decodeOperation)
            }
        default:
            claimed = try await database.raw(claim).first() != nil
            if claimed, let newest { pending = try await database.raw(newest).all().map(decodeOperation) }
        }
        if claimed { return (.claimed, pending) }
        // Refused: a nonce used before, or no token of an active activation (read apart, on this rare path).
        let used = try await database.raw(
            "SELECT 1 AS used FROM used_values WHERE kind = 'token' AND value = \(bind: value)"
        ).first()
        return (used != nil ? .replayed : .refused, [])
    }

    public func deleteToken(id: String, activationId: String) async throws -> Bool {
        !(try await database.raw(
            "DELETE FROM tokens WHERE id = \(bind: id) AND activation_id = \(bind: activationId) RETURNING id"
        ).all()).isEmpty
    }

    // MARK: Temporary keys and replay guard

    public func insertTemporaryKey(_ key: TemporaryKeyRecord) async throws {
        let sealed = try box.seal(key.privateKey.scalar, context: SealedColumn.temporaryKey.context(key.id))
        try await database.raw(
            """
            INSERT INTO temporary_keys (id, application_id, activation_id, private_key, expires_at)
            VALUES (\(bind: key.id), \(bind: key.applicationId), \(bind: key.activationId), \(bind: sealed), \
            \(bind: key.expiresAt))
            """
        ).run()
    }

    public func temporaryKey(id: String) async throws -> TemporaryKeyRecord? {
        guard let row = try await database.raw("SELECT * FROM temporary_keys WHERE id = \(bind: id)").first() else {
            return nil
        }
        let scalar = try box.open(
            try row.decode(column: "private_key", as: Data.self), context: SealedColumn.temporaryKey.context(id))
        return TemporaryKeyRecord(
            id: id,
            applicationId: try row.decode(column: "application_id", as: String.self),
            activationId: try row.decode(column: "activation_id", as: String?.self),
            privateKey: try ECPrivateKey(scalar: scalar),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self)
        )
    }

    public func claimUnique(kind: String, value: String, expiresAt: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            INSERT INTO used_values (kind, value, expires_at) VALUES (\(bind: kind), \(bind: value), \(bind: expiresAt))
            ON CONFLICT DO NOTHING RETURNING kind
            """
        ).all()).isEmpty
    }

    public func activationsWithExpiredCode(now: Millis, limit: Int) async throws -> [String] {
        try await database.raw(
            """
            SELECT id FROM activations WHERE activation_code IS NOT NULL AND code_expires_at <= \(bind: now) \
            AND state = \(bind: Int64(ActivationState.created.rawValue)) LIMIT \(unsafeRaw: String(max(1, limit)))
            """
        ).all().map { try $0.decode(column: "id", as: String.self) }
    }

    public func purgeExpired(before: Millis) async throws {
        try await database.raw("DELETE FROM used_values WHERE expires_at < \(bind: before)").run()
        try await database.raw("DELETE FROM temporary_keys WHERE expires_at < \(bind: before)").run()
    }
}
