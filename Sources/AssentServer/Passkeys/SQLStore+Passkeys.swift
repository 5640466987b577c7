import AssentModel
import Foundation
import SQLKit

extension SQLStore {
    public func passkeyUserHandle(applicationId: String, userId: String, proposed: Data) async throws -> Data {
        try await database.raw(
            """
            INSERT INTO passkey_users (application_id, user_id, handle)
            VALUES (\(bind: applicationId), \(bind: userId), \(bind: proposed)) ON CONFLICT DO NOTHING
            """
        ).run()
        guard
            let row = try await database.raw(
                """
                SELECT handle FROM passkey_users WHERE application_id = \(bind: applicationId) \
                AND user_id = \(bind: userId)
                """
            ).first()
        else { throw AssentServerError.internalError("The account's passkey user handle was not stored.") }
        return try row.decode(column: "handle", as: Data.self)
    }

    public func passkeyUser(applicationId: String, handle: Data) async throws -> String? {
        try await database.raw(
            """
            SELECT user_id FROM passkey_users WHERE application_id = \(bind: applicationId) AND handle = \(bind: handle)
            """
        ).first().map { try $0.decode(column: "user_id", as: String.self) }
    }

    public func insertPasskey(_ p: PasskeyRecord, factor: TFAFactorRecord) async throws -> Bool {
        // The credential first: a crash before its factor leaves a row no query returns (they join the factor).
        let inserted = try await database.raw(
            """
            INSERT INTO passkey_credentials (factor_id, application_id, user_id, credential_id, public_key, algorithm,
            sign_count, aaguid, transports, multi_device, backed_up, attestation_format, attested, created_at)
            VALUES (\(bind: p.factorId), \(bind: p.applicationId), \(bind: p.userId), \(bind: p.credentialId), \
            \(bind: p.publicKey), \(bind: Int64(p.algorithm)), \(bind: p.signCount), \(bind: p.aaguid), \
            \(bind: p.transports.joined(separator: " ")), \(bind: Int64(p.multiDevice ? 1 : 0)), \
            \(bind: Int64(p.backedUp ? 1 : 0)), \(bind: p.attestationFormat), \(bind: Int64(p.attested ? 1 : 0)), \
            \(bind: p.createdAt))
            ON CONFLICT DO NOTHING RETURNING factor_id
            """
        ).all()
        guard !inserted.isEmpty else { return false }
        try await insertTFAFactor(factor)
        return true
    }

    /// Credentials whose factor is active, with the factor's name.
    private static let passkeySelect = """
        SELECT p.* FROM passkey_credentials p JOIN tfa_factors f ON f.id = p.factor_id AND f.state = 'active'
        """

    public func passkey(applicationId: String, credentialId: Data) async throws -> PasskeyRecord? {
        try await database.raw(
            """
            \(unsafeRaw: Self.passkeySelect) WHERE p.application_id = \(bind: applicationId) \
            AND p.credential_id = \(bind: credentialId)
            """
        ).first().map(decodePasskey)
    }

    public func passkey(factorId: String) async throws -> PasskeyRecord? {
        try await database.raw("\(unsafeRaw: Self.passkeySelect) WHERE p.factor_id = \(bind: factorId)").first()
            .map(decodePasskey)
    }

    public func passkeys(applicationId: String, userId: String) async throws -> [PasskeyRecord] {
        try await database.raw(
            """
            \(unsafeRaw: Self.passkeySelect) WHERE p.application_id = \(bind: applicationId) \
            AND p.user_id = \(bind: userId) ORDER BY p.created_at, p.factor_id
            """
        ).all().map(decodePasskey)
    }

    public func recordPasskeyUse(factorId: String, expected: Int64, signCount: Int64, backedUp: Bool, at now: Millis)
        async throws -> Bool
    {
        let updated = try await database.raw(
            """
            UPDATE passkey_credentials SET sign_count = \(bind: signCount), backed_up = \(bind: Int64(backedUp ? 1 : 0)), \
            last_used_at = \(bind: now)
            WHERE factor_id = \(bind: factorId) AND sign_count = \(bind: expected) AND flagged_at IS NULL
            RETURNING factor_id
            """
        ).all()
        guard !updated.isEmpty else { return false }
        try await markTFAFactorVerified(id: factorId, at: now)
        return true
    }

