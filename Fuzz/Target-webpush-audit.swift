/// The `webpush-audit` target.
enum FuzzTarget {
    static let check = FuzzChecks.webPushAndAudit
}
