import AssentModel
import Foundation
import SQLKit

extension SQLStore {
    // MARK: Accounts

    public func insertTFAAccount(_ a: TFAAccountRecord) async throws -> Bool {
        !(try await database.raw(
            """
            INSERT INTO tfa_accounts (application_id, user_id, password_hash, created_at, display_name)
            VALUES (\(bind: a.applicationId), \(bind: a.userId), \(bind: a.passwordHash), \(bind: a.createdAt), \
            \(bind: a.displayName))
            ON CONFLICT DO NOTHING RETURNING user_id
            """
        ).all()).isEmpty
    }

    public func tfaAccount(applicationId: String, userId: String) async throws -> TFAAccountRecord? {
        try await database.raw(
            """
            SELECT * FROM tfa_accounts WHERE application_id = \(bind: applicationId) AND user_id = \(bind: userId)
            """
        ).first().map { row in
            TFAAccountRecord(
                applicationId: try row.decode(column: "application_id", as: String.self),
                userId: try row.decode(column: "user_id", as: String.self),
                passwordHash: try row.decode(column: "password_hash", as: String?.self),
                createdAt: try row.decode(column: "created_at", as: Int64.self),
                displayName: try row.decode(column: "display_name", as: String?.self),
                disabledAt: try row.decode(column: "disabled_at", as: Int64?.self),
                language: try row.decode(column: "language", as: String?.self))
        }
    }

