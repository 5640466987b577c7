import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The console's second factors beside TOTP. Passkeys of operator accounts: added on "Your account", and used at
/// sign-in instead of the authenticator app's code (the password first, then the passkey, with user verification).
/// The ceremony's challenge lives in the console session and is taken by the answer, so it is used once.
extension ConsolePages {
    func addPasskeyRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        console.post("me/passkeys/options", use: passkeyCreationOptions)
        console.post("me/passkeys", use: addPasskey)
        console.post("me/passkeys/{id}/remove", use: removePasskey)
    }

    /// The second steps of a sign-in, before a session signs anyone in: a passkey's options and answer, and the
    /// wait for the phone's approval.
    func addSignInSecondFactorRoutes(to router: Router<AssentRequestContext>) {
        router.post("console/sign-in/passkey/options", use: passkeyRequestOptions)
        router.post("console/sign-in/passkey", use: passkeySignIn)
        router.get("console/sign-in/phone", use: phoneWait)
    }

    /// `POST /console/me/passkeys/options`: the options to create a passkey (JSON), the challenge kept in the
    /// session.
    @Sendable func passkeyCreationOptions(_ request: Request, context: ConsoleRequestContext) async throws
        -> Response
    {
        let visit = try context.visit
        let record = try await signedInOperator(visit)
        var session = visit.session
        let challenge = issueChallenge(&session.state)
        _ = try await sessions.save(&session)
        return try HTTPSupport.json(try await passkeys.creationOptions(record, challenge: challenge))
    }

    /// `POST /console/me/passkeys`: the browser's new passkey, checked against the session's challenge.
    @Sendable func addPasskey(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let record = try await signedInOperator(visit)
        var session = visit.session
        let challenge = takeChallenge(&session.state)
        do {
            guard let challenge else {
                throw AssentServerError.invalidRequest(
                    "This passkey request expired or was answered already: try again.")
            }
            let credential = try JSONDecoder().decode(
                RegistrationCredential.self, from: Data((visit.form["credential"] ?? "").utf8))
            let added = try await passkeys.register(
                record, credential: credential, name: visit.form["name"], challenge: challenge)
            session.state.message =
                "Passkey \"\(added.name)\" added: sign in with it instead of the authenticator app's code."
        } catch let error as AssentServerError where error.status < 500 {
            (session.state.message, session.state.failed) = (error.message, true)
        } catch is DecodingError {
            (session.state.message, session.state.failed) = ("The browser's answer is not a passkey.", true)
        }
        _ = try await sessions.save(&session)
        return WebPages.redirect("/console/me")
    }

    /// `POST /console/me/passkeys/{id}/remove` (asked first, naming the passkey).
    @Sendable func removePasskey(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameter("id")
        let ask: Ask = { visit in
            guard let passkey = try await passkeys.passkey(try await signedInOperator(visit), id: id) else {
                throw AssentServerError.notFound("You have no such passkey.")
            }
            return Confirmation(
                title: "Remove a passkey", question: "Remove the passkey “\(passkey.name)” from your account?",
                consequence:
                    "It no longer signs you in; the authenticator app's code and your other passkeys still do.",
                button: "Remove “\(passkey.name)”")
        }
        return try await act(context, back: "/console/me", ask: ask) { visit in
            try await passkeys.remove(try await signedInOperator(visit), id: id)
            return ("/console/me", "Passkey removed.")
        }
    }

    /// `POST /console/sign-in/passkey/options`: the options to use a passkey for the half-done sign-in (JSON).
    @Sendable func passkeyRequestOptions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request), var session = try await sessions.load(request),
            WebSessions<ConsoleState>.validToken(form, session), let record = try await pendingOperator(session)
        else {
            return try HTTPSupport.json(
                ["message": "This sign-in expired: start again with your name and password."],
                status: .unauthorized)
        }
        let challenge = issueChallenge(&session.state)
        _ = try await sessions.save(&session)
        return try HTTPSupport.json(try await passkeys.requestOptions(record, challenge: challenge))
    }

    var passkeys: OperatorPasskeys { operatorPasskeys }

    /// The operator account of a visit; an API key has no passkeys.
    func signedInOperator(_ visit: Visit) async throws -> OperatorRecord {
        guard let id = visit.session.state.operatorId, let record = try await operators.record(id: id)
        else { throw AssentServerError.invalidRequest("An API key has no passkeys: sign in with an operator account.") }
        return record
    }

    /// The account a half-done passkey sign-in is for, while it may still sign in.
    private func pendingOperator(_ session: Session) async throws -> OperatorRecord? {
        guard let id = session.state.pendingOperatorId, let record = try await operators.record(id: id),
            record.isSetUp, record.disabledAt == nil
        else { return nil }
        return record
    }

    /// A session for a sign-in whose password was right and whose second factor is to come (it opens no page),
    /// replacing the browser's; with the cookies that set it and drop the sign-in form's.
    private func halfDoneSession(_ request: Request, _ state: ConsoleState) async throws
        -> (Session, cookies: [HTTPField])
    {
        if let old = try await sessions.load(request) { _ = try await sessions.end(old) }
        let (session, cookie) = try await sessions.create(state)
        return (
            session,
            [HTTPField(name: .setCookie, value: cookie), HTTPField(name: .setCookie, value: formToken.removal)]
        )
    }

    private func issueChallenge(_ state: inout ConsoleState) -> String {
        let (value, expiresAt) = passkeys.challenge()
        (state.passkeyChallenge, state.passkeyChallengeExpiresAt) = (value, expiresAt)
        return value
    }

    /// The session's challenge while unexpired; it is gone from the state either way.
    private func takeChallenge(_ state: inout ConsoleState) -> String? {
        defer { (state.passkeyChallenge, state.passkeyChallengeExpiresAt) = (nil, nil) }
        guard let value = state.passkeyChallenge, let expires = state.passkeyChallengeExpiresAt,
            expires > clock.millis
        else { return nil }
        return value
    }

    /// The first step of a passkey sign-in (the name and password were right): a session that signs nothing in yet,
    /// and the page that asks for the passkey.
    func passkeyStep(_ request: Request, _ record: OperatorRecord) async throws -> Response {
        guard try await !passkeys.all(operatorId: record.id).isEmpty else {
            return try await signInPage(
                request,
                message: "Your account has no passkey yet: sign in with the code from your authenticator app, and add "
                    + "one on Your account.",
                status: .badRequest)
        }
        let (session, cookies) = try await halfDoneSession(request, ConsoleState(pendingOperatorId: record.id))
        var response = pages.page(
            ConsolePasskeySignInPage(csrf: session.csrfToken, name: record.name),
            frame: LayoutFrame(title: "Sign in with your passkey", application: "Assent console", message: nil))
        response.headers.append(contentsOf: cookies)
        return response
    }

    /// `POST /console/sign-in/passkey`: the passkey's answer to the session's challenge; right → signed in.
    @Sendable func passkeySignIn(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let address = context.clientLimitKey
        guard let form = try await WebForm.read(request), var session = try await sessions.load(request),
            WebSessions<ConsoleState>.validToken(form, session), let record = try await pendingOperator(session)
        else {
            return try await signInPage(
                request, message: "This sign-in expired: start again with your name and password.",
                status: .unauthorized)
        }
        if var refused = try await overSignInLimit(request, address: address, account: record.name) {
            refused.headers.append(HTTPField(name: .setCookie, value: try await sessions.end(session)))
            return refused
        }
        let challenge = takeChallenge(&session.state)
        _ = try await sessions.save(&session)
        let credential = try? JSONDecoder().decode(
            AuthenticationCredential.self, from: Data((form["credential"] ?? "").utf8))
        guard let challenge, let credential,
            try await passkeys.authenticate(record, credential: credential, challenge: challenge)
        else {
            await refuseSignIn(address: address, account: record.name, "the passkey was not accepted")
            let ended = try await sessions.end(session)
            var response = try await signInPage(
                request, message: "The passkey was not accepted: sign in again.", status: .unauthorized)
            response.headers.append(HTTPField(name: .setCookie, value: ended))
            return response
        }
        return try await startSession(request, ConsoleState(operatorId: record.id), Principal(record))
    }
}

