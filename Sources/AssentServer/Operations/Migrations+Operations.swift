/// The operations' schema: their tables, templates and the trigger that writes a status change's outbox row and
/// audit event in the same statement (versions 2, 12, 16 and 42).
extension Migrations {
    /// The audit event of an operation's status change, written by the same trigger as the outbox row.
    static let auditInsert = auditInsert(withApplication: false)

    /// ``auditInsert``, naming the operation's application from version 33 on, and from version 38 on the actor
    /// the change names (`status_actor`: who cancelled) before the status's usual one.
    static func auditInsert(withApplication: Bool, statusActor: Bool = false) -> String {
        let usual = "CASE NEW.status WHEN 'EXPIRED' THEN 'system' WHEN 'CANCELED' THEN 'operator' ELSE 'device' END"
        return """
            INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail\(withApplication ? ", application_id" : ""))
            VALUES (NEW.updated_at, 'operation.' || lower(NEW.status), NEW.activation_id, NEW.user_id,
                \(statusActor ? "COALESCE(NEW.status_actor, \(usual))" : usual),
                'Operation ' || NEW.id || ' is ' || NEW.status || COALESCE(' (' || NEW.status_reason || ')', '') || '.'\
            \(withApplication ? ", NEW.application_id" : ""))
            """
    }

    /// Operations, operation templates and the webhook outbox. The outbox row (and the audit event) of a status
    /// change is written by a trigger, so the change and its event are one atomic statement on both databases.
    static func schemaV2(blob: String, bigint: String, serial: String) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS operations (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES applications(id),
                user_id TEXT,
                name TEXT NOT NULL,
                data TEXT NOT NULL,
                status TEXT NOT NULL,
                status_reason TEXT,
                content TEXT NOT NULL,
                signature_type TEXT NOT NULL,
                failed_attempts \(bigint) NOT NULL,
                max_failed_attempts \(bigint) NOT NULL,
                proximity_seed \(blob),
                offline_nonce TEXT,
                offline_totp TEXT,
                activation_id TEXT,
                template TEXT,
                created_at \(bigint) NOT NULL,
                expires_at \(bigint) NOT NULL,
                updated_at \(bigint) NOT NULL,
                finished_at \(bigint),
                version \(bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS operations_user_status ON operations(user_id, status, created_at)",
            "CREATE INDEX IF NOT EXISTS operations_status_expiry ON operations(status, expires_at)",
            """
            CREATE TABLE IF NOT EXISTS operation_templates (
                name TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                updated_at \(bigint) NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS webhook_outbox (
                id \(serial),
                operation_id TEXT NOT NULL,
                status TEXT NOT NULL,
                status_reason TEXT,
                at \(bigint) NOT NULL,
                attempts \(bigint) NOT NULL DEFAULT 0,
                next_attempt_at \(bigint) NOT NULL,
                locked_until \(bigint) NOT NULL DEFAULT 0,
                state TEXT NOT NULL DEFAULT 'pending',
                last_error TEXT,
                finished_at \(bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox(state, next_attempt_at)",
        ]
    }

    /// Version 12: fewer pages written per status change. Measured under approval load, each approval wrote about
    /// eight pages to the log, most of them one random leaf per index; two of those leaves bought nothing:
    /// - the outbox's subject index served only a look-up for diagnostics and tests (``SQLStore/outboxItems(subject:)``
    ///   now reads the outbox through), yet each message put an entry on a random leaf of it;
    /// - the finished-time index held a NULL for every pending operation, which each approval deleted from a random
    ///   leaf; it now holds finished operations only (what the console's per-hour counts read), so an approval only
    ///   appends to its newest leaf, shared by the approvals of a batch.
    static let pagesV12 = [
        "DROP INDEX IF EXISTS outbox_subject",
        "DROP INDEX IF EXISTS operations_finished",
        "CREATE INDEX IF NOT EXISTS operations_finished ON operations(finished_at) WHERE finished_at IS NOT NULL",
    ]

    /// Version 42: the operations that hold a sealed proximity seed, by id. The key ring's re-seal looks for values
    /// not sealed under the current key in key order; without this index, on a table of finished operations where few
    /// have a seed, each process's first pass after a start read the whole table to find them.
    static let proximitySeedsV42 = [
        "CREATE INDEX IF NOT EXISTS operations_proximity_seed ON operations(id) WHERE proximity_seed IS NOT NULL"
    ]

    /// Version 16: number matching — an operation's mode, its number and the choices the phone offers; the TFA
    /// policy's mode for push sign-ins (existing policies get the default, `choose`) and its push-bombing limits (JSON;
    /// absent: the server's).
    static func numberMatchingV16(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return [
            "ALTER TABLE operations \(add) number_matching TEXT",
            "ALTER TABLE operations \(add) matching_number \(dialect.bigint)",
            "ALTER TABLE operations \(add) number_choices TEXT",
            "ALTER TABLE tfa_policies \(add) number_matching TEXT",
            "ALTER TABLE tfa_policies \(add) push_limits TEXT",
        ]
    }
}
