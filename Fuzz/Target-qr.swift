/// The `qr` target.
enum FuzzTarget {
    static let check = FuzzChecks.qr
}
