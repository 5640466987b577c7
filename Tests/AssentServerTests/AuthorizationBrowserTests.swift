import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import JWTKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// "Sign in with Assent" as a person meets it: a website on another site than the server (`localhost` against the
/// server's `127.0.0.1`) sends the browser to the authorization endpoint; the hosted pages sign the person in with a
/// password and an authenticator app's code and send the browser back with a code; a second client of the same
/// session gets its code with no page at all; a client that asks for approval on a phone gets it as a step-up.
@Suite("OpenID Connect sign-in in a real browser", .serialized)
struct AuthorizationBrowserTests {
    /// Waits until the browser's address starts with `prefix`; returns it.
    static func address(_ browser: Browser, startingWith prefix: String) async throws -> String {
        for _ in 0..<150 {
            let url = try await browser.url()
            if url.hasPrefix(prefix) { return url }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("The browser did not reach \(prefix): it is at \(try await browser.url())")
    }

    /// The website's own page leads the browser to `url` (a cross-site navigation, as a link on the site is).
    static func follow(_ browser: Browser, _ url: String) async throws {
        _ = try await browser.execute(
            "window.location.href = \(String(decoding: try JSONEncoder().encode(url), as: UTF8.self));")
    }

    @Test(
        "Password and TOTP on the hosted pages, back to the website with a code; a second client signs in by SSO",
        arguments: Backend.all)
    func signIn(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let logouts = WebhookReceiver(answer: .ok)
        try await logouts.run { logoutURL in
            try await server.live { http in
                let browser = try await Browser(artefacts: LoginPageBrowserTests.artefacts("openid-\(backend)"))
                defer { Task { await browser.quit() } }
                let tfa = TFAClient(server: server, client: http)
                try await tfa.createAccount("alice")
                let (uri, _) = try await tfa.registerTOTP("alice")
                let base = http.base.absoluteString
                let site = ApprovalPageBrowserTests.relyingParty(base)
                func register(
                    _ name: String, _ redirect: String, type: String?, thirdParty: Bool? = nil, logout: String? = nil
                ) async throws -> TestRelyingParty {
                    let created = try await server.operatorCall(
                        http, "POST", "/api/v1/clients",
                        body: try OperatorJSON.encoder().encode(
                            CreateClientRequest(
                                name: name, scopes: ["profile", "email"], redirectUris: [redirect], type: type,
                                backchannelLogoutUri: logout, thirdParty: thirdParty)),
                        as: CreateClientResponse.self)
                    return TestRelyingParty(
                        client: http, clientId: created.client.clientId, secret: created.clientSecret ?? "")
                }
                let shopRedirect = "\(site)/health?rp=shop"
                let appRedirect = "\(site)/health?rp=app"
                let shop = try await register("Shop", shopRedirect, type: nil, logout: logoutURL.absoluteString)
                let app = try await register("App", appRedirect, type: "public")
                func authorizeURL(
                    _ party: TestRelyingParty, _ redirect: String, _ challenge: String, state: String,
                    acr: String = "urn:assent:acr:mfa"
                ) -> String {
                    let query = FormEncoding.encode([
                        "client_id": party.clientId, "redirect_uri": redirect, "response_type": "code",
                        "scope": "openid", "state": state, "nonce": "nonce-\(state)", "code_challenge": challenge,
                        "code_challenge_method": "S256", "login_hint": "alice", "acr_values": acr,
                    ])
                    return "\(base)/oauth2/authorize?\(String(decoding: query, as: UTF8.self))"
                }
                func redeem(_ party: TestRelyingParty, _ address: String, _ redirect: String, _ verifier: String)
                    async throws -> (OAuthTokenResponse, VerifiedCodeIDToken)
                {
                    let query = CodeFlowClient.query(address)
                    #expect(query["iss"] == base)
                    var fields = [
                        "grant_type": "authorization_code", "code": try #require(query["code"]),
                        "redirect_uri": redirect,
                        "code_verifier": verifier,
                    ]
                    var poster = party
                    if party.secret.isEmpty {
                        // A public client: its id, no secret.
                        fields["client_id"] = party.clientId
                        let response = try await http.send(
                            "POST", "/oauth2/token", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                            body: FormEncoding.encode(fields))
                        #expect(response.status == 200, "\(response.text)")
                        let tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: response.body)
                        return (tokens, try await Self.verified(http, tokens.idToken))
                    }
                    poster.basic = true
                    let response = try await poster.post("/oauth2/token", fields)
                    #expect(response.status == 200, "\(response.text)")
                    let tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: response.body)
                    return (tokens, try await Self.verified(http, tokens.idToken))
                }

                // The website's page, then its "Sign in with Assent" link.
                let shopPKCE = CodeFlowClient.pkce()
                try await browser.open("\(site)/health")
                try await Self.follow(browser, authorizeURL(shop, shopRedirect, shopPKCE.challenge, state: "shop-1"))
                try await browser.expectText("h1", "Sign in")
                try await browser.expectText("#client", "to continue to Shop")
                #expect(try await browser.attribute("#userId", "value") == "alice", "login_hint fills in the user name")
                try await browser.screenshot("01-sign-in")
                try await browser.expectPhoneLayout("01-sign-in-phone")
                try await browser.type("#password", "correct horse battery")
                try await browser.click("#submit")
                try await browser.expectText("h1", "Confirm it is you")
                try await browser.click("#provider-totp")
                server.clock.advance(by: 30)
                try await browser.element("#code")
                try await browser.type("#code", try await Oathtool.code(uri: uri, at: server.environment.now()))
                try await browser.screenshot("02-code")
                try await browser.click("#verify")

                // Back on the website, with the code: its tokens say who signed in, and how.
                let back = try await Self.address(browser, startingWith: "\(shopRedirect)&code=")
                #expect(CodeFlowClient.query(back)["state"] == "shop-1")
                let (_, shopClaims) = try await redeem(shop, back, shopRedirect, shopPKCE.verifier)
                #expect(shopClaims.sub.value == "alice" && shopClaims.nonce == "nonce-shop-1")
                #expect(shopClaims.acr == "urn:assent:acr:mfa" && shopClaims.amr == ["pwd", "otp", "mfa"])

                // Another client, from the website's page again: the session's cookie comes along on the cross-site
                // navigation, so the browser comes straight back with a code — no password, no page.
                let appPKCE = CodeFlowClient.pkce()
                try await Self.follow(browser, authorizeURL(app, appRedirect, appPKCE.challenge, state: "app-1"))
                let ssoBack = try await Self.address(browser, startingWith: "\(appRedirect)&code=")
                let (_, appClaims) = try await redeem(app, ssoBack, appRedirect, appPKCE.verifier)
                #expect(appClaims.sid == shopClaims.sid && appClaims.authTime == shopClaims.authTime)
                #expect(appClaims.aud.value == [app.clientId] && appClaims.acr == "urn:assent:acr:mfa")

                // A third-party client: the person is asked first, once.
                let partnerRedirect = "\(site)/health?rp=partner"
                let partner = try await register("Partner", partnerRedirect, type: nil, thirdParty: true)
                let partnerPKCE = CodeFlowClient.pkce()
                try await Self.follow(
                    browser, authorizeURL(partner, partnerRedirect, partnerPKCE.challenge, state: "p-1"))
                try await browser.expectText("h1", "Allow Partner?")
                try await browser.expectText("#scopes", containing: "Know that it is you when you sign in")
                try await browser.screenshot("04-consent")
                try await browser.expectPhoneLayout("04-consent-phone")
                try await browser.click("#allow")
                let partnerBack = try await Self.address(browser, startingWith: "\(partnerRedirect)&code=")
                let (_, partnerClaims) = try await redeem(partner, partnerBack, partnerRedirect, partnerPKCE.verifier)
                #expect(partnerClaims.sid == shopClaims.sid)

                // A client that asks for approval on a phone: only that factor is asked (no password), then the code.
                // The phone's factor is put in place directly: people add factors themselves only once self-service
                // exists; here the account's TOTP would otherwise be its only one.
                let root = SDKClients.directory()
                defer { try? FileManager.default.removeItem(at: root) }
                let phone = try await SDKClients.activatedClient(
                    server, http, directory: root.appendingPathComponent("p"))
                try await server.store.insertTFAFactor(
                    TFAFactorRecord(
                        id: "push-factor", applicationId: server.application.id, userId: "alice", provider: .push,
                        state: .active, destination: await phone.registrationId,
                        createdAt: server.environment.nowMillis))
                let stepPKCE = CodeFlowClient.pkce()
                try await Self.follow(
                    browser,
                    authorizeURL(shop, shopRedirect, stepPKCE.challenge, state: "shop-2", acr: "urn:assent:acr:phone"))
                try await browser.expectText("h1", "Confirm it is you")
                try await browser.expectText("#notice", "Shop asks you to approve this sign-in on your phone.")
                #expect(try await browser.exists("#provider-totp") == false, "TOTP does not meet the class asked for")
                try await browser.screenshot("05-step-up")
                try await browser.click("#provider-push")
                try await browser.element("#status")
                let operations = OperationsService(client: phone)
                var pending: MobileOperation?
                for _ in 0..<100 where pending == nil {
                    pending = try await operations.pending().value.first
                    if pending == nil { try await Task.sleep(for: .milliseconds(100)) }
                }
                let number = try #require(Int(try await browser.text("#number")), "the page shows the number")
                #expect(pending?.numberMatching?.choices.contains(number) == true)
                try await operations.authorize(
                    try #require(pending, "the phone got no request"), factor: .pin("1234"), number: number)
                let stepBack = try await Self.address(browser, startingWith: "\(shopRedirect)&code=")
                let (_, stepClaims) = try await redeem(shop, stepBack, shopRedirect, stepPKCE.verifier)
                // The step-up adds its factor to the session's sign-in (password and app code, then the phone).
                #expect(
                    stepClaims.acr == "urn:assent:acr:phone" && stepClaims.amr == ["pwd", "otp", "hwk", "mfa"],
                    "\(stepClaims.amr)")
                #expect(stepClaims.authTime == shopClaims.authTime, "the step-up asked no password again")
                #expect(stepClaims.sid == shopClaims.sid, "a step-up stays the same session")

                // On the provider's own pages the person is signed in; its cookie: Secure, HttpOnly, SameSite=Lax.
                try await browser.open("\(base)/login")
                try await browser.expectText("#methods", "password, authenticator app and approval on your phone")
                try await browser.screenshot("06-signed-in")
                let cookies = try await browser.cookies()
                let session = try #require(cookies["__Host-assent-login"])
                #expect(session["sameSite"] as? String == "Lax" && session["httpOnly"] as? Bool == true)

                // Signing out ends the session: the site that registered a back-channel logout URI is told, through the
                // outbox, with a logout token for this session.
                try await browser.signOutOfHostedPages()
                let delivered = try #require(try await logouts.wait(for: 1).first)
                let token = try #require(try FormEncoding.decode(delivered.body)["logout_token"])
                let jwks = try await http.send("GET", "/oauth2/jwks")
                let logout = try await JWTKeyCollection().add(jwksJSON: jwks.text)
                    .verify(token, as: AuthorizationCodeTests.VerifiedLogoutToken.self)
                #expect(
                    logout.sid == shopClaims.sid && logout.aud.value == [shop.clientId] && logout.sub.value == "alice")
                await browser.quit()
            }
        }
    }

    static func verified(_ http: AssentTesting.HTTPClient, _ idToken: String) async throws -> VerifiedCodeIDToken {
        let jwks = try await http.send("GET", "/oauth2/jwks")
        return try await JWTKeyCollection().add(jwksJSON: jwks.text).verify(idToken, as: VerifiedCodeIDToken.self)
    }
}

