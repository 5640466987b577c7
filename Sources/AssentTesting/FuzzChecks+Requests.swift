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
        try roundTripsJSON(RequestEnvelope<TemporaryKeyRequest>.self, input)
        try roundTripsJSON(RequestEnvelope<ActivationStatusRequest>.self, input)
        try roundTripsJSON(ActivationLayer1Request.self, input)
        try roundTripsJSON(ActivationLayer2Request.self, input)
        try roundTripsJSON(EncryptedRequest.self, input, same: ==)
        if let encrypted = try? JSONDecoder().decode(EncryptedRequest.self, from: input) {
            _ = try? encrypted.cryptogram()
        }
        try roundTripsJSON(RequestEnvelope<OperationIdRequest>.self, input)
        try roundTripsJSON(RequestEnvelope<OperationRejectRequest>.self, input)
        try roundTripsJSON(
            RequestEnvelope<OperationAuthorizeRequest>.self, input, decoder: MobileTokenJSON.decoder(),
            encoder: MobileTokenJSON.encoder())
        try roundTripsJSON(RequestEnvelope<PushRegistrationRequest>.self, input)
        // The operator API.
        try roundTripsJSON(CreateActivationRequest.self, input)
        try roundTripsJSON(CreateAPIKeyRequest.self, input)
        try roundTripsJSON(CancelOperationRequest.self, input)
        try roundTripsJSON(OfflineQRRequest.self, input)
        try roundTripsJSON(OfflineVerifyRequest.self, input)
        try roundTripsJSON(ApprovalLinkRequest.self, input)
        // Website two-factor login (operator and relying-party routes).
        try roundTripsJSON(CreateTFAAccountRequest.self, input)
        try roundTripsJSON(AddTFAEmailRequest.self, input)
        try roundTripsJSON(StartTFALoginRequest.self, input)
        try roundTripsJSON(TFAPolicy.self, input)
        try roundTripsJSON(TFALoginRequest.self, input)
        try roundTripsJSON(TFAProvidersRequest.self, input)
        try roundTripsJSON(TFAInitRequest.self, input)
        try roundTripsJSON(TOTPRegisterRequest.self, input)
        try roundTripsJSON(TOTPVerifyRequest.self, input)
        try roundTripsJSON(TFAEmailSendRequest.self, input)
        try roundTripsJSON(TFAPhoneSendRequest.self, input)
        try roundTripsJSON(TFACodeVerifyRequest.self, input)
        try roundTripsJSON(TFAPushOptInRequest.self, input)
        try roundTripsJSON(TFAAssertionRequest.self, input)
        try roundTripsJSON(TFAFinalizeRequest.self, input)
    }
}
