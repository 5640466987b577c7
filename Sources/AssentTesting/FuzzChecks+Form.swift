import Foundation

#if canImport(AssentModel)
    import AssentModel
#endif

extension FuzzChecks {
    /// OAuth form bodies: any bytes decode into fields or fail with a ``FormEncoding/DecodingError``; decoded fields
    /// encode and decode back to the same fields.
    @Sendable public static func oauthForm(_ input: Data) throws {
        guard let fields = try? FormEncoding.decode(input) else { return }
        let again: [String: String]
        do {
            again = try FormEncoding.decode(FormEncoding.encode(fields))
        } catch {
            throw Violation("Encoded fields did not decode: \(error)")
        }
        guard again == fields else { throw Violation("Fields changed on their way through the form encoding.") }
    }
}
