import AssentCrypto

/// The schema of the one outbox (versions 3 and 11): the outbox itself, push registrations and the triggers that
/// write webhook and push messages in the statement of a change; ``Migrations/all`` orders every feature's versions.
extension Migrations {
    /// Version 3: the one outbox (webhook and push channels) and push registrations. The status trigger of version
    /// 2 is replaced: it now writes the webhook message with the operation's fields, a silent push per registered
    /// device, and the audit event; a new operation writes a push per registered device; a removed activation loses
    /// its registration.
    static func outboxV3(_ dialect: Dialect) -> [String] {
        // SQLite cannot replace a trigger: drop version 2's first.
        (dialect == .sqlite ? ["DROP TRIGGER IF EXISTS operations_status_outbox"] : [])
            + schemaV3(dialect)
            + dialect.trigger(
                "operations_status_outbox", "AFTER UPDATE OF status ON operations", when: "NEW.status <> OLD.status",
                body: [
                    webhookInsert(payload: dialect.jsonObject(webhookFields)),
                    pushInsert(event: "operation.finished", payload: dialect.jsonObject("'status', NEW.status")),
                    auditInsert,
                ])
            + dialect.trigger(
                "operations_created_outbox", "AFTER INSERT ON operations",
                when: "NEW.user_id IS NOT NULL AND NEW.status = 'PENDING'",
                body: [pushInsert(event: "operation.created", payload: "NULL")])
            + dialect.trigger(
                "activations_removed_push", "AFTER UPDATE OF state ON activations",
                when: "NEW.state = \(ActivationState.removed.rawValue)",
                body: ["DELETE FROM push_registrations WHERE activation_id = NEW.id"])
            + ["DROP TABLE webhook_outbox"]
    }

    /// What a webhook message carries besides the operation id, so that delivering it needs no other read.
    static let webhookFields = """
        'status', NEW.status, 'statusReason', NEW.status_reason, 'userId', NEW.user_id, 'name', NEW.name, \
        'activationId', NEW.activation_id
        """

    /// The webhook message of an operation's status change.
    static func webhookInsert(payload: String) -> String {
        """
        INSERT INTO outbox (channel, event, subject, payload, at, next_attempt_at)
                    VALUES ('webhook', 'operation.status_changed', NEW.id, \(payload), NEW.updated_at, NEW.updated_at)
        """
    }

    /// One push message per ACTIVE activation of the operation's user (in its application) that registered a
    /// push token.
    static func pushInsert(event: String, payload: String) -> String {
        """
        INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
                    SELECT 'push', '\(event)', NEW.id, a.id, \(payload), NEW.updated_at, NEW.updated_at
                    FROM activations a JOIN push_registrations r ON r.activation_id = a.id
                    WHERE a.user_id = NEW.user_id AND a.application_id = NEW.application_id
                    AND a.state = \(ActivationState.active.rawValue)
        """
    }

    /// The one outbox of every delivery channel (it replaces version 2's webhook outbox, whose undelivered events
    /// it takes over) and push registrations.
    static func schemaV3(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS outbox (
                id \(dialect.serial),
                channel TEXT NOT NULL,
                event TEXT NOT NULL,
                subject TEXT NOT NULL,
                target TEXT,
                payload TEXT,
                at \(dialect.bigint) NOT NULL,
                attempts \(dialect.bigint) NOT NULL DEFAULT 0,
                next_attempt_at \(dialect.bigint) NOT NULL,
                lease_owner TEXT,
                lease_until \(dialect.bigint) NOT NULL DEFAULT 0,
                state TEXT NOT NULL DEFAULT 'pending',
                last_error TEXT,
                finished_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS outbox_due ON outbox(state, next_attempt_at)",
            "CREATE INDEX IF NOT EXISTS outbox_subject ON outbox(subject)",
            """
            INSERT INTO outbox (channel, event, subject, payload, at, attempts, next_attempt_at)
            SELECT 'webhook', 'operation.status_changed', operation_id,
                '{"status":"' || status || '"' || COALESCE(',"statusReason":"' || status_reason || '"', '') || '}',
                at, attempts, next_attempt_at
            FROM webhook_outbox WHERE state = 'pending'
            """,
            """
            CREATE TABLE IF NOT EXISTS push_registrations (
                activation_id TEXT PRIMARY KEY REFERENCES activations(id),
                platform TEXT NOT NULL,
                environment TEXT,
                token \(dialect.blob) NOT NULL,
                language TEXT,
                registered_at \(dialect.bigint) NOT NULL
            )
            """,
        ]
    }

