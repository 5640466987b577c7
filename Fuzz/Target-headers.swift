/// The `headers` target.
enum FuzzTarget {
    static let check = FuzzChecks.headers
}
