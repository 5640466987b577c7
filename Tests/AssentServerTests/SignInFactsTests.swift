import AssentCrypto
import Foundation
import Testing

@testable import AssentServer

@Suite("Sign-in facts: what a session's sign-in says after a step-up, as pure values")
struct SignInFactsTests {
    /// The facts of a login token with `claims` (the facts read the token's claims only; its signature was checked
    /// where it was made).
    static func facts(_ claims: [String: Any], at now: Millis) throws -> SignInFacts {
        let payload = try JSONSerialization.data(withJSONObject: claims)
        return SignInFacts(loginToken: "e30.\(Base64URL.encode(payload)).c2ln", userId: "alice", at: now)
    }

    @Test("A passkey sign-in stepped up with the phone: no pwd, the passkey's time, the phone's assurance")
    func passkeyThenPhone() throws {
        let passkey = try Self.facts(["tfa": "passkey", "amr": ["hwk", "user", "mfa"]], at: 1_000)
        #expect(passkey.amr == ["hwk", "user", "mfa"] && passkey.assurance == .secondFactor)
        // The step-up's login token says pwd (its flow's first factor), but no password was asked.
        let push = try Self.facts(["tfa": "push", "amr": ["pwd", "hwk", "mfa"]], at: 9_000)
        let stepped = push.steppedUp(from: passkey)
        #expect(!stepped.amr.contains("pwd"), "\(stepped.amr)")
        #expect(stepped.amr == ["hwk", "user", "mfa"])
        #expect(stepped.authTime == 1_000 && stepped.sessionId == passkey.sessionId)
        #expect(stepped.assurance == .phone)
    }

    @Test("A password sign-in stepped up with TOTP: pwd and otp, mfa, the password's time")
    func passwordThenCode() throws {
        let password = try Self.facts(["amr": ["pwd"]], at: 2_000)
        #expect(password.amr == ["pwd"] && password.assurance == .password)
        let code = try Self.facts(["tfa": "totp", "amr": ["pwd", "otp", "mfa"]], at: 5_000)
        let stepped = code.steppedUp(from: password)
        #expect(stepped.amr == ["pwd", "otp", "mfa"] && stepped.authTime == 2_000)
        #expect(stepped.assurance == .secondFactor)
        // A step-up never lowers what the session had.
        let weaker = try Self.facts(["tfa": "totp", "amr": ["pwd", "otp", "mfa"]], at: 6_000)
        let phone = try Self.facts(["tfa": "push", "amr": ["pwd", "hwk", "mfa"]], at: 3_000)
        #expect(weaker.steppedUp(from: phone).assurance == .phone)
        #expect(weaker.steppedUp(from: phone).amr == ["pwd", "hwk", "otp", "mfa"])
    }
}
