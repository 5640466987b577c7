import Foundation

#if canImport(AssentCrypto)
    import AssentCrypto
#endif

extension FuzzChecks {
    /// The headers and codes a device or a person sends: any text parses as a PowerAuth signature header, a token
    /// header, an encryption header, an activation code or an activation QR text, or fails with an error; whatever
    /// parses is written back to text that parses to the same value.
    @Sendable public static func headers(_ input: Data) throws {
        let text = String(decoding: input, as: UTF8.self)
        try roundTrip(text, "signature header", parse: AuthorizationHeader.init(parsing:), write: \.value)
        try roundTrip(text, "token header", parse: TokenHeader.init(parsing:), write: \.value)
        try roundTrip(text, "encryption header", parse: EncryptionHeader.init(parsing:), write: \.value)
        try roundTrip(text, "activation code", parse: ActivationCode.init, write: \.value)
        try roundTrip(text, "activation QR text", parse: ActivationQRCode.init(parsing:), write: \.text)
    }
}
