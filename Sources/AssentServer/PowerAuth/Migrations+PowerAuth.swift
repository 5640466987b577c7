/// The PowerAuth protocol's schema beyond the first version's activations.
extension Migrations {
    /// Version 5: the counter values an activation's accepted signatures used, so that a copy of a used signature is
    /// told apart from a wrong one (a replay does not count as a failed attempt).
    static func usedCountersV5(_ dialect: Dialect) -> [String] {
        [
            dialect == .sqlite
                ? "ALTER TABLE activations ADD COLUMN used_counters BLOB"
                : "ALTER TABLE activations ADD COLUMN IF NOT EXISTS used_counters BYTEA"
        ]
    }
}
