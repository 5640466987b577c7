import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import AssentServer
@testable import AssentServerTesting

@Suite("Grants die with what granted them: consents, accounts, passwords, lost phones, sign-out everywhere")
struct GrantTests {
    /// Alice signed in on the hosted pages for `mail` (offline access, a back-channel logout URI): her tokens, the
    /// session cookie, and helpers that tell whether each still works.
    struct SignedIn {
        let client: any TestClientProtocol
        let mail: CodeFlowClient
        let tokens: OAuthTokenResponse
        let cookie: String
        let sid: String

        func refresh(_ token: String? = nil) async throws -> PageAnswer {
            try await mail.token(["grant_type": "refresh_token", "refresh_token": token ?? tokens.refreshToken ?? ""])
        }

        func accessWorks(_ accessToken: String? = nil) async throws -> Bool {
            try await PageAnswer.fetch(
                client, .get, "/oauth2/userinfo",
                headers: [.authorization: "Bearer \(accessToken ?? tokens.accessToken)"]
            ).status == .ok
        }

        /// Whether the browser's session still signs in to a client without asking (single sign-on).
        func singleSignOnWorks() async throws -> Bool {
            let again = try await PageAnswer.fetch(
                client, .get, mail.authorizeURI(["scope": "openid"]), cookie: cookie)
            return CodeFlowClient.query(again.location)["code"] != nil
        }
    }

    static func signIn(_ server: TestServer, _ client: some TestClientProtocol) async throws -> SignedIn {
        _ = try await AuthorizationCodeTests.passwordOnly(server, client)
        let mail = try await AuthorizationCodeTests.registered(
            server, client,
            CreateClientRequest(
                name: "Mail", scopes: ["profile", "offline_access"], redirectUris: ["https://mail.example/cb"],
                grantTypes: ["authorization_code", "refresh_token"],
                backchannelLogoutUri: "https://mail.example/logout"),
            redirectUri: "https://mail.example/cb")
        return try await signIn(client, at: mail, password: "correct horse battery")
    }

