/// The `device-texts` target.
enum FuzzTarget {
    static let check = FuzzChecks.deviceTexts
}
