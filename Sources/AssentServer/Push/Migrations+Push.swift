/// The schema of Web Push and the push delivery trace (version 20).
extension Migrations {
    /// Version 20: a Web Push registration's subscription keys (sealed, beside its endpoint in `token`), the
    /// server's VAPID key (sealed), and every push attempt's outcome.
    static func webPushV20(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE push_registrations ADD COLUMN webpush_keys BLOB"
                : "ALTER TABLE push_registrations ADD COLUMN IF NOT EXISTS webpush_keys BYTEA",
            """
            CREATE TABLE IF NOT EXISTS push_vapid_keys (
                id TEXT PRIMARY KEY,
                private_key \(dialect.blob) NOT NULL,
                created_at \(dialect.bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS push_deliveries (
                id \(dialect.serial),
                activation_id TEXT NOT NULL,
                operation_id TEXT NOT NULL,
                event TEXT NOT NULL,
                service TEXT NOT NULL,
                outcome TEXT NOT NULL,
                http_status \(dialect.bigint),
                reason TEXT,
                latency_ms \(dialect.bigint) NOT NULL,
                at \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS push_deliveries_activation ON push_deliveries(activation_id, at)",
            "CREATE INDEX IF NOT EXISTS push_deliveries_operation ON push_deliveries(operation_id, at)",
            "CREATE INDEX IF NOT EXISTS push_deliveries_at ON push_deliveries(at)",
        ]
    }
}

extension Migrations {
    /// Version 37: a VAPID key per application. The applications that exist when the server's one key does keep it
    /// (their subscriptions were made for it); every other application gets its own on first use.
    static func vapidPerApplicationV37(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS push_vapid_key_owners (
                application_id TEXT PRIMARY KEY,
                key_id TEXT NOT NULL
            )
            """,
            """
            INSERT INTO push_vapid_key_owners (application_id, key_id)
            SELECT id, 'vapid' FROM applications WHERE EXISTS (SELECT 1 FROM push_vapid_keys WHERE id = 'vapid')
            ON CONFLICT DO NOTHING
            """,
        ]
    }
}