/// A website built on an OpenID Connect library we did not write: authlib (Debian's `python3-authlib`) reads discovery,
/// sends the person to the authorization endpoint with PKCE, redeems the code and verifies the ID token.
@Suite("OpenID Connect with authlib as the relying party")
struct AuthlibRelyingPartyTests {
    @Test(
        "authlib signs a person in: discovery, PKCE, code, ID token verified against the JWKS", arguments: Backend.all)
    func authlib(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { http in
            _ = try await server.operatorCall(
                http, "PUT", "/api/v1/tfa/policy",
                body: try OperatorJSON.encoder().encode(TFAPolicy(required: false, providers: [.totp])),
                as: TFAPolicy.self)
            try await TFAClient(server: server, client: http).createAccount("alice")
            let redirect = "http://localhost:9/callback"
            let created = try await server.operatorCall(
                http, "POST", "/api/v1/clients",
                body: try OperatorJSON.encoder().encode(CreateClientRequest(name: "Shop", redirectUris: [redirect])),
                as: CreateClientResponse.self)
            let script = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
                .appendingPathComponent("Tests/Scripts/authlib-rp.py").path
            let outcome = try await Spawn.runOnThread([
                "/usr/bin/python3", script, http.base.absoluteString, created.client.clientId,
                try #require(created.clientSecret), redirect, "alice", "correct horse battery",
            ])
            #expect(outcome.status == 0, "\(outcome.errors)")
            let claims = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any],
                "\(outcome.output)")
            #expect(claims["sub"] as? String == "alice" && claims["aud"] as? String == created.client.clientId)
            #expect(claims["acr"] as? String == "urn:assent:acr:password" && claims["nonce"] != nil)
        }
    }
}
