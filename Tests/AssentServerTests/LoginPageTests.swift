import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AssentServerTesting

/// The hosted login pages as a person uses them: in headless Chromium over real HTTP, one screenshot per step kept
/// in `.build/test-artefacts/login/` (the CI log names the folder).
@Suite("Hosted login pages in a real browser", .serialized)
struct LoginPageBrowserTests {
    static func artefacts(_ test: String) -> URL {
        URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent(".build/test-artefacts/\(test)")
    }

    @Test("In Czech end to end: the pages, the refusals, the TOTP set-up and the signed-in page, from ui_locales")
    func czech() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let browser = try await Browser(artefacts: Self.artefacts("login/czech"))
            defer { Task { await browser.quit() } }
            try await TFAClient(server: server, client: http).createAccount("alice")
            _ = try await server.operatorCall(
                http, "PATCH", "/api/v1/application",
                body: try OperatorJSON.encoder().encode(UpdateApplicationRequest(name: "Example Bank")),
                as: ApplicationInfo.self)
            let base = http.base.absoluteString

            try await browser.open("\(base)/login?ui_locales=cs")
            try await browser.expectText("h1", "Přihlásit se")
            #expect(try await browser.attribute("html", "lang") == "cs")
            try await browser.expectText("label[for=userId]", "Uživatelské jméno")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "wrong password")
            try await browser.click("#submit")
            try await browser.expectText(".message", "Uživatelské jméno nebo heslo není správné.")
            try await browser.screenshot("01-wrong-password")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")

            try await browser.expectText("h1", "Nastavte druhý faktor")
            try await browser.expectText("#provider-totp", "Nastavit ověřovací aplikaci")
            try await browser.screenshot("02-choose-factor")
            try await browser.click("#provider-totp")
            try await browser.expectText("h1", "Zadejte kód z ověřovací aplikace")
            let shot = try await browser.screenshot("03-totp-qr")
            let uri = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            try await browser.expectText("label[for=code]", "Kód")
            let code = try await Oathtool.code(uri: uri, at: server.environment.now())
            try await browser.type("#code", code == "000000" ? "111111" : "000000")
            try await browser.click("#verify")
            try await browser.expectText(".message", "Kód není správný: zbývají 4 pokusy.")
            try await browser.expectPhoneLayout("04-wrong-code-phone")
            #expect(try await browser.sidewaysOverflow() == 0)
            try await browser.type("#code", code)
            try await browser.click("#verify")
            try await browser.expectText("#signed-in", "Jste přihlášeni k Example Bank jako alice.")
            try await browser.expectText("#methods", "heslo a ověřovací aplikace")
            try await browser.expectText("#logout", "Odhlásit se")
            try await browser.screenshot("05-signed-in")
            // Her account's security page speaks Czech too, dates with Czech month names.
            try await browser.click("#account")
            try await browser.expectText("h1", "Zabezpečení vašeho účtu")
            try await browser.expectText("#change-password", "Změnit heslo")
            try await browser.expectText("#factors", containing: "Ověřovací aplikace")
            try await browser.expectText("#factors", containing: "přidáno")
            try await browser.click("#backup-codes")
            try await browser.expectText("h1", "Vaše záložní kódy")
            try await browser.expectText("#done", "Uložil(a) jsem si je")
            try await browser.expectPhoneLayout("06-account-codes-phone")
        }
    }

    @Test("TOTP set up from the QR code on screen; a remembered browser skips the code until the operator revokes it")
    func totp() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let browser = try await Browser(artefacts: Self.artefacts("login/totp"))
            defer { Task { await browser.quit() } }
            try await TFAClient(server: server, client: http).createAccount("alice")
            let base = http.base.absoluteString
            // The name people see is the operator's, everywhere: the pages and the authenticator app's entry.
            let renamed = try await server.operatorCall(
                http, "PATCH", "/api/v1/application",
                body: try OperatorJSON.encoder().encode(UpdateApplicationRequest(name: "  Example Bank ")),
                as: ApplicationInfo.self)
            #expect(renamed.name == "Example Bank")

            try await browser.open("\(base)/login")
            try await browser.expectText("h1", "Sign in")
            #expect(try await browser.attribute("link[rel=icon]", "href") == "/web/assets/icon.svg")
            // On a phone's screen the card keeps a margin from the edges.
            try await browser.expectPhoneLayout("01-sign-in-phone")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "wrong password")
            try await browser.screenshot("01-sign-in")
            try await browser.click("#submit")
            try await browser.expectText(".message", "The user name or the password is wrong.")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")

            // No factor yet: the page offers what the application accepts (TOTP and push here).
            try await browser.expectText("h1", "Set up a second factor")
            #expect(try await browser.exists("#provider-push"))
            try await browser.screenshot("02-choose-factor")
            try await browser.click("#provider-totp")

            // The QR code read from the screenshot, as a phone's camera would: zbarimg, then oathtool's code.
            try await browser.element("#qr")
            let shot = try await browser.screenshot("03-totp-qr")
            let uri = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            #expect(uri.hasPrefix("otpauth://totp/Example%20Bank:alice?"), "\(uri)")
            #expect(uri.contains("issuer=Example%20Bank"), "\(uri)")
            let secret = try await browser.text("#secret").replacingOccurrences(of: " ", with: "")
            #expect(uri.contains("secret=\(secret)"))
            // On a phone the key wraps between its groups, never inside one.
            try await browser.resize(Browser.phone)
            #expect(try await browser.brokenGroups("#secret") == 0)
            try await browser.screenshot("03-totp-phone")
            try await browser.resize(Browser.desktop)

            let code = try await Oathtool.code(uri: uri, at: server.environment.now())
            try await browser.type("#code", code == "000000" ? "111111" : "000000")
            try await browser.click("#verify")
            try await browser.expectText(".message", "The code is wrong: 4 tries left.")
            try await browser.screenshot("04-wrong-code")
            try await browser.type("#code", code)
            try await browser.click("#remember")
            try await browser.click("#verify")
            try await browser.expectText("#signed-in", "You are signed in to Example Bank as alice.")
            try await browser.expectText("#methods", "password and authenticator app")
            try await browser.screenshot("05-signed-in")

            let cookies = try await browser.cookies()
            let session = try #require(cookies["__Host-assent-login"])
            #expect(session["secure"] as? Bool == true && session["httpOnly"] as? Bool == true)
            // Lax: a relying party's link to the authorization endpoint brings the single-sign-on session along.
            #expect(session["sameSite"] as? String == "Lax" && session["path"] as? String == "/")
            let device = try #require(cookies["__Host-assent-device"])
            #expect(device["secure"] as? Bool == true && device["httpOnly"] as? Bool == true)

            // Signed out and in again: the remembered browser skips the second factor.
            try await browser.signOutOfHostedPages()
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.expectText("#methods", "password and this browser, remembered")
            try await browser.screenshot("06-remembered")

            // The operator revokes the browser: the next sign-in asks for the authenticator's code again.
            let devices = try await server.operatorCall(
                http, "GET", "/api/v1/tfa/accounts/alice/devices", as: RememberedDeviceList.self)
            #expect(devices.devices.count == 1)
            for remembered in devices.devices {
                let revoked = try await http.send(
                    "DELETE", "/api/v1/tfa/devices/\(remembered.id)",
                    headers: ["Authorization": "Bearer \(server.apiKey)"])
                #expect(revoked.status == 204)
            }
            try await browser.signOutOfHostedPages()
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.expectText("h1", "Confirm it is you")
            try await browser.click("#provider-totp")
            server.clock.advance(by: 30)
            try await browser.type("#code", try await Oathtool.code(uri: uri, at: server.environment.now()))
            try await browser.click("#verify")
            try await browser.expectText("#methods", "password and authenticator app")
            try await browser.screenshot("07-verified")
            await browser.quit()
        }
    }

    @Test("Push: opt in a phone from the page; sign-ins wait until the phone approves (no click) or rejects")
    func push() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { http in
            let browser = try await Browser(artefacts: Self.artefacts("login/push"))
            defer { Task { await browser.quit() } }
            try await TFAClient(server: server, client: http).createAccount("alice")
            let phone = try await SDKClients.activatedClient(
                server, http, directory: root.appendingPathComponent("phone"))
            let operations = OperationsService(client: phone)

            func signIn() async throws {
                try await browser.open("\(http.base.absoluteString)/login")
                try await browser.type("#userId", "alice")
                try await browser.type("#password", "correct horse battery")
                try await browser.click("#submit")
            }
            /// The phone's one pending request, once it has arrived.
            func pendingRequest() async throws -> MobileOperation {
                for _ in 0..<100 {
                    if let request = try await operations.pending().value.first { return request }
                    try await Task.sleep(for: .milliseconds(100))
                }
                throw TestFailure("The phone never received the request.")
            }

            try await signIn()
            try await browser.click("#provider-push")
            try await browser.expectText("h1", "Approve sign-ins on your phone")
            try await browser.screenshot("01-choose-phone")
            try await browser.click("#send")
            try await browser.expectText("h1", "Approve on your phone")
            try await browser.screenshot("02-wait-opt-in")
            let optIn = try await pendingRequest()
            #expect(optIn.formData.title == "Approve sign-ins with this phone?")
            try await operations.authorize(optIn, factor: .pin("1234"))
            // The page's event stream hears the answer and continues without a click.
            try await browser.element("#signed-in", seconds: 60)
            try await browser.expectText("#methods", "password and approval on your phone")
            try await browser.screenshot("03-opted-in")

            try await browser.signOutOfHostedPages()
            try await signIn()
            try await browser.expectText("h1", "Confirm it is you")
            try await browser.click("#provider-push")
            try await browser.element("#status")
            try await browser.screenshot("04-wait-sign-in")
            let login = try await pendingRequest()
            #expect(login.formData.title == "Sign in to \(server.application.name)?")
            // The phone says which browser asks, from where, and when.
            let browserLine = login.formData.attributes.first { $0.id == "login.browser" }?.value
            #expect(browserLine == "Chrome on Linux", "\(login.formData.attributes)")
            #expect(login.formData.attributes.first { $0.id == "login.address" }?.value == "127.0.0.1")
            // The page shows the number the phone offers among three.
            let number = try #require(Int(try await browser.text("#number")))
            #expect(login.numberMatching?.choices.contains(number) == true)
            try await operations.authorize(login, factor: .pin("1234"), number: number)
            try await browser.element("#signed-in", seconds: 60)
            try await browser.expectText("#methods", "password and approval on your phone")
            try await browser.screenshot("05-signed-in")

            try await browser.signOutOfHostedPages()
            try await signIn()
            try await browser.click("#provider-push")
            try await browser.element("#status")
            try await operations.reject(id: try await pendingRequest().id, reason: RejectReason.unexpectedOperation)
            try await browser.element(".message", seconds: 60)
            try await browser.expectText(".message", "You rejected the sign-in on your phone.")
            try await browser.expectText("h1", "Confirm it is you")
            try await browser.screenshot("06-rejected")

            // Another number than the page's: the sign-in is stopped.
            try await browser.click("#provider-push")
            try await browser.element("#status")
            let wrongRequest = try await pendingRequest()
            let shown = try #require(Int(try await browser.text("#number")))
            let other = try #require(wrongRequest.numberMatching?.choices.first { $0 != shown })
            await #expect(throws: AssentError.self) {
                try await operations.authorize(wrongRequest, factor: .pin("1234"), number: other)
            }
            try await browser.element(".message", seconds: 60)
            try await browser.expectText(
                ".message", "The number chosen on your phone was not the one shown here: the sign-in was stopped.")
            try await browser.screenshot("07-wrong-number")
            await browser.quit()
        }
    }
}

