/// The schema of the tamper-evident audit trail (version 21).
extension Migrations {
    /// Version 21: each audit row's place in the chain (`seq`, given by the sealer after the row is written) and its
    /// hashes; the signed checkpoints; the audit signing key (sealed). Rows written before are sealed first, in
    /// the order they were written.
    static func auditChainV21(_ dialect: Dialect) -> [String] {
        let add =
            dialect == .sqlite
            ? "ALTER TABLE audit_events ADD COLUMN" : "ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS"
        return [
            "\(add) seq \(dialect.bigint)",
            "\(add) content_hash \(dialect.blob)",
            "\(add) prev_hash \(dialect.blob)",
            "\(add) chain_hash \(dialect.blob)",
            "CREATE UNIQUE INDEX IF NOT EXISTS audit_events_seq ON audit_events(seq)",
            "CREATE INDEX IF NOT EXISTS audit_events_unsealed ON audit_events(id) WHERE seq IS NULL",
            "CREATE INDEX IF NOT EXISTS audit_events_at ON audit_events(at)",
            """
            CREATE TABLE IF NOT EXISTS audit_checkpoints (
                seq \(dialect.bigint) PRIMARY KEY,
                hash \(dialect.blob) NOT NULL,
                at \(dialect.bigint) NOT NULL,
                signature \(dialect.blob) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS audit_keys (
                id TEXT PRIMARY KEY,
                private_key \(dialect.blob) NOT NULL,
                created_at \(dialect.bigint) NOT NULL
            )
            """,
        ]
    }

    /// Version 33: each audit row names the application it is about (none for the organisation's own actions), so
    /// that an operator or key limited to applications reads their rows only; the operation trigger writes it.
    /// Rows written before name none (what they are about is not always known).
    static func auditApplicationsV33(_ dialect: Dialect) -> [String] {
        let add =
            dialect == .sqlite
            ? "ALTER TABLE audit_events ADD COLUMN" : "ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS"
        return [
            "\(add) application_id TEXT",
            "CREATE INDEX IF NOT EXISTS audit_events_application ON audit_events(application_id, id)",
        ] + operationStatusTrigger(dialect, auditApplication: true)
    }

    /// Version 38: an operation's status change names who made it when it is not the usual one (a cancellation by
    /// `operator:<name>`, `api-key:<name>` or the user), and its audit event records that actor.
    static func operationStatusActorV38(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return ["ALTER TABLE operations \(add) status_actor TEXT"]
            + operationStatusTrigger(dialect, auditApplication: true, statusActor: true)
    }
}
