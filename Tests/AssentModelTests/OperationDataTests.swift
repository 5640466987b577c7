import AssentCrypto
import AssentModel
import Foundation
import Testing

@Suite("Operation data")
struct OperationDataTests {
    @Test("The documented payment example parses into typed fields and prints back the same")
    func paymentExample() throws {
        let text = "A1*A100CZK*ICZ2730300000001165254011*D20180425*Thello world"
        let data = try OperationData(parsing: text)
        #expect(data.version == "A" && data.template == 1)
        #expect(
            data.fields == [
                .amount("100", currency: "CZK"), .account(iban: "CZ2730300000001165254011", bic: nil),
                .date(year: 2018, month: 4, day: 25), .text("hello world"),
            ])
        #expect(data.description == text)
    }

    @Test("Empty positions, BIC codes, fractional amounts and escapes")
    func details() throws {
        let data = try OperationData(
            parsing: "A1*A.325CZK*ICZ2730300000001165254011,AIRACZPP***Nnote\\*with\\nlines\\\\")
        #expect(
            data.fields == [
                .amount(".325", currency: "CZK"), .account(iban: "CZ2730300000001165254011", bic: "AIRACZPP"), .empty,
                .empty, .note("note*with\nlines\\"),
            ])
        #expect(try OperationData(parsing: data.description) == data)
        #expect(try OperationData(parsing: "A2").fields.isEmpty)
        #expect(try OperationData(parsing: "A0*T1*T2*T3*T4*T5*T6").fields.count == OperationData.maximumFields)
        #expect(try OperationData(parsing: "A0*Q1165254011/3030*RID3343432434*Xcustom").fields.count == 3)
    }

    @Test(
        "Malformed operation data is rejected with a reason",
        arguments: [
            "", "1*A100CZK", "a1", "A100", "AX", "A1*ACZK", "A1*A0", "A1*A-CZK", "A1*A1.2.3EUR", "A1*A100czk",
            "A1*IGOODIBAN,badbic", "A1*ICZ2730300000001165254012", "A1*ICZ2730300000001165254011,airaczpp",
            "A1*D20180230", "A1*D2018042", "A0*T1*T2*T3*T4*T5*T6*T7", "A0*Tbad\\escape", "A0*Ttab\there", "A0*Tend\\",
        ])
    func malformed(text: String) {
        #expect(throws: OperationDataError.self) { try OperationData(parsing: text) }
    }
}

@Suite("Offline operation QR codes")
struct OfflineOperationQRTests {
    let master = ECPrivateKey()
    let personal = ECPrivateKey()

    func make(totp: String? = nil, keyType: OfflineOperationQR.KeyType = .master) throws -> OfflineOperationQR {
        try OfflineOperationQR(
            operationId: "5ff1b1ed-a3cc-45a3-8ab0-ed60950312b6", title: "Payment\nto \\ Acme",
            message: "Please confirm", operationData: "A1*A100CZK*ICZ2730300000001165254011",
            flags: [.biometryAllowed, .fraudWarning],
            totp: totp, keyType: keyType, signingKey: keyType == .master ? master : personal)
    }

    @Test("A QR made and signed by the server parses back and verifies with the master key only")
    func roundTrip() throws {
        let qr = try make()
        let lines = qr.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 7)
        #expect(lines[1] == "Payment\\nto \\\\ Acme")
        #expect(lines[4] == "BF")
        #expect(lines[6].hasPrefix("0"))
        let parsed = try OfflineOperationQR(parsing: qr.text)
        #expect(parsed == qr)
        #expect(parsed.title == "Payment\nto \\ Acme")
        #expect(parsed.flags == [.biometryAllowed, .fraudWarning])
        #expect(parsed.totp == nil)
        try parsed.verify(masterPublicKey: master.publicKey, personalPublicKey: nil)
        #expect(throws: AssentCryptoError.self) {
            try parsed.verify(masterPublicKey: ECPrivateKey().publicKey, personalPublicKey: nil)
        }
        #expect(
            parsed.signatureBody
                == Data("5ff1b1ed-a3cc-45a3-8ab0-ed60950312b6&A1*A100CZK*ICZ2730300000001165254011".utf8))
    }

    @Test("A TOTP line and a personal key: eight lines, TOTP in the signature body, personal key required")
    func totpAndPersonalKey() throws {
        let qr = try make(totp: "12345678", keyType: .personal)
        let parsed = try OfflineOperationQR(parsing: qr.text)
        #expect(parsed.totp == "12345678")
        #expect(String(decoding: parsed.signatureBody, as: UTF8.self).hasSuffix("&12345678"))
        try parsed.verify(masterPublicKey: master.publicKey, personalPublicKey: personal.publicKey)
        #expect(throws: AssentCryptoError.self) {
            try parsed.verify(masterPublicKey: master.publicKey, personalPublicKey: nil)
        }
        #expect(throws: AssentCryptoError.self) {
            try parsed.verify(masterPublicKey: personal.publicKey, personalPublicKey: master.publicKey)
        }
    }

    @Test("Tampering with any line breaks the signature; a newer format's extra line and flag still verify")
    func tamperingAndNewerFormat() throws {
        let qr = try make()
        let tampered = qr.text.replacingOccurrences(of: "A100CZK", with: "A900CZK")
        #expect(throws: AssentCryptoError.self) {
            try OfflineOperationQR(parsing: tampered).verify(masterPublicKey: master.publicKey, personalPublicKey: nil)
        }
        // A newer server adds a line after the TOTP line and an unknown flag letter.
        var lines = try make(totp: "12345678").signedText.split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        lines[4] += "Z"
        lines.insert("a future line", at: 6)
        let newer = lines.joined(separator: "\n")
        let text = newer + (try ServerSignature.sign(Data(newer.utf8), with: master)).base64EncodedString()
        let parsed = try OfflineOperationQR(parsing: text)
        try parsed.verify(masterPublicKey: master.publicKey, personalPublicKey: nil)
        #expect(parsed.flags == [.biometryAllowed, .fraudWarning])
        #expect(parsed.totp == "12345678")
    }

    @Test(
        "Malformed QR texts are rejected",
        arguments: [
            "", "a\nb\nc", "id\nt\nm\nA1\n\nnotbase64\n0AAAA", "id\nt\nm\nA1\n\nAAAAAAAAAAAAAAAAAAAAAA==\n9AAAA",
        ])
    func malformed(text: String) {
        #expect(throws: OperationDataError.self) { try OfflineOperationQR(parsing: text) }
    }
}
