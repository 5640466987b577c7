import AssentCrypto
import AssentModel
import Foundation

extension FuzzChecks {
    /// What a device reads from a scanned code, a link or a pasted string: any text parses as an offline operation
    /// QR, a proximity code (JWT or deeplink), an SDK configuration or an `otpauth` key URI, or fails with an error;
    /// whatever parses is written back to text that parses to the same value, and no offline QR verifies under a
    /// key that signed nothing.
    @Sendable public static func deviceTexts(_ input: Data) throws {
        let text = String(decoding: input, as: UTF8.self)
        try roundTrip(text, "offline operation QR", parse: OfflineOperationQR.init(parsing:), write: \.text)
        if let qr = try? OfflineOperationQR(parsing: text),
            (try? qr.verify(masterPublicKey: unusedKey, personalPublicKey: unusedKey)) != nil
        {
            throw Violation("An offline operation QR verified under a key that signed nothing.")
        }
        let proximity = { (text: String) throws -> ProximityCode in
            guard let code = ProximityCode(parsing: text) else { throw Violation("not a proximity code") }
            return code
        }
        try roundTrip(text, "proximity code (as a JWT)", parse: proximity, write: \.jwt)
        try roundTrip(text, "proximity code (as a deeplink)", parse: proximity) { $0.deeplink(scheme: "assent") }
        try roundTrip(text, "SDK configuration", parse: SDKConfiguration.init(parsing:), write: \.text)
        try roundTrip(text, "otpauth key URI", parse: OTPKeyURI.init(parsing:), write: \.text)
    }

    /// A public key whose private half signs nothing.
    private static let unusedKey = ECPrivateKey().publicKey
}