    /// Version 11: the dispatcher looks for due messages of the channels it delivers; messages of a channel nobody
    /// delivers (a webhook not configured) wait pending for their purge, and with the index of version 3 every look
    /// walked past all of them.
    static let outboxV11 = [
        "CREATE INDEX IF NOT EXISTS outbox_channel_due ON outbox(state, channel, next_attempt_at)",
        "DROP INDEX IF EXISTS outbox_due",
    ]
}

extension Migrations {
    /// Version 17: an operation may be seen by some of its user's devices only (a push sign-in: those opted in), so
    /// its push messages go to those alone; and an operation rejected as fraud writes a `security.fraud_reported`
    /// webhook message and audit event in the statement that rejects it. The two operation triggers are rewritten.
    static func pushLoginsV17(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return ["ALTER TABLE operations \(add) devices TEXT"]
            + (dialect == .sqlite ? ["DROP TRIGGER IF EXISTS operations_created_outbox"] : [])
            + operationStatusTrigger(dialect, auditApplication: false)
            + dialect.trigger(
                "operations_created_outbox", "AFTER INSERT ON operations",
                when: "NEW.user_id IS NOT NULL AND NEW.status = 'PENDING'",
                body: [devicePushInsert(event: "operation.created", payload: "NULL")])
    }

    /// The trigger of an operation's status change (version 17's; version 33's, whose audit events name the
    /// operation's application): the webhook message, a push per device, the audit event, and for an operation
    /// rejected as fraud its webhook message and audit event.
    static func operationStatusTrigger(_ dialect: Dialect, auditApplication: Bool, statusActor: Bool = false)
        -> [String]
    {
        let fraud = "NEW.status = 'REJECTED' AND NEW.status_reason = 'FRAUD'"
        let application: (column: String, value: String) =
            auditApplication ? (", application_id", ", NEW.application_id") : ("", "")
        // SQLite cannot replace a trigger: drop the earlier one first.
        return (dialect == .sqlite ? ["DROP TRIGGER IF EXISTS operations_status_outbox"] : [])
            + dialect.trigger(
                "operations_status_outbox", "AFTER UPDATE OF status ON operations", when: "NEW.status <> OLD.status",
                body: [
                    webhookInsert(payload: dialect.jsonObject(webhookFields)),
                    devicePushInsert(event: "operation.finished", payload: dialect.jsonObject("'status', NEW.status")),
                    auditInsert(withApplication: auditApplication, statusActor: statusActor),
                    """
                    INSERT INTO outbox (channel, event, subject, payload, at, next_attempt_at)
                                SELECT 'webhook', 'security.fraud_reported', NEW.id, \(dialect.jsonObject(webhookFields)),
                                NEW.updated_at, NEW.updated_at WHERE \(fraud)
                    """,
                    """
                    INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail\(application.column))
                                SELECT NEW.updated_at, 'security.fraud_reported', NEW.activation_id, NEW.user_id, 'device',
                                'Operation ' || NEW.id || ' (' || NEW.name || ') was reported as fraud on the phone.'\
                    \(application.value)
                                WHERE \(fraud)
                    """,
                ])
    }

    /// ``pushInsert(event:payload:)`` for the operation's devices only, when it names some.
    static func devicePushInsert(event: String, payload: String) -> String {
        pushInsert(event: event, payload: payload)
            + "\n            AND (NEW.devices IS NULL OR (' ' || NEW.devices || ' ') LIKE ('% ' || a.id || ' %'))"
    }
}