extension LoginPageBrowserTests {
    @Test("Codes: an e-mail code read from the SMTP server's mailbox; a phone set up by SMS, then verified by a call")
    func codes() async throws {
        let smtp = try await SMTPTestServer(mode: .starttls)
        let gateway = WebhookReceiver()
        try await gateway.run { url in
            var tfa = TFASettings()
            tfa.mail = smtp.settings()
            tfa.phoneGateway = WebhookSettings(url: url, secret: Data("gateway-secret-0123456789".utf8))
            let server = try await TestServer.make(.sqlite, tfa: tfa)
            defer { Task { await server.shutdown() } }
            try await server.live { http in
                let browser = try await Browser(artefacts: Self.artefacts("login/codes"))
                defer { Task { await browser.quit() } }
                _ = try await server.operatorCall(
                    http, "POST", "/api/v1/tfa/accounts",
                    body: try OperatorJSON.encoder().encode(
                        CreateTFAAccountRequest(
                            userId: "alice", password: "correct horse battery",
                            emails: ["alice.smith@bank.example", "al@home.example"])),
                    as: TFAAccountInfo.self)
                try await TFAClient(server: server, client: http).createAccount("bob")
                func signIn(_ user: String) async throws {
                    try await browser.open("\(http.base.absoluteString)/login")
                    try await browser.type("#userId", user)
                    try await browser.type("#password", "correct horse battery")
                    try await browser.click("#submit")
                }

                // E-mail: the operator's addresses, obfuscated; the code from the mailbox.
                try await signIn("alice")
                try await browser.expectText("h1", "Confirm it is you")
                try await browser.click("#provider-email")
                try await browser.expectText("body", containing: "a***h@b***k.example")
                try await browser.screenshot("01-choose-address")
                try await browser.click("#send")
                try await browser.expectText("main", containing: "We sent a code to a***h@b***k.example.")
                let mail = try #require(try await smtp.wait(for: 1).first)
                #expect(mail.to == ["alice.smith@bank.example"])
                try await browser.screenshot("02-email-code")
                try await browser.type("#code", try #require(TFACodes.code(in: mail.body)))
                try await browser.click("#verify")
                try await browser.expectText("#methods", "password and code by e-mail")
                try await browser.signOutOfHostedPages()

                // Phone: a number set up by text message, then a sign-in confirmed by a voice call.
                try await signIn("bob")
                try await browser.click("#provider-phone")
                try await browser.type("#phone", "777 123 456")
                try await browser.click("#send")
                try await browser.expectText(".message", prefix: "Enter the number in international form")
                try await browser.type("#phone", "+420 777 123 456")
                try await browser.screenshot("03-phone-number")
                try await browser.click("#send")
                let sms = try OperatorJSON.decoder().decode(
                    PhoneMessage.self, from: try #require(try await gateway.wait(for: 1).first).body)
                #expect(sms.to == "+420777123456" && sms.channel == .sms)
                try await browser.type("#code", sms.code)
                try await browser.click("#verify")
                try await browser.expectText("#methods", "password and code by text message or call")
                try await browser.signOutOfHostedPages()
                try await signIn("bob")
                try await browser.click("#provider-phone")
                try await browser.click("input[value=voice]")
                try await browser.screenshot("04-choose-number")
                try await browser.click("#send")
                let call = try OperatorJSON.decoder().decode(
                    PhoneMessage.self, from: try #require(try await gateway.wait(for: 2).last).body)
                #expect(call.channel == .voice)
                try await browser.type("#code", call.code)
                try await browser.click("#verify")
                try await browser.expectText("#methods", "password and code by text message or call")
                try await browser.screenshot("05-signed-in")
                await browser.quit()
            }
        }
    }
}

/// The pages' protections, request by request (no redirects followed), on both databases.
@Suite("Hosted login pages: sessions, CSRF, headers, rate limits")
struct LoginPageProtectionTests {

    @Test(
        "Forms need the session's cookie and CSRF token; __Host- cookies; strict headers; wrong passwords counted",
        arguments: Backend.all)
    func protections(_ backend: Backend) async throws {
        var limits = RateLimits()
        limits.loginFailuresPerUserAndAddress = RateLimitRule(limit: 2, window: 900)
        let server = try await TestServer.make(backend, rateLimits: limits)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ uri: String, cookie: String? = nil, form: [String: String]? = nil)
                async throws -> PageAnswer
            { try await PageAnswer.fetch(client, method, uri, cookie: cookie, form: form) }
            let created = try await client.execute(
                uri: "/api/v1/tfa/accounts", method: .post,
                headers: [.authorization: "Bearer \(server.apiKey)", .contentType: "application/json"],
                body: ByteBuffer(
                    bytes: try OperatorJSON.encoder().encode(
                        CreateTFAAccountRequest(userId: "alice", password: "correct horse battery")))
            ) { $0.status }
            #expect(created == .created || created == .ok)
            let bob = try await client.execute(
                uri: "/api/v1/tfa/accounts", method: .post,
                headers: [.authorization: "Bearer \(server.apiKey)", .contentType: "application/json"],
                body: ByteBuffer(
                    bytes: try OperatorJSON.encoder().encode(
                        CreateTFAAccountRequest(userId: "bob", password: "correct horse battery")))
            ) { $0.status }
            #expect(bob == .created || bob == .ok)
            // Lengths count characters, as the OpenAPI document's schema does: six two-byte characters are too few.
            for (user, password, expected) in [
                ("carol", "éééééé", HTTPResponse.Status.badRequest), ("carol", "éééééééé", .created),
            ] {
                let status = try await client.execute(
                    uri: "/api/v1/tfa/accounts", method: .post,
                    headers: [.authorization: "Bearer \(server.apiKey)", .contentType: "application/json"],
                    body: ByteBuffer(
                        bytes: try OperatorJSON.encoder().encode(
                            CreateTFAAccountRequest(userId: user, password: password)))
                ) { $0.status }
                #expect(status == expected, "\(password)")
            }

            // The browser's languages choose the page's; ui_locales comes first; unknown ones leave English.
            for (accept, query, expected) in [
                ("de-DE,de;q=0.9,en;q=0.5", "", "Benutzername"), ("fr-FR", "", "User name"),
                ("de", "?ui_locales=cs", "Uživatelské jméno"),
            ] {
                let page = try await client.execute(
                    uri: "/login\(query)", method: .get, headers: [.acceptLanguage: accept]
                ) { String(buffer: $0.body) }
                #expect(page.contains(expected), "\(accept) \(query)")
            }
            let first = try await call(.get, "/login")
            #expect(first.status == .ok)
            #expect(first.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
            #expect(first.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(first.headers[.cacheControl] == "no-store")
            // Before a right password nothing is stored: the form's token is the value of a cookie (double submit).
            let setCookie = try #require(first.headers[.setCookie])
            #expect(setCookie.hasPrefix("__Host-assent-csrf="))
            #expect(setCookie.hasSuffix("; Path=/; Max-Age=900; Secure; HttpOnly; SameSite=Strict"))
            let csrfCookie = String(setCookie.prefix { $0 != ";" })
            let csrf = try #require(first.field("csrf"))
            #expect(csrfCookie == "__Host-assent-csrf=\(csrf)")
            let application = try #require(first.field("application"))
            #expect(application == server.application.id)

            // Without the cookie, or without or with another token: refused.
            let noCookie = try await call(
                .post, "/login", form: ["csrf": csrf, "application": application, "userId": "alice", "password": "x"])
            #expect(noCookie.status == .forbidden)
            for token in [nil, "forged-\(csrf)"] {
                var form = ["application": application, "userId": "alice", "password": "correct horse battery"]
                form["csrf"] = token
                let refused = try await call(.post, "/login", cookie: csrfCookie, form: form)
                #expect(refused.status == .forbidden)
                #expect(refused.body.contains("This form is stale or did not come from this site"))
            }
            let json = try await client.execute(
                uri: "/login", method: .post, headers: [.cookie: csrfCookie, .contentType: "application/json"],
                body: ByteBuffer(string: "{}")
            ) { $0.status }
            #expect(json == .unsupportedMediaType)

            // Wrong passwords: the form again with the message and the user name, then the account's limit from here.
            for attempt in 1...3 {
                let wrong = try await call(
                    .post, "/login", cookie: csrfCookie,
                    form: ["csrf": csrf, "application": application, "userId": "alice", "password": "nope"])
                #expect(wrong.status == (attempt <= 2 ? .unauthorized : .tooManyRequests))
                #expect(wrong.headers[.setCookie] == nil, "no session for a wrong password")
                #expect(
                    wrong.body.contains(
                        attempt <= 2 ? "The user name or the password is wrong." : "Too many attempts: try again in"))
                #expect(wrong.body.contains("value=\"alice\""), "the user name stays filled in")
            }

            // A right password starts the session: a new __Host- cookie and a token of its own.
            let right = try await call(
                .post, "/login", cookie: csrfCookie,
                form: ["csrf": csrf, "application": application, "userId": "bob", "password": "correct horse battery"])
            #expect(right.status == .seeOther && right.location == "/login/factor")
            let sessionCookie = try #require(
                right.headers[values: .setCookie].first { $0.hasPrefix("__Host-assent-login=") })
            #expect(sessionCookie.hasSuffix("; Path=/; Max-Age=28800; Secure; HttpOnly; SameSite=Lax"))
            let cookie = String(sessionCookie.prefix { $0 != ";" })
            let factorPage = try await call(.get, "/login/factor", cookie: cookie)
            #expect(factorPage.status == .ok && factorPage.body.contains("Set up a second factor"))
            let token = try #require(factorPage.field("csrf"))
            #expect(token != csrf)
            #expect(
                try await call(.post, "/login/factor", cookie: cookie, form: ["provider": "totp"]).status == .forbidden)

