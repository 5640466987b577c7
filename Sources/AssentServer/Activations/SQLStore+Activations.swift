import AssentCrypto
import AssentModel
import Foundation
import SQLKit

/// Activations in SQL: their rows, sealed keys and counters, and the conditional update every change goes through.
extension SQLStore {
    // MARK: Activations

    public func insertActivation(_ a: ActivationRecord) async throws {
        let sealed = try sealedActivationSecrets(a)
        try await database.raw(
            """
            INSERT INTO activations (id, application_id, user_id, state, activation_code, code_expires_at, commit_mode,
            activation_name, platform, device_info, extras, device_public_key, server_private_key, master_secret,
            counter_data, counter, used_counters, failed_attempts, max_failed_attempts, blocked_reason, version,
            created_at, updated_at, last_used_at)
            VALUES (\(bind: a.id), \(bind: a.applicationId), \(bind: a.userId), \(bind: Int64(a.state.rawValue)), \
            \(bind: a.activationCode), \(bind: a.codeExpiresAt), \(bind: a.commitMode.rawValue), \
            \(bind: a.activationName), \(bind: a.platform), \(bind: a.deviceInfo), \(bind: a.extras), \
            \(bind: a.devicePublicKeyX963), \(bind: sealed.serverPrivateKey), \(bind: sealed.masterSecret), \
            \(bind: a.counterData.data), \(bind: a.counter), \(bind: Self.joined(a.usedCounters)), \
            \(bind: Int64(a.failedAttempts)), \
            \(bind: Int64(a.maxFailedAttempts)), \(bind: a.blockedReason), \(bind: a.version), \(bind: a.createdAt), \
            \(bind: a.updatedAt), \(bind: a.lastUsedAt))
            """
        ).run()
    }

    public func activation(id: String) async throws -> ActivationRecord? {
        try await database.raw("SELECT * FROM activations WHERE id = \(bind: id)").first().map(decodeActivation)
    }

    public func activation(code: String, applicationId: String) async throws -> ActivationRecord? {
        try await database.raw(
            "SELECT * FROM activations WHERE activation_code = \(bind: code) AND application_id = \(bind: applicationId)"
        ).first().map(decodeActivation)
    }

    public func activations(userId: String) async throws -> [ActivationRecord] {
        try await database.raw(
            "SELECT * FROM activations WHERE user_id = \(bind: userId) ORDER BY created_at"
        ).all().map(decodeActivation)
    }

    public func updateActivation(_ a: ActivationRecord, expectedVersion: Int64) async throws -> Bool {
        !(try await database.raw(try activationUpdate(a, expectedVersion: expectedVersion)).all()).isEmpty
    }

    /// The conditional update of an activation: it writes `a` only while the stored version is `expectedVersion`,
    /// and returns the id of the row it wrote.
    func activationUpdate(_ a: ActivationRecord, expectedVersion: Int64) throws -> SQLQueryString {
        let masterSecret = try sealedMasterSecret(a)
        return """
            UPDATE activations SET state = \(bind: Int64(a.state.rawValue)), activation_code = \(bind: a.activationCode),
            activation_name = \(bind: a.activationName), platform = \(bind: a.platform),
            device_info = \(bind: a.deviceInfo), extras = \(bind: a.extras),
            device_public_key = \(bind: a.devicePublicKeyX963), master_secret = \(bind: masterSecret),
            counter_data = \(bind: a.counterData.data), counter = \(bind: a.counter),
            used_counters = \(bind: Self.joined(a.usedCounters)),
            failed_attempts = \(bind: Int64(a.failedAttempts)), blocked_reason = \(bind: a.blockedReason),
            version = \(bind: expectedVersion + 1), updated_at = \(bind: a.updatedAt), last_used_at = \(bind: a.lastUsedAt),
            pin_changed_at = \(bind: a.pinChangedAt)
            WHERE id = \(bind: a.id) AND version = \(bind: expectedVersion)
            RETURNING id
            """
    }

