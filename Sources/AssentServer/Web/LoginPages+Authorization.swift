import AssentModel
import Foundation
import Hummingbird

/// The authorization endpoint: the hosted login is the OpenID provider's sign-in page, and its session the
/// single-sign-on session.
extension LoginPages {
    /// `GET|POST /oauth2/authorize` (OpenID Connect Core §3.1.2): a request the session's sign-in serves gets its
    /// code at once; otherwise the person signs in on the hosted pages, which then send the browser back with the
    /// code. A client or redirect URI that cannot be trusted gets an error page, every other refusal goes back to
    /// the client.
    func authorize(_ request: Request) async throws -> Response {
        let read: (fields: [String: String], repeated: String?)
        do {
            if request.method == .post {
                guard let type = request.headers[.contentType],
                    type.lowercased().hasPrefix("application/x-www-form-urlencoded")
                else {
                    return pages.error(
                        .unsupportedMediaType, "The sign-in request must be a form: go back to the site and try again.",
                        next: nil)
                }
                read = try FormEncoding.decodeFirst(
                    Data(try await request.body.collect(upTo: WebForm.maxSize).readableBytesView))
            } else {
                read = try FormEncoding.decodeFirst(Data((request.uri.query ?? "").utf8))
            }
        } catch {
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
        // The session's sign-in, also while the person is part-way through another one.
        let signIn = session?.state.application == authorization.applicationId ? session?.state.signIn : nil
        if var session, let signIn,
            authorizations.serves(authorization, signIn, applicationId: session.state.application)
        {
            // Signed in: a code at once, or — for a stronger sign-in than the session holds — the missing factor.
            if authorization.prompt.contains("none"), let wanted = authorization.assurance, signIn.assurance < wanted {
                return WebPages.redirect(
                    authorization.errorLocation(
                        .interactionRequired, "The request needs a second factor the session has not verified.",
                        issuer: environment.openID.issuer))
            }
            session.state = session.state.restarted()
            session.state.step = .signedIn
            session.state.userId = signIn.userId
            session.state.authorization = authorization
            let location = try await continueAuthorization(&session.state)
            guard try await sessions.save(&session, lifetime: lifetime(session.state)) else {
                return WebPages.redirect("/login?expired=1")
            }
            return WebPages.redirect(location)
        }
        if authorization.prompt.contains("none") {
            return WebPages.redirect(
                authorization.errorLocation(
                    .loginRequired,
                    signIn == nil ? "The person is not signed in." : "The request needs the person to sign in again.",
                    issuer: environment.openID.issuer))
        }
        // Sign in (again), for this client; the session's sign-in serves others until a new one replaces it.
        var state = LoginState(application: authorization.applicationId)
        state.authorization = authorization
        state.signIn = signIn
        state.methods = session?.state.methods ?? []
        state.userId = authorization.loginHint ?? signIn?.userId
        let next = "/login?application=\(FormEncoding.escape(authorization.applicationId))"
        if var existing = session {
            existing.state = state
            if try await sessions.save(&existing) { return WebPages.redirect(next) }
        }
        let (_, cookie) = try await sessions.create(state)
        return WebPages.redirect(next, cookies: [cookie])
    }
}
