import AssentCrypto

/// The versioned schema. A migration is a list of statements per dialect; versions only ever grow.
///
/// A rolling upgrade runs the new version's migrations while the old version still serves, so a migration either
/// only adds (a nullable or defaulted column, a table, an index) and says which older builds can still serve the
/// schema it makes (``Migration/compatibleFrom``), or it removes what an older build used and is served only by
/// builds that know it: add first, remove in a later version once nothing reads it.
enum Migrations {
    struct Migration: Sendable {
        let version: Int
        let sqlite: [String]
        let postgres: [String]
        /// The oldest build that can serve a schema with this migration applied, named by the newest migration that
        /// build knows: a version before this one for a migration that only adds, this version itself (the default)
        /// for one that removes or changes what older builds read. Recorded with the version, so an older server
        /// reading the database learns it.
        let compatibleFrom: Int

        init(version: Int, sqlite: [String], postgres: [String], compatibleFrom: Int? = nil) {
            (self.version, self.sqlite, self.postgres) = (version, sqlite, postgres)
            self.compatibleFrom = compatibleFrom ?? version
        }
    }

    /// The version from which `schema_migrations` records each version's ``Migration/compatibleFrom``.
    static let compatibilityRecorded = 40

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
        Migration(version: 14, sqlite: openIDCodeFlowV14(.sqlite), postgres: openIDCodeFlowV14(.postgres)),
        Migration(version: 15, sqlite: tfaDisplayNameV15(.sqlite), postgres: tfaDisplayNameV15(.postgres)),
        Migration(version: 16, sqlite: numberMatchingV16(.sqlite), postgres: numberMatchingV16(.postgres)),
        Migration(version: 17, sqlite: pushLoginsV17(.sqlite), postgres: pushLoginsV17(.postgres)),
        Migration(version: 18, sqlite: passkeysV18(.sqlite), postgres: passkeysV18(.postgres)),
        Migration(version: 19, sqlite: backupCodesV19(.sqlite), postgres: backupCodesV19(.postgres)),
        Migration(version: 20, sqlite: webPushV20(.sqlite), postgres: webPushV20(.postgres)),
        Migration(version: 21, sqlite: auditChainV21(.sqlite), postgres: auditChainV21(.postgres)),
        Migration(version: 22, sqlite: applicationVersionsV22(.sqlite), postgres: applicationVersionsV22(.postgres)),
        Migration(version: 23, sqlite: browserApproversV23(.sqlite), postgres: browserApproversV23(.postgres)),
        Migration(version: 24, sqlite: operatorsV24(.sqlite), postgres: operatorsV24(.postgres)),
        Migration(version: 25, sqlite: apiKeyApplicationsV25(.sqlite), postgres: apiKeyApplicationsV25(.postgres)),
        Migration(version: 26, sqlite: applicationPushV26(.sqlite), postgres: applicationPushV26(.postgres)),
        Migration(
            version: 27, sqlite: templatesPerApplicationV27(.sqlite), postgres: templatesPerApplicationV27(.postgres)),
        Migration(version: 28, sqlite: operatorPasskeysV28(.sqlite), postgres: operatorPasskeysV28(.postgres)),
        Migration(version: 29, sqlite: applicationBrandingV29(.sqlite), postgres: applicationBrandingV29(.postgres)),
        Migration(version: 30, sqlite: applicationWebhooksV30(.sqlite), postgres: applicationWebhooksV30(.postgres)),
        Migration(
            version: 31, sqlite: applicationRateLimitsV31(.sqlite), postgres: applicationRateLimitsV31(.postgres)),
        Migration(version: 32, sqlite: operatorPhonesV32(.sqlite), postgres: operatorPhonesV32(.postgres)),
        Migration(version: 33, sqlite: auditApplicationsV33(.sqlite), postgres: auditApplicationsV33(.postgres)),
        Migration(version: 34, sqlite: webSessionOwnersV34(.sqlite), postgres: webSessionOwnersV34(.postgres)),
        Migration(version: 35, sqlite: keyRingV35(.sqlite), postgres: keyRingV35(.postgres)),
        Migration(version: 36, sqlite: tfaAccountDisabledV36(.sqlite), postgres: tfaAccountDisabledV36(.postgres)),
        Migration(version: 37, sqlite: vapidPerApplicationV37(.sqlite), postgres: vapidPerApplicationV37(.postgres)),
        Migration(version: 38, sqlite: operationStatusActorV38(.sqlite), postgres: operationStatusActorV38(.postgres)),
        Migration(version: 39, sqlite: languagesV39(.sqlite), postgres: languagesV39(.postgres)),
        // Each version records the oldest build that can serve the schema (only adds a column builds up to 39 do
        // not read).
        Migration(
            version: 40, sqlite: ["ALTER TABLE schema_migrations ADD COLUMN compatible_from INTEGER"],
            postgres: ["ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS compatible_from INTEGER"],
            compatibleFrom: 39),
        // A new table older builds do not read.
        Migration(
            version: 41, sqlite: radiusClientsV41(.sqlite), postgres: radiusClientsV41(.postgres), compatibleFrom: 40),
        // An index older builds do not need.
        Migration(version: 42, sqlite: proximitySeedsV42, postgres: proximitySeedsV42, compatibleFrom: 41),
        // Operations partitioned by month on PostgreSQL (nothing on SQLite); older builds read and write the table as
        // before.
        Migration(
            version: 43, sqlite: operationPartitionsV43(.sqlite), postgres: operationPartitionsV43(.postgres),
            compatibleFrom: 42),
        // Audit rows partitioned by their place in the chain on PostgreSQL (nothing on SQLite); older builds read,
        // write, seal and prune them as before.
        Migration(
            version: 44, sqlite: auditPartitionsV44(.sqlite), postgres: auditPartitionsV44(.postgres),
            compatibleFrom: 42),
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

    static func schemaV1(blob: String, bigint: String, serial: String) -> [String] {
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
