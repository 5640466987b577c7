/// The `mobile-json` target.
enum FuzzTarget {
    static let check = FuzzChecks.mobileJSON
}
