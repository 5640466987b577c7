import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

/// Passkeys on the hosted pages in headless Chromium with its virtual authenticator (CTAP2, internal, resident keys,
/// user verification): a person creates a passkey as the second factor, signs out, signs in with the passkey alone
/// (no user name typed), uses it as the second factor after a password; a counter set back on the authenticator is
/// refused and blocks the credential; a page on another origin than the relying party's gets no passkey; a passkey
/// the operator removed is refused. The pages are at `localhost` (WebAuthn takes no IP address as RP ID).
@Suite("Passkeys on the hosted pages in a real browser", .serialized)
struct PasskeyBrowserTests {
    @Test(
        "Create a passkey, sign in with it alone and as a second factor; counter, origin and removal refused",
        arguments: Backend.all)
    func passkeys(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("passkeys-\(backend)"))
            defer { Task { await browser.quit() } }
            let authenticator = try await browser.addVirtualAuthenticator()
            let tfa = TFAClient(server: server, client: http)
            try await tfa.createAccount("alice")
            let port = try #require(http.base.port)
            let base = "http://localhost:\(port)"

            // Password, then the second factor to set up: a passkey.
            try await browser.open("\(base)/login")
            try await browser.expectText("h1", "Sign in")
            #expect(try await browser.attribute("#userId", "autocomplete") == "username webauthn")
            try await browser.element("#passkey-button")
            try await browser.screenshot("01-sign-in")
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.expectText("h1", "Set up a second factor")
            try await browser.click("#provider-passkey")
            try await browser.expectText("h1", "Create a passkey")
            try await browser.element("#passkey-start")
            try await browser.screenshot("02-create-passkey")
            try await browser.expectPhoneLayout("02-create-passkey-phone")
            try await browser.resize(Browser.desktop)
            try await browser.type("#name", "Work laptop")
            try await browser.click("#passkey-start")
            try await browser.expectText("#methods", "password and a passkey")
            try await browser.screenshot("03-signed-in-passkey-created")
            let stored = try await server.store.passkeys(applicationId: server.application.id, userId: "alice")
            #expect(stored.count == 1 && stored.first?.multiDevice == false)
            let held = try await browser.virtualCredentials(authenticator)
            #expect(held.count == 1 && held.first?["isResidentCredential"] as? Bool == true)

