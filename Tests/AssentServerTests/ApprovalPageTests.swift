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

@Suite("Waiting-for-approval page in a real browser", .serialized)
struct ApprovalPageBrowserTests {
    /// The server's base URL as another origin (`localhost` for `127.0.0.1`): a relying party's return URL is never
    /// on the Assent server itself.
    static func relyingParty(_ base: String) -> String {
        base.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:")
    }

    @Test("The page shows the payment and its proximity QR code, waits for the approval, goes on to the return URL")
    func approve() async throws {
        try await SDKClients.withActivatedClient(.sqlite) { server, http, client, _ in
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("approve"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            let operation = try await server.createOperation(
                http, try OperationFixtures.payment(userId: "alice", proximityCheck: true))
            let link = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(operation.id)/approval-link",
                body: try OperatorJSON.encoder().encode(
                    ApprovalLinkRequest(returnUrl: "\(Self.relyingParty(base))/health?from=bank")),
                as: ApprovalLinkResponse.self)
            let url = try #require(URLComponents(string: link.url))
            #expect(url.path == "/approve/\(operation.id)")
            // In the browser's language: the page's words, and the operation's own texts in it where it has them.
            let czech = try await http.send(
                "GET", "\(url.path)?\(url.query ?? "")", headers: ["Accept-Language": "cs-CZ,cs;q=0.9,en;q=0.5"])
            #expect(czech.text.contains("<html lang=\"cs\">") && czech.text.contains("Schválit v telefonu"))
            #expect(czech.text.contains("Potvrďte platbu") && czech.text.contains("Otevřete aplikaci v telefonu"))
            let german = try await http.send(
                "GET", "\(url.path)?\(url.query ?? "")", headers: ["Accept-Language": "de"])
            #expect(german.text.contains("Auf dem Telefon bestätigen"))

            try await browser.open("\(base)\(url.path)?\(url.query ?? "")")
            try await browser.expectText("h1", "Approve on your phone")
            try await browser.expectText("#operation-title", "Confirm Payment")
            let shown = try await browser.text(".operation")
            #expect(shown.contains("2199,40 Kč") && shown.contains("238400856/0300"))
            try await browser.screenshot("01-waiting")
            // On a phone's screen the card keeps a margin from the edges.
            try await browser.expectPhoneLayout("01-waiting-phone")
            // The phone scans the proximity code off the screen (zbarimg reads a screenshot) and sends it along.
            let shot = try await browser.screenshot(of: "#proximity", "02-proximity-qr")
            let text = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            let scanned = try #require(ProximityCode(parsing: text))
            #expect(scanned.operationId == operation.id)

            let operations = OperationsService(client: client)
            try await operations.authorize(
                LocalOperation(
                    id: operation.id, data: operation.data,
                    proximityCheck: ProximityCheck(
                        otp: scanned.totp, type: .qrCode, timestampReceived: Date(), timestampSent: Date())),
                factor: .pin("1234"))
            var current = ""
            for _ in 0..<300 where !current.contains("status=") {
                try await Task.sleep(for: .milliseconds(200))
                current = try await browser.url()
            }
            #expect(
                current == "\(Self.relyingParty(base))/health?from=bank&operation_id=\(operation.id)&status=APPROVED")
            try await browser.screenshot("03-returned")
            await browser.quit()
        }
    }
}

