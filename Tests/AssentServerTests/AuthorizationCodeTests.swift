import AssentCrypto
import AssentModel
import AssentServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The claims a website reads from an ID token of the authorization code flow, verified by jwt-kit with the
/// provider's JWKS.
struct VerifiedCodeIDToken: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var azp: String
    var authTime: Int
    var nonce: String?
    var acr: String
    var amr: [String]
    var atHash: String
    var sid: String

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, azp, nonce, acr, amr, sid
        case authTime = "auth_time"
        case atHash = "at_hash"
    }

    func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
}

/// A website or app signing people in through the authorization endpoint, request by request against the router.
struct CodeFlowClient {
    let client: any TestClientProtocol
    let clientId: String
    let secret: String?
    let redirectUri: String

    /// PKCE: a verifier and its S256 challenge.
    static func pkce() -> (verifier: String, challenge: String) {
        let verifier = Base64URL.encode(Bytes.random(count: 32))
        return (verifier, Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8)))))
    }

    func authorizeURI(_ extra: [String: String] = [:], redirectUri: String? = nil) -> String {
        var fields = [
            "client_id": clientId, "redirect_uri": redirectUri ?? self.redirectUri, "response_type": "code",
            "scope": "openid",
        ]
        fields.merge(extra) { _, new in new }
        return "/oauth2/authorize?" + String(decoding: FormEncoding.encode(fields), as: UTF8.self)
    }

    /// The query of a redirect to the client.
    static func query(_ location: String?) -> [String: String] {
        guard let location, let query = URLComponents(string: location)?.query else { return [:] }
        return (try? FormEncoding.decode(Data(query.utf8))) ?? [:]
    }

    func token(_ fields: [String: String]) async throws -> PageAnswer {
        var form = fields
        var headers: HTTPFields = [:]
        if let secret {
            headers[.authorization] = "Basic " + Data("\(clientId):\(secret)".utf8).base64EncodedString()
        } else {
            form["client_id"] = clientId
        }
        return try await PageAnswer.fetch(client, .post, "/oauth2/token", form: form, headers: headers)
    }

    func redeem(_ code: String, verifier: String?, redirectUri: String? = nil) async throws -> PageAnswer {
        var fields = [
            "grant_type": "authorization_code", "code": code, "redirect_uri": redirectUri ?? self.redirectUri,
        ]
        fields["code_verifier"] = verifier
        return try await token(fields)
    }

    func verify(_ idToken: String) async throws -> VerifiedCodeIDToken {
        let jwks = try await PageAnswer.fetch(client, .get, "/oauth2/jwks")
        return try await JWTKeyCollection().add(jwksJSON: jwks.body).verify(idToken, as: VerifiedCodeIDToken.self)
    }

    static func error(_ answer: PageAnswer) -> String? {
        (try? JSONDecoder().decode(OAuthErrorResponse.self, from: Data(answer.body.utf8)))?.error
    }
}

@Suite("OpenID Connect: the authorization code flow with PKCE, single sign-on, codes and their errors")
struct AuthorizationCodeTests {
    static func register(_ server: TestServer, _ client: some TestClientProtocol, _ request: CreateClientRequest)
        async throws -> PageAnswer
    {
        try await PageAnswer.fetch(
            client, .post, "/api/v1/clients", json: try OperatorJSON.encoder().encode(request),
            headers: [.authorization: "Bearer \(server.apiKey)"])
    }

    static func registered(
        _ server: TestServer, _ client: some TestClientProtocol, _ request: CreateClientRequest, redirectUri: String
    ) async throws -> CodeFlowClient {
        let answer = try await register(server, client, request)
        #expect(answer.status == .created, "\(answer.body)")
        let created = try OperatorJSON.decoder().decode(CreateClientResponse.self, from: Data(answer.body.utf8))
        return CodeFlowClient(
            client: client, clientId: created.client.clientId, secret: created.clientSecret, redirectUri: redirectUri)
    }

    /// A policy where a password alone signs in, and alice with the password the tests type.
    static func passwordOnly(
        _ server: TestServer, _ client: some TestClientProtocol,
        account: CreateTFAAccountRequest = CreateTFAAccountRequest(userId: "alice", password: "correct horse battery")
    ) async throws -> PageAnswer {
        let key: HTTPFields = [.authorization: "Bearer \(server.apiKey)"]
        let policy = try await PageAnswer.fetch(
            client, .put, "/api/v1/tfa/policy",
            json: try OperatorJSON.encoder().encode(TFAPolicy(required: false, providers: [.totp])), headers: key)
        #expect(policy.status == .ok)
        let created = try await PageAnswer.fetch(
            client, .post, "/api/v1/tfa/accounts", json: try OperatorJSON.encoder().encode(account), headers: key)
        #expect(created.status == .created)
        return created
    }

