import Foundation

#if canImport(AssentModel)
    import AssentModel
#endif

extension FuzzChecks {
    /// The JSON body of every route, decoded as the server decodes it (and the decrypted payloads of activation):
    /// any bytes decode or fail with an error; whatever decodes encodes to JSON that decodes again (to an equal value
    /// where the type compares); an encrypted body's Base64 fields parse or fail with an error.
    @Sendable public static func requestJSON(_ input: Data) throws {
        // The device API.
        try decodes(RequestEnvelope<TemporaryKeyRequest>.self, input)
        try decodes(RequestEnvelope<ActivationStatusRequest>.self, input)
        try decodes(ActivationLayer1Request.self, input)
        try decodes(ActivationLayer2Request.self, input)
        try decodes(EncryptedRequest.self, input, same: ==)
        if let encrypted = try? JSONDecoder().decode(EncryptedRequest.self, from: input) {
            _ = try? encrypted.cryptogram()
        }
        try decodes(RequestEnvelope<OperationIdRequest>.self, input)
        try decodes(RequestEnvelope<OperationRejectRequest>.self, input)
        try decodes(
            RequestEnvelope<OperationAuthorizeRequest>.self, input, decoder: MobileTokenJSON.decoder(),
            encoder: MobileTokenJSON.encoder())
        try decodes(RequestEnvelope<PushRegistrationRequest>.self, input)
        // The operator API.
        try decodes(CreateActivationRequest.self, input)
        try decodes(CreateAPIKeyRequest.self, input)
        try decodes(CancelOperationRequest.self, input)
        try decodes(OfflineQRRequest.self, input)
        try decodes(OfflineVerifyRequest.self, input)
        try decodes(ApprovalLinkRequest.self, input)
        // Website two-factor login (operator and relying-party routes).
        try decodes(CreateTFAAccountRequest.self, input)
        try decodes(AddTFAEmailRequest.self, input)
        try decodes(StartTFALoginRequest.self, input)
        try decodes(TFAPolicy.self, input)
        try decodes(TFALoginRequest.self, input)
        try decodes(TFAProvidersRequest.self, input)
        try decodes(TFAInitRequest.self, input)
        try decodes(TOTPRegisterRequest.self, input)
        try decodes(TOTPVerifyRequest.self, input)
        try decodes(TFAEmailSendRequest.self, input)
        try decodes(TFAPhoneSendRequest.self, input)
        try decodes(TFACodeVerifyRequest.self, input)
        try decodes(TFAPushOptInRequest.self, input)
        try decodes(TFAAssertionRequest.self, input)
        try decodes(TFAFinalizeRequest.self, input)
    }

    private static func decodes<T: Codable>(
        _ type: T.Type, _ input: Data, decoder: JSONDecoder = JSONDecoder(), encoder: JSONEncoder = JSONEncoder(),
        same: ((T, T) -> Bool)? = nil
    ) throws {
        guard let value = try? decoder.decode(T.self, from: input) else { return }
        let encoded: Data
        do {
            encoded = try encoder.encode(value)
        } catch {
            throw Violation("A \(T.self) that decoded does not encode: \(error)")
        }
        let again: T
        do {
            again = try decoder.decode(T.self, from: encoded)
        } catch {
            throw Violation("A \(T.self) that decoded was encoded to JSON that does not decode: \(error)")
        }
        if let same, !same(value, again) { throw Violation("A \(T.self) changed on its way through JSON.") }
    }
}
