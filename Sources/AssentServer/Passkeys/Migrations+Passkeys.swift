/// The schema of passkeys (version 18).
extension Migrations {
    /// Version 18: passkeys — each credential beside its factor row (deleted with it by a trigger), one user handle
    /// per account, single-use ceremony challenges, and the application's passkey policy.
    static func passkeysV18(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS passkey_credentials (
                factor_id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                credential_id \(dialect.blob) NOT NULL,
                public_key \(dialect.blob) NOT NULL,
                algorithm \(dialect.bigint) NOT NULL,
                sign_count \(dialect.bigint) NOT NULL,
                aaguid \(dialect.blob) NOT NULL,
                transports TEXT NOT NULL,
                multi_device \(dialect.bigint) NOT NULL,
                backed_up \(dialect.bigint) NOT NULL,
                attestation_format TEXT NOT NULL,
                attested \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                last_used_at \(dialect.bigint),
                flagged_at \(dialect.bigint),
                UNIQUE (application_id, credential_id)
            )
            """,
            "CREATE INDEX IF NOT EXISTS passkey_credentials_user ON passkey_credentials(application_id, user_id)",
            """
            CREATE TABLE IF NOT EXISTS passkey_users (
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                handle \(dialect.blob) NOT NULL,
                PRIMARY KEY (application_id, user_id),
                UNIQUE (application_id, handle)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS passkey_challenges (
                challenge_hash \(dialect.blob) PRIMARY KEY,
                application_id TEXT NOT NULL,
                user_id TEXT,
                purpose TEXT NOT NULL,
                assertion_hash \(dialect.blob),
                user_verification \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS passkey_challenges_expires ON passkey_challenges(expires_at)",
            dialect == .sqlite
                ? "ALTER TABLE tfa_policies ADD COLUMN passkeys TEXT"
                : "ALTER TABLE tfa_policies ADD COLUMN IF NOT EXISTS passkeys TEXT",
        ]
            // However a factor goes (removed by its owner or an operator, or with its account), its credential goes.
            + dialect.trigger(
                "tfa_factors_passkey_delete", "AFTER DELETE ON tfa_factors", when: "OLD.provider = 'passkey'",
                body: ["DELETE FROM passkey_credentials WHERE factor_id = OLD.id"])
    }
}
