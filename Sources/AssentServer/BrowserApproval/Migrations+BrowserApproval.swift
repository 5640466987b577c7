import AssentModel

extension Migrations {
    /// Version 23: a push sign-in also reaches the browsers its account subscribed (push factors whose destination
    /// is `browser`): one push message per browser when the sign-in is created and when it finishes, written in the
    /// statement that makes the change, as a phone's are. The target names the browser's factor (`browser:<id>`).
    static func browserApproversV23(_ dialect: Dialect) -> [String] {
        dialect.trigger(
            "operations_created_browser_push", "AFTER INSERT ON operations",
            when: "NEW.name = '\(PushFactor.loginOperation)' AND NEW.user_id IS NOT NULL AND NEW.status = 'PENDING'",
            body: [browserPushInsert(event: "operation.created", payload: "NULL")])
            + dialect.trigger(
                "operations_finished_browser_push", "AFTER UPDATE OF status ON operations",
                when: "NEW.status <> OLD.status AND NEW.name = '\(PushFactor.loginOperation)'",
                body: [
                    browserPushInsert(
                        event: "operation.finished", payload: dialect.jsonObject("'status', NEW.status"))
                ])
    }

    /// One push message per browser of the operation's user (in its application) that gets sign-in requests.
    static func browserPushInsert(event: String, payload: String) -> String {
        """
        INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
                    SELECT 'push', '\(event)', NEW.id, 'browser:' || f.id, \(payload), NEW.updated_at, NEW.updated_at
                    FROM tfa_factors f
                    WHERE f.application_id = NEW.application_id AND f.user_id = NEW.user_id
                    AND f.provider = '\(TFAProvider.push.rawValue)' AND f.state = 'active'
                    AND f.destination = '\(BrowserApprovers.destination)'
        """
    }
}