    public func renamePasskey(factorId: String, applicationId: String, userId: String, name: String) async throws
        -> Bool
    {
        !(try await database.raw(
            """
            UPDATE tfa_factors SET destination = \(bind: name) WHERE id = \(bind: factorId) \
            AND application_id = \(bind: applicationId) AND user_id = \(bind: userId) AND provider = 'passkey' \
            RETURNING id
            """
        ).all()).isEmpty
    }

    public func flagPasskey(factorId: String, at now: Millis) async throws {
        try await database.raw(
            """
            UPDATE passkey_credentials SET flagged_at = \(bind: now) WHERE factor_id = \(bind: factorId) \
            AND flagged_at IS NULL
            """
        ).run()
    }

    public func insertPasskeyChallenge(_ c: PasskeyChallengeRecord) async throws {
        try await database.raw(
            """
            INSERT INTO passkey_challenges (challenge_hash, application_id, user_id, purpose, assertion_hash,
            user_verification, created_at, expires_at)
            VALUES (\(bind: c.challengeHash), \(bind: c.applicationId), \(bind: c.userId), \(bind: c.purpose.rawValue), \
            \(bind: c.assertionHash), \(bind: Int64(c.userVerification ? 1 : 0)), \(bind: c.createdAt), \
            \(bind: c.expiresAt))
            """
        ).run()
    }

    public func takePasskeyChallenge(challengeHash: Data, at now: Millis) async throws -> PasskeyChallengeRecord? {
        try await database.raw(
            """
            DELETE FROM passkey_challenges WHERE challenge_hash = \(bind: challengeHash) AND expires_at > \(bind: now)
            RETURNING *
            """
        ).first().map { row in
            PasskeyChallengeRecord(
                challengeHash: try row.decode(column: "challenge_hash", as: Data.self),
                applicationId: try row.decode(column: "application_id", as: String.self),
                userId: try row.decode(column: "user_id", as: String?.self),
                purpose: PasskeyChallengeRecord.Purpose(rawValue: try row.decode(column: "purpose", as: String.self))
                    ?? .verify,
                assertionHash: try row.decode(column: "assertion_hash", as: Data?.self),
                userVerification: try row.decode(column: "user_verification", as: Int64.self) != 0,
                createdAt: try row.decode(column: "created_at", as: Int64.self),
                expiresAt: try row.decode(column: "expires_at", as: Int64.self))
        }
    }

    public func purgePasskeyChallenges(before: Millis) async throws {
        try await database.raw("DELETE FROM passkey_challenges WHERE expires_at < \(bind: before)").run()
    }

    private func decodePasskey(_ row: any SQLRow) throws -> PasskeyRecord {
        PasskeyRecord(
            factorId: try row.decode(column: "factor_id", as: String.self),
            applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            credentialId: try row.decode(column: "credential_id", as: Data.self),
            publicKey: try row.decode(column: "public_key", as: Data.self),
            algorithm: Int(try row.decode(column: "algorithm", as: Int64.self)),
            signCount: try row.decode(column: "sign_count", as: Int64.self),
            aaguid: try row.decode(column: "aaguid", as: Data.self),
            transports: try row.decode(column: "transports", as: String.self).split(separator: " ").map(String.init),
            multiDevice: try row.decode(column: "multi_device", as: Int64.self) != 0,
            backedUp: try row.decode(column: "backed_up", as: Int64.self) != 0,
            attestationFormat: try row.decode(column: "attestation_format", as: String.self),
            attested: try row.decode(column: "attested", as: Int64.self) != 0,
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self),
            flaggedAt: try row.decode(column: "flagged_at", as: Int64?.self))
    }
}
