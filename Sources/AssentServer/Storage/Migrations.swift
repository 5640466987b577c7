/// The versioned schema. A migration is a list of statements per dialect; versions only ever grow.
enum Migrations {
    struct Migration {
        let version: Int
        let sqlite: [String]
        let postgres: [String]
    }

    static let all: [Migration] = [
        Migration(
            version: 1,
            sqlite: schemaV1(blob: "BLOB", bigint: "INTEGER", serial: "INTEGER PRIMARY KEY AUTOINCREMENT"),
            postgres: schemaV1(blob: "BYTEA", bigint: "BIGINT", serial: "BIGSERIAL PRIMARY KEY")
        )
    ]

    private static func schemaV1(blob: String, bigint: String, serial: String) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS applications (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                application_key TEXT NOT NULL UNIQUE,
                application_secret \(blob) NOT NULL,
                master_private_key \(blob) NOT NULL,
                created_at \(bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS activations (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES applications(id),
                user_id TEXT NOT NULL,
                state \(bigint) NOT NULL,
                activation_code TEXT UNIQUE,
                code_expires_at \(bigint) NOT NULL,
                commit_mode TEXT NOT NULL,
                activation_name TEXT,
                platform TEXT,
                device_info TEXT,
                extras TEXT,
                device_public_key \(blob),
                server_private_key \(blob) NOT NULL,
                master_secret \(blob),
                counter_data \(blob) NOT NULL,
                counter \(bigint) NOT NULL,
                failed_attempts \(bigint) NOT NULL,
                max_failed_attempts \(bigint) NOT NULL,
                blocked_reason TEXT,
                version \(bigint) NOT NULL,
                created_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL,
                last_used_at \(bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS activations_user ON activations(user_id)",
            """
            CREATE TABLE IF NOT EXISTS tokens (
                id TEXT PRIMARY KEY,
                activation_id TEXT NOT NULL REFERENCES activations(id),
                secret \(blob) NOT NULL,
                signature_type TEXT NOT NULL,
                created_at \(bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS temporary_keys (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES applications(id),
                activation_id TEXT,
                private_key \(blob) NOT NULL,
                expires_at \(bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS used_values (
                kind TEXT NOT NULL,
                value TEXT NOT NULL,
                expires_at \(bigint) NOT NULL,
                PRIMARY KEY (kind, value)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS api_keys (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                key_hash \(blob) NOT NULL UNIQUE,
                scopes TEXT NOT NULL,
                created_at \(bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS audit_events (
                id \(serial),
                at \(bigint) NOT NULL,
                type TEXT NOT NULL,
                activation_id TEXT,
                user_id TEXT,
                actor TEXT NOT NULL,
                detail TEXT NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS audit_activation ON audit_events(activation_id)",
            "CREATE INDEX IF NOT EXISTS audit_user ON audit_events(user_id)",
        ]
    }
}
