import AssentCrypto

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
        ),
        Migration(
            version: 2,
            sqlite: schemaV2(blob: "BLOB", bigint: "INTEGER", serial: "INTEGER PRIMARY KEY AUTOINCREMENT") + [
                """
                CREATE TRIGGER IF NOT EXISTS operations_status_outbox AFTER UPDATE OF status ON operations
                WHEN NEW.status <> OLD.status
                BEGIN
                    INSERT INTO webhook_outbox (operation_id, status, status_reason, at, next_attempt_at)
                    VALUES (NEW.id, NEW.status, NEW.status_reason, NEW.updated_at, NEW.updated_at);
                    \(auditInsert);
                END
                """
            ],
            postgres: schemaV2(blob: "BYTEA", bigint: "BIGINT", serial: "BIGSERIAL PRIMARY KEY") + [
                """
                CREATE OR REPLACE FUNCTION operations_status_outbox() RETURNS trigger AS $$
                BEGIN
                    INSERT INTO webhook_outbox (operation_id, status, status_reason, at, next_attempt_at)
                    VALUES (NEW.id, NEW.status, NEW.status_reason, NEW.updated_at, NEW.updated_at);
                    \(auditInsert);
                    RETURN NEW;
                END
                $$ LANGUAGE plpgsql
                """,
                """
                CREATE OR REPLACE TRIGGER operations_status_outbox AFTER UPDATE OF status ON operations
                FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
                EXECUTE FUNCTION operations_status_outbox()
                """,
            ]
        ),
        Migration(version: 3, sqlite: outboxV3(.sqlite), postgres: outboxV3(.postgres)),
        Migration(version: 4, sqlite: eventsV4(.sqlite), postgres: eventsV4(.postgres)),
        Migration(version: 5, sqlite: usedCountersV5(.sqlite), postgres: usedCountersV5(.postgres)),
        Migration(version: 6, sqlite: rateLimitsV6(.sqlite), postgres: rateLimitsV6(.postgres)),
        Migration(version: 7, sqlite: openIDV7(.sqlite), postgres: openIDV7(.postgres)),
        Migration(version: 8, sqlite: tfaV8(.sqlite), postgres: tfaV8(.postgres)),
        Migration(version: 9, sqlite: webV9(.sqlite), postgres: webV9(.postgres)),
        Migration(version: 10, sqlite: consoleV10, postgres: consoleV10),
        Migration(version: 11, sqlite: outboxV11, postgres: outboxV11),
        Migration(version: 12, sqlite: pagesV12, postgres: pagesV12),
        Migration(version: 13, sqlite: activationCodesV13, postgres: activationCodesV13),
    ]

    /// The SQL dialects the migrations are written for.
    enum Dialect {
        case sqlite
        case postgres

        var bigint: String { self == .sqlite ? "INTEGER" : "BIGINT" }
        var blob: String { self == .sqlite ? "BLOB" : "BYTEA" }
        var serial: String { self == .sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY" }

        /// A JSON object of `fields` (`'key', value, …`) as text.
        func jsonObject(_ fields: String) -> String {
            self == .sqlite ? "json_object(\(fields))" : "json_build_object(\(fields))::text"
        }

        /// A row trigger `name` running `body` (statements) `timing` (e.g. `AFTER INSERT ON operations`) when
        /// `condition` holds: inline on SQLite, a PL/pgSQL function and its trigger on PostgreSQL.
        func trigger(_ name: String, _ timing: String, when condition: String, body: [String]) -> [String] {
            let statements = body.map { "    \($0);" }.joined(separator: "\n")
            switch self {
            case .sqlite:
                return ["CREATE TRIGGER IF NOT EXISTS \(name) \(timing)\nWHEN \(condition)\nBEGIN\n\(statements)\nEND"]
            case .postgres:
                return [
                    """
                    CREATE OR REPLACE FUNCTION \(name)() RETURNS trigger AS $$
                    BEGIN
                    \(statements)
                        RETURN NEW;
                    END
                    $$ LANGUAGE plpgsql
                    """,
                    "CREATE OR REPLACE TRIGGER \(name) \(timing)\nFOR EACH ROW WHEN (\(condition))\nEXECUTE FUNCTION \(name)()",
                ]
            }
        }
    }

    /// Version 3: the one outbox (webhook and push channels) and push registrations. The status trigger of version
    /// 2 is replaced: it now writes the webhook message with the operation's fields, a silent push per registered
    /// device, and the audit event; a new operation writes a push per registered device; a removed activation loses
    /// its registration.
    private static func outboxV3(_ dialect: Dialect) -> [String] {
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

    /// The device event log the live streams read: an event per new operation of a user and per finished one,
    /// written by triggers in the statement of the change. On PostgreSQL the trigger also announces the user on the
    /// `assent_events` channel, so every server process wakes the user's streams.
    private static func eventsV4(_ dialect: Dialect) -> [String] {
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

    /// Version 5: the counter values an activation's accepted signatures used, so that a copy of a used signature is
    /// told apart from a wrong one (a replay does not count as a failed attempt).
    private static func usedCountersV5(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE activations ADD COLUMN used_counters BLOB"
                : "ALTER TABLE activations ADD COLUMN IF NOT EXISTS used_counters BYTEA"
        ]
    }

    /// Version 6: the one rate limiter's counters, a row per key and window, shared by every server process.
    private static func rateLimitsV6(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS rate_limits (
                key TEXT PRIMARY KEY,
                window_end \(dialect.bigint) NOT NULL,
                count \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS rate_limits_window_end ON rate_limits(window_end)",
        ]
    }

    /// What a webhook message carries besides the operation id, so that delivering it needs no other read.
    private static let webhookFields = """
        'status', NEW.status, 'statusReason', NEW.status_reason, 'userId', NEW.user_id, 'name', NEW.name, \
        'activationId', NEW.activation_id
        """

    /// The webhook message of an operation's status change.
    private static func webhookInsert(payload: String) -> String {
        """
        INSERT INTO outbox (channel, event, subject, payload, at, next_attempt_at)
                    VALUES ('webhook', 'operation.status_changed', NEW.id, \(payload), NEW.updated_at, NEW.updated_at)
        """
    }

    /// One push message per ACTIVE activation of the operation's user (in its application) that registered a
    /// push token.
    private static func pushInsert(event: String, payload: String) -> String {
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
    private static func schemaV3(_ dialect: Dialect) -> [String] {
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

    /// The audit event of an operation's status change, written by the same trigger as the outbox row.
    private static let auditInsert = """
        INSERT INTO audit_events (at, type, activation_id, user_id, actor, detail)
        VALUES (NEW.updated_at, 'operation.' || lower(NEW.status), NEW.activation_id, NEW.user_id,
            CASE NEW.status WHEN 'EXPIRED' THEN 'system' WHEN 'CANCELED' THEN 'operator'
                ELSE 'device' END,
            'Operation ' || NEW.id || ' is ' || NEW.status || COALESCE(' (' || NEW.status_reason || ')', '') || '.')
        """

    /// Operations, operation templates and the webhook outbox. The outbox row (and the audit event) of a status
    /// change is written by a trigger, so the change and its event are one atomic statement on both databases.
    private static func schemaV2(blob: String, bigint: String, serial: String) -> [String] {
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

extension Migrations {
    /// Version 7: the OpenID provider — its signing keys (sealed), registered clients (secrets hashed), CIBA
    /// requests and access tokens (hashed) — and the factors that approved an operation and the app's mobile context. A CIBA request of a ping or
    /// push client gets its callback in the outbox from the statement that finishes its operation.
    static func openIDV7(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE operations ADD COLUMN approved_with TEXT"
                : "ALTER TABLE operations ADD COLUMN IF NOT EXISTS approved_with TEXT",
            dialect == .sqlite
                ? "ALTER TABLE activations ADD COLUMN pin_changed_at INTEGER"
                : "ALTER TABLE activations ADD COLUMN IF NOT EXISTS pin_changed_at BIGINT",
            dialect == .sqlite
                ? "ALTER TABLE operations ADD COLUMN mobile_context TEXT"
                : "ALTER TABLE operations ADD COLUMN IF NOT EXISTS mobile_context TEXT",
            """
            CREATE TABLE IF NOT EXISTS openid_keys (
                kid TEXT PRIMARY KEY,
                alg TEXT NOT NULL,
                private_key \(dialect.blob) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                retired_at \(dialect.bigint)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS openid_clients (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                secret_hash \(dialect.blob) NOT NULL,
                auth_method TEXT NOT NULL,
                delivery_mode TEXT NOT NULL,
                notification_endpoint TEXT,
                scopes TEXT NOT NULL,
                id_token_alg TEXT NOT NULL,
                application_id TEXT NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                jwks TEXT
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS ciba_requests (
                id TEXT PRIMARY KEY,
                request_hash \(dialect.blob) NOT NULL UNIQUE,
                auth_req_id \(dialect.blob) NOT NULL,
                client_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                operation_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                acr_values TEXT,
                binding_message TEXT,
                notification_token \(dialect.blob),
                delivery_mode TEXT NOT NULL,
                poll_interval \(dialect.bigint) NOT NULL,
                last_poll_at \(dialect.bigint),
                expires_at \(dialect.bigint) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                redeemed_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS ciba_requests_operation ON ciba_requests(operation_id)",
            "CREATE INDEX IF NOT EXISTS ciba_requests_expires ON ciba_requests(expires_at)",
            """
            CREATE TABLE IF NOT EXISTS openid_access_tokens (
                token_hash \(dialect.blob) PRIMARY KEY,
                client_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                ciba_request_id TEXT,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS openid_access_tokens_expires ON openid_access_tokens(expires_at)",
        ]
            + dialect.trigger(
                "operations_status_ciba", "AFTER UPDATE OF status ON operations", when: "NEW.status <> OLD.status",
                body: [
                    """
                    INSERT INTO outbox (channel, event, subject, target, payload, at, next_attempt_at)
                                SELECT 'ciba', 'ciba.' || c.delivery_mode, c.id, c.client_id, NULL, NEW.updated_at,
                                NEW.updated_at
                                FROM ciba_requests c WHERE c.operation_id = NEW.id AND c.delivery_mode <> 'poll'
                    """
                ])
    }
}

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
    /// Version 9: the sessions of the web pages a person sees (the hosted login). The cookie is a random bearer
    /// value of which only the hash is stored; the state is sealed.
    static func webV9(_ dialect: Dialect) -> [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS web_sessions (
                id_hash \(dialect.blob) PRIMARY KEY,
                kind TEXT NOT NULL,
                csrf_token TEXT NOT NULL,
                state \(dialect.blob) NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS web_sessions_expires ON web_sessions(expires_at)",
        ]
    }
}

extension Migrations {
    /// Version 10: what the operator console lists and counts across users — the newest operations, and the
    /// finished ones per hour.
    static let consoleV10 = [
        "CREATE INDEX IF NOT EXISTS operations_created ON operations(created_at)",
        "CREATE INDEX IF NOT EXISTS operations_finished ON operations(finished_at)",
    ]

    /// Version 11: the dispatcher looks for due messages of the channels it delivers; messages of a channel nobody
    /// delivers (a webhook not configured) wait pending for their purge, and with the index of version 3 every look
    /// walked past all of them.
    static let outboxV11 = [
        "CREATE INDEX IF NOT EXISTS outbox_channel_due ON outbox(state, channel, next_attempt_at)",
        "DROP INDEX IF EXISTS outbox_due",
    ]

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

    /// Version 13: the sweeper finds the activations whose code expired unused; only rows that still hold a code
    /// (a device has not used it) are in the index.
    static let activationCodesV13 = [
        """
        CREATE INDEX IF NOT EXISTS activations_code_expiry ON activations(code_expires_at) \
        WHERE activation_code IS NOT NULL
        """
    ]
}
