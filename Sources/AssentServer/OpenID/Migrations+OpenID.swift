import AssentCrypto

/// The schema of the OpenID provider (version 7); ``Migrations/all`` orders every feature's versions.
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
    /// Version 14: the authorization code flow — clients' redirect URIs, type and grant types (existing clients
    /// stay confidential CIBA clients), single-use authorization codes (hashed), the code an access token was
    /// issued for (a replayed code revokes it), rotating refresh tokens (hashed; a family per code), the clients
    /// each single-sign-on session served (their back-channel logout when it ends), and what people allowed
    /// third-party clients.
    static func openIDCodeFlowV14(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return [
            "ALTER TABLE openid_clients \(add) redirect_uris TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE openid_clients \(add) client_type TEXT NOT NULL DEFAULT 'confidential'",
            "ALTER TABLE openid_clients \(add) grant_types TEXT NOT NULL DEFAULT 'ciba'",
            "ALTER TABLE openid_clients \(add) post_logout_redirect_uris TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE openid_clients \(add) backchannel_logout_uri TEXT",
            "ALTER TABLE openid_clients \(add) third_party \(dialect.bigint) NOT NULL DEFAULT 0",
            """
            CREATE TABLE IF NOT EXISTS openid_consents (
                user_id TEXT NOT NULL,
                client_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                PRIMARY KEY (user_id, client_id)
            )
            """,
            "ALTER TABLE openid_access_tokens \(add) code_hash \(dialect.blob)",
            "CREATE INDEX IF NOT EXISTS openid_access_tokens_code ON openid_access_tokens(code_hash)",
            """
            CREATE TABLE IF NOT EXISTS openid_codes (
                code_hash \(dialect.blob) PRIMARY KEY,
                client_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                redirect_uri TEXT NOT NULL,
                scope TEXT NOT NULL,
                nonce TEXT,
                code_challenge TEXT,
                acr TEXT NOT NULL,
                amr TEXT NOT NULL,
                auth_time \(dialect.bigint) NOT NULL,
                session_id TEXT NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL,
                redeemed_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS openid_codes_expires ON openid_codes(expires_at)",
            """
            CREATE TABLE IF NOT EXISTS openid_refresh_tokens (
                token_hash \(dialect.blob) PRIMARY KEY,
                code_hash \(dialect.blob) NOT NULL,
                client_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                acr TEXT NOT NULL,
                amr TEXT NOT NULL,
                auth_time \(dialect.bigint) NOT NULL,
                session_id TEXT NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                expires_at \(dialect.bigint) NOT NULL,
                used_at \(dialect.bigint),
                revoked_at \(dialect.bigint)
            )
            """,
            "CREATE INDEX IF NOT EXISTS openid_refresh_tokens_code ON openid_refresh_tokens(code_hash)",
            """
            CREATE TABLE IF NOT EXISTS openid_session_clients (
                session_id TEXT NOT NULL,
                client_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                created_at \(dialect.bigint) NOT NULL,
                PRIMARY KEY (session_id, client_id)
            )
            """,
            "CREATE INDEX IF NOT EXISTS openid_session_clients_created ON openid_session_clients(created_at)",
            "CREATE INDEX IF NOT EXISTS openid_refresh_tokens_expires ON openid_refresh_tokens(expires_at)",
        ]
    }
}
