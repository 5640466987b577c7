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
    /// Opens `/account` on `base`, which signs alice in first (password and the TOTP of `totp`) and comes back.
    static func openAccount(_ browser: Browser, base: String, server: TestServer, totp uri: String) async throws {
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
    }

    @Test(
        "Sign in to /account, add and remove a passkey, backup codes, browsers, a lost phone, the password",
        arguments: Backend.all)
    func account(_ backend: Backend) async throws {
        let smtp = try await SMTPTestServer(mode: .starttls)
        var settings = TFASettings()
        settings.mail = smtp.settings()
        try await SDKClients.withActivatedClient(backend, tfa: settings) { server, http, client, _ in
            let tfa = TFAClient(server: server, client: http)
            try await tfa.createAccount("alice")
            let (uri, signedIn) = try await tfa.registerTOTP("alice", remember: true)
            @Sendable func addEmail() async throws -> TFAFactorInfo {
                try await server.operatorCall(
                    http, "POST", "/api/v1/tfa/accounts/alice/emails",
                    body: try OperatorJSON.encoder().encode(["email": "alice@bank.example"]), as: TFAFactorInfo.self)
            }
            let email = try await addEmail()
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
            try await Self.openAccount(browser, base: base, server: server, totp: uri)
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

            // New backup codes ask first, naming how many unused codes stop working; going back keeps them.
            try await browser.click("#backup-codes")
            try await browser.expectText("h1", "New backup codes")
            try await browser.expectText(".confirm p", containing: "Your 10 unused backup codes stop working")
            try await browser.screenshot("02-backup-codes-question")
            try await browser.click("#back")
            try await browser.expectText("#backup-left", "10 of 10 unused")
            // Asked and confirmed: shown once; the old ones stop working.
            try await browser.click("#backup-codes")
            try await browser.expectText("h1", "New backup codes")
            try await browser.click("#confirm")
            try await browser.expectText("h1", "Your backup codes")
            let shown = try await browser.text("#codes").split(separator: "\n").map(String.init)
            #expect(shown.count == 10 && Set(shown).isDisjoint(with: oldCodes))
            try await browser.screenshot("02-backup-codes")
            // On a phone each code stays on one line.
            try await browser.resize(Browser.phone)
            #expect(try await browser.brokenGroups("#codes code") == 0)
            #expect(try await browser.sidewaysOverflow() == 0)
            try await browser.screenshot("02-backup-codes-phone")
            try await browser.resize(Browser.desktop)
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

            // "I lost this phone" asks first, naming the phone; confirmed, it is blocked, its waiting operation
            // canceled, its push registration gone.
            let phoneName = try await browser.text("#phones .item-name")
            try await browser.click("#lost-\(activationId)")
            try await browser.expectText("h1", "Block a phone")
            try await browser.expectText("#question", "Block \(phoneName)?")
            try await browser.screenshot("03-phone-lost-question")
            #expect(try await client.status().state == .active)
            try await browser.click("#confirm")
            try await browser.expectText("#notice", containing: "is blocked")
            try await browser.screenshot("03-phone-lost")
            #expect(try await client.status().state == .blocked)
            let canceled = try await server.operatorCall(
                http, "GET", "/api/v1/operations/\(waiting.id)", as: OperationInfo.self)
            #expect(canceled.status == .canceled)
            #expect(try await server.store.pushRegistration(activationId: activationId) == nil)
            let audit = try await server.store.auditEvents(AuditFilter(), limit: 200)
            #expect(audit.contains { $0.type == "activation.lost" && $0.actor == "user" })

            // A new phone: its activation QR code on the page, read off the screen by zbarimg, activates `assent
            // token` (committed at once), which approves the next push sign-in.
            try await browser.click("#new-phone")
            try await browser.expectText("#notice", containing: "Scan the QR code")
            // The code is right below the sentence, in the window without scrolling.
            let top = try await browser.execute(
                "return document.querySelector('#new-phone-qr').getBoundingClientRect().bottom;")
            let bottom = (top as? Double) ?? (top as? Int).map(Double.init) ?? .infinity
            #expect(bottom < Double(Browser.desktop.height) / 2, "the QR code ends \(bottom) px down")
            // Until the new phone has scanned it, sign-ins do not offer approval on a phone (it would wait forever).
            #expect(!(try await tfa.interruption("alice").activeProviders.contains(TFAProviderInfo(name: .push))))
            try await browser.expectText("#factors", containing: "not yet: it works once a phone has scanned")
            let shot = try await browser.screenshot(of: "#new-phone-qr", "04-new-phone-qr")
            try await browser.screenshot("04-new-phone")
            let scanned = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            #expect(scanned.hasPrefix(try await browser.text("#new-phone-code") + "#"))
            // The new phone is `assent token` (the CLI token, built on the SDK).
            let directory = SDKClients.directory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let profile = ["--profile", directory.path]
            let activated = try await CLITests.run(
                ["token", "activate", "--server", http.base.absoluteString, "--config", try server.configuration.text]
                    + [scanned, "--pin-stdin"] + profile, input: "2468\n")
            #expect(activated.status == 0, "\(activated.errors)")
            let login = try await tfa.interruption("alice")
            #expect(login.activeProviders.contains(TFAProviderInfo(name: .push)))
            let pushing = try await tfa.start(login.regToken, .verify, provider: .push)
            let sent = try await tfa.post("/api/tfa/push/send", TFAPushSendRequest(assertion: pushing))
                .decode(TFAPushSent.self)
            let approvedOnPhone = try await CLITests.run(
                ["token", "approve", sent.operationId, "--pin-stdin", "--number", "\(try #require(sent.number))"]
                    + profile, input: "2468\n")
            #expect(approvedOnPhone.status == 0, "\(approvedOnPhone.errors)")
            let approved = try await tfa.post("/api/tfa/push/verify", TFAAssertionRequest(assertion: pushing))
                .decode(TFAPushStatus.self)
            #expect(approved.status == "APPROVED")
            try await browser.open("\(base)/account")
            #expect(!(try await browser.exists("#new-phone-qr")))

            // The passkey goes; without the e-mail address (the operator's) and the new phone's approvals, the
            // authenticator app is the last second factor besides backup codes, and stays.
            try await browser.click("#remove-\(passkey.factorId)")
            try await browser.expectText("#notice", "Removed.")
            _ = try await smtp.wait(for: 6)
            let removed = try await http.send(
                "DELETE", "/api/v1/tfa/accounts/alice/factors/\(email.id)",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(removed.status == 204)
            let pushFactor = try #require(
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice").first {
                    $0.provider == .push
                })
            try await browser.clickLoadingPage("#remove-\(pushFactor.id)")
            try await browser.expectText("#notice", "Removed.")
            let totp = try #require(
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "alice").first {
                    $0.provider == .totp
                })
            try await browser.click("#remove-\(totp.id)")
            try await browser.expectText(".message", containing: "last second factor")
            _ = try await addEmail()

            // The person chooses German (over the browser's English): the page, its refusals and the mail follow.
            #expect(try await browser.attribute("#language option[value=''][selected]", "value") == "")
            _ = try await browser.execute("document.getElementById('language').value = 'de'")
            try await browser.clickLoadingPage("#save-language")
            try await browser.expectText("#notice", "Sprache gespeichert.")
            try await browser.expectText("h1", "Sicherheit Ihres Kontos")
            #expect(try await browser.attribute("html", "lang") == "de")
            // Support sees it.
            #expect(
                try await server.operatorCall(http, "GET", "/api/v1/tfa/accounts/alice", as: TFAAccountInfo.self)
                    .language == "de")

            // The password changes (a wrong current one is refused).
            try await browser.type("#current", "not the password")
            try await browser.type("#new", "a new horse battery")
            try await browser.type("#confirm", "a new horse battery")
            try await browser.click("#change-password")
            try await browser.expectText(".message", "Das aktuelle Passwort ist falsch.")
            try await browser.type("#current", "correct horse battery")
            try await browser.type("#new", "a new horse battery")
            try await browser.type("#confirm", "a new horse battery")
            try await browser.click("#change-password")
            try await browser.expectText("#notice", "Passwort geändert: Sie sind überall sonst abgemeldet.")
            // Back to the browser's choice.
            #expect(try await browser.attribute("#language option[value='de'][selected]", "value") == "de")
            _ = try await browser.execute("document.getElementById('language').value = ''")
            try await browser.clickLoadingPage("#save-language")
            try await browser.expectText("h1", "Your account's security")
            #expect(try await tfa.login("alice", password: "a new horse battery").status == 403)
            #expect(try await tfa.login("alice").code == "INVALID_LOGIN")

            // Every change was announced to the account's address, through the mail relay (while it had one: the
            // approvals' removal went to nobody).
            let mails = try await smtp.wait(for: 7)
            #expect(mails.allSatisfy { $0.to == ["alice@bank.example"] })
            let subjects = Set(
                mails.map { $0.subject.replacingOccurrences(of: "\(server.application.name): ", with: "") })
            #expect(
                subjects == [
                    "A passkey was added", "New backup codes", "A remembered browser was forgotten",
                    "Your phone was blocked", "A new phone is being added", "A second factor was removed",
                    "Ihr Passwort wurde geändert",
                ], "\(subjects)")
            #expect(mails.contains { $0.body.contains("A passkey named “Laptop” was added — on your") })
            #expect(
                mails.contains {
                    $0.body.hasPrefix("Hallo alice,")
                        && $0.body.contains("Ihr Passwort wurde geändert — in Ihrem Konto")
                }, "\(mails.map(\.body))")
        }
    }
}
