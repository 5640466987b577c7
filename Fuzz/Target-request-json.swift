/// The `request-json` target.
enum FuzzTarget {
    static let check = FuzzChecks.requestJSON
}
