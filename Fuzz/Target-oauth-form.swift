/// The `oauth-form` target.
enum FuzzTarget {
    static let check = FuzzChecks.oauthForm
}
