import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// Backup codes: made with a two-factor login token, each works once (typed in any case, with or without hyphens),
/// a new set voids the old one, a sign-in with one of the last two says so; never registered as an account's first
/// factor.
@Suite("Backup codes")
struct BackupCodeTests {
    @Test(
        "Ten 60-bit codes, each once; regenerate voids the old set; remaining count; refusals", arguments: Backend.all)
    func backupCodes(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let tfa = TFAClient(server: server, client: client)
            try await tfa.createAccount("alice")
            let (_, signedIn) = try await tfa.registerTOTP("alice")

            // Not a first factor: a login that registers cannot pick them.
            try await tfa.createAccount("bob")
            let bob = try await tfa.interruption("bob")
            #expect(!bob.inactiveProviders.contains(TFAProviderInfo(name: .backup)))
            let registering = try await tfa.post(
                "/api/tfa/init", TFAInitRequest(regToken: bob.regToken, provider: .backup, mode: .register))
            #expect(registering.code == "REGISTRATION_NOT_ALLOWED")

            // Made with the two-factor login token; a forged one makes nothing.
            let forged = try await tfa.post("/api/tfa/backup/generate", BackupCodeGenerateRequest(loginToken: "x.y.z"))
            #expect(forged.status == 401)
            let list = try await tfa.post(
                "/api/tfa/backup/generate", BackupCodeGenerateRequest(loginToken: signedIn.loginToken)
            ).decode(BackupCodeList.self)
            #expect(list.codes.count == 10 && Set(list.codes).count == 10)
            for code in list.codes {
                // 12 characters of a 32-letter alphabet: 60 bits.
                #expect(code.count == 14 && code.filter { $0 != "-" }.count == 12, "\(code)")
                #expect(code.filter { $0 != "-" }.allSatisfy { "0123456789abcdefghjkmnpqrstvwxyz".contains($0) })
            }

            /// A login that verifies with `code`: the answer of `backup/verify`, and the flow to finalize.
            func use(_ code: String) async throws -> (TFAClient.Answer, String, String) {
                let interruption = try await tfa.interruption("alice")
                #expect(interruption.activeProviders.contains(TFAProviderInfo(name: .backup)))
                let assertion = try await tfa.start(interruption.regToken, .verify, provider: .backup)
                let answer = try await tfa.post(
                    "/api/tfa/backup/verify", BackupCodeVerifyRequest(assertion: assertion, code: code))
                return (answer, interruption.regToken, assertion)
            }

            let (wrong, _, _) = try await use("0000-0000-0000")
            #expect(wrong.code == "INVALID_CODE" && wrong.fields["attemptsLeft"] as? Int == 4)
            // Typed in capitals without hyphens, it is the same code.
            let (right, regToken, assertion) = try await use(
                list.codes[0].uppercased().replacingOccurrences(of: "-", with: ""))
            let proof = try right.decode(BackupCodeProofResponse.self)
            #expect(proof.remaining == 9)
            let success = try await tfa.post(
                "/api/tfa/finalize",
                TFAFinalizeRequest(regToken: regToken, assertion: assertion, providerAssertion: proof.providerAssertion)
            ).decode(TFALoginSuccess.self)
            let claims = try await tfa.verifyLoginToken(success.loginToken)
            #expect(claims.amr == ["pwd", "otp", "mfa"] && claims.tfa == "backup")
            let (again, _, _) = try await use(list.codes[0])
            #expect(again.code == "INVALID_CODE")

            // Down to the last two: the answer says how many are left.
            for code in list.codes[1...7] {
                #expect(try await use(code).0.status == 200)
            }
            let (eighth, _, _) = try await use(list.codes[8])
            #expect(try eighth.decode(BackupCodeProofResponse.self).remaining == 1)

            // A new set voids the old one.
            let renewed = try await tfa.post(
                "/api/tfa/backup/generate", BackupCodeGenerateRequest(loginToken: success.loginToken)
            ).decode(BackupCodeList.self)
            #expect(Set(renewed.codes).isDisjoint(with: list.codes))
            #expect(try await use(list.codes[9]).0.code == "INVALID_CODE")
            #expect(try await use(renewed.codes[0]).0.decode(BackupCodeProofResponse.self).remaining == 9)
            let factors = try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice")
            #expect(factors.filter { $0.provider == .backup }.count == 1)
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "tfa.backup"), limit: 50)
            #expect(audit.filter { $0.type == "tfa.backup_codes_generated" }.count == 2)
        }
    }

    @Test("On the hosted pages: a backup code instead of the authenticator app, and the warning near the end")
    func hostedPages() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let tfa = TFAClient(server: server, client: http)
            try await tfa.createAccount("alice")
            let (_, signedIn) = try await tfa.registerTOTP("alice")
            let codes = try await tfa.post(
                "/api/tfa/backup/generate", BackupCodeGenerateRequest(loginToken: signedIn.loginToken)
            ).decode(BackupCodeList.self).codes
            for code in codes[0..<8] { _ = try await Self.signIn(tfa, code) }

            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("login/backup"))
            defer { Task { await browser.quit() } }
            try await browser.open("\(http.base.absoluteString)/login")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.expectText("h1", "Confirm it is you")
            try await browser.click("#provider-backup")
            try await browser.expectText("h1", "Enter a backup code")
            try await browser.type("#code", codes[8])
            try await browser.screenshot("01-backup-code")
            try await browser.click("#verify")
            try await browser.expectText("#methods", "password and a backup code")
            try await browser.expectText("#notice", "Only 1 backup code is left: make new ones soon.")
            try await browser.screenshot("02-signed-in-one-left")
            try await browser.expectPhoneLayout("02-signed-in-one-left-phone")
        }
    }

    /// A whole API login with a backup code.
    static func signIn(_ tfa: TFAClient, _ code: String) async throws -> BackupCodeProofResponse {
        let interruption = try await tfa.interruption("alice")
        let assertion = try await tfa.start(interruption.regToken, .verify, provider: .backup)
        return try await tfa.post("/api/tfa/backup/verify", BackupCodeVerifyRequest(assertion: assertion, code: code))
            .decode(BackupCodeProofResponse.self)
    }
}
