import AssentCrypto
import Foundation
import Testing

@Suite("Activation codes")
struct ActivationCodeTests {
    @Test(
        "The spec's valid codes validate",
        arguments: ["AAAAA-AAAAA-AAAAA-AAAAA", "MMMMM-MMMMM-MMMMM-MUTOA", "W65WE-3T7VI-7FBS2-A4OYA"])
    func valid(code: String) {
        #expect(ActivationCode.isValid(code))
    }

    @Test(
        "Bad characters, short groups, wrong checksums and lowercase are rejected",
        arguments: [
            "67AAA-B0BCC-DDEEF-GGHHI", "KLMNO-PQRST-UVWXY-Z234", "W65WE-3T7VI-7FBS2-A4OYB", "w65we-3t7vi-7fbs2-a4oya",
            "W65WE3T7VI7FBS2A4OYA", "W65WE-3T7VI-7FBS2-A4OYA-", "",
        ])
    func invalid(code: String) {
        let error = #expect(throws: AssentCryptoError.self) { try ActivationCode(code) }
        #expect(error?.code == .invalidActivationCode)
    }

    @Test("Generated codes are valid and distinct")
    func generated() {
        let codes = (0..<500).map { _ in ActivationCode.generate() }
        #expect(codes.allSatisfy { ActivationCode.isValid($0.value) })
        #expect(Set(codes).count == codes.count)
    }

    @Test("The QR form parses as the spec says and verifies only with the signing master key")
    func qrForm() throws {
        #expect(throws: Never.self) { try ActivationQRCode(parsing: "CCCCC-CCCCC-CCCCC-CNUUQ#ABCD") }
        #expect(throws: AssentCryptoError.self) { try ActivationQRCode(parsing: "EEEEE-EEEEE-EEEEE-E2OXA#") }
        #expect(throws: AssentCryptoError.self) { try ActivationQRCode(parsing: "EEEEE-EEEEE-EEEEE-E2OXA") }
        #expect(throws: AssentCryptoError.self) { try ActivationQRCode(parsing: "EEEEE-EEEEE-EEEEE-E2OXA#%%") }

        let master = ECPrivateKey()
        let qr = try ActivationQRCode(code: .generate(), masterPrivateKey: master)
        try ActivationQRCode(parsing: qr.text).verify(masterPublicKey: master.publicKey)
        let error = #expect(throws: AssentCryptoError.self) {
            try ActivationQRCode(parsing: qr.text).verify(masterPublicKey: ECPrivateKey().publicKey)
        }
        #expect(error?.code == .invalidSignature)
        // The signature of one code does not carry over to another.
        let other = try ActivationQRCode(
            parsing: "\(ActivationCode.generate().value)#\(qr.signature.base64EncodedString())")
        #expect(throws: AssentCryptoError.self) { try other.verify(masterPublicKey: master.publicKey) }
        // A signature that is not DER is a typed error, not a crash.
        let garbage = try ActivationQRCode(parsing: "CCCCC-CCCCC-CCCCC-CNUUQ#ABCD")
        let derError = #expect(throws: AssentCryptoError.self) { try garbage.verify(masterPublicKey: master.publicKey) }
        #expect(derError?.code == .invalidSignature)
    }

    @Test("CRC-16/ARC has its catalogue check value")
    func crcCheckValue() {
        #expect(CRC16.arc(Data("123456789".utf8)) == 0xBB3D)
    }
}