    /// Counter values stored as one column: their 16-byte values one after another.
    private static func joined(_ counters: [HashCounter]) -> Data {
        counters.reduce(into: Data()) { $0.append($1.data) }
    }

    private static func split(_ stored: Data?) throws -> [HashCounter] {
        guard let stored, !stored.isEmpty else { return [] }
        guard stored.count % 16 == 0 else {
            throw AssentServerError.internalError("An activation's used counters have an invalid stored length.")
        }
        return try stride(from: stored.startIndex, to: stored.endIndex, by: 16).map {
            try HashCounter(data: stored[$0..<$0 + 16])
        }
    }

    private func sealedActivationSecrets(_ a: ActivationRecord) throws -> (serverPrivateKey: Data, masterSecret: Data?)
    {
        (
            try box.seal(a.serverPrivateKeyScalar, context: SealedColumn.activationServerKey.context(a.id)),
            try sealedMasterSecret(a)
        )
    }

    /// The master secret sealed (an update writes only this secret: the server key never changes); the sealed bytes
    /// the store read when the secret is still the one they hold, under the key that seals now (so an update never
    /// writes back a value the re-seal has rewritten under a newer key).
    private func sealedMasterSecret(_ a: ActivationRecord) throws -> Data? {
        guard let secret = a.masterSecret else { return nil }
        if let stored = a.storedMasterSecret, stored.plain == secret, box.isCurrent(stored.sealed) {
            return stored.sealed
        }
        return try box.seal(secret, context: SealedColumn.activationMasterSecret.context(a.id))
    }

    func decodeActivation(_ row: any SQLRow) throws -> ActivationRecord {
        let id = try row.decode(column: "id", as: String.self)
        let stateValue = try row.decode(column: "state", as: Int64.self)
        guard let state = ActivationState(rawValue: UInt8(clamping: stateValue)),
            let commitMode = CommitMode(rawValue: try row.decode(column: "commit_mode", as: String.self))
        else {
            throw AssentServerError.internalError("Activation \(id) has an invalid stored state.")
        }
        let serverKey = try box.open(
            try row.decode(column: "server_private_key", as: Data.self),
            context: SealedColumn.activationServerKey.context(id))
        let sealedMaster = try row.decode(column: "master_secret", as: Data?.self)
        let master = try sealedMaster.map { try box.open($0, context: SealedColumn.activationMasterSecret.context(id)) }
        var record = ActivationRecord(
            id: id,
            applicationId: try row.decode(column: "application_id", as: String.self),
            userId: try row.decode(column: "user_id", as: String.self),
            state: state,
            activationCode: try row.decode(column: "activation_code", as: String?.self),
            codeExpiresAt: try row.decode(column: "code_expires_at", as: Int64.self),
            commitMode: commitMode,
            activationName: try row.decode(column: "activation_name", as: String?.self),
            platform: try row.decode(column: "platform", as: String?.self),
            deviceInfo: try row.decode(column: "device_info", as: String?.self),
            extras: try row.decode(column: "extras", as: String?.self),
            devicePublicKeyX963: try row.decode(column: "device_public_key", as: Data?.self),
            serverPrivateKeyScalar: serverKey,
            masterSecret: master,
            counterData: try HashCounter(data: try row.decode(column: "counter_data", as: Data.self)),
            counter: try row.decode(column: "counter", as: Int64.self),
            usedCounters: try Self.split(try row.decode(column: "used_counters", as: Data?.self)),
            failedAttempts: Int(try row.decode(column: "failed_attempts", as: Int64.self)),
            maxFailedAttempts: Int(try row.decode(column: "max_failed_attempts", as: Int64.self)),
            blockedReason: try row.decode(column: "blocked_reason", as: String?.self),
            version: try row.decode(column: "version", as: Int64.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self),
            updatedAt: try row.decode(column: "updated_at", as: Int64.self),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self),
            pinChangedAt: try row.decode(column: "pin_changed_at", as: Int64?.self)
        )
        if let master, let sealedMaster { record.storedMasterSecret = (master, sealedMaster) }
        return record
    }
}
