import AssentCrypto

/// The schema of the device event log (version 4); ``Migrations/all`` orders every feature's versions.
extension Migrations {
    /// The device event log the live streams read: an event per new operation of a user and per finished one,
    /// written by triggers in the statement of the change. On PostgreSQL the trigger also announces the user on the
    /// `assent_events` channel, so every server process wakes the user's streams.
    static func eventsV4(_ dialect: Dialect) -> [String] {
        func event(_ type: String, at column: String) -> [String] {
            let insert = """
                INSERT INTO device_events (application_id, user_id, type, operation_id, status, at)
                    VALUES (NEW.application_id, NEW.user_id, '\(type)', NEW.id, NEW.status, NEW.\(column))
                """
            return dialect == .sqlite ? [insert] : [insert, "PERFORM pg_notify('assent_events', NEW.user_id)"]
        }
        return [
            """
            CREATE TABLE IF NOT EXISTS device_events (
                id \(dialect.serial),
                application_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                type TEXT NOT NULL,
                operation_id TEXT NOT NULL,
                status TEXT NOT NULL,
                at \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS device_events_user ON device_events(user_id, id)",
            "CREATE INDEX IF NOT EXISTS device_events_at ON device_events(at)",
        ]
            + dialect.trigger(
                "operations_created_event", "AFTER INSERT ON operations",
                when: "NEW.user_id IS NOT NULL AND NEW.status = 'PENDING'",
                body: event("operation.created", at: "created_at"))
            + dialect.trigger(
                "operations_finished_event", "AFTER UPDATE OF status ON operations",
                when: "NEW.status <> OLD.status AND NEW.user_id IS NOT NULL",
                body: event("operation.finished", at: "updated_at"))
    }
}
