import AssentCrypto

/// The schema of the rate limiter's counters (version 6); ``Migrations/all`` orders every feature's versions.
extension Migrations {
    /// Version 6: the one rate limiter's counters, a row per key and window, shared by every server process.
    static func rateLimitsV6(_ dialect: Dialect) -> [String] {
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
}
