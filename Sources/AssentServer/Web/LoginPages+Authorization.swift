import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The authorization endpoint: the hosted login is the OpenID provider's sign-in page, and its session the
/// single-sign-on session.
extension LoginPages {
    /// `GET|POST /oauth2/authorize` (OpenID Connect Core §3.1.2): a request the session's sign-in serves gets its
    /// code at once; otherwise the person signs in on the hosted pages, which then send the browser back with the
    /// code. A client or redirect URI that cannot be trusted gets an error page, every other refusal goes back to
    /// the client.
    @Sendable func authorize(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let read = try await Self.parameters(request) else {
            return pages.error(
                .badRequest, "The sign-in link is not valid: go back to the site you came from and try again.",
                next: nil)
        }
        // OpenID Connect Core §3.1.2.1 (via OAuth 2.0 §3.1): an empty parameter is an omitted one.
        let parameters = read.fields.filter { !$0.value.isEmpty }
        let authorization: AuthorizationRequest
        do {
            authorization = try await authorizations.validate(parameters, repeated: read.repeated)
        } catch AuthorizationFailure.page(let message) {
            return pages.error(.badRequest, message, next: nil)
        } catch AuthorizationFailure.redirect(let location) {
            return WebPages.redirect(location)
        }
        let session = try await sessions.load(request)
        let decision = try await flow.authorize(
            authorization, session: session?.state, now: clock.millis
        ) { userId in
            try await authorizations.needsConsent(authorization, userId: userId)
        }
        switch decision {
        case .redirect(let location):
            return WebPages.redirect(location)
        case .signedIn(var state):
            // Signed in: a code at once, or — for a stronger sign-in than the session holds — the missing factor.
            let location = try await proceed(&state)
            guard var session else {
                let (_, cookie) = try await sessions.create(state, lifetime: lifetime(state))
                return WebPages.redirect(location, cookies: [cookie])
            }
            session.state = state
            guard try await sessions.save(&session, lifetime: lifetime(session.state)) else {
                return WebPages.redirect("/login?expired=1")
            }
            return WebPages.redirect(location)
        case .signIn(let state):
            // Sign in (again), for this client; the session's sign-in serves others until a new one replaces it.
            let next = "/login?application=\(FormEncoding.escape(authorization.applicationId))"
            if var existing = session {
                existing.state = state
                if try await sessions.save(&existing) { return WebPages.redirect(next) }
            }
            let (_, cookie) = try await sessions.create(state)
            return WebPages.redirect(next, cookies: [cookie])
        }
    }

    /// An OpenID request's parameters: the query of a GET, the form of a POST (each name's first value, and the first
    /// repeated name); `nil` when they are not a form or not valid percent-encoded UTF-8.
    static func parameters(_ request: Request) async throws -> (fields: [String: String], repeated: String?)? {
        do {
            if request.method == .post {
                guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true
                else { return nil }
                return try FormEncoding.decodeFirst(
                    Data(try await request.body.collect(upTo: WebForm.maxSize).readableBytesView))
            }
            return try FormEncoding.decodeFirst(Data((request.uri.query ?? "").utf8))
        } catch is FormEncoding.DecodingError {
            return nil
        }
    }

    /// `GET|POST /oauth2/logout` (OpenID Connect RP-Initiated Logout 1.0): ends the single-sign-on session — at once
    /// when `id_token_hint` names this session, else after the person confirms (so that no other site can sign
    /// them out unasked) — queues the back-channel logouts, and sends the browser to the registered
    /// `post_logout_redirect_uri` with `state`, or shows that the person is signed out. A hint this provider did
    /// not sign, an unknown client or an unregistered redirect is an error page, never a redirect.
    @Sendable func endSession(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let read = try await Self.parameters(request) else {
            return pages.error(.badRequest, "The sign-out link is not valid.", next: nil)
        }
        let parameters = read.fields.filter { !$0.value.isEmpty }
        var hint: (userId: String, clientId: String, sessionId: String?)?
        if let idToken = parameters["id_token_hint"] {
            guard let verified = try await authorizations.idTokenHint(idToken) else {
                return pages.error(
                    .badRequest, "The sign-out link carries an ID token this server did not issue.", next: nil)
            }
            hint = verified
        }
        if let named = parameters["client_id"], let hinted = hint?.clientId, named != hinted {
            return pages.error(.badRequest, "The sign-out link names two different clients.", next: nil)
        }
        var client: OpenIDClientRecord?
        if let clientId = parameters["client_id"] ?? hint?.clientId {
            client = try await clients.find(id: clientId)
            guard client != nil else {
                return pages.error(.badRequest, "The sign-out link names no client of this server.", next: nil)
            }
        }
        var next: String?
        if let uri = parameters["post_logout_redirect_uri"] {
            guard let client, client.postLogoutRedirectUris.contains(uri) else {
                return pages.error(
                    .badRequest,
                    "The sign-out link asks to return to an address the client did not register (or names no "
                        + "client): nothing was sent there.", next: nil)
            }
            next = AuthorizationService.location(uri, ["state": parameters["state"]])
        }
        let session = try await sessions.load(request)
        // The language: the logout request's own ui_locales, else the sign-in's, else the browser's.
        let uiLocales = parameters["ui_locales"].flatMap { $0.count <= 256 ? $0 : nil } ?? session?.state.uiLocales
        let applicationId = session?.state.application ?? client?.applicationId
        let application =
            if let applicationId { try await flows.applicationRecord(id: applicationId) } else {
                try await flows.application(nil)
            }
        func signedOut(_ cookies: [String]) async throws -> Response {
            if let next { return WebPages.redirect(next, cookies: cookies) }
            var done = try await self.frame(application, csrf: "", userId: nil, uiLocales: uiLocales)
            done.title = "Signed out"
            var response = pages.page(LoginLogoutPage(confirm: false), frame: done)
            for cookie in cookies { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
            return response
        }
        guard let session else { return try await signedOut([]) }
        var confirmed = false
        if request.method == .post, parameters["confirm"] == "yes" {
            guard WebSessions<LoginState>.validToken(read.fields, session) else {
                return pages.error(
                    .forbidden, "This form is stale or did not come from this site: sign out again.", next: nil)
            }
            confirmed = true
        }
        let ownSession = hint?.sessionId != nil && hint?.sessionId == session.state.signIn?.sessionId
        if confirmed || ownSession {
            let cookie = try await sessions.end(session)
            try await authorizations.endSession(session.state.signIn, application: session.state.application)
            return try await signedOut([cookie])
        }
        // Ask first; the form carries the request on.
        var question = try await self.frame(
            application, csrf: session.csrfToken, userId: session.state.signIn?.userId, uiLocales: uiLocales,
            account: session.state.accountLanguage)
        question.title = "Sign out?"
        question.client = client?.name
        let carried = ["id_token_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales"].compactMap {
            name in
            parameters[name].map { LabeledValue(label: name, value: $0) }
        }
        let targets = parameters["post_logout_redirect_uri"].flatMap(AuthorizationService.formTarget).map { [$0] }
        return pages.page(LoginLogoutPage(confirm: true, fields: carried), frame: question, formTargets: targets ?? [])
    }
}