extension ApprovalPageBrowserTests {
    @Test("A link with offline shows an offline QR code; the code the app shows approves, a wrong one is counted")
    func offline() async throws {
        try await SDKClients.withActivatedClient(.sqlite) { server, http, client, _ in
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("approve-offline"))
            defer { Task { await browser.quit() } }
            let base = http.base.absoluteString
            let operation = try await server.createOperation(http, try OperationFixtures.payment(userId: "alice"))
            let link = try await server.operatorCall(
                http, "POST", "/api/v1/operations/\(operation.id)/approval-link",
                body: try OperatorJSON.encoder().encode(
                    ApprovalLinkRequest(returnUrl: "\(Self.relyingParty(base))/health?from=bank", offline: true)),
                as: ApprovalLinkResponse.self)
            let url = try #require(URLComponents(string: link.url))
            try await browser.open("\(base)\(url.path)?\(url.query ?? "")")
            // A phone cannot scan its own screen: on a phone-sized screen the page does not offer it.
            try await browser.resize(Browser.phone)
            try await browser.screenshot("00-waiting-phone")
            #expect(
                try await browser.execute("return document.querySelector('#offline').offsetParent === null;")
                    as? Bool == true)
            try await browser.resize(Browser.desktop)
            try await browser.click("#offline")
            try await browser.expectText("h1", "Approve without a connection")
            let shot = try await browser.screenshot(of: "#offline-qr", "01-offline-qr")
            try await browser.screenshot("01-offline")
            let text = try #require(try await QRReader.scan(png: shot), "no QR code on the page")
            // The app checks the QR code's signature and signs the operation with the PIN, offline.
            let operations = OperationsService(client: client)
            let qr = try await operations.parseOfflineOperation(text)
            #expect(qr.operationId == operation.id)
            let code = try await operations.offlineApprovalCode(for: qr, pin: "1234")

            try await browser.type("#code", "12345678-12345678")
            try await browser.click("#verify")
            try await browser.expectText(".message", "The code is wrong: 4 tries left. Check it on the phone.")
            try await browser.screenshot("02-wrong-code")
            // The same QR code is shown again: the code from the first scan still works.
            let again = try await browser.screenshot(of: "#offline-qr", "03-same-qr")
            #expect(try await QRReader.scan(png: again) == text)
            try await browser.type("#code", code)
            try await browser.click("#verify")
            var current = ""
            for _ in 0..<300 where !current.contains("status=") {
                try await Task.sleep(for: .milliseconds(200))
                current = try await browser.url()
            }
            // The relying party is another site: the page's CSP must let the form's redirect reach it.
            #expect(
                current == "\(Self.relyingParty(base))/health?from=bank&operation_id=\(operation.id)&status=APPROVED")
            #expect(try await server.operation(http, operation.id).status == .approved)
            await browser.quit()
        }
    }
}

@Suite("Waiting-for-approval page: signed links")
struct ApprovalPageLinkTests {

    @Test(
        "Links are signed for one operation and expire; return URLs are absolute http(s); finished → return URL",
        arguments: Backend.all)
    func links(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            let key: HTTPFields = [.authorization: "Bearer \(server.apiKey)", .contentType: "application/json"]
            func call(_ method: HTTPRequest.Method, _ uri: String, json: Data? = nil) async throws -> PageAnswer {
                try await PageAnswer.fetch(client, method, uri, json: json, headers: json == nil ? [:] : key)
            }
            func create() async throws -> OperationInfo {
                let page = try await call(
                    .post, "/api/v1/operations",
                    json: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")))
                return try OperatorJSON.decoder().decode(OperationInfo.self, from: Data(page.body.utf8))
            }
            func link(_ id: String, _ request: ApprovalLinkRequest) async throws -> PageAnswer {
                try await call(
                    .post, "/api/v1/operations/\(id)/approval-link", json: try OperatorJSON.encoder().encode(request))
            }
            /// The page's path and query of a link.
            func path(_ page: PageAnswer) throws -> String {
                let url = try #require(
                    URLComponents(
                        string: try OperatorJSON.decoder().decode(ApprovalLinkResponse.self, from: Data(page.body.utf8))
                            .url))
                return "\(url.path)?\(url.query ?? "")"
            }

            let payment = try await create()
            let other = try await create()
            for bad in ["javascript:alert(1)", "/relative", "https://", String(repeating: "a", count: 3000)] {
                let refused = try await link(payment.id, ApprovalLinkRequest(returnUrl: bad))
                #expect(refused.status == .badRequest, "\(bad.prefix(40))")
            }
            #expect(
                try await link(payment.id, ApprovalLinkRequest(returnUrl: "https://bank.example/", expiresIn: 5))
                    .status == .badRequest)
            let answer = try await link(payment.id, ApprovalLinkRequest(returnUrl: "https://bank.example/done?x=1"))
            // The link as a person copies it from the answer: no escaped slashes.
            #expect(answer.body.contains("\"url\":\"http") && !answer.body.contains("\\/"), "\(answer.body)")
            let page = try path(answer)

