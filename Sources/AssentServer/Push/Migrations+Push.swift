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