    /// Runs `body` against a fresh server's router with alice signed in at Mail (``signIn(_:_:)``).
    static func withAliceSignedIn(
        _ backend: Backend, _ body: @Sendable (TestServer, any TestClientProtocol, SignedIn) async throws -> Void
    ) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in try await body(server, client, try await signIn(server, client)) }
    }

    /// Alice signs in at `mail` in a fresh browser session with `password`.
    static func signIn(_ client: any TestClientProtocol, at mail: CodeFlowClient, password: String) async throws
        -> SignedIn
    {
        let first = try await PageAnswer.fetch(client, .get, mail.authorizeURI(["scope": "openid offline_access"]))
        let (location, cookie, _) = try await AuthorizationCodeTests.signIn(client, from: first, password: password)
        let answer = try await mail.redeem(try #require(CodeFlowClient.query(location)["code"]), verifier: nil)
        #expect(answer.status == .ok, "\(answer.body)")
        let tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(answer.body.utf8))
        #expect(tokens.refreshToken != nil)
        let sid = try await mail.verify(tokens.idToken).sid
        return SignedIn(client: client, mail: mail, tokens: tokens, cookie: cookie, sid: sid)
    }

    /// Checks that nothing alice held works any more and that `mail` was told of the session's end.
    static func expectEverythingEnded(_ alice: SignedIn, _ server: TestServer) async throws {
        #expect(CodeFlowClient.error(try await alice.refresh()) == "invalid_grant")
        #expect(try await alice.accessWorks() == false)
        #expect(try await alice.singleSignOnWorks() == false)
        let logouts = try await server.store.outboxItems(subject: alice.sid).filter { $0.channel == .logout }
        #expect(logouts.count == 1 && logouts.first?.target == alice.mail.clientId, "\(logouts)")
    }

    @Test(
        "A code or refresh token presented by another client is not spent: its owner's grant goes on",
        arguments: Backend.all)
    func spentOnlyByItsClient(_ backend: Backend) async throws {
        try await Self.withAliceSignedIn(backend) { server, client, alice in
            // A public client: its id is all an attacker needs to authenticate as it.
            let thief = try await AuthorizationCodeTests.registered(
                server, client,
                CreateClientRequest(
                    name: "Thief", scopes: ["offline_access"], redirectUris: ["https://thief.example/cb"],
                    type: "public", grantTypes: ["authorization_code", "refresh_token"]),
                redirectUri: "https://thief.example/cb")
            let stolen = try #require(alice.tokens.refreshToken)
            #expect(
                CodeFlowClient.error(
                    try await thief.token(["grant_type": "refresh_token", "refresh_token": stolen])) == "invalid_grant")
            // Before, the thief's try spent the token and alice's next refresh revoked her whole family.
            let refreshed = try await alice.refresh()
            #expect(refreshed.status == .ok, "\(refreshed.body)")
            #expect(try await alice.accessWorks())

            // The same for a code: the thief's redemption leaves it to its client.
            let again = try await PageAnswer.fetch(
                client, .get, alice.mail.authorizeURI(["scope": "openid"]), cookie: alice.cookie)
            let code = try #require(CodeFlowClient.query(again.location)["code"])
            #expect(
                CodeFlowClient.error(
                    try await thief.token([
                        "grant_type": "authorization_code", "code": code, "redirect_uri": thief.redirectUri,
                    ])) == "invalid_grant")
            #expect(try await alice.mail.redeem(code, verifier: nil).status == .ok)
            let events = try await server.store.auditEvents(AuditFilter(typePrefix: "openid.refresh_reused"), limit: 5)
            #expect(events.isEmpty, "\(events.map(\.detail))")

            // Introspection authenticates its caller as discovery says: a public client (its id alone) is refused.
            let introspected = try await PageAnswer.fetch(
                client, .post, "/oauth2/introspect", form: ["client_id": thief.clientId, "token": stolen])
            #expect(introspected.status == .unauthorized && CodeFlowClient.error(introspected) == "invalid_client")
        }
    }

    @Test(
        "Taking back consent ends the client's tokens at once; consents are listed and taken back per application",
        arguments: Backend.all)
    func consentRevocation(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let app = Application(router: server.router)
        try await app.test(.router) { client in
            _ = try await AuthorizationCodeTests.passwordOnly(server, client)
            let partner = try await AuthorizationCodeTests.registered(
                server, client,
                CreateClientRequest(
                    name: "Partner", scopes: ["profile", "offline_access"],
                    redirectUris: ["https://partner.example/cb"], grantTypes: ["authorization_code", "refresh_token"],
                    thirdParty: true),
                redirectUri: "https://partner.example/cb")
            let first = try await PageAnswer.fetch(
                client, .get, partner.authorizeURI(["scope": "openid profile offline_access"]))
            let (location, cookie, _) = try await AuthorizationCodeTests.signIn(
                client, from: first, password: "correct horse battery")
            #expect(location == "/login/consent")
            let page = try await PageAnswer.fetch(client, .get, "/login/consent", cookie: cookie)
            let allowed = try await PageAnswer.fetch(
                client, .post, "/login/consent", cookie: cookie,
                form: ["csrf": try #require(page.field("csrf")), "decision": "allow"])
            let answer = try await partner.redeem(
                try #require(CodeFlowClient.query(allowed.location)["code"]), verifier: nil)
            let tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: Data(answer.body.utf8))
            let refreshToken = try #require(tokens.refreshToken)

            // Another application's view of alice: none of the first application's consents.
            let made = try await PageAnswer.fetch(
                client, .post, "/api/v1/applications",
                json: try OperatorJSON.encoder().encode(CreateApplicationRequest(name: "Business")),
                headers: [.authorization: "Bearer \(server.apiKey)"])
            let business = try OperatorJSON.decoder().decode(ApplicationInfo.self, from: Data(made.body.utf8))
            let authorizations = Services(server.environment).authorizations
            #expect(try await authorizations.consents(userId: "alice", application: business.applicationId).isEmpty)
            #expect(
                try await authorizations.consents(userId: "alice", application: server.application.id).map(\.client.id)
                    == [partner.clientId])
            #expect(
                try await authorizations.revokeConsent(
                    userId: "alice", clientId: partner.clientId, application: business.applicationId) == false)

            // Taken back on the signed-in page: the refresh token and the access token end now.
            let done = try await PageAnswer.fetch(client, .get, "/login/done", cookie: cookie)
            _ = try await PageAnswer.fetch(
                client, .post, "/login/consents/revoke", cookie: cookie,
                form: ["csrf": try #require(done.field("csrf")), "clientId": partner.clientId])
            let refused = try await partner.token(["grant_type": "refresh_token", "refresh_token": refreshToken])
            #expect(CodeFlowClient.error(refused) == "invalid_grant", "\(refused.body)")
            let userinfo = try await PageAnswer.fetch(
                client, .get, "/oauth2/userinfo", headers: [.authorization: "Bearer \(tokens.accessToken)"])
            #expect(userinfo.status == .unauthorized)
            let audit = try await server.store.auditEvents(
                AuditFilter(typePrefix: "openid.consent_revoked"), limit: 5)
            #expect(audit.first?.detail.contains("1 refresh token(s) revoked") == true, "\(audit.map(\.detail))")
        }
    }

    @Test(
        "A disabled account signs in nowhere and everything it held ends; enabled again, it signs in",
        arguments: Backend.all)
    func disabledAccount(_ backend: Backend) async throws {
        try await Self.withAliceSignedIn(backend) { server, client, alice in
            let key: HTTPFields = [.authorization: "Bearer \(server.apiKey)"]
            func patch(_ body: String) async throws -> PageAnswer {
                try await PageAnswer.fetch(
                    client, .patch, "/api/v1/tfa/accounts/alice", json: Data(body.utf8), headers: key)
            }
            let disabled = try await patch(#"{"disabled":true}"#)
            #expect(disabled.status == .ok, "\(disabled.body)")
            let account = try OperatorJSON.decoder().decode(TFAAccountInfo.self, from: Data(disabled.body.utf8))
            #expect(account.disabledAt != nil)
            try await Self.expectEverythingEnded(alice, server)

            // The right password, and a relying party's own first factor: refused with the reason.
            let login = try await PageAnswer.fetch(
                client, .post, "/api/tfa/login",
                json: try JSONEncoder().encode(TFALoginRequest(userId: "alice", password: "correct horse battery")))
            #expect(login.status == .forbidden && login.body.contains("ACCOUNT_DISABLED"), "\(login.body)")
            let own = try await PageAnswer.fetch(
                client, .post, "/api/v1/tfa/logins", json: Data(#"{"userId":"alice"}"#.utf8), headers: key)
            #expect(own.status == .forbidden && own.body.contains("ACCOUNT_DISABLED"), "\(own.body)")
            // The hosted pages say so and sign nobody in.
            let first = try await PageAnswer.fetch(
                client, .get, alice.mail.authorizeURI(["scope": "openid offline_access"]))
            let (location, cookie, _) = try await AuthorizationCodeTests.signIn(
                client, from: first, password: "correct horse battery")
            #expect(location.map { CodeFlowClient.query($0)["code"] == nil } ?? true, "\(String(describing: location))")
            let shown = try await PageAnswer.fetch(client, .get, location ?? "/login", cookie: cookie)
            #expect(shown.body.contains("This account is disabled"), "\(shown.body)")
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "tfa.account_"), limit: 5)
            #expect(audit.first?.type == "tfa.account_disabled" && audit.first?.actor.hasPrefix("key:") == true)

            // Enabled again: alice signs in as before; a change to nothing is refused with a sentence.
            #expect(try await patch(#"{"disabled":false}"#).status == .ok)
            let again = try await Self.signIn(client, at: alice.mail, password: "correct horse battery")
            #expect(try await again.accessWorks())
            let nothing = try await patch("{}")
            #expect(nothing.status == .badRequest && nothing.body.contains("send name or disabled"), "\(nothing.body)")
        }
    }

    @Test(
        "An operator's sign-out everywhere and removing the account end every token, single sign-on and browser session",
        arguments: Backend.all)
    func operatorRevocations(_ backend: Backend) async throws {
        try await Self.withAliceSignedIn(backend) { server, client, alice in
            let key: HTTPFields = [.authorization: "Bearer \(server.apiKey)"]
            let signedOut = try await PageAnswer.fetch(
                client, .post, "/api/v1/tfa/accounts/alice/sign-out", headers: key)
            #expect(signedOut.status == .ok, "\(signedOut.body)")
            let ended = try OperatorJSON.decoder().decode(TFASignOutResponse.self, from: Data(signedOut.body.utf8))
            #expect(ended.refreshTokensRevoked == 1 && ended.sessionsEnded == 1, "\(ended)")
            try await Self.expectEverythingEnded(alice, server)
            let audit = try await server.store.auditEvents(AuditFilter(typePrefix: "openid.grants_revoked"), limit: 5)
            #expect(audit.first?.actor.hasPrefix("key:") == true && audit.first?.userId == "alice")
            #expect(
                try await PageAnswer.fetch(client, .post, "/api/v1/tfa/accounts/nobody/sign-out", headers: key).status
                    == .notFound)

            // Signed in again; then the account is removed: the same.
            let again = try await Self.signIn(client, at: alice.mail, password: "correct horse battery")
            #expect(try await again.singleSignOnWorks())
            #expect(
                try await PageAnswer.fetch(client, .delete, "/api/v1/tfa/accounts/alice", headers: key).status
                    == .noContent)
            try await Self.expectEverythingEnded(again, server)
        }
    }

    @Test(
        "A password change and a phone reported lost end every grant but the page the person is on",
        arguments: Backend.all)
    func personRevocations(_ backend: Backend) async throws {
        try await Self.withAliceSignedIn(backend) { server, client, alice in
            let account = Services(server.environment).account
            try await account.changePassword(
                server.application, userId: "alice", current: "correct horse battery",
                new: "an even better password", address: nil)
            try await Self.expectEverythingEnded(alice, server)

            // A phone reported lost: the same, but the page session it was reported from stays.
            let again = try await Self.signIn(client, at: alice.mail, password: "an even better password")
            let cookie = again.cookie
            let created = try await PageAnswer.fetch(
                client, .post, "/api/v1/activations",
                json: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: "alice", commitMode: nil)),
                headers: [.authorization: "Bearer \(server.apiKey)"])
            let phone = try OperatorJSON.decoder().decode(CreateActivationResponse.self, from: Data(created.body.utf8))
            let value = try #require(cookie.split(separator: "=", maxSplits: 1).last.map(String.init))
            _ = try await account.lostPhone(
                server.application, userId: "alice", activationId: phone.activationId, keeping: TFATokens.hash(value))
            #expect(CodeFlowClient.error(try await again.refresh()) == "invalid_grant")
            #expect(try await again.accessWorks() == false)
            // The page it was reported from is still signed in; every other browser is not.
            #expect(try await again.singleSignOnWorks())
            let others = try await server.store.deleteWebSessions(
                owner: GrantRevocation.owner(server.application.id, "alice"), except: TFATokens.hash(value))
            #expect(others == 0)
        }
    }
}
