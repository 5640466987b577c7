import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The operator console as an operator uses it: headless Chromium over real HTTP on both databases, a screenshot
/// per step in `.build/test-artefacts/console/<database>/`.
@Suite("Operator console in a real browser", .serialized)
struct ConsoleBrowserTests {
    static let template = #"""
        {"name": "authorize_payment", "data": "A1*A{amount}{currency}*I{iban}",
         "formData": {"en": {"title": "Pay {amount} {currency}", "message": "To {iban}",
           "attributes": [{"type": "AMOUNT", "id": "amount", "label": "Amount", "amount": "{amount}",
                           "currency": "{currency}"}]}}}
        """#

    @Test(
        "Sign in, activate a phone from the QR code on screen, commit/block/unblock, an operation turns APPROVED live",
        arguments: Backend.all)
    func console(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let directory = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await server.live { http in
            let browser = try await Browser(
                artefacts: LoginPageBrowserTests.artefacts("console/\(backend.rawValue)"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            _ = try await server.operatorCall(
                http, "PUT", "/api/v1/operation-templates/payment", body: Data(Self.template.utf8),
                as: OperationTemplateInfo.self)

            // A wrong key is refused; the right one signs in.
            try await browser.open("\(base)/console")
            try await browser.expectText("h1", "Sign in to the console")
            // A first visit had no session: nothing says that one ended.
            #expect(!(try await browser.pageText()).contains("session ended"))
            try await browser.type("#apiKey", "ak_not-a-key")
            try await browser.click("#submit")
            try await browser.expectText(".message", "This API key is not valid: check it, or ask for a new one.")
            try await browser.screenshot("01-wrong-key")
            try await browser.type("#apiKey", server.apiKey)
            try await browser.click("#submit")
            try await browser.expectText("h1", "Dashboard")
            try await browser.expectText("#operator", "bootstrap (API key)")
            #expect(try await browser.exists("#chart svg"))

            // A new activation shows its QR code; the phone scans it off the screen.
            try await browser.open("\(base)/console/users")
            try await browser.type("#new-activation #user", "carol")
            try await browser.click("#commitMode option[value=manual]")
            try await browser.click("#new-activation #create")
            try await browser.expectText("#state", "CREATED")
            let shot = try await browser.screenshot(of: "#activation-qr", "02-activation-qr")
            try await browser.screenshot("02-activation")
            let scanned = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            #expect(scanned.hasPrefix(try await browser.text("#activation-code") + "#"))
            let client = try SDKClients.client(server, base: http.base, directory: directory)
            let started = try await client.startActivation(code: scanned)
            try await client.finishActivation(pin: "1234")

            // The page follows the activation: it reloads itself into PENDING_COMMIT with the fingerprint.
            try await browser.element("#commit", seconds: 60)
            try await browser.expectText("#state", "PENDING_COMMIT")
            #expect(try await browser.text("#fingerprint") == started.fingerprint)
            try await browser.screenshot("03-pending-commit")
            try await browser.click("#commit")
            try await browser.expectText("#notice", "Activation committed.")
            try await browser.expectText("#state", "ACTIVE")
            try await browser.type("#reason", "lost phone")
            // Blocking stops a person: a second step asks first, without a script; the reason is kept.
            #expect(try await browser.attribute("#block", "class") == "danger")
            try await browser.click("#block")
            try await browser.expectText("#question", prefix: "Block carol's ")
            try await browser.screenshot("04-block-confirm")
            try await browser.click("#confirm")
            try await browser.expectText("#state", "BLOCKED")
            try await browser.expectText("body", containing: "lost phone")
            try await browser.screenshot("04-blocked")
            try await browser.click("#unblock")
            try await browser.expectText("#notice", "Activation unblocked.")
            try await browser.expectText("#state", "ACTIVE")

            // An operation from the template, which names its parameters; a missing one is an error that keeps
            // what was typed.
            try await browser.open("\(base)/console/operations/new?user=carol")
            try await browser.expectText("#template", "payment (amount, currency, iban)")
            try await browser.type("#params", "amount=250")
            try await browser.click("#create")
            try await browser.expectText("#notice", "The template needs the parameters currency, iban.")
            #expect(try await browser.attribute("#notice", "class") == "message")
            #expect(
                try await browser.execute("return document.querySelector('#params').value;") as? String
                    == "amount=250")
            #expect(try await browser.attribute("#user", "value") == "carol")
            try await browser.screenshot("05-template-error")
            // The phone approves; the page changes in place.
            try await browser.type(
                "#params", "amount=250\ncurrency=EUR\niban=CZ2730300000001165254011")
            try await browser.click("#create")
            try await browser.expectText("#operation-title", "Pay 250 EUR")
            try await browser.expectText("#status", "PENDING")
            // Times show in the browser's time zone, UTC in their title.
            try await browser.timeZone("Asia/Kolkata")
            try await browser.open(try await browser.url())
            try await browser.expectText("#status", "PENDING")
            let created = try #require(
                try await browser.execute(
                    "var t = document.querySelector('.details time'); return [t.textContent, t.title];") as? [String])
            #expect(created[1].hasSuffix(" UTC") && created[0] != created[1], "\(created)")
            #expect(created[0].contains("GMT+5:30") || created[0].contains("IST"), "\(created)")
            // One shape for every time on the console, the browser's zone named: as the server writes them.
            #expect(created[0].wholeMatch(of: /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+/) != nil, "\(created)")
            #expect(created[1].wholeMatch(of: /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/) != nil, "\(created)")
            let operationId = try await browser.text("#operation-id")
            try await browser.execute("window.assentMarker = 'this page'; return 1;")
            try await browser.screenshot("05-operation-pending")
            let operation = try await server.operation(http, operationId)
            try await OperationsService(client: client).authorize(
                LocalOperation(id: operation.id, data: operation.data), factor: .pin("1234"))
            try await browser.expectText("#status", "APPROVED")
            #expect(try await browser.execute("return window.assentMarker;") as? String == "this page")
            #expect(try await browser.execute("return document.querySelector('.actions').hidden;") as? Bool == true)
            #expect(try await browser.attribute("#status", "class") == "status status-approved")
            try await browser.screenshot("06-operation-approved")

            // Another one approved offline: the app scans the QR code on the page; the operator types its code in.
            try await browser.open("\(base)/console/operations/new?user=carol")
            try await browser.type("#params", "amount=12\ncurrency=EUR\niban=CZ2730300000001165254011")
            try await browser.click("#create")
            try await browser.expectText("#operation-title", "Pay 12 EUR")
            // The form for the code the phone shows comes with the QR code it belongs to, not before.
            #expect(!(try await browser.exists("#verify-activation")))
            try await browser.click("#show-offline")
            try await browser.element("#offline-qr")
            try await browser.screenshot("06-offline-shown")
            // Phones are told apart by the name given at activation and the start of their id.
            let phoneLabel = try await browser.text("#verify-activation option")
            let phoneId = try #require(await client.registrationId)
            #expect(phoneLabel.hasSuffix("(\(phoneId.prefix(8)))"), "\(phoneLabel)")
            let offlineShot = try await browser.screenshot(of: "#offline-qr", "06-offline-qr")
            let offlineText = try #require(try await QRReader.scan(png: offlineShot), "no offline QR code on the page")
            let phone = OperationsService(client: client)
            let offline = try await phone.parseOfflineOperation(offlineText)
            #expect(offline.title == "Pay 12 EUR")
            // A wrong code says so, as an error, with the tries left.
            try await browser.type("#offline-code", "12345678-12345678")
            try await browser.click("#verify")
            try await browser.expectText("#notice", "The code is wrong: 4 tries left. Check it on the phone.")
            #expect(try await browser.attribute("#notice", "class") == "message")
            // The same QR code again: the code from the first scan still works.
            #expect(
                try await QRReader.scan(png: try await browser.screenshot(of: "#offline-qr", "06-same-qr"))
                    == offlineText)
            try await browser.type("#offline-code", try await phone.offlineApprovalCode(for: offline, pin: "1234"))
            try await browser.click("#verify")
            try await browser.expectText("#notice", "The code is right: the operation is approved.")
            try await browser.expectText("#status", "APPROVED")
            // The wrong code is audited naming who typed it in.
            let failedCode = try await server.store.auditEvents(AuditFilter(typePrefix: "signature.failed"), limit: 5)
            #expect(failedCode.first?.actor == "key:bootstrap")

            // A third one is cancelled: the question names the operation and its user; the audit, who cancelled.
            try await browser.open("\(base)/console/operations/new?user=carol")
            try await browser.type("#params", "amount=7\ncurrency=EUR\niban=CZ2730300000001165254011")
            try await browser.click("#create")
            try await browser.expectText("#operation-title", "Pay 7 EUR")
            try await browser.click("#cancel")
            try await browser.expectText("#question", "Cancel “Pay 7 EUR” for carol?")
            try await browser.screenshot("06-cancel-confirm")
            try await browser.click("#confirm")
            try await browser.expectText("#status", "CANCELED")
            let canceled = try await server.store.auditEvents(AuditFilter(typePrefix: "operation.canceled"), limit: 5)
            #expect(canceled.first?.actor == "key:bootstrap")

            // A fourth, approved while its page is open: the notice that it waits goes when the status changes.
            try await browser.open("\(base)/console/operations/new?user=carol")
            try await browser.type("#params", "amount=9\ncurrency=EUR\niban=CZ2730300000001165254011")
            try await browser.click("#create")
            try await browser.expectText("#notice", "Operation created: it waits on the user's phones.")
            let fourth = try await server.operation(http, try await browser.text("#operation-id"))
            try await OperationsService(client: client).authorize(
                LocalOperation(id: fourth.id, data: fourth.data), factor: .pin("1234"))
            try await browser.expectText("#status", "APPROVED")
            #expect(try await browser.execute("return document.getElementById('notice').hidden;") as? Bool == true)
            // The phone that answered is named, not shown as a bare id.
            try await browser.open(try await browser.url())
            let answered = try #require(await client.registrationId)
            try await browser.expectText(".details", containing: "Answered on")
            try await browser.expectText(".details", containing: "(\(answered.prefix(8)))")
            #expect(!(try await browser.text(".details")).contains(answered))

            // The dashboard counts them; the audit log filters by user and type.
            try await browser.open("\(base)/console")
            try await browser.expectText("[data-status=APPROVED]", "3")
            try await browser.expectText("[data-state=ACTIVE]", "1")
            #expect(try await browser.exists("#chart rect.bar-approved"))
            try await browser.screenshot("07-dashboard")
            // The name people see is set here.
            try await browser.type("#name", "Example Bank")
            try await browser.click("#rename")
            try await browser.expectText("#notice", "People now see the application as Example Bank.")
            try await browser.expectText("#application-name", "Example Bank")
            try await browser.expectPhoneLayout("07-dashboard-phone")
            try await browser.open("\(base)/console/audit")
            // The page states the hash chain's state, verified against the audit key.
            let chainState = try await browser.text("#chain")
            #expect(
                chainState.contains("sealed in the hash chain") || chainState.contains("No audit row"), "\(chainState)")
            #expect(!(try await browser.exists("#chain-problem")))
            try await browser.type("#user", "carol")
            try await browser.type("#type", "activation.")
            try await browser.click("#filter")
            for _ in 0..<150 where !(try await browser.url()).contains("type=activation.") {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(try await browser.attribute("#type", "value") == "activation.")
            let types = try #require(
                try await browser.execute(
                    "return Array.from(document.querySelectorAll('#events td.type')).map(e => e.textContent);")
                    as? [String])
            #expect(
                types == [
                    "activation.unblocked", "activation.blocked", "activation.committed",
                    "activation.device_completed", "activation.created",
                ], "\(types)")
            try await browser.screenshot("08-audit")

            // A form whose token was tampered with is refused, and nothing is created.
            try await browser.open("\(base)/console/users")
            try await browser.type("#new-activation #user", "mallory")
            try await browser.execute(
                "document.querySelector('#new-activation input[name=csrf]').value = 'forged'; return 1;")
            try await browser.click("#new-activation #create")
            try await browser.expectText("h1", "Something went wrong")
            try await browser.expectText("body", containing: "This form is stale or did not come from this console")
            try await browser.screenshot("09-csrf-refused")
            #expect(try await server.store.activations(userId: "mallory").isEmpty)

            // Removing is for good: it asks first; going back leaves the activation as it was.
            try await browser.open("\(base)/console/users/carol")
            try await browser.click("#activations a")
            try await browser.click("#remove")
            try await browser.expectText("#question", prefix: "Remove carol's ")
            try await browser.click("#back")
            try await browser.expectText("#state", "ACTIVE")
            try await browser.click("#remove")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", "Activation removed.")
            try await browser.expectText("#state", "REMOVED")

            // An activation whose code expired unused shows as such, without its QR code.
            let unused = try await server.createActivation(http, userId: "erin")
            server.clock.advance(by: 301)
            try await Services(server.environment).activations.expireUnusedCodes()
            try await browser.open("\(base)/console/activations/\(unused.activationId)")
            try await browser.expectText("#state", "REMOVED")
            try await browser.expectText("#expired", prefix: "The activation code expired unused at ")
            #expect(!(try await browser.exists("#activation-qr")))
            try await browser.screenshot("10-expired-activation")

            // The OpenID clients: what each may do and where it sends people.
            try await browser.open("\(base)/console/clients")
            try await browser.expectText("#no-clients", "No clients yet.")
            _ = try await server.operatorCall(
                http, "POST", "/api/v1/clients",
                body: try OperatorJSON.encoder().encode(
                    CreateClientRequest(
                        name: "Shop", redirectUris: ["https://shop.example/callback"], thirdParty: true)),
                as: CreateClientResponse.self)
            try await browser.open("\(base)/console/clients")
            try await browser.expectText("#clients tbody", containing: "Shop")
            try await browser.expectText("#clients tbody", containing: "third-party")
            try await browser.expectText("#clients tbody", containing: "https://shop.example/callback")
            try await browser.screenshot("11-clients")
            try await browser.expectPhoneLayout("11-clients-phone")

            // Signing out ends the session.
            try await browser.open("\(base)/console")
            try await browser.signOutOfConsole()
            try await browser.open("\(base)/console/users")
            try await browser.expectText("h1", "Sign in to the console")
            await browser.quit()
        }
    }
}

/// The console's protections request by request: cookies, CSRF, scopes, revoked keys, paging.
@Suite("Operator console: sessions, CSRF and scopes")
struct ConsoleProtectionTests {
    @Test(
        "Sign-in cookie, forged forms refused, scopes per page, revoked keys end sessions, audit paging",
        arguments: Backend.all)
    func protections(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            func call(_ method: HTTPRequest.Method, _ uri: String, cookie: String? = nil, form: [String: String]? = nil)
                async throws -> PageAnswer
            { try await PageAnswer.fetch(client, method, uri, cookie: cookie, form: form) }
            func api<T: Decodable>(_ method: HTTPRequest.Method, _ uri: String, _ body: Data?, as: T.Type)
                async throws -> T
            {
                try await client.execute(
                    uri: uri, method: method,
                    headers: [.authorization: "Bearer \(server.apiKey)", .contentType: "application/json"],
                    body: body.map { ByteBuffer(bytes: $0) }
                ) { try OperatorJSON.decoder().decode(T.self, from: Data(String(buffer: $0.body).utf8)) }
            }
            /// Signs in with `key`; the session cookie.
            func signIn(_ key: String) async throws -> String {
                let form = try await call(.get, "/console/sign-in")
                let csrfCookie = String(try #require(form.headers[.setCookie]).prefix { $0 != ";" })
                let csrf = try #require(form.field("csrf"))
                let answer = try await call(
                    .post, "/console/sign-in", cookie: csrfCookie, form: ["csrf": csrf, "apiKey": key])
                #expect(answer.status == .seeOther && answer.location == "/console")
                let cookie = try #require(
                    answer.headers[values: .setCookie].first { $0.hasPrefix("__Host-assent-console=") })
                #expect(cookie.hasSuffix("; Path=/; Max-Age=43200; Secure; HttpOnly; SameSite=Strict"))
                return String(cookie.prefix { $0 != ";" })
            }

            // Signed out: every page goes to the sign-in page; "session ended" only for a browser that had one.
            for path in ["/console", "/console/users", "/console/operations", "/console/audit", "/console/live"] {
                let page = try await call(.get, path)
                #expect(page.status == .seeOther && page.location == "/console/sign-in", "\(path)")
                let stale = try await call(
                    .get, path, cookie: "__Host-assent-console=\(String(repeating: "x", count: 43))")
                #expect(stale.status == .seeOther && stale.location == "/console/sign-in?expired=1", "\(path)")
            }
            let form = try await call(.get, "/console/sign-in")
            #expect(form.status == .ok && form.headers[.cacheControl] == "no-store")
            #expect(form.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            let csrf = try #require(form.field("csrf"))
            // The sign-in form without its cookie, or with another token: refused before the key is looked at.
            let noCookie = try await call(.post, "/console/sign-in", form: ["csrf": csrf, "apiKey": server.apiKey])
            #expect(noCookie.status == .forbidden && noCookie.headers[values: .setCookie].isEmpty)
            let csrfCookie = String(try #require(form.headers[.setCookie]).prefix { $0 != ";" })
            let forged = try await call(
                .post, "/console/sign-in", cookie: csrfCookie, form: ["csrf": "x\(csrf)", "apiKey": server.apiKey])
            #expect(forged.status == .forbidden)
            let wrong = try await call(
                .post, "/console/sign-in", cookie: csrfCookie, form: ["csrf": csrf, "apiKey": "ak_wrong"])
            #expect(wrong.status == .unauthorized && wrong.body.contains("This API key is not valid"))

            let admin = try await signIn(server.apiKey)
            let users = try await call(.get, "/console/users", cookie: admin)
            #expect(users.status == .ok && users.body.contains("No users with activations"))
            let token = try #require(users.field("csrf"))

            // A form without the session's token changes nothing.
            for bad in [nil, "forged"] {
                var fields = ["user": "mallory"]
                fields["csrf"] = bad
                let refused = try await call(.post, "/console/activations", cookie: admin, form: fields)
                #expect(refused.status == .forbidden && refused.body.contains("This form is stale"))
            }
            #expect(try await call(.get, "/console/users", cookie: admin).body.contains("No users with activations"))
            let created = try await call(
                .post, "/console/activations", cookie: admin, form: ["csrf": token, "user": "dave"])
            let activationPath = try #require(created.location)
            #expect(created.status == .seeOther && activationPath.hasPrefix("/console/activations/"))
            let shown = try await call(.get, activationPath, cookie: admin)
            #expect(shown.body.contains("Activation created: scan the QR code"))
            #expect(!(try await call(.get, activationPath, cookie: admin)).body.contains("Activation created"))
            let qr = try await call(.get, "\(activationPath)/qr.png", cookie: admin)
            #expect(qr.status == .ok && qr.headers[.contentType] == "image/png")
            let svg = try await call(.get, "\(activationPath)/qr.svg", cookie: admin)
            #expect(svg.status == .ok && svg.headers[.contentType] == "image/svg+xml")
            #expect(svg.body.hasPrefix("<svg") && svg.body.contains("<path"))
            // A refused action comes back with the reason.
            let commit = try await call(.post, "\(activationPath)/commit", cookie: admin, form: ["csrf": token])
            #expect(commit.location == activationPath)
            #expect(
                try await call(.get, activationPath, cookie: admin).body.contains(
                    "Only an activation in PENDING_COMMIT can be committed"))

            // A key with only audit:read sees the audit log and nothing else.
            let auditor = try await api(
                .post, "/api/v1/api-keys",
                try OperatorJSON.encoder().encode(CreateAPIKeyRequest(name: "auditor", scopes: ["audit:read"])),
                as: CreateAPIKeyResponse.self)
            let audit = try await signIn(auditor.apiKey)
            let dashboard = try await call(.get, "/console", cookie: audit)
            #expect(dashboard.status == .ok && dashboard.body.contains("href=\"/console/audit\""))
            #expect(!dashboard.body.contains("href=\"/console/users\"") && !dashboard.body.contains("<svg"))
            #expect(dashboard.body.contains("may read none of the dashboard's figures"))
            for path in ["/console/users", "/console/operations", activationPath, "\(activationPath)/qr.png"] {
                let page = try await call(.get, path, cookie: audit)
                #expect(page.status == .forbidden && page.body.contains("lacks the scope"), "\(path)")
            }
            let auditToken = try #require(dashboard.field("csrf"))
            let blocked = try await call(
                .post, "/console/activations", cookie: audit, form: ["csrf": auditToken, "user": "eve"])
            #expect(blocked.status == .forbidden && blocked.body.contains("activations:write"))
            let log = try await call(.get, "/console/audit?user=dave", cookie: audit)
            #expect(log.status == .ok && log.body.contains("activation.created"))
            #expect(try await call(.get, "/console/audit?user=eve", cookie: audit).body.contains("No events."))

            // The audit log pages by 50, newest first.
            for index in 0..<60 {
                _ = try await call(
                    .post, "/console/activations", cookie: admin, form: ["csrf": token, "user": "u\(index)"])
            }
            let first = try await call(.get, "/console/audit?type=activation.created", cookie: audit)
            #expect(first.body.components(separatedBy: "<tr data-id=").count - 1 == 50)
            let next = try #require(Self.href("next-page", first.body))
            let second = try await call(.get, next.replacingOccurrences(of: "&amp;", with: "&"), cookie: audit)
            #expect(second.body.components(separatedBy: "<tr data-id=").count - 1 == 11)
            #expect(
                second.body.contains("<td data-label=\"User\"><a href=\"/console/users/dave\">dave</a></td>")
                    && !second.body.contains("id=\"next-page\""))
            // A date range of whole UTC days: today has them, a day long ago none; a malformed date is refused.
            let today = Date().formatted(.iso8601.year().month().day())
            let todays = try await call(.get, "/console/audit?from=\(today)&until=\(today)", cookie: audit)
            #expect(todays.body.components(separatedBy: "<tr data-id=").count - 1 == 50)
            let old = try await call(.get, "/console/audit?from=2001-01-01&until=2001-01-31", cookie: audit)
            #expect(old.body.contains("No events."))
            let malformed = try await call(.get, "/console/audit?from=yesterday", cookie: audit)
            #expect(malformed.status == .badRequest && malformed.body.contains("YYYY-MM-DD"))

            // The operations list pages by 100, newest first, with nothing skipped or repeated.
            var paged: [String] = []
            for _ in 0..<103 {
                paged.append(
                    try await api(
                        .post, "/api/v1/operations",
                        try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "olga")),
                        as: OperationInfo.self
                    ).id)
            }
            let newest = try await call(.get, "/console/operations?user=olga", cookie: admin)
            let olderLink = try #require(Self.href("next-page", newest.body))
            let older = try await call(.get, olderLink.replacingOccurrences(of: "&amp;", with: "&"), cookie: admin)
            func ids(_ page: PageAnswer) -> [String] {
                page.body.matches(of: /data-status-of="([0-9a-f-]{36})"/).map { String($0.output.1) }
            }
            #expect(ids(newest).count == 100 && ids(older).count == 3)
            #expect(Set(ids(newest) + ids(older)) == Set(paged))
            #expect(!older.body.contains("id=\"next-page\"") && older.body.contains("id=\"first-page\""))

            // Revoking the key ends the sessions it opened.
            let revoked = try await client.execute(
                uri: "/api/v1/api-keys/\(auditor.id)", method: .delete,
                headers: [.authorization: "Bearer \(server.apiKey)"]
            ) { $0.status }
            #expect(revoked == .noContent)
            let after = try await call(.get, "/console/audit", cookie: audit)
            #expect(after.status == .seeOther && after.location == "/console/sign-in?expired=1")

            // Signing out ends the session server-side: the old cookie no longer works.
            let out = try await call(.post, "/console/sign-out", cookie: admin, form: ["csrf": token])
            #expect(out.location == "/console/sign-in")
            #expect(try await call(.get, "/console", cookie: admin).status == .seeOther)
        }
    }

    /// The `href` of the link with `id` in `html` (written `<a href="…" id="…">`).
    static func href(_ id: String, _ html: String) -> String? {
        guard let link = html.range(of: "\" id=\"\(id)\""),
            let start = html.range(of: "href=\"", options: .backwards, range: html.startIndex..<link.lowerBound)
        else { return nil }
        return String(html[start.upperBound..<link.lowerBound])
    }
}

@Suite("Operator console: the dashboard chart")
struct DashboardChartTests {
    @Test("Bars stack per hour in proportion to the busiest hour; every hour has its counts as a title")
    func chart() {
        let lastHour: Int64 = 24 * 20_000 + 4
        let svg = DashboardChart.svg(
            [
                (lastHour, .approved, 2), (lastHour, .rejected, 1), (lastHour - 5, .expired, 4),
                (lastHour - 30, .approved, 9),
            ], lastHour: lastHour)
        // 186 pixels of plot: 4 operations fill it.
        #expect(svg.contains("the highest hour has 4"))
        #expect(svg.contains(#"<rect class="bar-approved" x="690" y="103.0" width="26" height="93.0""#))
        #expect(svg.contains(#"<rect class="bar-rejected" x="690" y="56.5" width="26" height="46.5""#))
        #expect(svg.contains(#"<rect class="bar-expired" x="550" y="10.0" width="26" height="186.0""#))
        #expect(svg.components(separatedBy: "<rect").count - 1 == 3, "an hour outside the 24 is not drawn")
        #expect(svg.contains("<title>04:00 UTC: 2 approved, 1 rejected, 0 expired</title>"))
        #expect(svg.contains("<title>23:00 UTC: 0 approved, 0 rejected, 4 expired</title>"))
        #expect(svg.components(separatedBy: "<g><title>").count - 1 == 24)
    }
}
