import AssentCrypto

/// The schema of the operator console's indexes (version 10); ``Migrations/all`` orders every feature's versions.
extension Migrations {
    /// Version 10: what the operator console lists and counts across users — the newest operations, and the
    /// finished ones per hour.
    static let consoleV10 = [
        "CREATE INDEX IF NOT EXISTS operations_created ON operations(created_at)",
        "CREATE INDEX IF NOT EXISTS operations_finished ON operations(finished_at)",
    ]
}