            // The name typed stays for this application's sign-in, but is not carried to another application's.
            let other = try await client.execute(
                uri: "/api/v1/applications", method: .post,
                headers: [.authorization: "Bearer \(server.apiKey)", .contentType: "application/json"],
                body: ByteBuffer(
                    bytes: try OperatorJSON.encoder().encode(CreateApplicationRequest(name: "Other shop")))
            ) { try OperatorJSON.decoder().decode(ApplicationInfo.self, from: Data(buffer: $0.body)) }
            let here = try await call(.get, "/login?application=\(application)", cookie: cookie)
            #expect(here.body.contains("value=\"bob\""))
            let elsewhere = try await call(.get, "/login?application=\(other.applicationId)", cookie: cookie)
            #expect(elsewhere.status == .ok && !elsewhere.body.contains("value=\"bob\""), "\(elsewhere.body)")
            let again = try await call(.get, "/login?application=\(application)", cookie: cookie)
            let factorAgain = try await call(
                .post, "/login", cookie: cookie,
                form: [
                    "csrf": try #require(again.field("csrf")), "application": application, "userId": "bob",
                    "password": "correct horse battery",
                ])
            #expect(factorAgain.location == "/login/factor")

            // Steps cannot be skipped: a page of another step sends the person back to where the session is.
            let skipped = try await call(.get, "/login/code", cookie: cookie)
            #expect(skipped.status == .seeOther && skipped.location == "/login/factor")
            let unknown = try await call(.get, "/login?application=no-such-app")
            #expect(unknown.status == .notFound)
            #expect(try await call(.get, "/web/assets/assent.css").status == .ok)
            #expect(try await call(.get, "/web/assets/passwd").status == .notFound)

            // Signing out ends the session on the server: the old cookie no longer works.
            let out = try await call(.post, "/login/logout", cookie: cookie, form: ["csrf": token])
            #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            let afterLogout = try await call(
                .post, "/login/factor", cookie: cookie, form: ["csrf": token, "provider": "totp"])
            #expect(afterLogout.location == "/login?expired=1")
        }
    }
}
