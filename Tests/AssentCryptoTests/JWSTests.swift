import AssentCrypto
import Foundation
import Testing

@Suite("Compact JWS for temporary keys")
struct JWSTests {
    @Test("RFC 7515 A.1: the HS256 example verifies with its published key")
    func rfc7515HS256Example() throws {
        // RFC 7515 Appendix A.1 (the key is the JWK "k" value, Base64URL).
        let key = try Base64URL.decode(
            "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
        let token =
            "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        let payload = try CompactJWS.verify(token, with: .hs256(key))
        #expect(String(decoding: payload, as: UTF8.self).contains(#""iss":"joe""#))
        #expect(throws: AssentCryptoError.self) { try CompactJWS.verify(token, with: .hs256(Data(count: 16))) }
    }

    @Test("HS256 and ES256 tokens round-trip and refuse the other algorithm, other keys and tampering")
    func roundTrips() throws {
        let payload = Data(#"{"challenge":"abc"}"#.utf8)
        let secret = Bytes.random(count: 16)
        let hs = try CompactJWS.sign(payload: payload, with: .hs256(secret))
        #expect(try CompactJWS.verify(hs, with: .hs256(secret)) == payload)
        let server = ECPrivateKey()
        let es = try CompactJWS.sign(payload: payload, with: .es256(server))
        #expect(try Base64URL.decode(String(es.split(separator: ".")[2])).count == 64)
        #expect(try CompactJWS.verify(es, with: .es256(server.publicKey)) == payload)

        #expect(throws: AssentCryptoError.self) { try CompactJWS.verify(es, with: .hs256(secret)) }
        #expect(throws: AssentCryptoError.self) { try CompactJWS.verify(es, with: .es256(ECPrivateKey().publicKey)) }
        let parts = hs.split(separator: ".")
        let forged = "\(parts[0]).\(Base64URL.encode(Data(#"{"challenge":"abd"}"#.utf8))).\(parts[2])"
        #expect(throws: AssentCryptoError.self) { try CompactJWS.verify(forged, with: .hs256(secret)) }
        let none = "\(Base64URL.encode(Data(#"{"alg":"none"}"#.utf8))).\(parts[1])."
        #expect(throws: AssentCryptoError.self) { try CompactJWS.verify(none, with: .hs256(secret)) }
        #expect(throws: AssentCryptoError.self) { try CompactJWS.verify("a.b", with: .hs256(secret)) }
    }
}