            // Signed out: the sign-in page offers the browser's passkey in the user-name field (conditional
            // mediation), and the virtual authenticator, like a person picking the suggestion, takes it at once —
            // signed in with the passkey alone, no user name, no password.
            try await browser.click("#logout")
            try await browser.expectText("#signed-in", "You are signed in to \(server.application.name) as alice.")
            try await browser.expectText("#methods", "a passkey")
            try await browser.screenshot("04-signed-in-passwordless")
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "passkey."), limit: 20)
            #expect(audit.contains { $0.type == "passkey.sign_in" && $0.userId == "alice" })

            // The same with the button, in a browser that offers no suggestion in the field (no conditional
            // mediation: with one waiting, the virtual authenticator would answer it before the click). It stays so
            // for the rest of the test: a sign-in page asks for its suggestion only after fetching options, so a
            // suggestion asked for just after the authenticator is told to answer again would sign in behind the
            // test's back.
            _ = try await browser.devTools(
                "Page.addScriptToEvaluateOnNewDocument",
                [
                    "source":
                        "PublicKeyCredential.isConditionalMediationAvailable = function () { return Promise.resolve(false); };"
                ])
            try await browser.signOutOfHostedPages()
            try await browser.click("#passkey-button")
            try await browser.expectText("#methods", "a passkey")

            // The passkey as the second factor after a password.
            try await browser.virtualPresence(authenticator, false)
            try await browser.signOutOfHostedPages()
            try await browser.type("#userId", "alice")
            try await browser.type("#password", "correct horse battery")
            try await browser.click("#submit")
            try await browser.expectText("h1", "Confirm it is you")
            try await browser.click("#provider-passkey")
            try await browser.expectText("h1", "Use your passkey")
            try await browser.screenshot("05-use-passkey")
            try await browser.virtualPresence(authenticator, true)
            try await browser.click("#passkey-start")
            try await browser.expectText("#methods", "password and a passkey")
            try await browser.virtualPresence(authenticator, false)
            try await browser.signOutOfHostedPages()
            try await browser.virtualPresence(authenticator, true)

            // A page on another origin than the relying party's (the server's IP address) gets no passkey from the
            // browser: it says so, and nothing is signed in.
            try await browser.open("http://127.0.0.1:\(port)/login")
            try await browser.click("#passkey-button")
            try await browser.expectText("#passkey-status", containing: "could not use a passkey")
            try await browser.screenshot("06-other-origin")

            // Sign in with Assent: a website on another site (127.0.0.1) asks for two factors; the passkey alone
            // gives them, and the ID token says how.
            let redirect = "http://127.0.0.1:\(port)/health?rp=shop"
            let client = try await server.operatorCall(
                http, "POST", "/api/v1/clients",
                body: try OperatorJSON.encoder().encode(
                    CreateClientRequest(name: "Shop", scopes: ["profile"], redirectUris: [redirect], type: "public")),
                as: CreateClientResponse.self
            ).client.clientId
            let pkce = CodeFlowClient.pkce()
            let query = FormEncoding.encode([
                "client_id": client, "redirect_uri": redirect, "response_type": "code", "scope": "openid",
                "state": "shop-1", "nonce": "nonce-1", "code_challenge": pkce.challenge,
                "code_challenge_method": "S256", "acr_values": "urn:assent:acr:mfa",
            ])
            try await browser.virtualPresence(authenticator, false)
            try await browser.open("http://127.0.0.1:\(port)/health")
            try await AuthorizationBrowserTests.follow(
                browser, "\(base)/oauth2/authorize?\(String(decoding: query, as: UTF8.self))")
            try await browser.expectText("#client", "to continue to Shop")
            try await browser.virtualPresence(authenticator, true)
            try await browser.click("#passkey-button")
            let back = try await AuthorizationBrowserTests.address(browser, startingWith: "\(redirect)&code=")
            let token = try await http.send(
                "POST", "/oauth2/token", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: FormEncoding.encode([
                    "grant_type": "authorization_code", "code": try #require(CodeFlowClient.query(back)["code"]),
                    "redirect_uri": redirect, "code_verifier": pkce.verifier, "client_id": client,
                ]))
            #expect(token.status == 200, "\(token.text)")
            let claims = try await AuthorizationBrowserTests.verified(
                http, try JSONDecoder().decode(OAuthTokenResponse.self, from: token.body).idToken)
            #expect(claims.sub.value == "alice" && claims.acr == "urn:assent:acr:mfa")
            #expect(claims.amr == ["hwk", "user", "mfa"])
            try await browser.virtualPresence(authenticator, false)
            try await browser.open("\(base)/login/done")
            try await browser.signOutOfHostedPages()

            // The authenticator's counter set back, as a copy of the key would have it: refused, and the passkey
            // blocked even when the counter goes forward again.
            try await browser.virtualPresence(authenticator, false)
            try await browser.open("\(base)/login")
            try await browser.expectText("h1", "Sign in")
            try await browser.virtualPresence(authenticator, true)
            let used = try #require(try await browser.virtualCredentials(authenticator).first)
            let count = try #require(used["signCount"] as? Int)
            #expect(count >= 2)
            var copy = used
            copy["signCount"] = 1
            try await browser.replaceVirtualCredential(authenticator, copy)
            try await browser.click("#passkey-button")
            try await browser.expectText(".message", containing: "did not go past the stored one")
            try await browser.screenshot("07-counter-went-back")
            copy["signCount"] = count + 10
            try await browser.replaceVirtualCredential(authenticator, copy)
            try await browser.click("#passkey-button")
            try await browser.expectText(".message", containing: "blocked because it may have been copied")
            let flagged = try await server.store.passkeys(applicationId: server.application.id, userId: "alice")
            #expect(flagged.first?.flaggedAt != nil)

            // The operator removes it: the browser's passkey is not registered any more.
            let factor = try #require(flagged.first?.factorId)
            let removed = try await http.send(
                "DELETE", "/api/v1/tfa/accounts/alice/factors/\(factor)",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(removed.status == 204)
            try await browser.click("#passkey-button")
            try await browser.expectText(".message", containing: "not registered")
            try await browser.screenshot("08-removed")
        }
    }
}