    public func setTFAAccountLanguage(applicationId: String, userId: String, language: String?) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_accounts SET language = \(bind: language) WHERE application_id = \(bind: applicationId) \
            AND user_id = \(bind: userId) RETURNING user_id
            """
        ).all()).isEmpty
    }

    public func setTFAAccountDisabled(applicationId: String, userId: String, disabledAt: Millis?) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_accounts SET disabled_at = \(bind: disabledAt) WHERE application_id = \(bind: applicationId) \
            AND user_id = \(bind: userId) RETURNING user_id
            """
        ).all()).isEmpty
    }

    public func setTFAAccountName(applicationId: String, userId: String, name: String?) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_accounts SET display_name = \(bind: name) WHERE application_id = \(bind: applicationId) \
            AND user_id = \(bind: userId) RETURNING user_id
            """
        ).all()).isEmpty
    }

    public func setTFAPassword(applicationId: String, userId: String, hash: String) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_accounts SET password_hash = \(bind: hash) WHERE application_id = \(bind: applicationId) \
            AND user_id = \(bind: userId) RETURNING user_id
            """
        ).all()).isEmpty
    }

    public func deleteTFAAccount(applicationId: String, userId: String) async throws -> Bool {
        for table in ["tfa_factors", "tfa_devices"] {
            try await database.raw(
                """
                DELETE FROM \(unsafeRaw: table) WHERE application_id = \(bind: applicationId) AND user_id = \(bind: userId)
                """
            ).run()
        }
        return
            !(try await database.raw(
                """
                DELETE FROM tfa_accounts WHERE application_id = \(bind: applicationId) AND user_id = \(bind: userId) \
                RETURNING user_id
                """
            ).all()).isEmpty
    }

    // MARK: Factors

    public func insertTFAFactor(_ f: TFAFactorRecord) async throws {
        let sealed = try f.secret.map { try box.seal($0, context: SealedColumn.tfaFactorSecret.context(f.id)) }
        try await database.raw(
            """
            INSERT INTO tfa_factors (id, application_id, user_id, provider, state, destination, secret, last_step,
            created_at, last_verified_at)
            VALUES (\(bind: f.id), \(bind: f.applicationId), \(bind: f.userId), \(bind: f.provider.rawValue), \
            \(bind: f.state.rawValue), \(bind: f.destination), \(bind: sealed), \(bind: f.lastStep), \
            \(bind: f.createdAt), \(bind: f.lastVerifiedAt))
            """
        ).run()
    }

    public func tfaFactor(id: String) async throws -> TFAFactorRecord? {
        try await database.raw("SELECT * FROM tfa_factors WHERE id = \(bind: id)").first().map(decodeFactor)
    }

    public func tfaFactors(applicationId: String, userId: String) async throws -> [TFAFactorRecord] {
        try await database.raw(
            """
            SELECT * FROM tfa_factors WHERE application_id = \(bind: applicationId) AND user_id = \(bind: userId)
            ORDER BY created_at, id
            """
        ).all().map(decodeFactor)
    }

    public func activateTFAFactor(id: String, replacing: TFAProvider?, at now: Millis) async throws -> Bool {
        // Two statements: a crash between them leaves the older secret active beside the new one, never none.
        let rows = try await database.raw(
            """
            UPDATE tfa_factors SET state = 'active', last_verified_at = \(bind: now)
            WHERE id = \(bind: id) AND state = 'pending' RETURNING application_id, user_id
            """
        ).all()
        guard let row = rows.first else { return false }
        if let replacing {
            let applicationId = try row.decode(column: "application_id", as: String.self)
            let userId = try row.decode(column: "user_id", as: String.self)
            try await database.raw(
                """
                DELETE FROM tfa_factors WHERE application_id = \(bind: applicationId) AND user_id = \(bind: userId) \
                AND provider = \(bind: replacing.rawValue) AND id <> \(bind: id) AND state = 'active'
                """
            ).run()
        }
        return true
    }

    public func claimTOTPStep(factorId: String, step: Int64, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_factors SET last_step = \(bind: step), last_verified_at = \(bind: now)
            WHERE id = \(bind: factorId) AND (last_step IS NULL OR last_step < \(bind: step)) RETURNING id
            """
        ).all()).isEmpty
    }

    private func decodeFactor(_ row: any SQLRow) throws -> TFAFactorRecord {
        let id = try row.decode(column: "id", as: String.self)
        let providerName = try row.decode(column: "provider", as: String.self)
        let stateName = try row.decode(column: "state", as: String.self)
        guard let provider = TFAProvider(rawValue: providerName), let state = TFAFactorRecord.State(rawValue: stateName)
        else { throw AssentServerError.internalError("Factor \(id) has an unknown provider or state.") }
        return TFAFactorRecord(
            id: id, applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self), provider: provider, state: state,
            destination: try row.decode(column: "destination", as: String?.self),
            secret: try row.decode(column: "secret", as: Data?.self).map {
                try box.open($0, context: SealedColumn.tfaFactorSecret.context(id))
            },
            lastStep: try row.decode(column: "last_step", as: Int64?.self),
            lastMethod: try row.decode(column: "last_method", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            lastVerifiedAt: try row.decode(column: "last_verified_at", as: Int64?.self))
    }

    // MARK: Flows

    public func insertTFAFlow(_ f: TFAFlowRecord) async throws {
        try await database.raw(
            """
            INSERT INTO tfa_flows (id, application_id, user_id, kind, first_factor, created_at, expires_at, finished_at)
            VALUES (\(bind: f.id), \(bind: f.applicationId), \(bind: f.userId), \(bind: f.kind.rawValue), \
            \(bind: f.firstFactor), \(bind: f.createdAt), \(bind: f.expiresAt), \(bind: f.finishedAt))
            """
        ).run()
    }

    public func tfaFlow(id: String) async throws -> TFAFlowRecord? {
        try await database.raw("SELECT * FROM tfa_flows WHERE id = \(bind: id)").first().map { row in
            guard let kind = TFAFlowRecord.Kind(rawValue: try row.decode(column: "kind", as: String.self)) else {
                throw AssentServerError.internalError("Flow \(id) has an unknown kind.")
            }
            return TFAFlowRecord(
                id: id, applicationId: try row.decode(column: "application_id", as: String.self),
                userId: try row.decode(column: "user_id", as: String.self), kind: kind,
                firstFactor: try row.decode(column: "first_factor", as: String?.self),
                createdAt: try row.decode(column: "created_at", as: Int64.self),
                expiresAt: try row.decode(column: "expires_at", as: Int64.self),
                finishedAt: try row.decode(column: "finished_at", as: Int64?.self))
        }
    }

    public func finishTFAFlow(id: String, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_flows SET finished_at = \(bind: now)
            WHERE id = \(bind: id) AND finished_at IS NULL AND expires_at > \(bind: now) RETURNING id
            """
        ).all()).isEmpty
    }

    // MARK: Challenges

    public func insertTFAChallenge(_ c: TFAChallengeRecord) async throws {
        try await database.raw(
            """
            INSERT INTO tfa_challenges (assertion_hash, flow_id, provider, mode, factor_id, attempts_left, created_at,
            expires_at, passed_at, proof_hash)
            VALUES (\(bind: c.assertionHash), \(bind: c.flowId), \(bind: c.provider.rawValue), \(bind: c.mode.rawValue), \
            \(bind: c.factorId), \(bind: Int64(c.attemptsLeft)), \(bind: c.createdAt), \(bind: c.expiresAt), \
            \(bind: c.passedAt), \(bind: c.proofHash))
            """
        ).run()
    }

    public func tfaChallenge(assertionHash: Data) async throws -> TFAChallengeRecord? {
        try await database.raw("SELECT * FROM tfa_challenges WHERE assertion_hash = \(bind: assertionHash)").first()
            .map { row in
                guard let provider = TFAProvider(rawValue: try row.decode(column: "provider", as: String.self)),
                    let mode = TFAMode(rawValue: try row.decode(column: "mode", as: String.self))
                else { throw AssentServerError.internalError("A challenge has an unknown provider or mode.") }
                return TFAChallengeRecord(
                    assertionHash: assertionHash, flowId: try row.decode(column: "flow_id", as: String.self),
                    provider: provider, mode: mode, factorId: try row.decode(column: "factor_id", as: String?.self),
                    attemptsLeft: Int(try row.decode(column: "attempts_left", as: Int64.self)),
                    createdAt: try row.decode(column: "created_at", as: Int64.self),
                    expiresAt: try row.decode(column: "expires_at", as: Int64.self),
                    passedAt: try row.decode(column: "passed_at", as: Int64?.self),
                    proofHash: try row.decode(column: "proof_hash", as: Data?.self),
                    operationId: try row.decode(column: "operation_id", as: String?.self))
            }
    }

    public func takeTFAChallengeAttempt(assertionHash: Data, at now: Millis) async throws -> Int? {
        try await database.raw(
            """
            UPDATE tfa_challenges SET attempts_left = attempts_left - 1
            WHERE assertion_hash = \(bind: assertionHash) AND attempts_left > 0 AND passed_at IS NULL \
            AND expires_at > \(bind: now) RETURNING attempts_left
            """
        ).first().map { Int(try $0.decode(column: "attempts_left", as: Int64.self)) }
    }

    public func setTFAChallengeFactor(assertionHash: Data, factorId: String) async throws {
        try await database.raw(
            """
            UPDATE tfa_challenges SET factor_id = \(bind: factorId) WHERE assertion_hash = \(bind: assertionHash)
            """
        ).run()
    }

    public func setTFAChallengeOperation(assertionHash: Data, operationId: String) async throws {
        try await database.raw(
            """
            UPDATE tfa_challenges SET operation_id = \(bind: operationId) WHERE assertion_hash = \(bind: assertionHash)
            """
        ).run()
    }

    public func passTFAChallenge(assertionHash: Data, proofHash: Data, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_challenges SET passed_at = \(bind: now), proof_hash = \(bind: proofHash)
            WHERE assertion_hash = \(bind: assertionHash) AND passed_at IS NULL RETURNING flow_id
            """
        ).all()).isEmpty
    }

    // MARK: Codes

    public func insertTFACode(_ c: TFACodeRecord) async throws {
        let sealed = try box.seal(Data(c.code.utf8), context: SealedColumn.tfaCode.context(c.id))
        try await database.raw(
            """
            INSERT INTO tfa_codes (id, token_hash, assertion_hash, factor_id, channel, code, lang, attempts_left,
            created_at, expires_at)
            VALUES (\(bind: c.id), \(bind: c.tokenHash), \(bind: c.assertionHash), \(bind: c.factorId), \
            \(bind: c.channel), \(bind: sealed), \(bind: c.lang), \(bind: Int64(c.attemptsLeft)), \(bind: c.createdAt), \
            \(bind: c.expiresAt))
            """
        ).run()
    }

    public func tfaCode(id: String) async throws -> TFACodeRecord? {
        try await database.raw("SELECT * FROM tfa_codes WHERE id = \(bind: id)").first().map(decodeCode)
    }

    public func tfaCode(tokenHash: Data) async throws -> TFACodeRecord? {
        try await database.raw("SELECT * FROM tfa_codes WHERE token_hash = \(bind: tokenHash)").first().map(decodeCode)
    }

    public func takeTFACodeAttempt(tokenHash: Data, at now: Millis) async throws -> Int? {
        try await database.raw(
            """
            UPDATE tfa_codes SET attempts_left = attempts_left - 1
            WHERE token_hash = \(bind: tokenHash) AND attempts_left > 0 AND expires_at > \(bind: now) \
            RETURNING attempts_left
            """
        ).first().map { Int(try $0.decode(column: "attempts_left", as: Int64.self)) }
    }

    public func setTFAFactorMethod(id: String, method: String) async throws {
        try await database.raw("UPDATE tfa_factors SET last_method = \(bind: method) WHERE id = \(bind: id)").run()
    }

    public func markTFAFactorVerified(id: String, at now: Millis) async throws {
        try await database.raw(
            "UPDATE tfa_factors SET last_verified_at = \(bind: now) WHERE id = \(bind: id) AND state = 'active'"
        ).run()
    }

    public func deleteTFAFactor(id: String, applicationId: String, userId: String) async throws -> Bool {
        !(try await database.raw(
            """
            DELETE FROM tfa_factors WHERE id = \(bind: id) AND application_id = \(bind: applicationId) \
            AND user_id = \(bind: userId) RETURNING id
            """
        ).all()).isEmpty
    }

    private func decodeCode(_ row: any SQLRow) throws -> TFACodeRecord {
        let id = try row.decode(column: "id", as: String.self)
        let code = try box.open(
            try row.decode(column: "code", as: Data.self), context: SealedColumn.tfaCode.context(id))
        return TFACodeRecord(
            id: id, tokenHash: try row.decode(column: "token_hash", as: Data.self),
            assertionHash: try row.decode(column: "assertion_hash", as: Data.self),
            factorId: try row.decode(column: "factor_id", as: String.self),
            channel: try row.decode(column: "channel", as: String.self), code: String(decoding: code, as: UTF8.self),
            lang: try row.decode(column: "lang", as: String.self),
            attemptsLeft: Int(try row.decode(column: "attempts_left", as: Int64.self)),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self))
    }

    // MARK: Policies

    public func tfaPolicy(applicationId: String) async throws -> TFAPolicy? {
        try await database.raw("SELECT * FROM tfa_policies WHERE application_id = \(bind: applicationId)").first()
            .map { row in
                TFAPolicy(
                    required: try row.decode(column: "required", as: Int64.self) != 0,
                    providers: try row.decode(column: "providers", as: String.self).split(separator: " ")
                        .compactMap { TFAProvider(rawValue: String($0)) },
                    numberMatching: try row.decode(column: "number_matching", as: String?.self)
                )
                .withPushLimits(try row.decode(column: "push_limits", as: String?.self))
                .withPasskeys(try row.decode(column: "passkeys", as: String?.self))
            }
    }

    public func putTFAPolicy(applicationId: String, _ policy: TFAPolicy) async throws {
        let providers = policy.providers.map(\.rawValue).joined(separator: " ")
        let required: Int64 = policy.required ? 1 : 0
        try await database.raw(
            """
            INSERT INTO tfa_policies (application_id, required, providers, number_matching, push_limits, passkeys)
            VALUES (\(bind: applicationId), \(bind: required), \(bind: providers), \(bind: policy.numberMatching), \
            \(bind: policy.pushLimitsText), \(bind: policy.passkeysText))
            ON CONFLICT (application_id) DO UPDATE SET required = \(bind: required), providers = \(bind: providers),
            number_matching = \(bind: policy.numberMatching), push_limits = \(bind: policy.pushLimitsText),
            passkeys = \(bind: policy.passkeysText)
            """
        ).run()
    }

    // MARK: Remembered devices

    public func insertRememberedDevice(_ d: RememberedDeviceRecord) async throws {
        try await database.raw(
            """
            INSERT INTO tfa_devices (id, application_id, user_id, created_at, expires_at, last_used_at, revoked_at)
            VALUES (\(bind: d.id), \(bind: d.applicationId), \(bind: d.userId), \(bind: d.createdAt), \
            \(bind: d.expiresAt), \(bind: d.lastUsedAt), \(bind: d.revokedAt))
            """
        ).run()
    }

    public func rememberedDevice(id: String) async throws -> RememberedDeviceRecord? {
        try await database.raw("SELECT * FROM tfa_devices WHERE id = \(bind: id)").first().map(decodeDevice)
    }

    public func rememberedDevices(applicationId: String, userId: String) async throws -> [RememberedDeviceRecord] {
        try await database.raw(
            """
            SELECT * FROM tfa_devices WHERE application_id = \(bind: applicationId) AND user_id = \(bind: userId)
            ORDER BY created_at DESC, id
            """
        ).all().map(decodeDevice)
    }

    public func revokeRememberedDevice(id: String, at now: Millis) async throws -> Bool {
        !(try await database.raw(
            """
            UPDATE tfa_devices SET revoked_at = \(bind: now) WHERE id = \(bind: id) AND revoked_at IS NULL RETURNING id
            """
        ).all()).isEmpty
    }

    public func touchRememberedDevice(id: String, at now: Millis) async throws {
        try await database.raw("UPDATE tfa_devices SET last_used_at = \(bind: now) WHERE id = \(bind: id)").run()
    }

    private func decodeDevice(_ row: any SQLRow) throws -> RememberedDeviceRecord {
        RememberedDeviceRecord(
            id: try row.decode(column: "id", as: String.self),
            applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            expiresAt: try row.decode(column: "expires_at", as: Int64.self),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self))
    }

    // MARK: Purge

    public func purgeTFA(before: Millis) async throws {
        try await database.raw(
            """
            DELETE FROM tfa_challenges WHERE flow_id IN (SELECT id FROM tfa_flows WHERE expires_at < \(bind: before))
            """
        ).run()
        try await database.raw("DELETE FROM tfa_flows WHERE expires_at < \(bind: before)").run()
        try await database.raw("DELETE FROM tfa_codes WHERE expires_at < \(bind: before)").run()
        try await database.raw(
            "DELETE FROM tfa_factors WHERE state = 'pending' AND created_at < \(bind: before - 86_400_000)"
        ).run()
        try await database.raw("DELETE FROM tfa_devices WHERE expires_at < \(bind: before)").run()
    }
}

extension TFAPolicy {
    /// The push-bombing limits as stored (a JSON object), `nil` when none is set.
    fileprivate var pushLimitsText: String? {
        let limits = [
            "pushLoginsPerHour": pushLoginsPerHour, "pushRefusalLimit": pushRefusalLimit,
            "pushRefusalWindow": pushRefusalWindow, "pushFraudSuspension": pushFraudSuspension,
        ].compactMapValues { $0 }
        guard !limits.isEmpty, let data = try? JSONEncoder().encode(limits) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The passkey policy as stored (a JSON object).
    fileprivate var passkeysText: String? {
        guard let passkeys, let data = try? JSONEncoder().encode(passkeys) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// This policy with the passkey policy of a stored JSON object.
    fileprivate func withPasskeys(_ text: String?) -> TFAPolicy {
        var policy = self
        policy.passkeys = text.flatMap { try? JSONDecoder().decode(PasskeyPolicy.self, from: Data($0.utf8)) }
        return policy
    }

    /// This policy with the limits of a stored JSON object.
    fileprivate func withPushLimits(_ text: String?) -> TFAPolicy {
        guard let text, let limits = try? JSONDecoder().decode([String: Int].self, from: Data(text.utf8)) else {
            return self
        }
        var policy = self
        policy.pushLoginsPerHour = limits["pushLoginsPerHour"]
        policy.pushRefusalLimit = limits["pushRefusalLimit"]
        policy.pushRefusalWindow = limits["pushRefusalWindow"]
        policy.pushFraudSuspension = limits["pushFraudSuspension"]
        return policy
    }
}
