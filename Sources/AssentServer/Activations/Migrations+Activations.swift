/// The activations' schema beyond the first version.
extension Migrations {
    /// Version 13: the sweeper finds the activations whose code expired unused; only rows that still hold a code
    /// (a device has not used it) are in the index.
    static let activationCodesV13 = [
        """
        CREATE INDEX IF NOT EXISTS activations_code_expiry ON activations(code_expires_at) \
        WHERE activation_code IS NOT NULL
        """
    ]
}
