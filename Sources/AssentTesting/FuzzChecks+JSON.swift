import Foundation

#if canImport(AssentModel)
    import AssentModel
#endif

extension FuzzChecks {
    /// Mobile Token API JSON: any bytes decode as an operation, a form or a template body, or fail with an error;
    /// a decoded operation survives encoding and decoding unchanged; a template body fills or fails.
    @Sendable public static func mobileJSON(_ input: Data) throws {
        try roundTripsJSON(
            MobileOperation.self, input, decoder: MobileTokenJSON.decoder(), encoder: MobileTokenJSON.encoder(),
            same: ==)
        _ = try? JSONDecoder().decode(FormData.self, from: input)
        if let body = try? JSONDecoder().decode([String: JSONValue].self, from: input) {
            _ = try? OperationTemplate.instantiate(body, params: ["amount": .string("1"), "site": .number(2)])
        }
    }
}
