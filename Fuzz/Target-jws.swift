/// The `jws` target.
enum FuzzTarget {
    static let check = FuzzChecks.jws
}
