/// The `webauthn` target.
enum FuzzTarget {
    static let check = FuzzChecks.webAuthn
}
