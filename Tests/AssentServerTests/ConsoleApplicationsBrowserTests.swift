import AssentModel
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The console with several applications, in headless Chromium: the switcher, every list of the chosen application
/// only, another application's activation not found, the application page (versions created and unsupported, push
/// credentials), a new application, and the operators page. Screenshots in
/// `.build/test-artefacts/console-applications/<database>/`.
@Suite("Console with several applications in a real browser", .serialized)
struct ConsoleApplicationsBrowserTests {
    @Test(
        "Switch applications: users, activations and versions are each application's; operators are created with a set-up link",
        arguments: Backend.all)
    func applications(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let business = try await server.createApplication(http)
            let q = "?application=\(business.applicationId)"
            let carol = try await server.createActivation(http, userId: "carol")
            let dave = try await server.operatorCall(
                http, "POST", "/api/v1/activations\(q)",
                body: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: "dave", commitMode: "auto")),
                as: CreateActivationResponse.self)

            let browser = try await Browser(
                artefacts: LoginPageBrowserTests.artefacts("console-applications/\(backend.rawValue)"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            try await browser.signInToConsole(base, apiKey: server.apiKey)

            // The first application's users; the switcher offers both.
            try await browser.open("\(base)/console/users")
            try await browser.expectText("#users", containing: "carol")
            #expect(!(try await browser.text("#users")).contains("dave"))
            #expect(try await browser.text("#application-choice option[selected]") == "default")
            try await browser.screenshot("01-users-first")

            // Switched: the same page lists the second application's users only.
            try await browser.click("#application-choice option[value='\(business.applicationId)']")
            try await browser.click("#switch-application")
            try await browser.expectText("#notice", "The console now works with Business.")
            try await browser.expectText("h1", "Users")
            try await browser.expectText("#users", containing: "dave")
            #expect(!(try await browser.text("#users")).contains("carol"))
            try await browser.screenshot("02-users-second")
            // The first application's activation is not found here; the second's is.
            try await browser.open("\(base)/console/activations/\(carol.activationId)")
            try await browser.expectText("h1", "Not possible")
            try await browser.open("\(base)/console/activations/\(dave.activationId)")
            try await browser.expectText("#activation-id", dave.activationId)

            // The application page: keys, versions, push credentials.
            try await browser.open("\(base)/console/application")
            try await browser.expectText("h1", "Application Business")
            #expect(try await browser.text("#sdk-configuration") == business.sdkConfiguration)
            try await browser.expectText("#push-credentials", containing: "none: its iOS devices get no push")
            try await browser.type("#version-name", "2026.11")
            try await browser.click("#create-version")
            try await browser.expectText("#notice", "Version 2026.11 created, supported.")
            try await browser.click("tr[data-version='2026.11'] button")
            try await browser.expectText("h1", "Stop serving a version")
            try await browser.expectText("#question", "Stop serving the devices of Business version 2026.11?")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", "Version 2026.11 is no longer supported.")
            try await browser.expectText("tr[data-version='2026.11'] .status", "unsupported")
            try await browser.screenshot("03-application")
            try await browser.resize((390, 844))
            try await browser.screenshot("03-application-phone")
            // On a phone the page does not scroll sideways (a wide table scrolls inside itself).
            let overflow = try await browser.sidewaysOverflow()
            #expect(overflow == 0, "the page is \(overflow) px wider than the phone")
            try await browser.resize((1280, 900))
            let versions = try await server.operatorCall(
                http, "GET", "/api/v1/applications/\(business.applicationId)/versions",
                as: ApplicationVersionList.self)
            #expect(versions.versions.map { "\($0.name):\($0.supported)" } == ["1:true", "2026.11:false"])

            // Its settings: the pages' accent colour (a too light one refused), its own webhook, its rate limits.
            let settings = "/api/v1/applications/\(business.applicationId)"
            _ = try await browser.execute("document.getElementById('accent-color').value = '#ffe066'")
            try await browser.click("#set-accent")
            try await browser.expectText(".message", containing: "contrast")
            // The refused colour stays in the form, and why is said beside the field.
            try await browser.expectText("#accent-refused", containing: "contrast")
            #expect(
                try await browser.execute("return document.getElementById('accent-color').value;") as? String
                    == "#ffe066")
            _ = try await browser.execute("document.getElementById('accent-color').value = '#0b5394'")
            try await browser.click("#set-accent")
            try await browser.expectText("#notice", "The hosted pages of Business use the accent #0b5394.")
            try await browser.expectText("#accent", "#0b5394")
            let branding = try await server.operatorCall(
                http, "GET", "\(settings)/branding", as: ApplicationBrandingInfo.self)
            #expect(branding.accentColor == "#0b5394")
            // Its pages' default language, for browsers that ask for none they are written in.
            try await browser.expectText("#default-language", containing: "English")
            _ = try await browser.execute("document.querySelector('main select#language').value = 'de'")
            try await browser.click("#set-language")
            try await browser.expectText("#notice", containing: "The hosted pages of Business speak Deutsch")
            try await browser.expectText("#default-language", containing: "Deutsch")
            #expect(
                try await server.operatorCall(http, "GET", "\(settings)/branding", as: ApplicationBrandingInfo.self)
                    .language == "de")
            try await browser.type("#webhook-url", "https://bank.example/assent-events")
            try await browser.click("#set-webhook")
            let keyNotice = try await browser.text("#notice", until: { $0.contains("signed with the key") })
            try await browser.expectText("#webhook", containing: "its own: https://bank.example/assent-events")
            let webhook = try await server.operatorCall(
                http, "GET", "\(settings)/webhook", as: ApplicationWebhookInfo.self)
            #expect(webhook.url == "https://bank.example/assent-events" && webhook.secret == nil)
            // The key was shown once, in the notice only.
            try await browser.open("\(base)/console/application")
            #expect(!(try await browser.text("main")).contains("signed with the key"))
            #expect(keyNotice.contains("shown once"))
            try await browser.type("#limit-login-user", "5/60")
            try await browser.click("#save-limits")
            try await browser.expectText("#notice", "Business has its own login-user; the server's others.")
            let limits = try await server.operatorCall(
                http, "GET", "\(settings)/rate-limits", as: ApplicationRateLimitsInfo.self)
            let loginUser = try #require(limits.limits.first { $0.name == "login-user" })
            #expect(loginUser.limit == 5 && loginUser.window == 60 && loginUser.source == "application")
            #expect(limits.limits.filter { $0.source == "application" }.count == 1)
            _ = try await browser.execute("document.getElementById('branding').scrollIntoView()")
            try await browser.screenshot("03c-application-settings")
            try await browser.resize((390, 844))
            _ = try await browser.execute("document.getElementById('rate-limits').scrollIntoView()")
            try await browser.screenshot("03d-application-settings-phone")
            let settingsOverflow = try await browser.sidewaysOverflow()
            #expect(settingsOverflow == 0, "the settings are \(settingsOverflow) px wider than the phone")
            try await browser.resize((1280, 900))
            try await browser.click("#remove-webhook")
            try await browser.expectText("h1", "Remove the webhook")
            try await browser.expectText("#question", "Remove Business's own webhook?")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", "Business has no webhook of its own now.")
            try await browser.expectText("#webhook", containing: "none")

            // A third application from the console: the console works with it at once.
            try await browser.type("#new-application", "Cards")
            try await browser.click("#create-application")
            try await browser.expectText("#notice", containing: "Application Cards created")
            try await browser.expectText("h1", "Application Cards")
            #expect(try await browser.text("#application-choice option[selected]") == "Cards")
            let all = try await server.operatorCall(http, "GET", "/api/v1/applications", as: ApplicationList.self)
            #expect(all.applications.map(\.name) == ["default", "Business", "Cards"])

            // Operators: a new auditor for Business only, with a one-time set-up link that works.
            try await browser.open("\(base)/console/operators")
            try await browser.expectText("#operators", containing: "admin")
            try await browser.type("#operator-name", "olga")
            // The form starts with the least-privileged role, never admin.
            #expect(try await browser.text("#operator-role option[selected]") == "auditor")
            try await browser.click("#operator-role option[value=auditor]")
            try await browser.click("#operator-application option[value='\(business.applicationId)']")
            try await browser.click("#create-operator")
            let notice = try await browser.text("#notice", until: { $0.contains("set-up link") })
            #expect(notice.hasPrefix("Operator olga created. Their one-time set-up link (24 hours): "))
            try await browser.expectText("tr[data-operator=olga]", containing: "set-up pending")
            try await browser.expectText("tr[data-operator=olga]", containing: "Business")
            try await browser.screenshot("04-operators")
            let wider = try await browser.sidewaysOverflow()
            #expect(wider == 0, "the operators page is \(wider) px wider than the window")
            let link = try #require(notice.split(separator: " ").last.map(String.init))
            let setup = try await http.send("GET", String(link.dropFirst(base.count)))
            #expect(setup.status == 200 && setup.text.contains("olga"))
            let listed = try await server.operatorCall(http, "GET", "/api/v1/operators", as: OperatorList.self)
            let olga = try #require(listed.operators.first { $0.name == "olga" })
            #expect(olga.role == "auditor" && olga.applications == [business.applicationId])
            // Disabling and a new link ask first, naming the operator; the new link is shown to whoever made it.
            try await browser.click("tr[data-operator=olga] form[action$='/disable'] button")
            try await browser.expectText("#question", "Disable olga (auditor)?")
            try await browser.click("#back")
            try await browser.expectText("tr[data-operator=olga]", containing: "set-up pending")
            try await browser.click("tr[data-operator=olga] form[action$='/reset'] button")
            try await browser.expectText("#question", "Give olga (auditor) a new set-up link?")
            try await browser.click("#confirm")
            let newLink = try await browser.text("#notice", until: { $0.contains("set-up link") })
            #expect(newLink.hasPrefix("New one-time set-up link for olga (24 hours): \(base)/console/setup?t="))
            #expect(!newLink.hasSuffix(link))

            // The audit log of a key for every application: every application's events, each named, and the chain.
            try await browser.open("\(base)/console/audit?type=activation.created")
            try await browser.expectText("#events", containing: "\(dave.activationId.prefix(8))…")
            #expect(try await browser.exists("#events a[data-activation='\(dave.activationId)']"))
            #expect(try await browser.exists("#events a[data-activation='\(carol.activationId)']"))
            try await browser.expectText(
                "tr[data-id] td.event-application", containing: "Business")
            #expect(try await browser.exists("#audit-key"))
            try await browser.screenshot("05-audit-every-application")

            // A break-glass key limited to Business works with Business only: no choice, no other's activation.
            let limited = try await server.operatorCall(
                http, "POST", "/api/v1/api-keys",
                body: try OperatorJSON.encoder().encode(
                    CreateAPIKeyRequest(name: "business-desk", scopes: nil, applications: [business.applicationId])),
                as: CreateAPIKeyResponse.self)
            try await browser.signOutOfConsole()
            try await browser.type("#apiKey", limited.apiKey)
            try await browser.click("#submit")
            try await browser.expectText("h1", "Dashboard")
            #expect(try await browser.exists("#application-choice") == false)
            try await browser.open("\(base)/console/users")
            try await browser.expectText("#users", containing: "dave")
            try await browser.open("\(base)/console/activations/\(carol.activationId)")
            try await browser.expectText("h1", "Not possible")
            try await browser.open("\(base)/console/application")
            try await browser.expectText("h1", "Application Business")
            #expect(try await browser.exists("#create-application") == false)
            // Its audit log: Business's events only, and not the chain, which links every application's.
            try await browser.open("\(base)/console/audit")
            try await browser.expectText("#chain", containing: "These are the events of Business.")
            try await browser.expectText("#events", containing: "\(dave.activationId.prefix(8))…")
            let events = try await browser.text("#events")
            #expect(!events.contains(carol.activationId.prefix(8)) && !events.contains("api_key.created"), "\(events)")
            #expect(try await !browser.exists("#events a[data-activation='\(carol.activationId)']"))
            #expect(try await browser.exists("#audit-key") == false)
            try await browser.screenshot("06-audit-one-application")
        }
    }

    @Test(
        "Support helps someone locked out of the sign-in: a login-only account is listed; its factors, browsers and wrong passwords shown, unlocked, removed, forgotten"
    )
    func loginOnlyAccount() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let tfa = TFAClient(server: server, client: http)
            try await tfa.createAccount("lena")
            _ = try await tfa.registerTOTP("lena", remember: true)
            // Three wrong passwords from somewhere.
            for _ in 1...3 { #expect(try await tfa.login("lena", password: "not her password").status == 401) }
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("console-login-only"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            try await browser.signInToConsole(base, apiKey: server.apiKey)

            // Listed although she has no activation.
            try await browser.open("\(base)/console/users")
            try await browser.expectText("#users", containing: "lena")
            try await browser.click("#users a")
            try await browser.expectText("h1", "lena")
            try await browser.expectText("#login-failures", containing: "3 wrong passwords from any address until")
            try await browser.expectText("#login-factors", containing: "Authenticator app")
            try await browser.expectText("#login-browsers", containing: "Remembered")
            try await browser.screenshot("01-login-only")
            #expect(try await browser.sidewaysOverflow() == 0)

            // Unlocked: the counters are gone and the audit names who did it.
            try await browser.click("#unlock-account")
            try await browser.expectText("#notice", "lena's wrong passwords are forgotten: they can sign in at once.")
            #expect(try await !browser.exists("#login-failures"))
            let unlocked = try await server.store.auditEvents(AuditFilter(typePrefix: "tfa.account_unlocked"), limit: 5)
            #expect(unlocked.first?.userId == "lena" && unlocked.first?.actor == "key:bootstrap")

            // The remembered browser forgotten; the authenticator app removed after a question naming it.
            let device = try #require(
                try await server.store.rememberedDevices(applicationId: server.application.id, userId: "lena").first)
            try await browser.click("#forget-browser-\(device.id)")
            try await browser.expectText("#notice", "That browser of lena asks for a second factor again.")
            #expect(try await server.store.rememberedDevice(id: device.id)?.revokedAt != nil)
            let factor = try #require(
                try await server.store.tfaFactors(applicationId: server.application.id, userId: "lena").first {
                    $0.provider == .totp
                })
            try await browser.click("#remove-factor-\(factor.id)")
            try await browser.expectText("#question", "Remove Authenticator app from lena's account?")
            try await browser.screenshot("02-remove-factor")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", "The factor is removed from lena's account.")
            try await browser.expectText("#login-factors", "")
            let removed = try await server.store.auditEvents(AuditFilter(typePrefix: "tfa.factor_removed"), limit: 5)
            #expect(removed.first?.userId == "lena" && removed.first?.actor == "key:bootstrap")
            try await browser.resize(Browser.phone)
            #expect(try await browser.sidewaysOverflow() == 0)
            try await browser.screenshot("03-phone")
        }
    }

    @Test("A user's login account on the console: sign out everywhere and disable ask first, naming the person")
    func loginAccount() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            _ = try await server.operatorCall(
                http, "POST", "/api/v1/tfa/accounts",
                body: try OperatorJSON.encoder().encode(
                    CreateTFAAccountRequest(userId: "alice", password: "correct horse battery", name: "Alice Novak")),
                as: TFAAccountInfo.self)
            _ = try await server.createActivation(http, userId: "alice")
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("console-login-account"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            try await browser.signInToConsole(base, apiKey: server.apiKey)

            try await browser.open("\(base)/console/users/alice")
            try await browser.expectText("#login-account-state", "enabled")
            try await browser.expectText("#login-account", containing: "Alice Novak")
            try await browser.screenshot("01-user")
            try await browser.click("#sign-out-everywhere")
            try await browser.expectText("#question", "Sign alice out everywhere?")
            try await browser.screenshot("02-sign-out-confirm")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", containing: "alice is signed out everywhere")
            let revoked = try await server.store.auditEvents(
                AuditFilter(typePrefix: "openid.grants_revoked"), limit: 5)
            #expect(revoked.first?.userId == "alice" && revoked.first?.actor == "key:bootstrap")

            try await browser.click("#disable-account")
            try await browser.expectText("#question", "Disable alice's login account?")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", containing: "alice's login account is disabled")
            try await browser.expectText("#login-account-state", containing: "disabled since")
            #expect(
                try await server.store.tfaAccount(applicationId: server.application.id, userId: "alice")?.disabledAt
                    != nil)
            try await browser.screenshot("03-disabled")
            try await browser.resize(Browser.phone)
            #expect(try await browser.sidewaysOverflow() == 0)
            try await browser.screenshot("04-disabled-phone")
            try await browser.click("#enable-account")
            try await browser.expectText("#notice", "alice's login account is enabled again.")
            try await browser.expectText("#login-account-state", "enabled")
            #expect(
                try await server.store.tfaAccount(applicationId: server.application.id, userId: "alice")?.disabledAt
                    == nil)
        }
    }
}
