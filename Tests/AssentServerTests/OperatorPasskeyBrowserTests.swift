import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// An operator's passkey as the console's second factor, in headless Chromium with its virtual authenticator: added
/// on "Your account", then the password and the passkey sign in without the authenticator app's code. Screenshots
/// in `.build/test-artefacts/console-passkeys/<database>/`.
@Suite("Operator passkeys and phones in a real browser", .serialized)
struct OperatorPasskeyBrowserTests {
    /// Creates the admin `name` and sets the account up in the browser with the one-time link (opened on `host`);
    /// returns the TOTP key the page showed. The browser is signed in afterwards.
    static func setUpAdmin(
        _ name: String, _ server: TestServer, _ client: HTTPClient, _ browser: Browser, host: String = "127.0.0.1"
    ) async throws -> String {
        let setup = try await server.operatorCall(
            client, "POST", "/api/v1/operators",
            body: try OperatorJSON.encoder().encode(CreateOperatorRequest(name: name, role: "admin")),
            as: OperatorSetup.self)
        try await browser.open(setup.setupLink.replacingOccurrences(of: "127.0.0.1", with: host))
        let secret = try await browser.text("#secret")
        try await browser.type("#password", "a long enough password")
        try await browser.type("#confirm", "a long enough password")
        try await browser.type("#code", try OperatorAccountTests.code(secret, at: server.environment.now()))
        try await browser.click("#submit")
        try await browser.expectText("h1", "Dashboard")
        return secret
    }

