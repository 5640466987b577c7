import Foundation

#if canImport(AssentModel)
    import AssentModel
#endif

extension FuzzChecks {
    /// Operation data strings: whatever parses prints a canonical text that parses again and prints the same.
    @Sendable public static func operationData(_ input: Data) throws {
        guard let text = String(data: input, encoding: .utf8), let parsed = try? OperationData(parsing: text) else {
            return
        }
        let printed = parsed.description
        guard let again = try? OperationData(parsing: printed) else {
            throw Violation("The canonical text \(printed.debugDescription) does not parse.")
        }
        guard again.description == printed else {
            throw Violation(
                "Printing is not stable: \(printed.debugDescription) → \(again.description.debugDescription).")
        }
    }
}
