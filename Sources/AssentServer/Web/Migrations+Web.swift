import AssentCrypto

/// The schema of the web pages' sessions (version 9); ``Migrations/all`` orders every feature's versions.
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

    /// Version 34: whose sign-in a page session holds (`applicationId:userId`), so that ending a person's grants ends
    /// their single-sign-on sessions too.
    static func webSessionOwnersV34(_ dialect: Dialect) -> [String] {
        let add = dialect == .sqlite ? "ADD COLUMN" : "ADD COLUMN IF NOT EXISTS"
        return [
            "ALTER TABLE web_sessions \(add) owner TEXT",
            "CREATE INDEX IF NOT EXISTS web_sessions_owner ON web_sessions(owner)",
        ]
    }
}
