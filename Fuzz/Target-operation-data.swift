/// The `operation-data` target.
enum FuzzTarget {
    static let check = FuzzChecks.operationData
}
