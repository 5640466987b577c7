import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// `/account` as a person uses it, in headless Chromium with the virtual authenticator: opening it asks for a sign-in
/// with two factors and comes back; a passkey added there signs in; it is renamed and removed; new backup codes are
/// shown once and the old ones stop working; the last second factor cannot be removed; a remembered browser is
/// forgotten; "I lost this phone" blocks the SDK's activation, cancels its waiting operation and drops its push
/// registration; the password changes.
@Suite("The account page in a real browser", .serialized)
struct AccountPageTests {
    @Test(
        "Sign in to /account, add and remove a passkey, backup codes, browsers, a lost phone, the password",
        arguments: Backend.all)
    func account(_ backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, http, client, _ in
            let tfa = TFAClient(server: server, client: http)
            try await tfa.createAccount("alice")
            let (uri, signedIn) = try await tfa.registerTOTP("alice", remember: true)
            let oldCodes = try await tfa.post(
                "/api/tfa/backup/generate", BackupCodeGenerateRequest(loginToken: signedIn.loginToken)
            ).decode(BackupCodeList.self).codes
            try await PushService(client: client).registerForPush(token: "0a1b2c3d", platform: .fcm)
            let activationId = try #require(await client.registrationId)
            let waiting = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let port = try #require(http.base.port)
            let base = "http://localhost:\(port)"

            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("account-\(backend)"))
            defer { Task { await browser.quit() } }
            let authenticator = try await browser.addVirtualAuthenticator()

            // Opening the page signs in first, with two factors, and comes back.
            try await browser.open("\(base)/account")
            try await browser.expectText("h1", "Sign in")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.click("#provider-totp")
            server.clock.advance(by: 30)
            try await browser.type("#code", try await Oathtool.code(uri: uri, at: server.environment.now()))
            try await browser.click("#verify")
            try await browser.expectText("h1", "Your account's security")
            try await browser.expectText("#backup-left", "10 of 10 unused")
            try await browser.screenshot("01-account")
            try await browser.expectPhoneLayout("01-account-phone")
            try await browser.resize(Browser.desktop)

            // A passkey added here, then renamed.
            try await browser.type("#name", "Laptop")
            try await browser.click("#passkey-start")
            try await browser.expectText("#notice", "Passkey added.")
            let passkey = try #require(
                try await server.store.passkeys(applicationId: server.application.id, userId: "alice").first)
            #expect(try await browser.virtualCredentials(authenticator).count == 1)
            try await browser.type("#rename-\(passkey.factorId)", "Work laptop")
            try await browser.click("#rename-\(passkey.factorId) + button")
            try await browser.expectText("#notice", "Passkey renamed.")
            try await browser.expectText("#passkeys .item-name", "Work laptop")

            // New backup codes, shown once; the old ones stop working.
            try await browser.click("#backup-codes")
            try await browser.expectText("h1", "Your backup codes")
            let shown = try await browser.text("#codes").split(separator: "\n").map(String.init)
            #expect(shown.count == 10 && Set(shown).isDisjoint(with: oldCodes))
            try await browser.screenshot("02-backup-codes")
            #expect(try await BackupCodeTests.signIn(tfa, shown[0]).remaining == 9)
            let old = try await tfa.interruption("alice")
            let assertion = try await tfa.start(old.regToken, .verify, provider: .backup)
            #expect(
                try await tfa.post(
                    "/api/tfa/backup/verify", BackupCodeVerifyRequest(assertion: assertion, code: oldCodes[1])
                ).code == "INVALID_CODE")
            try await browser.click("#done")

            // The remembered browser (from the TOTP registration) is forgotten.
            let device = try #require(
                try await tfa.server.store.rememberedDevices(
                    applicationId: server.application.id, userId: "alice"
                ).first)
            try await browser.click("#revoke-\(device.id)")
            try await browser.expectText("#notice", "That browser will ask for a second factor again.")
            #expect(try await server.store.rememberedDevice(id: device.id)?.revokedAt != nil)

            // The phone is lost: blocked, its waiting operation canceled, its push registration gone.
            try await browser.click("#lost-\(activationId)")
            try await browser.expectText("#notice", containing: "is blocked")
            try await browser.screenshot("03-phone-lost")
            #expect(try await client.status().state == .blocked)
            let canceled = try await server.operatorCall(
                http, "GET", "/api/v1/operations/\(waiting.id)", as: OperationInfo.self)
            #expect(canceled.status == .canceled)
            #expect(try await server.store.pushRegistration(activationId: activationId) == nil)
            let audit = try await server.store.auditEvents(AuditFilter(), limit: 200)
            #expect(audit.contains { $0.type == "activation.lost" && $0.actor == "user" })

            // The authenticator app is the last factor besides the passkey: the passkey goes, the app stays.
            try await browser.click("#remove-\(passkey.factorId)")
            try await browser.expectText("#notice", "Removed.")
            let totp = try #require(
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice").first {
                    $0.provider == .totp
                })
            try await browser.click("#remove-\(totp.id)")
            try await browser.expectText(".message", containing: "last second factor")

            // The password changes (a wrong current one is refused).
            try await browser.type("#current", "not the password")
            try await browser.type("#new", "a new horse battery")
            try await browser.type("#confirm", "a new horse battery")
            try await browser.click("#change-password")
            try await browser.expectText(".message", "The current password is wrong.")
            try await browser.type("#current", "correct horse battery")
            try await browser.type("#new", "a new horse battery")
            try await browser.type("#confirm", "a new horse battery")
            try await browser.click("#change-password")
            try await browser.expectText("#notice", "Password changed.")
            #expect(try await tfa.login("alice", password: "a new horse battery").status == 403)
            #expect(try await tfa.login("alice").code == "INVALID_LOGIN")
        }
    }
}
