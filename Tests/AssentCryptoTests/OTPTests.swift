import AssentCrypto
import Foundation
import Testing

@Suite("OTP generators, Base32 and key URIs")
struct OTPTests {
    @Test("A key URI survives build and parse for TOTP and HOTP")
    func keyURIRoundTrip() throws {
        let totp = OTPKeyURI(
            issuer: "Assent Bank", account: "alice@example.com", secret: Bytes.random(count: 20), algorithm: .sha256,
            digits: 8, period: 60)
        #expect(totp.text.hasPrefix("otpauth://totp/Assent%20Bank:alice@example.com?secret="))
        #expect(try OTPKeyURI(parsing: totp.text) == totp)
        let hotp = OTPKeyURI(kind: .hotp, issuer: nil, account: "bob", secret: Bytes.random(count: 10), counter: 42)
        #expect(try OTPKeyURI(parsing: hotp.text) == hotp)
    }

    @Test("Each kind reads only its own parameter: a TOTP key's counter and an HOTP key's period are ignored")
    func keyURIForeignParameters() throws {
        let totp = try OTPKeyURI(parsing: "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&counter=5&period=60")
        #expect(totp.counter == 0 && totp.period == 60)
        #expect(try OTPKeyURI(parsing: totp.text) == totp)
        let hotp = try OTPKeyURI(parsing: "otpauth://hotp/a?secret=JBSWY3DPEHPK3PXP&counter=5&period=x")
        #expect(hotp.counter == 5 && hotp.period == 30)
        #expect(try OTPKeyURI(parsing: hotp.text) == hotp)
    }

    @Test("The de-facto standard example parses with its defaults")
    func keyURIExample() throws {
        let uri = try OTPKeyURI(
            parsing: "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example")
        #expect(uri.issuer == "Example")
        #expect(uri.account == "alice@google.com")
        #expect(uri.secret == Data("Hello!\u{DE}\u{AD}\u{BE}\u{EF}".unicodeScalars.map { UInt8($0.value) }))
        #expect(uri.algorithm == .sha1 && uri.digits == 6 && uri.period == 30)
    }

    @Test(
        "Malformed key URIs are rejected",
        arguments: [
            "https://totp/a?secret=JBSWY3DPEHPK3PXP", "otpauth://motp/a?secret=JBSWY3DPEHPK3PXP",
            "otpauth://totp/a", "otpauth://totp/a?secret=JBSWY3DP!", "otpauth://totp/?secret=JBSWY3DPEHPK3PXP",
            "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&digits=9",
            "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&algorithm=MD5",
            "otpauth://totp/A:b?secret=JBSWY3DPEHPK3PXP&issuer=B", "otpauth://hotp/a?secret=JBSWY3DPEHPK3PXP",
            "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&secret=JBSWY3DPEHPK3PXP", "otpauth://totp/a?secret=JBSWY3DP",
            "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&issuer=B:C",
        ])
    func malformedKeyURI(text: String) {
        let error = #expect(throws: AssentCryptoError.self) { try OTPKeyURI(parsing: text) }
        #expect(error?.code == .invalidKeyURI || error?.code == .invalidOTPParameters)
    }

    @Test("Base32 rejects characters outside the alphabet and non-canonical endings")
    func base32() throws {
        #expect(try Base32.decode("MZXW6YTBOI======") == Data("foobar".utf8))
        #expect(Base32.encode(Data("foobar".utf8), padding: true) == "MZXW6YTBOI======")
        #expect(try Base32.decode("mzxw6ytboi", caseInsensitive: true) == Data("foobar".utf8))
        for bad in ["MZXW6YTBO1", "mzxw6ytboi", "MZXW6YTBOJ", "M"] {
            #expect(throws: AssentCryptoError.self) { try Base32.decode(bad) }
        }
    }

    @Test("Generator parameters out of range are typed errors")
    func parameters() {
        #expect(throws: AssentCryptoError.self) { try HOTP(secret: Data(count: 20), digits: 5) }
        #expect(throws: AssentCryptoError.self) { try HOTP(secret: Data(count: 9)) }
        #expect(throws: AssentCryptoError.self) { try TOTP(secret: Data(count: 20), period: 0) }
    }

    @Test("TOTP validation accepts one step back and ahead by default and reports the step")
    func window() throws {
        let totp = try TOTP(secret: Bytes.random(count: 20))
        let now: UInt64 = 1_800_000_015
        let step = totp.timeStep(at: now)
        #expect(totp.validate(totp.code(at: now - 30), at: now) == step - 1)
        #expect(totp.validate(totp.code(at: now + 30), at: now) == step + 1)
        #expect(totp.validate(totp.code(at: now - 60), at: now) == nil)
        #expect(totp.validate("12345", at: now) == nil)
        #expect(totp.validate(totp.code(at: 10), at: 10, past: 5) == 0)
    }
}