    @Test(
        "An operator adds a passkey and signs in with password and passkey; a wrong password or no passkey is refused; a reset clears it",
        arguments: Backend.all)
    func passkeys(_ backend: Backend) async throws {
        let server = try await TestServer.withOperatorConsole(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let browser = try await Browser(
                artefacts: LoginPageBrowserTests.artefacts("console-passkeys/\(backend.rawValue)"))
            defer { Task { await browser.quit() } }
            // WebAuthn takes no IP address as a relying party: the console is opened on localhost.
            let origin = client.base.absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            let secret = try await Self.setUpAdmin("paula", server, client, browser, host: "localhost")

            // Without a passkey the passkey button says how to get one.
            try await browser.signOutOfConsole()
            try await browser.type("#name", "paula")
            try await browser.type("#password", "a long enough password")
            try await browser.click("#operator-passkey")
            try await browser.expectText(".message", containing: "Your account has no passkey yet")
            server.clock.advance(by: 30)
            try await browser.type("#name", "paula")
            try await browser.type("#password", "a long enough password")
            try await browser.type("#code", try OperatorAccountTests.code(secret, at: server.environment.now()))
            try await browser.click("#operator-submit")
            try await browser.expectText("#operator", "paula (admin)")

            // Added on her own page with the browser's (virtual) authenticator.
            let authenticator = try await browser.addVirtualAuthenticator()
            try await browser.open("\(origin)/console/me")
            try await browser.type("#passkey-label", "Work laptop")
            try await browser.click("#passkey-start")
            try await browser.expectText("#notice", containing: "Passkey \"Work laptop\" added")
            try await browser.expectText("#passkeys", containing: "Work laptop")
            try await browser.screenshot("01-passkey-added")
            #expect(try await browser.virtualCredentials(authenticator).first?["rpId"] as? String == "localhost")
            let operatorId = try #require(try await server.store.operatorRecord(name: "paula")?.id)
            #expect(try await server.store.operatorPasskeys(operatorId: operatorId).map(\.name) == ["Work laptop"])

            // A wrong password never reaches the passkey.
            try await browser.signOutOfConsole()
            try await browser.type("#name", "paula")
            try await browser.type("#password", "not her password at all")
            try await browser.click("#operator-passkey")
            try await browser.expectText(".message", containing: "The name or password is not right")

            // The password, then the passkey: signed in without a code.
            try await browser.type("#name", "paula")
            try await browser.type("#password", "a long enough password")
            try await browser.click("#operator-passkey")
            try await browser.expectText("h1", "Sign in with your passkey")
            try await browser.screenshot("02-passkey-step")
            try await browser.expectPhoneLayout("02-passkey-step-phone")
            try await browser.resize(Browser.desktop)
            // The half-done sign-in opens no console page.
            try await browser.open("\(origin)/console/users")
            try await browser.expectText("h1", "Sign in to the console")
            try await browser.type("#name", "paula")
            try await browser.type("#password", "a long enough password")
            try await browser.click("#operator-passkey")
            try await browser.click("#passkey-start")
            try await browser.expectText("#operator", "paula (admin)")
            try await browser.screenshot("03-signed-in-with-passkey")
            let signedIn = try await server.store.auditEvents(AuditFilter(typePrefix: "console.signed_in"), limit: 5)
            #expect(signedIn.first?.actor == "operator:paula")
            let used = try await server.store.operatorPasskeys(operatorId: operatorId)
            #expect(used.first?.lastUsedAt != nil && (used.first?.signCount ?? 0) > 0)

            // Removed (asked first): the passkey signs in no more.
            try await browser.open("\(origin)/console/me")
            try await browser.click("#passkeys button")
            try await browser.expectText("h1", "Remove a passkey")
            try await browser.click("#confirm")
            try await browser.expectText("#notice", "Passkey removed.")
            #expect(try await server.store.operatorPasskeys(operatorId: operatorId).isEmpty)

            // A reset by an admin clears her passkeys with the password and TOTP.
            try await browser.type("#passkey-label", "Security key")
            try await browser.click("#passkey-start")
            try await browser.expectText("#notice", containing: "Passkey \"Security key\" added")
            // (Another admin first: the last admin who can sign in is never reset.)
            _ = try await OperatorAccountTests.setUpOperator(server, "ada", role: .admin)
            _ = try await server.operatorCall(
                client, "POST", "/api/v1/operators/paula/reset", as: OperatorSetup.self)
            #expect(try await server.store.operatorPasskeys(operatorId: operatorId).isEmpty)
            let events = try await server.store.auditEvents(AuditFilter(typePrefix: "operator.passkey"), limit: 10)
            #expect(
                events.map(\.type).sorted() == [
                    "operator.passkey_added", "operator.passkey_added", "operator.passkey_removed",
                ])
        }
    }

    @Test(
        "An operator links a phone by approving on it, then signs in with password and the number on the phone; another number refuses",
        arguments: Backend.all)
    func phone(_ backend: Backend) async throws {
        let server = try await TestServer.withOperatorConsole(backend)
        defer { Task { await server.shutdown() } }
        let root = SDKClients.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await server.live { client in
            let browser = try await Browser(
                artefacts: LoginPageBrowserTests.artefacts("console-phone/\(backend.rawValue)"))
            defer { Task { await browser.quit() } }
            let secret = try await Self.setUpAdmin("pete", server, client, browser)
            let phone = try await SDKClients.activatedClient(
                server, client, directory: root.appendingPathComponent("phone"), userId: "pete-phone")
            let operations = OperationsService(client: phone)
            func pending() async throws -> MobileOperation {
                for _ in 0..<100 {
                    if let request = try await operations.pending().value.first { return request }
                    try await Task.sleep(for: .milliseconds(100))
                }
                throw TestFailure("The phone never received the request.")
            }
            func passwordThenPhone() async throws {
                try await browser.type("#name", "pete")
                try await browser.type("#password", "a long enough password")
                try await browser.click("#operator-phone")
            }

            // Without a linked phone the button says how to link one.
            try await browser.signOutOfConsole()
            try await passwordThenPhone()
            try await browser.expectText(".message", containing: "Your account has no phone to approve sign-ins")
            server.clock.advance(by: 30)
            try await browser.type("#name", "pete")
            try await browser.type("#password", "a long enough password")
            try await browser.type("#code", try OperatorAccountTests.code(secret, at: server.environment.now()))
            try await browser.click("#operator-submit")
            try await browser.expectText("#operator", "pete (admin)")

            // Linked on his page by approving the request on the phone; a user with no phone is refused.
            try await browser.open("\(client.base.absoluteString)/console/me")
            try await browser.type("#phone-user", "nobody")
            try await browser.click("#link-phone-start")
            try await browser.expectText(".message", containing: "has no active phone of the user nobody")
            try await browser.type("#phone-user", "pete-phone")
            try await browser.click("#link-phone-start")
            try await browser.expectText("#notice", containing: "Approve the request on your phone")
            try await browser.click("#check-phone")
            try await browser.expectText(".message", containing: "has not approved the request yet")
            let link = try await pending()
            #expect(link.formData.title == "Approve console sign-ins with this phone?")
            try await operations.authorize(link, factor: .pin("1234"))
            try await browser.click("#check-phone")
            try await browser.expectText("#notice", containing: "approves your sign-ins from now on")
            try await browser.expectText("#phone", containing: "user pete-phone")
            try await browser.screenshot("01-phone-linked")

            // Password, then the number on the phone: signed in without a code.
            try await browser.signOutOfConsole()
            try await passwordThenPhone()
            try await browser.expectText("h1", "Approve on your phone")
            let number = try #require(Int(try await browser.text("#number")))
            try await browser.screenshot("02-phone-number")
            try await browser.expectPhoneLayout("02-phone-number-phone")
            try await browser.resize(Browser.desktop)
            let request = try await pending()
            #expect(request.formData.title == "Sign in to the Assent console?")
            #expect(request.numberMatching?.choices.contains(number) == true)
            try await operations.authorize(request, factor: .pin("1234"), number: number)
            try await browser.expectText("#operator", "pete (admin)")
            let signedIn = try await server.store.auditEvents(AuditFilter(typePrefix: "console.signed_in"), limit: 5)
            #expect(signedIn.first?.actor == "operator:pete")

            // Another number on the phone: refused, and the sign-in starts again.
            try await browser.signOutOfConsole()
            try await passwordThenPhone()
            let shown = try #require(Int(try await browser.text("#number")))
            let wrong = try await pending()
            let other = try #require(wrong.numberMatching?.choices.first { $0 != shown })
            _ = try? await operations.authorize(wrong, factor: .pin("1234"), number: other)
            try await browser.expectText(".message", containing: "another number")
            try await browser.expectText("h1", "Sign in to the console")
            let linked = try await server.store.auditEvents(AuditFilter(typePrefix: "operator.phone"), limit: 5)
            #expect(linked.map(\.type) == ["operator.phone_linked"])
        }
    }
}