/// The second step of a passkey sign-in.
struct ConsolePasskeySignInPage: PageContext {
    static let template = PageTemplate.consoleSignInPasskey
    var csrf: String
    var name: String
}

/// An operator's phone: linked on "Your account", then approving sign-ins (``OperatorPhones``).
extension ConsolePages {
    var phones: OperatorPhones { operatorPhones }

    func addPhoneRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        console.post("me/phone", use: linkPhone)
        console.post("me/phone/check", use: checkPhoneLink)
        console.post("me/phone/unlink", use: unlinkPhone)
    }

    /// `POST /console/me/phone`: asks the operator's phone (an active activation of one of their applications) to
    /// approve their sign-ins from now on.
    @Sendable func linkPhone(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let record = try await signedInOperator(visit)
        var session = visit.session
        do {
            guard let application = visit.applications.first(where: { $0.id == visit.form["application"] })
            else { throw AssentServerError.invalidRequest("Choose one of your applications.") }
            let userId = (visit.form["user"] ?? "").trimmingCharacters(in: .whitespaces)
            let operation = try await phones.startLink(record, application: application, userId: userId)
            session.state.phoneOperationId = operation.id
            session.state.message =
                "Approve the request on your phone (\"Approve console sign-ins with this phone?\"), then check."
        } catch let error as AssentServerError where error.status < 500 {
            (session.state.message, session.state.failed) = (error.message, true)
            session.state.form = visit.form.filter { $0.key != "csrf" }
        }
        _ = try await sessions.save(&session)
        return WebPages.redirect("/console/me")
    }

    /// `POST /console/me/phone/check`: whether the phone approved the link.
    @Sendable func checkPhoneLink(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let record = try await signedInOperator(visit)
        var session = visit.session
        do {
            let activation = try await phones.finishLink(record, operationId: session.state.phoneOperationId ?? "")
            session.state.phoneOperationId = nil
            session.state.message =
                "Your phone (\(activation.deviceLabel)) approves your sign-ins from now on: choose \"Approve on "
                + "my phone\" when you sign in."
        } catch let error as AssentServerError where error.status < 500 {
            (session.state.message, session.state.failed) = (error.message, true)
        }
        _ = try await sessions.save(&session)
        return WebPages.redirect("/console/me")
    }

    /// `POST /console/me/phone/unlink`.
    @Sendable func unlinkPhone(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console/me") { visit in
            try await phones.unlink(try await signedInOperator(visit))
            return ("/console/me", "Your phone no longer approves your sign-ins.")
        }
    }

    /// The first step of a sign-in approved on the phone (the name and password were right): a session that signs
    /// nothing in yet, the request on the phone, and the page that shows its number.
    func phoneStep(_ request: Request, _ record: OperatorRecord, address: String?) async throws -> Response {
        guard let phone = try await phones.phone(record) else {
            return try await signInPage(
                request,
                message: "Your account has no phone to approve sign-ins: sign in with the code from your authenticator "
                    + "app, and link one on Your account.",
                status: .badRequest)
        }
        let operation = try await phones.startSignIn(record, phone: phone, address: address)
        let (_, cookies) = try await halfDoneSession(
            request, ConsoleState(pendingOperatorId: record.id, phoneOperationId: operation.id))
        var response = phonePage(record, number: operation.matchingNumber)
        response.headers.append(contentsOf: cookies)
        return response
    }

    private func phonePage(_ record: OperatorRecord, number: Int?) -> Response {
        pages.page(
            ConsolePhoneSignInPage(name: record.name, number: number.map(String.init) ?? ""),
            frame: LayoutFrame(title: "Approve on your phone", application: "Assent console", message: nil))
    }

    /// `GET /console/sign-in/phone` (the waiting page reloads itself): approved → signed in; waiting → the page
    /// again; refused or expired → the sign-in page with the reason.
    @Sendable func phoneWait(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let address = context.clientLimitKey
        guard let session = try await sessions.load(request), let id = session.state.pendingOperatorId,
            let record = try await operators.record(id: id), record.isSetUp, record.disabledAt == nil,
            let operationId = session.state.phoneOperationId
        else {
            return try await signInPage(
                request, message: "This sign-in expired: start again with your name and password.",
                status: .unauthorized)
        }
        switch try await phones.signIn(record, operationId: operationId) {
        case .approved:
            return try await startSession(request, ConsoleState(operatorId: record.id), Principal(record))
        case .pending(let number):
            return phonePage(record, number: number)
        case .refused(let reason):
            // Rejected on the phone, the wrong number chosen, or left to expire: a wrong sign-in.
            await refuseSignIn(address: address, account: record.name, "not approved on the phone")
            let ended = try await sessions.end(session)
            var response = try await signInPage(request, message: reason, status: .unauthorized)
            response.headers.append(HTTPField(name: .setCookie, value: ended))
            return response
        }
    }
}

/// The waiting page of a sign-in approved on the phone: the number to choose there. It reloads itself.
struct ConsolePhoneSignInPage: PageContext {
    static let template = PageTemplate.consoleSignInPhone
    var name: String
    var number: String
}
