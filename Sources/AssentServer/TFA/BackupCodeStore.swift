import AssentModel
import Foundation
import SQLKit

/// What backup codes persist: the account's `backup` factor row and its codes' hashes.
public protocol BackupCodeStore: Sendable {
    /// Replaces the account's backup codes with a new set (a new factor row; the old one and its codes go).
    func replaceBackupCodes(_ factor: TFAFactorRecord, hashes: [Data]) async throws
    /// Marks the code with `hash` of the factor used unless it was; returns the unused codes left after it, or `nil`
    /// when no unused code has that hash.
    func useBackupCode(factorId: String, hash: Data, at now: Millis) async throws -> Int?
    /// The factor's unused codes.
    func backupCodesLeft(factorId: String) async throws -> Int
}

extension Migrations {
    /// Version 19: backup codes — their hashes beside the account's `backup` factor, deleted with it.
    static func backupCodesV19(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS tfa_backup_codes (
                factor_id TEXT NOT NULL,
                code_hash \(dialect.blob) NOT NULL,
                used_at \(dialect.bigint),
                PRIMARY KEY (factor_id, code_hash)
            )
            """
        ]
            + dialect.trigger(
                "tfa_factors_backup_delete", "AFTER DELETE ON tfa_factors", when: "OLD.provider = 'backup'",
                body: ["DELETE FROM tfa_backup_codes WHERE factor_id = OLD.id"])
    }
}

extension SQLStore {
    public func replaceBackupCodes(_ factor: TFAFactorRecord, hashes: [Data]) async throws {
        try await inOneCommit { store in
            guard let store = store as? SQLStore else { return }
            // The new set first: a crash between the statements leaves both sets, never none.
            for hash in hashes {
                try await store.database.raw(
                    "INSERT INTO tfa_backup_codes (factor_id, code_hash) VALUES (\(bind: factor.id), \(bind: hash))"
                ).run()
            }
            try await store.insertTFAFactor(factor)
            try await store.database.raw(
                """
                DELETE FROM tfa_factors WHERE application_id = \(bind: factor.applicationId) \
                AND user_id = \(bind: factor.userId) AND provider = 'backup' AND id <> \(bind: factor.id)
                """
            ).run()
        }
    }

    public func useBackupCode(factorId: String, hash: Data, at now: Millis) async throws -> Int? {
        let used = try await database.raw(
            """
            UPDATE tfa_backup_codes SET used_at = \(bind: now)
            WHERE factor_id = \(bind: factorId) AND code_hash = \(bind: hash) AND used_at IS NULL RETURNING factor_id
            """
        ).all()
        guard !used.isEmpty else { return nil }
        try await markTFAFactorVerified(id: factorId, at: now)
        return try await backupCodesLeft(factorId: factorId)
    }

    public func backupCodesLeft(factorId: String) async throws -> Int {
        let row = try await database.raw(
            "SELECT COUNT(*) AS left_count FROM tfa_backup_codes WHERE factor_id = \(bind: factorId) AND used_at IS NULL"
        ).first()
        return Int(try row?.decode(column: "left_count", as: Int64.self) ?? 0)
    }
}
