import AssentCrypto

/// The schema of two-factor login (version 8); ``Migrations/all`` orders every feature's versions.
extension Migrations {
    /// Version 8: two-factor login — accounts (password hashes), their factors (TOTP secrets sealed), the flows a
    /// second factor interrupts, each provider's challenge in a flow (assertions and proofs hashed), the policy per
    /// application, and remembered devices.
    static func tfaV8(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS tfa_accounts (
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                password_hash TEXT,
                created_at \(dialect.bigint) NOT NULL,
                PRIMARY KEY (application_id, user_id)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS tfa_factors (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                state TEXT NOT NULL,
                destination TEXT,
                secret \(dialect.blob),
                last_step \(dialect.bigint),
                last_method TEXT,
                created_at \(dialect.bigint) NOT NULL,
                last_verified_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS tfa_factors_user ON tfa_factors(application_id, user_id)",
            """
            CREATE TABLE IF NOT EXISTS tfa_flows (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                first_factor TEXT,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL,
                finished_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS tfa_flows_expires ON tfa_flows(expires_at)",
            """
            CREATE TABLE IF NOT EXISTS tfa_challenges (
                assertion_hash \(dialect.blob) PRIMARY KEY,
                flow_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                mode TEXT NOT NULL,
                factor_id TEXT,
                attempts_left \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL,
                passed_at \(dialect.bigint),
                proof_hash \(dialect.blob),
                operation_id TEXT
            )
            """,
            "CREATE INDEX IF NOT EXISTS tfa_challenges_flow ON tfa_challenges(flow_id)",
            """
            CREATE TABLE IF NOT EXISTS tfa_policies (
                application_id TEXT PRIMARY KEY,
                required \(dialect.bigint) NOT NULL,
                providers TEXT NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS tfa_devices (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL,
                last_used_at \(dialect.bigint),
                revoked_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS tfa_devices_user ON tfa_devices(application_id, user_id)",
            """
            CREATE TABLE IF NOT EXISTS tfa_codes (
                id TEXT PRIMARY KEY,
                token_hash \(dialect.blob) NOT NULL UNIQUE,
                assertion_hash \(dialect.blob) NOT NULL,
                factor_id TEXT NOT NULL,
                channel TEXT NOT NULL,
                code \(dialect.blob) NOT NULL,
                lang TEXT NOT NULL,
                attempts_left \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS tfa_codes_expires ON tfa_codes(expires_at)",
        ]
            // A code and its message are one statement: the outbox names the code, whose text stays sealed.
            + dialect.trigger(
                "tfa_codes_outbox", "AFTER INSERT ON tfa_codes", when: "1 = 1",
                body: [
                    """
                    INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
                                VALUES (CASE WHEN NEW.channel = 'email' THEN 'email' ELSE 'phone' END,
                                'tfa.code.' || NEW.channel, NEW.id, NEW.channel, NULL, NEW.created_at, NEW.created_at)
                    """
                ])
    }
}

extension Migrations {
    /// Version 15: a display name per login account (the `name` claim of Sign in with Assent).
    static func tfaDisplayNameV15(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE tfa_accounts ADD COLUMN display_name TEXT"
                : "ALTER TABLE tfa_accounts ADD COLUMN IF NOT EXISTS display_name TEXT"
        ]
    }
}

extension Migrations {
    /// Version 36: a login account can be disabled (no sign-in until enabled again).
    /// The language an account's owner chose for their pages and mail, and an application's default language.
    static func languagesV39(_ dialect: Dialect) -> [String] {
        let ifNotExists = dialect == .sqlite ? "" : "IF NOT EXISTS "
        return [
            "ALTER TABLE tfa_accounts ADD COLUMN \(ifNotExists)language TEXT",
            "ALTER TABLE application_branding ADD COLUMN \(ifNotExists)language TEXT",
        ]
    }

    static func tfaAccountDisabledV36(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE tfa_accounts ADD COLUMN disabled_at \(dialect.bigint)"
                : "ALTER TABLE tfa_accounts ADD COLUMN IF NOT EXISTS disabled_at \(dialect.bigint)"
        ]
    }
}
