import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// Passkeys on the hosted sign-in pages: the passkey step of a second factor (create one when setting up, use one
/// when verifying), and passwordless sign-in from the sign-in page (a button, and the browser's own suggestion in
/// the user-name field). The browser's part is `passkey.js`; the checks are ``PasskeyFactor``'s.
extension LoginPages {
    /// The sign-in form's content: with passkey sign-in when the application lets a passkey sign in alone.
    func signInContent(_ application: ApplicationRecord) async throws -> LoginSignInPage {
        LoginSignInPage(passkeys: try await passkey.passkeys.policy(application.id).firstFactor ?? true)
    }

    /// The passkey step's check of the credential the browser made (registration) or used: passed → its proof.
    /// A refused one spends the challenge on the page either way, so new options come with the refusal.
    func verifyPasskey(_ assertion: String, registration: Bool, remember: Bool, _ form: [String: String])
        async throws -> LoginFlow.Event
    {
        let json = Data((form["credential"] ?? "").utf8)
        let proof: String
        do {
            if registration {
                let credential = try JSONDecoder().decode(RegistrationCredential.self, from: json)
                proof = try await passkey.register(
                    PasskeyRegisterRequest(assertion: assertion, credential: credential, name: form["name"])
                ).providerAssertion
            } else {
                let credential = try JSONDecoder().decode(AuthenticationCredential.self, from: json)
                proof = try await passkey.verify(PasskeyVerifyRequest(assertion: assertion, credential: credential))
                    .providerAssertion
            }
        } catch is DecodingError {
            return .passkeyUnreadable
        } catch let error as TFAError {
            return .passkeyRefused(error, options: try? await passkeyOptions(assertion))
        }
        return .factorPassed(proof: proof, remember: remember, backupCodesLeft: nil)
    }

    /// A passkey ceremony's options for the browser, as JSON.
    func passkeyOptions(_ assertion: String) async throws -> String {
        let options = try await passkey.options(TFAAssertionRequest(assertion: assertion))
        return String(decoding: try JSONEncoder().encode(options), as: UTF8.self)
    }

    /// `POST /login/passkey/options` (from `passkey.js` on the sign-in page): options for a passwordless sign-in,
    /// as JSON. The form's token is the session's, or before one exists the sign-in form's.
    @Sendable func passkeySignInOptions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let address = context.clientLimitKey
        guard let form = try await WebForm.read(request), try await validForm(form, request) else {
            return try TFAController.json(
                ["code": "FORBIDDEN", "message": "This page is stale or did not come from this site: reload it."],
                status: .forbidden)
        }
        do {
            return try TFAController.json(
                try await passkey.signInOptions(
                    PasskeyLoginOptionsRequest(application: form["application"]), address: address))
        } catch let error as TFAError {
            return error.response
        }
    }

    /// `POST /login/passkey/sign-in`: a passwordless sign-in; the session starts signed in (or, for a client's
    /// request, goes on to it).
    @Sendable func passkeySignIn(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request) else {
            return pages.error(.unsupportedMediaType, "This page takes an HTML form: go back and submit it again.")
        }
        guard try await validForm(form, request) else {
            return pages.error(
                .forbidden, "This form is stale or did not come from this site: open the sign-in page again.")
        }
        let session = try await sessions.load(request)
        var state: LoginState
        if let session {
            state = session.state
        } else {
            state = LoginState(application: try await flows.application(form["application"]).id)
            if form["return"] == "account" { state.returnTo = "/account" }
        }
        do {
            let credential = try JSONDecoder().decode(
                AuthenticationCredential.self, from: Data((form["credential"] ?? "").utf8))
            let success = try await passkey.signIn(
                PasskeyLoginRequest(application: state.application, credential: credential))
            _ = try await run(
                .signedIn(try await signedIn(success, application: state.application)), &state,
                LoginInput(request, form: form, address: nil))
        } catch is DecodingError {
            (state, _) = flow.transition(
                state, on: .refused("Your browser sent no passkey: try again, or sign in with your password."))
        } catch let error as TFAError {
            (state, _) = flow.transition(state, on: .passwordlessRefused(error))
        }
        let location = try await proceed(&state)
        guard var existing = session else {
            guard state.step != .signIn else {
                // Nothing is stored until someone signs in: the form again, with the reason.
                let application = try await flows.applicationRecord(id: state.application)
                var frame = try await frame(application, csrf: form["csrf"] ?? "", userId: nil)
                frame.message = state.message
                return pages.page(try await signInContent(application), frame: frame, status: .badRequest)
            }
            let (_, cookie) = try await sessions.create(state, lifetime: lifetime(state))
            return WebPages.redirect(location, cookies: [cookie, formToken.removal])
        }
        existing.state = state
        guard try await sessions.save(&existing, lifetime: lifetime(state)) else {
            return WebPages.redirect("/login?expired=1")
        }
        return WebPages.redirect(location)
    }

    /// Whether the form carries the session's token, or (no session yet) the sign-in form's.
    private func validForm(_ form: [String: String], _ request: Request) async throws -> Bool {
        if let session = try await sessions.load(request) {
            return WebSessions<LoginState>.validToken(form, session)
        }
        return formToken.matches(form, request)
    }
}
