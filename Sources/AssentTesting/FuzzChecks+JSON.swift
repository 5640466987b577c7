import Foundation

#if canImport(AssentModel)
    import AssentModel
#endif

extension FuzzChecks {
    /// Mobile Token API JSON: any bytes decode as an operation, a form or a template body, or fail with an error;
    /// a decoded operation survives encoding and decoding unchanged; a template body fills or fails.
    @Sendable public static func mobileJSON(_ input: Data) throws {
        if let operation = try? MobileTokenJSON.decoder().decode(MobileOperation.self, from: input) {
            let encoded = try MobileTokenJSON.encoder().encode(operation)
            let again = try MobileTokenJSON.decoder().decode(MobileOperation.self, from: encoded)
            guard again == operation else { throw Violation("An operation changed on its way through JSON.") }
        }
        _ = try? JSONDecoder().decode(FormData.self, from: input)
        if let body = try? JSONDecoder().decode([String: JSONValue].self, from: input) {
            _ = try? OperationTemplate.instantiate(body, params: ["amount": .string("1"), "site": .number(2)])
        }
    }
}