    /// Signs in on the hosted pages with the session the authorization endpoint started; returns the redirect to
    /// the client.
    static func signIn(
        _ client: some TestClientProtocol, from authorize: PageAnswer, cookie kept: String? = nil,
        userId: String = "alice", password: String
    ) async throws -> (location: String?, cookie: String, page: PageAnswer) {
        let setCookie = authorize.headers[values: .setCookie].first { $0.hasPrefix("__Host-assent-login=") }
        let cookie = try #require(kept ?? setCookie.map { String($0.prefix { $0 != ";" }) })
        let page = try await PageAnswer.fetch(client, .get, try #require(authorize.location), cookie: cookie)
        #expect(page.status == .ok, "\(page.body)")
        let answer = try await PageAnswer.fetch(
            client, .post, "/login", cookie: cookie,
            form: [
                "csrf": try #require(page.field("csrf")), "application": try #require(page.field("application")),
                "userId": userId, "password": password,
            ])
        return (answer.location, cookie, page)
    }

    @Test(
        "id_token_hint: only the person it names answers; another's or a forged hint is refused", arguments: Backend.all
    )
    func idTokenHint(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            _ = try await Self.passwordOnly(server, client)
            _ = try await Self.passwordOnly(
                server, client, account: CreateTFAAccountRequest(userId: "bob", password: "bobs horse battery"))
            let site = try await Self.registered(
                server, client, CreateClientRequest(name: "Shop", redirectUris: ["https://shop.example/cb"]),
                redirectUri: "https://shop.example/cb")
            let other = try await Self.registered(
                server, client, CreateClientRequest(name: "Mail", redirectUris: ["https://mail.example/cb"]),
                redirectUri: "https://mail.example/cb")
            /// Signs `userId` in at `party` in a fresh browser: the session cookie and the ID token.
            func signIn(_ party: CodeFlowClient, _ userId: String, _ password: String) async throws
                -> (cookie: String, idToken: String)
            {
                let authorize = try await PageAnswer.fetch(client, .get, party.authorizeURI())
                let (location, cookie, _) = try await Self.signIn(
                    client, from: authorize, userId: userId, password: password)
                let code = try #require(CodeFlowClient.query(location)["code"], "\(String(describing: location))")
                let answer = try await party.redeem(code, verifier: nil)
                let tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(answer.body.utf8))
                return (cookie, tokens.idToken)
            }
            let alice = try await signIn(site, "alice", "correct horse battery")
            let bob = try await signIn(site, "bob", "bobs horse battery")
            let alicesMail = try await signIn(other, "alice", "correct horse battery")
            func authorize(_ hint: String, prompt: String? = "none") async throws -> PageAnswer {
                var extra = ["id_token_hint": hint]
                extra["prompt"] = prompt
                return try await PageAnswer.fetch(client, .get, site.authorizeURI(extra), cookie: alice.cookie)
            }
            // Alice's session and her own ID token: a code at once.
            #expect(CodeFlowClient.query(try await authorize(alice.idToken).location)["code"] != nil)
            // Bob's token against alice's session: not signed in as bob.
            let bobs = CodeFlowClient.query(try await authorize(bob.idToken).location)
            #expect(bobs["error"] == "login_required" && bobs["error_description"]?.contains("id_token_hint") == true)
            // A token of another client, and one that is not this provider's: refused.
            let foreign = CodeFlowClient.query(try await authorize(alicesMail.idToken).location)
            #expect(
                foreign["error"] == "invalid_request"
                    && foreign["error_description"]?.contains("another client") == true)
            let forged = CodeFlowClient.query(try await authorize(alice.idToken + "x").location)
            #expect(forged["error"] == "invalid_request", "\(forged)")
            // Interactive: bob's hint asks for bob (the user name filled in); alice signing in instead is refused.
            let asked = try await authorize(bob.idToken, prompt: nil)
            #expect(asked.location?.hasPrefix("/login") == true)
            let (location, _, page) = try await Self.signIn(
                client, from: asked, cookie: alice.cookie, password: "correct horse battery")
            #expect(page.body.contains("value=\"bob\""), "the hint fills in the user name")
            let wrong = CodeFlowClient.query(location)
            #expect(wrong["error"] == "login_required" && wrong["code"] == nil, "\(wrong)")
        }
    }

    @Test(
        "Code flow: sign in, code with state and iss, PKCE, ID token; SSO for a second client; replay revokes",
        arguments: Backend.all)
    func codeFlow(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            let key: HTTPFields = [.authorization: "Bearer \(server.apiKey)"]
            let account = try await Self.passwordOnly(
                server, client,
                account: CreateTFAAccountRequest(
                    userId: "alice", password: "correct horse battery", emails: ["alice@example.com"],
                    name: " Alice Novak "))
            #expect(account.body.contains("\"name\":\"Alice Novak\""))
            // A website on another site than the provider, and a native app on a loopback port.
            let site = try await Self.registered(
                server, client,
                CreateClientRequest(
                    name: "Shop", scopes: ["profile", "email", "phone"],
                    redirectUris: ["http://localhost:9000/callback?from=assent"]),
                redirectUri: "http://localhost:9000/callback?from=assent")
            #expect(site.secret != nil)
            let app = try await Self.registered(
                server, client,
                CreateClientRequest(name: "App", redirectUris: ["http://127.0.0.1/cb"], type: "public"),
                redirectUri: "http://127.0.0.1:4711/cb")
            #expect(app.secret == nil)
            let issuer = server.environment.openID.issuer

            // First client: no session yet, so the hosted sign-in page, carrying the request.
            let startedAt = server.environment.now()
            let pkce = CodeFlowClient.pkce()
            let authorize = try await PageAnswer.fetch(
                client, .get,
                site.authorizeURI([
                    "state": "s-1", "nonce": "n-1", "code_challenge": pkce.challenge, "code_challenge_method": "S256",
                    "login_hint": "alice",
                ]))
            #expect(authorize.status == .seeOther)
            #expect(authorize.location == "/login?application=\(server.application.id)")
            let sessionCookie = try #require(authorize.headers[.setCookie])
            #expect(sessionCookie.hasSuffix("; Path=/; Max-Age=28800; Secure; HttpOnly; SameSite=Lax"))
            let (location, cookie, page) = try await Self.signIn(
                client, from: authorize, password: "correct horse battery")
            // The page may send its form on to the client's origin, and to no other.
            #expect(
                page.headers[.contentSecurityPolicy]?.contains("form-action 'self' http://localhost:9000;") == true)
            #expect(page.body.contains("value=\"alice\""), "the login_hint fills in the user name")
            let back = try #require(location)
            #expect(back.hasPrefix("http://localhost:9000/callback?from=assent&code="), "\(back)")
            let query = CodeFlowClient.query(back)
            #expect(query["state"] == "s-1" && query["iss"] == issuer && query["from"] == "assent")
            let code = try #require(query["code"])

            // The code, with the verifier: tokens; the ID token says who, how and for which session.
            let wrong = try await site.redeem(code + "x", verifier: pkce.verifier)
            #expect(wrong.status == .badRequest && CodeFlowClient.error(wrong) == "invalid_grant")
            let tokens = try await site.redeem(code, verifier: pkce.verifier)
            #expect(tokens.status == .ok, "\(tokens.body)")
            #expect(tokens.headers[.cacheControl] == "no-store")
            let issued = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(tokens.body.utf8))
            let claims = try await site.verify(issued.idToken)
            #expect(claims.iss.value == issuer && claims.sub.value == "alice" && claims.aud.value == [site.clientId])
            #expect(claims.azp == site.clientId && claims.nonce == "n-1")
            #expect(claims.acr == "urn:assent:acr:password" && claims.amr == ["pwd"])
            #expect(
                claims.atHash
                    == Base64URL.encode(Data(Data(SHA256.hash(data: Data(issued.accessToken.utf8))).prefix(16))))
            // auth_time: when the password was checked — after the request started, not after the tokens.
            #expect(
                (Int(startedAt.timeIntervalSince1970) - 1...Int(server.environment.now().timeIntervalSince1970) + 1)
                    .contains(claims.authTime))
            let userinfo = try await PageAnswer.fetch(
                client, .get, "/oauth2/userinfo", headers: [.authorization: "Bearer \(issued.accessToken)"])
            #expect(userinfo.status == .ok && userinfo.body.contains("\"sub\":\"alice\""))

            // The same code again: refused, and the access token it issued is revoked (RFC 6749 §4.1.2).
            let replay = try await site.redeem(code, verifier: pkce.verifier)
            #expect(replay.status == .badRequest && CodeFlowClient.error(replay) == "invalid_grant")
            #expect(replay.body.contains("used before"))
            let revoked = try await PageAnswer.fetch(
                client, .get, "/oauth2/userinfo", headers: [.authorization: "Bearer \(issued.accessToken)"])
            #expect(revoked.status == .unauthorized)

            // Second client within the session: a code at once, no password (single sign-on), same sid.
            let appPKCE = CodeFlowClient.pkce()
            let sso = try await PageAnswer.fetch(
                client, .get,
                app.authorizeURI(["code_challenge": appPKCE.challenge, "code_challenge_method": "S256", "state": "a"]),
                cookie: cookie)
            #expect(sso.status == .seeOther)
            let ssoBack = try #require(sso.location)
            #expect(ssoBack.hasPrefix("http://127.0.0.1:4711/cb?code="), "a loopback redirect's port may vary")
            let ssoCode = try #require(CodeFlowClient.query(ssoBack)["code"])
            // A public client redeems with its id alone, but never without the verifier.
            let noVerifier = try await app.redeem(ssoCode, verifier: nil)
            #expect(CodeFlowClient.error(noVerifier) == "invalid_grant")
            let again = try await PageAnswer.fetch(
                client, .get,
                app.authorizeURI(["code_challenge": appPKCE.challenge, "code_challenge_method": "S256"]),
                cookie: cookie)
            let appCode = try #require(CodeFlowClient.query(again.location)["code"])
            let wrongVerifier = try await app.redeem(appCode, verifier: CodeFlowClient.pkce().verifier)
            #expect(CodeFlowClient.error(wrongVerifier) == "invalid_grant")
            #expect(wrongVerifier.body.contains("does not match"))
            let third = try await PageAnswer.fetch(
                client, .get,
                app.authorizeURI(["code_challenge": appPKCE.challenge, "code_challenge_method": "S256"]),
                cookie: cookie)
            let appTokens = try await app.redeem(
                try #require(CodeFlowClient.query(third.location)["code"]), verifier: appPKCE.verifier)
            #expect(appTokens.status == .ok, "\(appTokens.body)")
            let appClaims = try await app.verify(
                try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(appTokens.body.utf8)).idToken)
            #expect(appClaims.sid == claims.sid && appClaims.aud.value == [app.clientId] && appClaims.nonce == nil)
            // A code is the client's own and lives a minute.
            let other = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["code_challenge": pkce.challenge, "code_challenge_method": "S256"]),
                cookie: cookie)
            let siteCode = try #require(CodeFlowClient.query(other.location)["code"])
            #expect(CodeFlowClient.error(try await app.redeem(siteCode, verifier: pkce.verifier)) == "invalid_grant")
            let late = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["code_challenge": pkce.challenge, "code_challenge_method": "S256"]),
                cookie: cookie)
            server.clock.advance(by: 61)
            let expired = try await site.redeem(
                try #require(CodeFlowClient.query(late.location)["code"]), verifier: pkce.verifier)
            #expect(CodeFlowClient.error(expired) == "invalid_grant" && expired.body.contains("expired"))
            let otherRedirect = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["code_challenge": pkce.challenge, "code_challenge_method": "S256"]),
                cookie: cookie)
            let misdirected = try await site.redeem(
                try #require(CodeFlowClient.query(otherRedirect.location)["code"]), verifier: pkce.verifier,
                redirectUri: "http://localhost:9000/callback")
            #expect(CodeFlowClient.error(misdirected) == "invalid_grant")

            // Userinfo answers the claims of the scopes the sign-in granted, from the account.
            func userClaims(scope: String) async throws -> [String: Any] {
                let answer = try await PageAnswer.fetch(
                    client, .get,
                    site.authorizeURI([
                        "scope": scope, "code_challenge": pkce.challenge,
                        "code_challenge_method": "S256",
                    ]), cookie: cookie)
                let tokens = try await site.redeem(
                    try #require(CodeFlowClient.query(answer.location)["code"]), verifier: pkce.verifier)
                let access = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(tokens.body.utf8)).accessToken
                let claims = try await PageAnswer.fetch(
                    client, .get, "/oauth2/userinfo", headers: [.authorization: "Bearer \(access)"])
                return try #require(try JSONSerialization.jsonObject(with: Data(claims.body.utf8)) as? [String: Any])
            }
            let all = try await userClaims(scope: "openid profile email phone")
            #expect(all["sub"] as? String == "alice" && all["name"] as? String == "Alice Novak")
            #expect(all["preferred_username"] as? String == "alice")
            #expect(all["email"] as? String == "alice@example.com" && all["email_verified"] as? Bool == true)
            #expect(all["phone_number"] == nil, "alice has no phone factor")
            let renamed = try await PageAnswer.fetch(
                client, .patch, "/api/v1/tfa/accounts/alice",
                json: try OperatorJSON.encoder().encode(UpdateTFAAccountRequest(name: "")), headers: key)
            #expect(renamed.status == .ok && !renamed.body.contains("Alice Novak"))
            let emailOnly = try await userClaims(scope: "openid email")
            #expect(Set(emailOnly.keys) == ["sub", "email", "email_verified"])
            #expect(try await userClaims(scope: "openid profile")["name"] == nil)

            // prompt=login and max_age ask for the password again; prompt=none without a session is login_required.
            let fresh = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["prompt": "login"]), cookie: cookie)
            #expect(fresh.location == "/login?application=\(server.application.id)")
            let (reLogin, _, _) = try await Self.signIn(
                client, from: fresh, cookie: cookie, password: "correct horse battery")
            #expect(reLogin?.hasPrefix("http://localhost:9000/callback?from=assent&code=") == true)
            server.clock.advance(by: 30)
            let stale = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["max_age": "10"]), cookie: cookie)
            #expect(stale.location == "/login?application=\(server.application.id)")
            let silent = try await PageAnswer.fetch(client, .get, site.authorizeURI(["prompt": "none", "state": "q"]))
            let silentQuery = CodeFlowClient.query(silent.location)
            #expect(silentQuery["error"] == "login_required" && silentQuery["state"] == "q")
            #expect(silentQuery["iss"] == issuer)

            // A stronger sign-in than the session's: silently impossible, and refused when the account has no factor
            // that would make it so.
            let silentStronger = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["prompt": "none", "acr_values": "urn:assent:acr:mfa"]),
                cookie: cookie)
            #expect(CodeFlowClient.query(silentStronger.location)["error"] == "interaction_required")
            let stronger = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["acr_values": "urn:unknown urn:assent:acr:phone", "state": "p"]),
                cookie: cookie)
            let strongerQuery = CodeFlowClient.query(stronger.location)
            #expect(strongerQuery["error"] == "access_denied" && strongerQuery["state"] == "p")
            #expect(strongerQuery["error_description"]?.contains("urn:assent:acr:phone") == true)
            // Unknown classes alone ask for nothing more.
            let unknownClass = try await PageAnswer.fetch(
                client, .get, site.authorizeURI(["acr_values": "urn:unknown"]), cookie: cookie)
            #expect(CodeFlowClient.query(unknownClass.location)["code"] != nil)
        }
    }

    @Test(
        "Refresh tokens: offline_access, rotation on every use, reuse or code replay revokes the family",
        arguments: Backend.all)
    func refreshTokens(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            _ = try await Self.passwordOnly(server, client)
            let mail = try await Self.registered(
                server, client,
                CreateClientRequest(
                    name: "Mail", scopes: ["profile", "offline_access"], redirectUris: ["https://mail.example/cb"],
                    grantTypes: ["authorization_code", "refresh_token"]),
                redirectUri: "https://mail.example/cb")
            let plain = try await Self.registered(
                server, client,
                CreateClientRequest(
                    name: "Plain", scopes: ["offline_access"], redirectUris: ["https://plain.example/cb"]),
                redirectUri: "https://plain.example/cb")
            // One sign-in; later codes come by single sign-on.
            let first = try await PageAnswer.fetch(
                client, .get, mail.authorizeURI(["scope": "openid offline_access"]))
            let (location, cookie, _) = try await Self.signIn(client, from: first, password: "correct horse battery")
            func redeemed(_ party: CodeFlowClient, _ location: String?) async throws -> OAuthTokenResponse {
                let answer = try await party.redeem(
                    try #require(CodeFlowClient.query(location)["code"]), verifier: nil)
                #expect(answer.status == .ok, "\(answer.body)")
                return try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(answer.body.utf8))
            }
            /// Tokens for a code the session's sign-in gets at once.
            func tokens(_ party: CodeFlowClient) async throws -> OAuthTokenResponse {
                let again = try await PageAnswer.fetch(
                    client, .get, party.authorizeURI(["scope": "openid offline_access"]), cookie: cookie)
                return try await redeemed(party, again.location)
            }
            func refresh(_ party: CodeFlowClient, _ token: String, scope: String? = nil) async throws -> PageAnswer {
                var fields = ["grant_type": "refresh_token", "refresh_token": token]
                fields["scope"] = scope
                return try await party.token(fields)
            }
            func works(_ accessToken: String) async throws -> Bool {
                try await PageAnswer.fetch(
                    client, .get, "/oauth2/userinfo", headers: [.authorization: "Bearer \(accessToken)"]
                ).status == .ok
            }

            let issued = try await redeemed(mail, location)
            let first1 = try #require(issued.refreshToken)
            let firstClaims = try await mail.verify(issued.idToken)
            // A client not registered for refresh tokens gets none, even with offline_access.
            #expect(try await tokens(plain).refreshToken == nil)

            // Rotation: a new refresh token every time, the same sign-in in the ID token.
            server.clock.advance(by: 120)
            let rotated = try await refresh(mail, first1)
            #expect(rotated.status == .ok, "\(rotated.body)")
            let second = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(rotated.body.utf8))
            let second2 = try #require(second.refreshToken)
            #expect(second2 != first1)
            let refreshed = try await mail.verify(second.idToken)
            #expect(refreshed.sid == firstClaims.sid && refreshed.authTime == firstClaims.authTime)
            #expect(refreshed.nonce == nil && refreshed.acr == firstClaims.acr)
            #expect(try await works(second.accessToken))
            // Only for a client registered for them; not another client's; never more scope than was granted.
            #expect(CodeFlowClient.error(try await refresh(plain, second2)) == "unauthorized_client")
            let other = try await Self.registered(
                server, client,
                CreateClientRequest(
                    name: "Other", scopes: ["offline_access"], redirectUris: ["https://other.example/cb"],
                    grantTypes: ["authorization_code", "refresh_token"]),
                redirectUri: "https://other.example/cb")
            #expect(CodeFlowClient.error(try await refresh(other, second2)) == "invalid_grant")
            let more = try await tokens(mail)
            let moreToken = try #require(more.refreshToken)
            #expect(
                CodeFlowClient.error(try await refresh(mail, moreToken, scope: "openid profile")) == "invalid_scope")

            // The spent token again: refused, and its whole family with it.
            let reused = try await refresh(mail, first1)
            #expect(CodeFlowClient.error(reused) == "invalid_grant" && reused.body.contains("used before"))
            #expect(CodeFlowClient.error(try await refresh(mail, second2)) == "invalid_grant")
            #expect(try await works(second.accessToken) == false)
            #expect(try await works(issued.accessToken) == false)

            // A replayed code revokes the refresh tokens it issued too.
            let again = try await PageAnswer.fetch(
                client, .get, mail.authorizeURI(["scope": "openid offline_access"]), cookie: cookie)
            let code = try #require(CodeFlowClient.query(again.location)["code"])
            let once = try await mail.redeem(code, verifier: nil)
            let onceTokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(once.body.utf8))
            #expect(CodeFlowClient.error(try await mail.redeem(code, verifier: nil)) == "invalid_grant")
            #expect(
                CodeFlowClient.error(try await refresh(mail, try #require(onceTokens.refreshToken))) == "invalid_grant")

            // A refresh token lives thirty days from its issue.
            let late = try await tokens(mail)
            server.clock.advance(by: 30 * 86_400 + 1)
            let expired = try await refresh(mail, try #require(late.refreshToken))
            #expect(CodeFlowClient.error(expired) == "invalid_grant" && expired.body.contains("expired"))
        }
    }

    /// The claims of a logout token, verified by jwt-kit.
    struct VerifiedLogoutToken: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var jti: String
        var sid: String
        var events: [String: [String: String]]
        var nonce: String?

        func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }

    @Test(
        "Logout: RP-initiated with id_token_hint or after the person confirms; back-channel logout tokens queued",
        arguments: Backend.all)
    func logout(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let receiver = WebhookReceiver(answer: .ok)
        try await receiver.run { logoutURL in
            let app = Application(router: server.router)
            try await app.test(.router) { client in
                _ = try await Self.passwordOnly(server, client)
                let shop = try await Self.registered(
                    server, client,
                    CreateClientRequest(
                        name: "Shop", redirectUris: ["https://shop.example/cb"],
                        postLogoutRedirectUris: ["https://shop.example/bye"],
                        backchannelLogoutUri: logoutURL.absoluteString),
                    redirectUri: "https://shop.example/cb")
                let other = try await Self.registered(
                    server, client, CreateClientRequest(name: "Other", redirectUris: ["https://other.example/cb"]),
                    redirectUri: "https://other.example/cb")
                func signIn() async throws -> (cookie: String, idToken: String, claims: VerifiedCodeIDToken) {
                    let first = try await PageAnswer.fetch(client, .get, shop.authorizeURI())
                    let (location, cookie, _) = try await Self.signIn(
                        client, from: first, password: "correct horse battery")
                    let tokens = try await shop.redeem(
                        try #require(CodeFlowClient.query(location)["code"]), verifier: nil)
                    let idToken = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(tokens.body.utf8))
                        .idToken
                    // The other client signs in from the same session.
                    let sso = try await PageAnswer.fetch(client, .get, other.authorizeURI(), cookie: cookie)
                    #expect(CodeFlowClient.query(sso.location)["code"] != nil)
                    return (cookie, idToken, try await shop.verify(idToken))
                }
                func logout(_ query: [String: String], cookie: String?) async throws -> PageAnswer {
                    try await PageAnswer.fetch(
                        client, .get,
                        "/oauth2/logout?" + String(decoding: FormEncoding.encode(query), as: UTF8.self),
                        cookie: cookie)
                }
                let (cookie, idToken, claims) = try await signIn()
                // Tokens the same keys sign that are not ID tokens: a logout token for this very session, and a
                // two-factor login token made out to the client.
                let shopRecord = try #require(try await server.store.client(id: shop.clientId))
                let logoutToken = try await LogoutSender(
                    store: server.environment.store, clock: Services(server.environment).clock,
                    openID: server.environment.openID,
                    keys: Services(server.environment).signingKeys,
                    post: CallbackPost(egress: server.environment.egress)
                ).logoutToken(
                    client: shopRecord, userId: "alice", sessionId: claims.sid)
                let loginToken = try await Services(server.environment).tfaTokens.sign(
                    .login, id: "not-an-id-token", userId: "alice", applicationId: shop.clientId, lifetime: 300
                ).token

                // Never a redirect to an address the client did not register, nor for a hint we did not sign, nor
                // for a hint that is no ID token.
                for query in [
                    ["id_token_hint": logoutToken, "post_logout_redirect_uri": "https://shop.example/bye"],
                    ["id_token_hint": loginToken, "post_logout_redirect_uri": "https://shop.example/bye"],
                    ["client_id": shop.clientId, "post_logout_redirect_uri": "https://evil.example/bye"],
                    ["post_logout_redirect_uri": "https://shop.example/bye"],
                    ["id_token_hint": idToken + "x", "post_logout_redirect_uri": "https://shop.example/bye"],
                    ["id_token_hint": idToken, "client_id": other.clientId],
                ] {
                    let refused = try await logout(query, cookie: cookie)
                    #expect(refused.status == .badRequest && refused.location == nil, "\(query)")
                }
                // The question in the language the logout request asks for (its ui_locales), carried on by the form.
                let german = try await logout(["client_id": shop.clientId, "ui_locales": "de"], cookie: cookie)
                #expect(german.status == .ok && german.body.contains("<html lang=\"de\">"), "\(german.body)")
                #expect(german.body.contains("Abmelden?") && german.body.contains("als alice abmelden?"))
                #expect(german.body.contains("Shop bittet darum, Ihre Sitzung hier zu beenden."))
                #expect(german.body.contains("name=\"ui_locales\" value=\"de\""))
                // Without a hint for this session, the person is asked; the session lives until they confirm.
                let asked = try await logout(
                    [
                        "client_id": shop.clientId, "post_logout_redirect_uri": "https://shop.example/bye",
                        "state": "z",
                    ], cookie: cookie)
                #expect(asked.status == .ok && asked.body.contains("id=\"question\""))
                #expect(asked.body.contains("Shop asks to end your session here."))
                #expect(
                    asked.headers[.contentSecurityPolicy]?.contains("form-action 'self' https://shop.example;") == true)
                let still = try await PageAnswer.fetch(client, .get, other.authorizeURI(), cookie: cookie)
                #expect(CodeFlowClient.query(still.location)["code"] != nil)
                let forged = try await PageAnswer.fetch(
                    client, .post, "/oauth2/logout", cookie: cookie,
                    form: ["confirm": "yes", "client_id": shop.clientId, "csrf": "forged"])
                #expect(forged.status == .forbidden)
                let confirmed = try await PageAnswer.fetch(
                    client, .post, "/oauth2/logout", cookie: cookie,
                    form: [
                        "confirm": "yes", "csrf": try #require(asked.field("csrf")), "client_id": shop.clientId,
                        "post_logout_redirect_uri": "https://shop.example/bye", "state": "z",
                    ])
                #expect(confirmed.location == "https://shop.example/bye?state=z")
                #expect(confirmed.headers[.setCookie]?.contains("Max-Age=0") == true)
                let ended = try await PageAnswer.fetch(client, .get, other.authorizeURI(), cookie: cookie)
                #expect(ended.location?.hasPrefix("/login?") == true, "the session is over")

                // One back-channel logout for the session, to the client that registered a URI; the token verifies.
                let queued = try await server.store.outboxItems(subject: claims.sid)
                #expect(queued.count == 1 && queued.first?.channel == .logout && queued.first?.target == shop.clientId)
                let sender = LogoutSender(
                    store: server.environment.store, clock: Services(server.environment).clock,
                    openID: server.environment.openID,
                    keys: Services(server.environment).signingKeys,
                    post: CallbackPost(egress: server.environment.egress))
                let outcome = await sender.deliver(try #require(queued.first))
                await sender.shutdown()
                #expect(outcome == .delivered)
                let delivery = try #require(try await receiver.wait(for: 1).first)
                let form = try FormEncoding.decode(delivery.body)
                let token = try #require(form["logout_token"])
                let header = try #require(
                    try JSONSerialization.jsonObject(
                        with: Base64URL.decode(String(token.split(separator: ".")[0]))) as? [String: Any])
                #expect(header["typ"] as? String == "logout+jwt")
                let jwks = try await PageAnswer.fetch(client, .get, "/oauth2/jwks")
                let logoutClaims = try await JWTKeyCollection().add(jwksJSON: jwks.body)
                    .verify(token, as: VerifiedLogoutToken.self)
                #expect(logoutClaims.iss.value == server.environment.openID.issuer)
                #expect(logoutClaims.aud.value == [shop.clientId] && logoutClaims.sub.value == "alice")
                #expect(logoutClaims.sid == claims.sid && logoutClaims.nonce == nil)
                #expect(logoutClaims.events.keys.contains("http://schemas.openid.net/event/backchannel-logout"))

                // With its ID token as the hint, the client signs the person out at once; so does the hosted page.
                let (second, secondToken, secondClaims) = try await signIn()
                let direct = try await logout(
                    ["id_token_hint": secondToken, "post_logout_redirect_uri": "https://shop.example/bye"],
                    cookie: second)
                #expect(direct.location == "https://shop.example/bye")
                #expect(try await server.store.outboxItems(subject: secondClaims.sid).count == 1)
                let (third, _, thirdClaims) = try await signIn()
                let done = try await PageAnswer.fetch(client, .get, "/login/done", cookie: third)
                let out = try await PageAnswer.fetch(
                    client, .post, "/login/logout", cookie: third, form: ["csrf": try #require(done.field("csrf"))])
                #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
                #expect(try await server.store.outboxItems(subject: thirdClaims.sid).count == 1)
                // Signed out already: straight on to the client.
                let again = try await logout(
                    [
                        "id_token_hint": secondToken, "post_logout_redirect_uri": "https://shop.example/bye",
                        "state": "s",
                    ], cookie: nil)
                #expect(again.location == "https://shop.example/bye?state=s")
            }
        }
    }

    @Test(
        "Consent: a third-party client is allowed once per set of scopes; declined, asked again, taken back",
        arguments: Backend.all)
    func consent(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            _ = try await Self.passwordOnly(server, client)
            let partner = try await Self.registered(
                server, client,
                CreateClientRequest(
                    name: "Partner", scopes: ["profile", "email"], redirectUris: ["https://partner.example/cb"],
                    thirdParty: true),
                redirectUri: "https://partner.example/cb")
            let first = try await PageAnswer.fetch(
                client, .get, partner.authorizeURI(["scope": "openid profile", "state": "c"]))
            let (location, cookie, _) = try await Self.signIn(client, from: first, password: "correct horse battery")
            #expect(location == "/login/consent", "the person is asked before the code")
            func consentPage() async throws -> PageAnswer {
                let page = try await PageAnswer.fetch(client, .get, "/login/consent", cookie: cookie)
                #expect(page.status == .ok)
                return page
            }
            func decide(_ decision: String, on page: PageAnswer) async throws -> String? {
                try await PageAnswer.fetch(
                    client, .post, "/login/consent", cookie: cookie,
                    form: ["csrf": try #require(page.field("csrf")), "decision": decision]
                ).location
            }
            func authorize(_ extra: [String: String]) async throws -> String? {
                try await PageAnswer.fetch(client, .get, partner.authorizeURI(extra), cookie: cookie).location
            }
            let asked = try await consentPage()
            #expect(asked.body.contains("Partner is not run by"))
            #expect(asked.body.contains("See your name and user name") && !asked.body.contains("e-mail"))
            #expect(asked.headers[.contentSecurityPolicy]?.contains("https://partner.example") == true)
            // Declined: the client hears access_denied.
            let declined = CodeFlowClient.query(try await decide("deny", on: asked))
            #expect(declined["error"] == "access_denied" && declined["state"] == "c")
            // Silently impossible; then allowed: the code.
            #expect(CodeFlowClient.query(try await authorize(["prompt": "none"]))["error"] == "consent_required")
            #expect(try await authorize(["scope": "openid profile"]) == "/login/consent")
            let allowed = try #require(try await decide("allow", on: try await consentPage()))
            #expect(CodeFlowClient.query(allowed)["code"] != nil, "\(allowed)")
            // Remembered for those scopes; a new scope, or prompt=consent, asks again.
            #expect(CodeFlowClient.query(try await authorize(["scope": "openid profile"]))["code"] != nil)
            #expect(CodeFlowClient.query(try await authorize(["scope": "openid", "prompt": "none"]))["code"] != nil)
            #expect(try await authorize(["scope": "openid profile email"]) == "/login/consent")
            let widened = try await consentPage()
            #expect(widened.body.contains("See your e-mail address"))
            #expect(CodeFlowClient.query(try await decide("allow", on: widened))["code"] != nil)
            #expect(try await authorize(["scope": "openid", "prompt": "consent"]) == "/login/consent")
            _ = try await decide("allow", on: try await consentPage())

            // A first-party client is never asked unless it asks with prompt=consent, which is honoured.
            let mail = try await Self.registered(
                server, client, CreateClientRequest(name: "Mail", redirectUris: ["https://mail.example/cb"]),
                redirectUri: "https://mail.example/cb")
            let unasked = try await PageAnswer.fetch(client, .get, mail.authorizeURI(), cookie: cookie)
            #expect(CodeFlowClient.query(unasked.location)["code"] != nil)
            let asking = try await PageAnswer.fetch(
                client, .get, mail.authorizeURI(["prompt": "consent"]), cookie: cookie)
            #expect(asking.location == "/login/consent")
            let confirm = try await consentPage()
            #expect(confirm.body.contains("Mail asks you to confirm"), "\(confirm.body.prefix(1500))")
            #expect(!confirm.body.contains("is not run by"))
            #expect(CodeFlowClient.query(try await decide("allow", on: confirm))["code"] != nil)

            // The signed-in page lists it; taking it back makes the client ask again.
            let done = try await PageAnswer.fetch(client, .get, "/login/done", cookie: cookie)
            #expect(
                done.body.contains("Sites you allowed") && done.body.contains("Partner"),
                "\(done.status) \(done.location ?? "") \(done.body.prefix(2000))")
            let revoked = try await PageAnswer.fetch(
                client, .post, "/login/consents/revoke", cookie: cookie,
                form: ["csrf": try #require(done.field("csrf")), "clientId": partner.clientId])
            #expect(revoked.location == "/login/done")
            let after = try await PageAnswer.fetch(client, .get, "/login/done", cookie: cookie)
            #expect(after.body.contains("that site will ask you again") && !after.body.contains("Sites you allowed"))
            #expect(try await authorize(["scope": "openid"]) == "/login/consent")
        }
    }

    @Test("Authorization errors: an error page for an untrusted client or redirect, else back to the client")
    func errors() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            let site = try await Self.registered(
                server, client, CreateClientRequest(name: "Shop", redirectUris: ["https://shop.example/cb"]),
                redirectUri: "https://shop.example/cb")
            let native = try await Self.registered(
                server, client,
                CreateClientRequest(name: "App", redirectUris: ["com.example.app:/cb"], type: "public"),
                redirectUri: "com.example.app:/cb")
            let ciba = try await Self.registered(
                server, client, CreateClientRequest(name: "Bank"), redirectUri: "https://bank.example/cb")

            // Never a redirect when the client or the redirect URI cannot be trusted.
            for uri in [
                "/oauth2/authorize?client_id=cl_nobody&redirect_uri=https%3A%2F%2Fshop.example%2Fcb&response_type=code",
                site.authorizeURI(redirectUri: "https://evil.example/cb"),
                site.authorizeURI(redirectUri: "https://shop.example/cb/"),
                "/oauth2/authorize?client_id=\(site.clientId)&response_type=code&scope=openid",
                ciba.authorizeURI(),
            ] {
                let answer = try await PageAnswer.fetch(client, .get, uri)
                #expect(answer.status == .badRequest && answer.location == nil, "\(uri)")
                #expect(answer.headers[.contentType]?.hasPrefix("text/html") == true)
            }
            // Everything else goes back to the client with state and iss (§3.1.2.6, RFC 9207).
            let cases: [(CodeFlowClient, [String: String], String)] = [
                (site, ["response_type": "token"], "unsupported_response_type"),
                (site, ["scope": "profile"], "invalid_scope"),
                (site, ["scope": "openid email"], "invalid_scope"),
                (
                    site, ["code_challenge": CodeFlowClient.pkce().challenge, "code_challenge_method": "plain"],
                    "invalid_request"
                ),
                (site, ["code_challenge": "short", "code_challenge_method": "S256"], "invalid_request"),
                (site, ["prompt": "none login"], "invalid_request"),
                (site, ["max_age": "-1"], "invalid_request"),
                (site, ["request": "eyJ.e30.x"], "request_not_supported"),
                (site, ["request_uri": "https://shop.example/r"], "request_uri_not_supported"),
                (site, ["response_mode": "fragment"], "invalid_request"),
                (native, [:], "invalid_request"),
            ]
            for (party, extra, expected) in cases {
                var fields = extra
                fields["state"] = "st"
                let answer = try await PageAnswer.fetch(client, .get, party.authorizeURI(fields))
                #expect(answer.status == .seeOther, "\(extra)")
                let location = try #require(answer.location)
                #expect(location.hasPrefix(party.redirectUri + "?"), "\(location)")
                let query = CodeFlowClient.query(location)
                #expect(query["error"] == expected, "\(extra): \(location)")
                #expect(query["state"] == "st" && query["iss"] == server.environment.openID.issuer)
                #expect(query["error_description"]?.isEmpty == false)
            }
            // A repeated parameter, and a missing response_type.
            let repeated = try await PageAnswer.fetch(client, .get, site.authorizeURI(["state": "one"]) + "&scope=x")
            #expect(CodeFlowClient.query(repeated.location)["error"] == "invalid_request")
            #expect(CodeFlowClient.query(repeated.location)["state"] == "one")
            let noType = try await PageAnswer.fetch(
                client, .get,
                "/oauth2/authorize?client_id=\(site.clientId)&redirect_uri=https%3A%2F%2Fshop.example%2Fcb&scope=openid"
            )
            #expect(CodeFlowClient.query(noType.location)["error"] == "invalid_request")
            // The same request as a form POST is accepted (no session: to the sign-in page).
            let posted = try await PageAnswer.fetch(
                client, .post, "/oauth2/authorize",
                form: [
                    "client_id": site.clientId, "redirect_uri": site.redirectUri, "response_type": "code",
                    "scope": "openid",
                ])
            #expect(posted.status == .seeOther && posted.location?.hasPrefix("/login?application=") == true)
            // A CIBA client may not redeem codes, a code client may not start CIBA.
            let cibaToken = try await ciba.token(["grant_type": "authorization_code", "code": "x", "redirect_uri": "y"])
            #expect(CodeFlowClient.error(cibaToken) == "unauthorized_client")
            let backchannel = try await PageAnswer.fetch(
                client, .post, "/oauth2/bc-authorize", form: ["scope": "openid", "login_hint": "alice"],
                headers: [
                    .authorization: "Basic " + Data("\(site.clientId):\(site.secret ?? "")".utf8).base64EncodedString()
                ])
            #expect(CodeFlowClient.error(backchannel) == "unauthorized_client")
            let unknownGrant = try await site.token(["grant_type": "password"])
            #expect(CodeFlowClient.error(unknownGrant) == "unsupported_grant_type")
            // A public client cannot pretend to be a confidential one, nor the reverse.
            let noSecret = try await PageAnswer.fetch(
                client, .post, "/oauth2/token",
                form: [
                    "client_id": site.clientId, "grant_type": "authorization_code", "code": "x", "redirect_uri": "y",
                ])
            #expect(noSecret.status == .unauthorized && CodeFlowClient.error(noSecret) == "invalid_client")

            // Registration refuses what cannot work.
            for request in [
                CreateClientRequest(name: "A", grantTypes: ["authorization_code"]),
                CreateClientRequest(name: "B", redirectUris: ["https://shop.example/cb#frag"]),
                CreateClientRequest(name: "C", redirectUris: ["http://shop.example/cb"]),
                CreateClientRequest(name: "D", redirectUris: ["javascript:alert(1)"]),
                CreateClientRequest(name: "E", redirectUris: ["https://user@shop.example/cb"]),
                CreateClientRequest(name: "F", type: "public"),
                CreateClientRequest(
                    name: "G", redirectUris: ["https://a.example/cb"], type: "public", grantTypes: ["ciba"]),
                CreateClientRequest(name: "H", redirectUris: ["https://a.example/cb"], grantTypes: ["password"]),
                CreateClientRequest(name: "I", type: "secret"),
            ] {
                let answer = try await Self.register(server, client, request)
                #expect(answer.status == .badRequest, "\(request.name): \(answer.body)")
            }

            // Discovery names the flow, and only what is served.
            let discovery = try await PageAnswer.fetch(client, .get, "/.well-known/openid-configuration")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(discovery.body.utf8)) as? [String: Any])
            #expect(document["response_types_supported"] as? [String] == ["code"])
            #expect(document["code_challenge_methods_supported"] as? [String] == ["S256"])
            #expect(document["authorization_response_iss_parameter_supported"] as? Bool == true)
            #expect((document["grant_types_supported"] as? [String])?.contains("authorization_code") == true)
            #expect((document["token_endpoint_auth_methods_supported"] as? [String])?.contains("none") == true)
            #expect(document["prompt_values_supported"] as? [String] == ["consent", "login", "none"])
            #expect(document["end_session_endpoint"] as? String == "\(server.environment.openID.base)/oauth2/logout")
            #expect(document["backchannel_logout_supported"] as? Bool == true)
            let claims = try #require(document["claims_supported"] as? [String])
            #expect(["nonce", "sid", "email", "phone_number_verified", "name"].allSatisfy(claims.contains))
            #expect(
                Set(try #require(document["scopes_supported"] as? [String]))
                    == ["openid", "profile", "email", "phone", "offline_access"])
        }
    }
}