            let shown = try await call(.get, page)
            #expect(shown.status == .ok && shown.body.contains("Confirm Payment"))
            // A Czech browser gets the page in Czech and the operation's Czech texts: one language on the page.
            let czechBrowser = try await PageAnswer.fetch(client, .get, page, headers: [.acceptLanguage: "cs-CZ"])
            #expect(czechBrowser.body.contains("Potvrďte platbu") && !czechBrowser.body.contains("Confirm Payment"))
            #expect(czechBrowser.body.contains("<html lang=\"cs\">") && czechBrowser.body.contains("lang=\"cs\""))
            #expect(shown.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(shown.body.contains("/web/assets/wait.js"))
            #expect(!shown.body.contains("proximity.png"), "no proximity check, no QR code")
            #expect(!shown.body.contains("id=\"offline\""), "no offline approval unless the link offers it")
            #expect(
                try await call(.get, page.replacingOccurrences(of: "?t=", with: "/offline?t=")).status == .notFound)
            #expect(
                try await call(.get, page.replacingOccurrences(of: "?t=", with: "/proximity.png?t=")).status
                    == .notFound)
            // The offline page's form ends at the return URL: its CSP allows that origin and no other.
            let offline = try path(
                try await link(
                    payment.id, ApprovalLinkRequest(returnUrl: "https://Bank.example:8443/done", offline: true)))
            let offlineShown = try await call(.get, offline.replacingOccurrences(of: "?t=", with: "/offline?t="))
            #expect(offlineShown.status == .ok)
            #expect(
                offlineShown.headers[.contentSecurityPolicy]?.contains(
                    "form-action 'self' https://bank.example:8443;") == true)
            #expect(shown.headers[.contentSecurityPolicy]?.contains("form-action 'self';") == true)
            #expect(WebPages.origin(of: "http://[::1]:8443/done") == "http://[::1]:8443")
            #expect(WebPages.origin(of: "https://bank.example/x?y") == "https://bank.example")
            #expect(WebPages.origin(of: "https://bank.example;script-src *") == nil)
            // Browsers ask for /favicon.ico whatever the page links: it is the icon, not a 404.
            let icon = try await call(.get, "/favicon.ico")
            #expect(icon.status == .ok && icon.headers[.contentType] == "image/svg+xml")
            // Tampered, missing, or for another operation: refused.
            var characters = Array(page)
            characters[characters.count - 10] = characters[characters.count - 10] == "A" ? "B" : "A"
            let tampered = String(characters)
            for refused in [
                tampered, "/approve/\(payment.id)", page.replacingOccurrences(of: payment.id, with: other.id),
            ] {
                let answer = try await call(.get, refused)
                #expect(answer.status == .forbidden && answer.body.contains("This approval link is invalid"))
            }
            // Still pending: Continue shows the page again; once finished it goes to the return URL.
            let continuePath = page.replacingOccurrences(of: "?t=", with: "/continue?t=")
            let early = try await call(.get, continuePath)
            #expect(early.status == .ok && early.body.contains("Not answered yet"))
            _ = try await call(
                .post, "/api/v1/operations/\(payment.id)/cancel",
                json: try OperatorJSON.encoder().encode(CancelOperationRequest(reason: nil)))
            let done = try await call(.get, continuePath)
            #expect(done.status == .seeOther)
            #expect(
                done.headers[.location]
                    == "https://bank.example/done?x=1&operation_id=\(payment.id)&status=CANCELED")
            let events = try await call(.get, page.replacingOccurrences(of: "?t=", with: "/events?t="))
            #expect(events.body.contains("event: done"))
            #expect(try await call(.get, page).body.contains("The request is canceled."))
            let finished = try await link(payment.id, ApprovalLinkRequest(returnUrl: "https://bank.example/"))
            #expect(finished.status == .conflict)

            // A link for 60 seconds no longer works after them.
            let short = try path(
                try await link(other.id, ApprovalLinkRequest(returnUrl: "https://bank.example/", expiresIn: 60)))
            #expect(try await call(.get, short).status == .ok)
            server.clock.advance(by: 61)
            #expect(try await call(.get, short).status == .forbidden)
        }
    }
}
