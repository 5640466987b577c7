import AssentCrypto
import Foundation
import Testing

@Suite("PowerAuth headers")
struct HeaderTests {
    static let applicationKey = Data(repeating: 1, count: 16).base64EncodedString()
    static let nonce = Data(repeating: 2, count: 16)

    static func authorization(signature: String = Data(count: 32).base64EncodedString()) -> AuthorizationHeader {
        AuthorizationHeader(
            activationId: "0e9b3a60-1a6c-4f6c-9d0e-0a8b5e2c4d11", applicationKey: applicationKey, nonce: nonce,
            signatureType: .possessionKnowledge, signature: signature)
    }

    @Test("An authorization header survives build and parse")
    func authorizationRoundTrip() throws {
        let header = Self.authorization()
        #expect(header.value.hasPrefix("PowerAuth pa_version=\"3.3\", pa_activation_id="))
        #expect(try AuthorizationHeader(parsing: header.value) == header)
        let decimal = AuthorizationHeader(
            version: "3.0", activationId: "a", applicationKey: Self.applicationKey, nonce: Self.nonce,
            signatureType: .possession, signature: "12345678")
        #expect(try AuthorizationHeader(parsing: decimal.value) == decimal)
    }

    @Test(
        "Malformed authorization headers are rejected",
        arguments: [
            "Basic abc",
            "PowerAuth pa_version=\"3.3\"",
            "PowerAuth pa_version=3.3, pa_activation_id=\"a\"",
            "PowerAuth pa_version=\"3.3\", pa_version=\"3.3\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"possession\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            "PowerAuth pa_version=\"3.3\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"possession\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\", extra=\"1\"",
            "PowerAuth pa_version=\"2.1\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"possession\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            "PowerAuth pa_version=\"3.3\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgI=\", pa_signature_type=\"possession\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            "PowerAuth pa_version=\"3.3\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"!!\", pa_signature_type=\"possession\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            "PowerAuth pa_version=\"3.3\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"knowledge\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            "PowerAuth pa_version=\"3.3\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"possession_knowledge\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
            "PowerAuth pa_version=\"3.0\", pa_activation_id=\"a\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"possession\", pa_signature=\"1234567\"",
            "PowerAuth pa_version=\"3.3\", pa_activation_id=\"\", pa_application_key=\"AQEBAQEBAQEBAQEBAQEBAQ==\", pa_nonce=\"AgICAgICAgICAgICAgICAg==\", pa_signature_type=\"possession\", pa_signature=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
        ]
    )
    func malformedAuthorization(header: String) {
        #expect(throws: AssentCryptoError.self) { try AuthorizationHeader(parsing: header) }
    }

    @Test("A MAC-token header survives build and parse, and its digest checks only with the right secret")
    func tokenHeader() throws {
        let secret = Bytes.random(count: 16)
        let header = TokenHeader.make(tokenId: "token-1", tokenSecret: secret, timestamp: 1_700_000_000_123)
        let parsed = try TokenHeader(parsing: header.value)
        #expect(parsed == header)
        #expect(parsed.isDigestValid(tokenSecret: secret))
        #expect(!parsed.isDigestValid(tokenSecret: Bytes.random(count: 16)))
        var otherTime = parsed
        otherTime.timestamp += 1
        #expect(!otherTime.isDigestValid(tokenSecret: secret))
        let expected = TokenHeader.digest(tokenSecret: secret, nonce: header.nonce, timestamp: 1_700_000_000_123)
        #expect(parsed.digest == expected)
    }

    @Test("Malformed MAC-token headers are rejected")
    func malformedToken() throws {
        let good = TokenHeader.make(tokenId: "t", tokenSecret: Bytes.random(count: 16), timestamp: 1).value
        for bad in [
            good.replacingOccurrences(of: "timestamp=\"1\"", with: "timestamp=\"-1\""),
            good.replacingOccurrences(of: "version=\"3.3\"", with: "version=\"3.2\""),
            good.replacingOccurrences(of: ", token_id=\"t\"", with: ""),
            good + ", nonce=\"AAAAAAAAAAAAAAAAAAAAAA==\"",
        ] {
            #expect(throws: AssentCryptoError.self) { try TokenHeader(parsing: bad) }
        }
    }

    @Test("An encryption header carries the activation id only in activation scope")
    func encryptionHeader() throws {
        let application = EncryptionHeader(applicationKey: Self.applicationKey)
        #expect(application.value == "PowerAuth version=\"3.3\", application_key=\"\(Self.applicationKey)\"")
        #expect(try EncryptionHeader(parsing: application.value) == application)
        let activation = EncryptionHeader(applicationKey: Self.applicationKey, activationId: "a-1")
        #expect(try EncryptionHeader(parsing: activation.value).activationId == "a-1")
        #expect(throws: AssentCryptoError.self) {
            try EncryptionHeader(parsing: "PowerAuth version=\"3.3\", application_key=\"short\"")
        }
    }
}
