import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The hosted login under `/login`: sign in with a password, choose a second factor, enter the code (e-mail, text
/// message or call, authenticator app — with its QR code when registering) or approve on the phone, then the
/// signed-in page. Server-rendered HTML that works without JavaScript; only the wait for a push approval uses a
/// small script (an event stream), with a Continue button when scripts are off.
///
/// Every step goes through the same services as `/api/tfa`, so the rate limits, tries, lifetimes and audit
/// entries are the same. Forms are POSTed with the session's CSRF token and answered with a 303 to the next step's
/// page (post/redirect/get); the session lives in a `__Host-` cookie (see ``WebSessions``).
struct LoginPages: Sendable {
    let clock: WallClock
    let openID: OpenIDSettings
    let tfa: TFASettings
    /// Wakes the page that waits for a phone's answer.
    let events: EventHub
    let applications: ApplicationService
    let branding: ApplicationBrandingService
    let activations: ActivationService
    let operations: OperationService
    let clients: ClientService
    let flows: TFAService
    let totp: TOTPFactor
    let codes: CodeFactor
    let push: PushFactor
    let passkey: PasskeyFactor
    let backup: BackupCodeFactor
    let sessions: WebSessions<LoginState>
    let authorizations: AuthorizationService
    let accounts: TFAAccountService
    /// The sign-in's decisions; these pages carry them out.
    let flow: LoginFlow
    let pages = WebPages.shared
    typealias Session = WebSessions<LoginState>.Session

    /// The remembered-device cookie (set when a person ticks "remember this browser").
    static let deviceCookie = "__Host-assent-device"
    /// The sign-in form's CSRF token before a session exists (double-submit: the form carries the same value).
    let formToken = SignInFormToken(cookie: "__Host-assent-csrf", lifetime: 900)

    /// Takes from the composition root the services the pages call, and the settings they read.
    init(_ services: Services, _ environment: ServerEnvironment) {
        clock = services.clock
        openID = environment.openID
        tfa = environment.tfa
        events = environment.events
        applications = services.applications
        branding = services.branding
        activations = services.activations
        operations = services.operations
        clients = services.clients
        flows = services.tfa
        totp = services.totp
        codes = services.codes
        push = services.pushFactor
        passkey = services.passkeyFactor
        backup = services.backupCodes
        var sessions = WebSessions<LoginState>(
            store: services.webStore, clock: services.clock, cookieName: "__Host-assent-login", kind: "login",
            lifetime: 900, sameSite: "Lax", cookieLifetime: openID.sessionLifetime)
        sessions.owner = { state in state.signIn.map { GrantRevocation.owner(state.application, $0.userId) } }
        self.sessions = sessions
        authorizations = services.authorizations
        accounts = services.accounts
        flow = LoginFlow(issuer: openID.issuer)
    }

    /// How long a session lives after this save: a signed-in one as long as single sign-on lasts, one still
    /// signing in fifteen minutes.
    func lifetime(_ state: LoginState) -> Int? {
        state.step == .signedIn ? openID.sessionLifetime : nil
    }

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("login", use: signInPage)
        for form in LoginFlow.Form.allCases { router.post(RouterPath(form.path), use: submitted) }
        for step in LoginState.Step.allCases where step != .signIn { router.get(RouterPath(step.path), use: stepPage) }
        router.get("login/push/events", use: pushEvents)
        router.post("login/passkey/options", use: passkeySignInOptions)
        router.post("login/passkey/sign-in", use: passkeySignIn)
        router.post("login/consents/revoke", use: revokeConsent)
        router.post("login/logout", use: signOut)
        router.get("oauth2/authorize", use: authorize)
        router.post("oauth2/authorize", use: authorize)
        router.get("oauth2/logout", use: endSession)
        router.post("oauth2/logout", use: endSession)
    }

    /// `POST` of a step's form: the password form without a session starts one (``firstSignIn(_:address:)``);
    /// every other form goes to the flow (``submit(_:_:address:)``).
    @Sendable func submitted(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = LoginFlow.Form(path: request.uri.path) else { return WebPages.redirect("/login") }
        if form == .password, try await sessions.load(request) == nil {
            return try await firstSignIn(request, address: context.clientLimitKey)
        }
        return try await submit(request, form, address: context.clientLimitKey)
    }

    /// `GET` of a step's page (``show(_:_:)``).
    @Sendable func stepPage(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let step = LoginState.Step(path: request.uri.path) else {
            return WebPages.redirect("/login")
        }
        return try await show(request, step)
    }

    /// `POST /login/logout`: ends the session and its sign-in's grants; back to the sign-in page.
    @Sendable func signOut(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request), let session = try await sessions.load(request),
            WebSessions<LoginState>.validToken(form, session)
        else { return WebPages.redirect("/login") }
        let cookie = try await sessions.end(session)
        try await authorizations.endSession(session.state.signIn, application: session.state.application)
        return WebPages.redirect(
            "/login?application=\(FormEncoding.escape(session.state.application))", cookies: [cookie])
    }

    // MARK: Pages

    /// `GET /login[?application=ID]`: a fresh sign-in form (or the signed-in page for a signed-in session).
    @Sendable func signInPage(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let name = request.uri.queryParameters["application"].map(String.init)
        let application: ApplicationRecord
        do {
            application = try await flows.application(name)
        } catch let error as AssentServerError where error.status == 400 {
            return pages.error(.notFound, "This sign-in page belongs to no application: check the link you followed.")
        }
        let expired = request.uri.queryParameters["expired"] != nil
        let toAccount = request.uri.queryParameters["return"] == "account"
        let uiLocales = request.uri.queryParameters["ui_locales"].map(String.init).flatMap {
            (1...256).contains($0.count) ? $0 : nil
        }
        guard var session = try await sessions.load(request) else {
            // No session yet, and none is stored until a password is right: the form's token is a cookie's value.
            let (csrf, cookie) = formToken.issue(request)
            var frame = try await frame(application, csrf: csrf, userId: nil, uiLocales: uiLocales)
            frame.message = expired ? "The page expired: sign in again." : nil
            frame.returnTo = toAccount ? "account" : nil
            var response = pages.page(try await signInContent(application), frame: frame)
            response.headers.append(cookie)
            return response
        }
        let visit: LoginFlow.Visit
        (session.state, visit) = flow.signInPage(
            session.state, application: application.id, expired: expired, uiLocales: uiLocales, toAccount: toAccount)
        return try await answer(visit, &session, application: application)
    }

    /// `POST /login` without a session: the token must match the cookie the form came with; a wrong password
    /// answers the form again (nothing is stored), a right one starts the session.
    private func firstSignIn(_ request: Request, address: String?) async throws -> Response {
        guard let form = try await WebForm.read(request) else {
            return pages.error(.unsupportedMediaType, "This page takes an HTML form: go back and submit it again.")
        }
        guard formToken.matches(form, request) else {
            return pages.error(
                .forbidden, "This form is stale or did not come from this site: open the sign-in page again.")
        }
        guard let id = form["application"], id.utf8.count <= 64,
            let application = try await applications.application(id: id)
        else {
            return pages.error(.notFound, "This sign-in page belongs to no application: check the link you followed.")
        }
        var state = LoginState(application: application.id)
        if form["return"] == "account" { state.returnTo = "/account" }
        state.uiLocales = form["ui_locales"].flatMap { (1...256).contains($0.count) ? $0 : nil }
        let handled = try await run(
            LoginFlow.Form.password.event(form), &state, LoginInput(request, form: form, address: address))
        guard state.step != .signIn else {
            var frame = try await frame(
                application, csrf: form["csrf"] ?? "", userId: state.userId, uiLocales: state.uiLocales)
            frame.message = state.message
            frame.returnTo = state.returnTo == nil ? nil : "account"
            var response = pages.page(
                try await signInContent(application), frame: frame, status: handled.status ?? .badRequest)
            if let retryAfter = handled.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }
        let location = try await proceed(&state)
        let (_, cookie) = try await sessions.create(state, lifetime: lifetime(state))
        return WebPages.redirect(location, cookies: [cookie, formToken.removal])
    }

    /// `GET` of a step's page: the page when the session is at that step, else a redirect to where it is.
    private func show(_ request: Request, _ step: LoginState.Step) async throws -> Response {
        guard var session = try await sessions.load(request) else { return WebPages.redirect("/login?expired=1") }
        let visit: LoginFlow.Visit
        (session.state, visit) = flow.visit(session.state, step)
        let application = try await flows.applicationRecord(id: session.state.application)
        return try await answer(visit, &session, application: application)
    }

    /// The flow's answer to a visit: the step's page, or a redirect to where the session is.
    private func answer(_ visit: LoginFlow.Visit, _ session: inout Session, application: ApplicationRecord)
        async throws -> Response
    {
        switch visit {
        case .redirect(let location): return WebPages.redirect(location)
        case .render(let changed): return try await render(&session, application: application, changed: changed)
        }
    }

    /// Renders the session's step, showing (and forgetting) its message; stores the session when that or the
    /// caller (`changed`) changed it.
    private func render(_ session: inout Session, application: ApplicationRecord, changed: Bool) async throws
        -> Response
    {
        var frame = try await frame(
            application, csrf: session.csrfToken, userId: session.state.userId, uiLocales: session.state.uiLocales,
            account: session.state.accountLanguage)
        frame.client = session.state.authorization?.clientName
        let texts = Texts(frame.language)
        if let message = session.state.message {
            frame.message = message
            session.state.message = nil
        }
        if let notice = session.state.notice {
            frame.notice = notice
            session.state.notice = nil
        }
        if changed || frame.message != nil || frame.notice != nil {
            _ = try await sessions.save(&session, lifetime: lifetime(session.state))
        }
        let state = session.state
        // While a client's request is served, the last form leads the browser on to the client.
        let targets = state.authorization.flatMap { AuthorizationService.formTarget($0.redirectUri) }.map { [$0] } ?? []
        switch state.step {
        case .signIn:
            return pages.page(try await signInContent(application), frame: frame, formTargets: targets)
        case .chooseFactor:
            frame.title = state.registration ? "Set up a second factor" : "Confirm it is you"
            let providers = state.providers.map {
                LabeledValue(label: texts(Self.label($0, state)), value: $0.rawValue)
            }
            return pages.page(
                LoginFactorPage(registration: state.registration, providers: providers), frame: frame,
                formTargets: targets)
        case .chooseDestination:
            frame.title = Self.label(state.provider ?? .email, state)
            var page = try await destinationPage(state)
            page.action = page.action.map { texts($0) }
            return pages.page(page, frame: frame, formTargets: targets)
        case .enterCode:
            frame.title =
                switch state.provider {
                case .totp: "Enter the authenticator's code"
                case .backup: "Enter a backup code"
                default: "Enter the code"
                }
            let content = LoginCodePage(
                destination: state.destination, totp: state.provider == .totp, backup: state.provider == .backup,
                totpRegistration: state.qrCode != nil, qrCode: state.qrCode,
                secret: state.secret.map { Self.grouped($0, separator: " ") })
            return pages.page(content, frame: frame, formTargets: targets)
        case .waitForPush:
            // A sign-in request also reaches the browsers the account subscribed (a registration only the phone).
            let factors =
                state.registration
                ? []
                : try await accounts.find(
                    userId: state.userId ?? "", in: application)?.factors.filter { $0.provider == .push } ?? []
            let browsers = factors.contains(where: BrowserApprovers.isBrowser)
            let phones = factors.isEmpty || factors.contains { !BrowserApprovers.isBrowser($0) }
            let approver =
                switch (phones, browsers) {
                case (true, true): "your phone and your browser"
                case (false, true): "your browser"
                default: "your phone"
                }
            frame.title = phones ? "Approve on your phone" : "Approve in your browser"
            return pages.page(
                LoginPushPage(registration: state.registration, number: state.number, approver: texts(approver)),
                frame: frame, formTargets: targets)
        case .passkey:
            frame.title = state.registration ? "Create a passkey" : "Use your passkey"
            let content = LoginPasskeyPage(
                create: state.registration, mode: state.registration ? "create" : "get",
                options: state.passkeyOptions ?? "{}")
            return pages.page(content, frame: frame, formTargets: targets)
        case .consent:
            frame.title = "Allow \(state.authorization?.clientName ?? "this site")?"
            let scopes = (state.authorization?.scope ?? "").split(separator: " ").compactMap {
                AuthorizationService.describe(scope: String($0)).map { texts($0) }
            }
            return pages.page(
                LoginConsentPage(
                    client: state.authorization?.clientName ?? "", scopes: scopes,
                    thirdParty: state.authorization?.thirdParty == true), frame: frame,
                formTargets: targets)
        case .signedIn:
            frame.title = "Signed in"
            let methods = texts.list((state.methods.isEmpty ? ["password"] : state.methods).map { texts($0) })
            var allowed: [(client: OpenIDClientRecord, scope: String)] = []
            if let userId = state.signIn?.userId {
                allowed = try await authorizations.consents(userId: userId, application: state.application)
            }
            let consents = allowed.map { LabeledValue(label: $0.client.name, value: $0.client.id) }
            return pages.page(
                LoginDonePage(methods: methods, consents: consents, hasConsents: !consents.isEmpty), frame: frame,
                formTargets: targets)
        }
    }

    /// What every page shows (titled "Sign in" until a step names itself), in the language of `ui_locales`, else
    /// the account's (`account`, once signed in), else the browser's, else the application's.
    func frame(
        _ application: ApplicationRecord, csrf: String, userId: String?, uiLocales: String? = nil,
        account: String? = nil
    ) async throws -> LoginFrame {
        let brand = try await branding.pageBrand(application.id)
        return LoginFrame(
            title: "Sign in", application: application.name, applicationId: application.id, csrf: csrf,
            userId: userId ?? "", rememberDays: tfa.rememberedDeviceLifetime / 86_400, brand: brand,
            language: Languages.choose(uiLocales: uiLocales, account: account, application: brand?.language),
            uiLocales: uiLocales)
    }

    /// The language of this sign-in's pages, for what it sends (a code's e-mail or SMS).
    func language(_ state: LoginState) async throws -> String {
        let brand = try await branding.pageBrand(state.application)
        return Languages.choose(
            uiLocales: state.uiLocales, account: state.accountLanguage, application: brand?.language)
    }

    /// The choices of the destination page: the account's addresses or numbers, a new number, or its devices.
    private func destinationPage(_ state: LoginState) async throws -> LoginDestinationPage {
        var page = LoginDestinationPage()
        guard let assertion = state.assertion else { return page }
        /// The first choice starts selected.
        func choices(_ items: [(id: String, label: String)]) -> [Choice] {
            items.enumerated().map { Choice(id: $1.id, label: $1.label, checked: $0 == 0) }
        }
        switch (state.provider, state.registration) {
        case (.email, _):
            let emails = try await codes.emails(TFAAssertionRequest(assertion: assertion)).emails
            page.action = "Send the code"
            page.hasEmails = !emails.isEmpty
            page.emails = choices(emails.map { ($0.id, $0.obfuscated) })
        case (.phone, false):
            let phones = try await codes.phones(TFAAssertionRequest(assertion: assertion)).phones
            page.action = "Send the code"
            page.hasPhones = !phones.isEmpty
            page.phones = choices(phones.map { ($0.id, $0.obfuscated) })
            page.phone = true
        case (.phone, true):
            page.action = "Send the code"
            page.newPhone = true
            page.phone = true
        case (.push, _):
            let devices = try await activations.active(
                userId: state.userId ?? "", applicationId: state.application)
            page.devices = choices(devices.map { ($0.id, $0.deviceLabel) })
            page.noDevices = devices.isEmpty
            page.hasDevices = !devices.isEmpty
            page.action = "Ask this phone"
        default:
            break
        }
        return page
    }

    // MARK: Carrying out the flow

    /// What a form brings that the flow never keeps: the password, the browser's passkey, who is asking.
    struct LoginInput: Sendable {
        var form: [String: String]
        var userAgent: String?
        var address: String?
        /// The remembered-device cookie's value.
        var deviceToken: String?

        init(_ request: Request, form: [String: String], address: String?) {
            self.form = form
            userAgent = request.headers[.userAgent]
            self.address = address
            deviceToken = request.cookies[LoginPages.deviceCookie]?.value
        }

        /// For what needs no form (the flow's own continuation).
        init() { form = [:] }
    }

    /// What carrying out an event came to.
    struct Handled: Sendable {
        /// `Set-Cookie` values (a remembered device).
        var cookies: [String] = []
        /// A refusal's status and when to try again, for a page answered directly (the first sign-in's form).
        var status: HTTPResponse.Status?
        var retryAfter: Int?
        /// Where the browser goes, when the flow said so.
        var location: String?
    }

    /// Feeds `event` to the flow and carries out each check it asks for, feeding the answers back, until it asks for
    /// nothing more. A refusal a person can act on becomes the next page's message.
    func run(_ event: LoginFlow.Event, _ state: inout LoginState, _ input: LoginInput) async throws -> Handled {
        var event = event
        var handled = Handled()
        while true {
            let action: LoginFlow.Action
            (state, action) = flow.transition(state, on: event)
            do {
                switch try await perform(action, state, input, &handled.cookies) {
                case .next(let next): event = next
                case .finished: return handled
                case .location(let location):
                    handled.location = location
                    return handled
                }
            } catch let error as TFAError {
                handled.status = error.status
                event = .failed(error)
            } catch let error as AssentServerError where error.status < 500 {
                handled.status = HTTPResponse.Status(code: error.status)
                handled.retryAfter = error.retryAfter
                event = .refused(Self.sentence(error))
            }
        }
    }

    /// Where a handled form sends the browser (``LoginFlow/Event/proceed``): a step's page, or on to the client.
    func proceed(_ state: inout LoginState) async throws -> String {
        try await run(.proceed, &state, LoginInput()).location ?? state.step.path
    }

    /// What one action came to.
    private enum Performed {
        case next(LoginFlow.Event)
        case finished
        case location(String)
    }

    /// Carries out one of the flow's actions with the two-factor services.
    private func perform(
        _ action: LoginFlow.Action, _ state: LoginState, _ input: LoginInput, _ cookies: inout [String]
    ) async throws -> Performed {
        switch action {
        case .done:
            return .finished
        case .redirect(let location):
            return .location(location)
        case .checkPassword(let userId):
            let outcome = try await flows.login(
                TFALoginRequest(
                    application: state.application, userId: userId, password: input.form["password"] ?? "",
                    deviceToken: input.deviceToken),
                address: input.address)
            switch outcome {
            case .success(let success):
                return .next(.signedIn(try await signedIn(success, application: state.application)))
            case .interruption(let interruption):
                // The password was right: the second factor's pages speak the account's language.
                let registration = interruption.errorCode == TFAErrorCode.pendingRegistration
                return .next(
                    .secondFactorNeeded(
                        LoginFlow.SecondFactor(
                            regToken: interruption.regToken, registration: registration,
                            providers: (registration ? interruption.inactiveProviders : interruption.activeProviders)
                                .map(\.name),
                            accountLanguage: try await accounts.language(
                                userId: userId, applicationId: state.application))))
            }
        case .startFactor(let regToken, let provider, let registration):
            let started = try await flows.start(
                TFAInitRequest(regToken: regToken, provider: provider, mode: registration ? .register : .verify))
            return .next(.factorStarted(provider, assertion: started.assertion))
        case .registerTOTP(let assertion):
            let issued = try await totp.register(TOTPRegisterRequest(assertion: assertion))
            let secret = URLComponents(string: issued.uri)?.queryItems?.first { $0.name == "secret" }?.value
            return .next(.factorPrepared(.totp(qrCode: issued.qrCode, sctToken: issued.sctToken, secret: secret)))
        case .sendPush(let assertion, let site):
            let sent = try await push.send(TFAAssertionRequest(assertion: assertion)) { application in
                LoginContext(
                    site: site ?? application, userAgent: input.userAgent, address: input.address,
                    at: clock.now())
            }
            return .next(.factorPrepared(.push(operationId: sent.operationId, number: sent.number)))
        case .passkeyOptions(let assertion):
            return .next(.factorPrepared(.passkey(options: try await passkeyOptions(assertion))))
        case .sendEmail(let assertion, let emailId):
            let emails = try await codes.emails(TFAAssertionRequest(assertion: assertion)).emails
            guard let email = emails.first(where: { $0.id == emailId }) else { return .next(.notOffered) }
            let sent = try await codes.sendEmail(
                TFAEmailSendRequest(assertion: assertion, emailId: email.id, lang: try await language(state)))
            return .next(.codeSent(destination: email.obfuscated, phvToken: sent.phvToken))
        case .sendPhone(let assertion, let method, let phoneId, let newNumber):
            var request = TFAPhoneSendRequest(assertion: assertion, method: method, lang: try await language(state))
            var destination: String?
            if let newNumber {
                request.phone = newNumber
            } else {
                let phones = try await codes.phones(TFAAssertionRequest(assertion: assertion)).phones
                guard let phone = phones.first(where: { $0.id == phoneId }) else { return .next(.notOffered) }
                request.phoneId = phone.id
                destination = phone.obfuscated
            }
            return .next(.codeSent(destination: destination, phvToken: try await codes.sendPhone(request).phvToken))
        case .optIn(let assertion, let activationId):
            let asked = try await push.optIn(TFAPushOptInRequest(assertion: assertion, activationId: activationId))
            return .next(.phoneAsked(operationId: asked.operationId))
        case .verify(let verification, let remember):
            return .next(try await verify(verification, remember: remember, input))
        case .finalize(let regToken, let assertion, let proof, let remember, let left):
            let success = try await flows.finalize(
                TFAFinalizeRequest(
                    regToken: regToken, assertion: assertion, providerAssertion: proof, rememberDevice: remember))
            if let token = success.deviceToken, let expiresAt = success.deviceTokenExpiresAt {
                let maxAge = max(0, Int(expiresAt.timeIntervalSince(clock.now())))
                cookies.append(hostCookie(Self.deviceCookie, token, maxAge: maxAge))
            }
            var signedIn = try await signedIn(success, application: state.application)
            signedIn.backupCodesLeft = left
            return .next(.signedIn(signedIn))
        case .grantConsent(let request, let userId):
            try await authorizations.grantConsent(request, userId: userId)
            return .finished
        case .stepUp(let userId):
            let (regToken, active) = try await flows.stepUp(applicationId: state.application, userId: userId)
            return .next(.stepUpOffered(regToken: regToken, providers: active))
        case .checkConsent(let request, let userId):
            return .next(.consentChecked(needed: try await authorizations.needsConsent(request, userId: userId)))
        case .issueCode(let request, let signIn):
            return .location(try await authorizations.issueCode(request, signIn))
        }
    }

    /// Checks what the person entered or did; passed → its proof.
    private func verify(_ verification: LoginFlow.Verification, remember: Bool, _ input: LoginInput) async throws
        -> LoginFlow.Event
    {
        let proof: String
        var left: Int?
        switch verification {
        case .totp(let assertion, let code, let sctToken):
            proof = try await totp.verify(TOTPVerifyRequest(assertion: assertion, code: code, sctToken: sctToken))
                .providerAssertion
        case .code(let provider, let assertion, let phvToken, let code):
            proof = try await codes.verify(
                TFACodeVerifyRequest(assertion: assertion, phvToken: phvToken, code: code), provider: provider
            ).providerAssertion
        case .backup(let assertion, let code):
            let passed = try await backup.verify(BackupCodeVerifyRequest(assertion: assertion, code: code))
            proof = passed.providerAssertion
            left = passed.remaining
        case .push(let assertion):
            guard let approved = try await push.verify(TFAAssertionRequest(assertion: assertion)).providerAssertion
            else { return .notApprovedYet }
            proof = approved
        case .passkey(let assertion, let registration):
            return try await verifyPasskey(assertion, registration: registration, remember: remember, input.form)
        }
        return .factorPassed(proof: proof, remember: remember, backupCodesLeft: left)
    }

    /// A sign-in a service finished, as the flow takes it: who, with what, the token's facts and the account's
    /// language.
    func signedIn(_ success: TFALoginSuccess, application: String) async throws -> LoginFlow.SignedIn {
        LoginFlow.SignedIn(
            userId: success.userId, methods: Self.methods(of: success.loginToken),
            facts: SignInFacts(loginToken: success.loginToken, userId: success.userId, at: clock.millis),
            accountLanguage: try await accounts.language(userId: success.userId, applicationId: application))
    }

    /// `POST /login/consents/revoke`: the signed-in person takes back what they allowed a client.
    @Sendable func revokeConsent(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request), var session = try await sessions.load(request),
            WebSessions<LoginState>.validToken(form, session), let userId = session.state.signIn?.userId,
            let clientId = form["clientId"]
        else {
            return pages.error(.forbidden, "This form is stale or did not come from this site: open the page again.")
        }
        if try await authorizations.revokeConsent(
            userId: userId, clientId: clientId, application: session.state.application)
        {
            session.state.message = "Done: that site will ask you again before it signs you in."
        }
        _ = try await sessions.save(&session, lifetime: lifetime(session.state))
        return WebPages.redirect(session.state.step.path)
    }

    /// `GET /login/push/events`: sends `done` once the approval request is answered or ends (the page then posts
    /// its Continue form).
    @Sendable func pushEvents(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let session = try await sessions.load(request), session.state.step == .waitForPush,
            let operationId = session.state.operationId
        else {
            return Response(status: .notFound, headers: WebPages.securityHeaders)
        }
        return WebPages.waitForAnswer(
            operations, events: events, operationId: operationId, userId: session.state.userId)
    }

    // MARK: Forms

    /// A form POST: checks the session and its CSRF token; at a step that takes `form`, feeds the flow its event;
    /// stores the state and answers 303 to where the flow goes on (the step's page, or the client).
    private func submit(_ request: Request, _ form: LoginFlow.Form, address: String?) async throws -> Response {
        guard let fields = try await WebForm.read(request) else {
            return pages.error(.unsupportedMediaType, "This page takes an HTML form: go back and submit it again.")
        }
        guard var session = try await sessions.load(request) else { return WebPages.redirect("/login?expired=1") }
        guard WebSessions<LoginState>.validToken(fields, session) else {
            return pages.error(
                .forbidden, "This form is stale or did not come from this site: open the sign-in page again.")
        }
        var cookies: [String] = []
        if LoginFlow.steps(accepting: form).contains(session.state.step) {
            cookies = try await run(
                form.event(fields), &session.state, LoginInput(request, form: fields, address: address)
            ).cookies
        }
        // Signed in for a client: the browser goes on to it with a code (or to a stronger factor first); the session
        // stays for single sign-on.
        let location = try await proceed(&session.state)
        guard try await sessions.save(&session, lifetime: lifetime(session.state)) else {
            return WebPages.redirect("/login?expired=1")
        }
        return WebPages.redirect(location, cookies: cookies)
    }
    // MARK: Wording

    /// What a person reads for a refused request.
    static func sentence(_ error: AssentServerError) -> String {
        error.status == 429 ? "Too many attempts: try again in \(error.retryAfter ?? 60) seconds." : error.message
    }

    static func label(_ provider: TFAProvider, _ state: LoginState) -> String {
        switch provider {
        case .totp: state.registration ? "Set up an authenticator app" : "Code from your authenticator app"
        case .email: "Code by e-mail"
        case .phone: state.registration ? "Set up your phone number" : "Code by text message or call"
        case .push: state.registration ? "Approve sign-ins on your phone" : "Approve on your phone"
        case .passkey: state.registration ? "Create a passkey" : "Use a passkey or security key"
        case .backup: "Use a backup code"
        }
    }

    /// Text in groups of four characters (a Base32 secret, a backup code), easier to read and type.
    static func grouped(_ text: String, separator: String) -> String {
        stride(from: 0, to: text.count, by: 4).map {
            let start = text.index(text.startIndex, offsetBy: $0)
            return String(text[start..<(text.index(start, offsetBy: 4, limitedBy: text.endIndex) ?? text.endIndex)])
        }.joined(separator: separator)
    }

    /// What a login token this server just signed was verified with, in words: the password (`amr` `pwd`) and the
    /// second factor its `tfa` claim names, e.g. `["password", "authenticator app"]`.
    static func methods(of loginToken: String) -> [String] {
        let parts = loginToken.split(separator: ".")
        guard parts.count == 3, let payload = try? Base64URL.decode(String(parts[1])),
            let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return [] }
        let first = (claims["amr"] as? [String] ?? []).contains("pwd") ? ["password"] : []
        let second: String? =
            switch claims["tfa"] as? String {
            case TFAProvider.totp.rawValue: "authenticator app"
            case TFAProvider.email.rawValue: "code by e-mail"
            case TFAProvider.phone.rawValue: "code by text message or call"
            case TFAProvider.push.rawValue: "approval on your phone"
            case BrowserApprovers.provider: "approval in your browser"
            case TFAProvider.passkey.rawValue: "a passkey"
            case TFAProvider.backup.rawValue: "a backup code"
            case "remembered-device": "this browser, remembered"
            default: nil
            }
        return first + (second.map { [$0] } ?? [])
    }
}

/// The frame of every sign-in page: the layout's, the form token, the account once known, and how long a
/// remembered device stays remembered.
struct LoginFrame: TranslatedFrame {
    var title: String
    var application: String
    var message: String?
    var applicationId: String
    var csrf: String
    var userId: String
    var rememberDays: Int
    /// The OpenID client the person signs in for.
    var client: String?
    /// A sentence that informs rather than warns.
    var notice: String?
    /// `account` when the sign-in leads back to `/account`.
    var returnTo: String?
    /// The application's accent colour and logo, when it has them.
    var brand: PageBrand? = nil
    /// The language the page is in.
    var language = "en"
    /// The languages asked for, carried by the password form (no session stores them before a right password).
    var uiLocales: String? = nil

    func translated() -> LoginFrame {
        let texts = Texts(language)
        var frame = self
        frame.title = texts(title)
        frame.message = message.map { texts($0) }
        frame.notice = notice.map { texts($0) }
        return frame
    }
}

/// The password form, and passkey sign-in where the application allows it.
struct LoginSignInPage: PageContext {
    static let template = PageTemplate.loginSignIn
    var passkeys = false
}

/// A passkey's ceremony: create one (registration) or use one; the browser's part runs in `passkey.js`.
struct LoginPasskeyPage: PageContext {
    static let template = PageTemplate.loginPasskey
    var create: Bool
    /// `create` or `get`.
    var mode: String
    /// The options, JSON.
    var options: String
}

/// The choice of a second factor (or of the first one to set up).
struct LoginFactorPage: PageContext {
    static let template = PageTemplate.loginFactor
    var registration: Bool
    /// Each provider: `value` posted, `label` read.
    var providers: [LabeledValue]
}

/// Where a code goes (an address, a number, a new number) or which phone is asked.
struct LoginDestinationPage: PageContext {
    static let template = PageTemplate.loginDestination
    var action: String?
    var hasEmails = false
    var emails: [Choice] = []
    var hasPhones = false
    var phones: [Choice] = []
    var phone = false
    var newPhone = false
    var devices: [Choice] = []
    var noDevices = false
    var hasDevices = false
}

/// The form for a code sent or shown by an authenticator app (with the QR code and key when one is set up).
struct LoginCodePage: PageContext {
    static let template = PageTemplate.loginCode
    var destination: String?
    var totp: Bool
    var backup: Bool
    var totpRegistration: Bool
    var qrCode: String?
    var secret: String?
}

/// The wait for the phone's answer.
struct LoginPushPage: PageContext {
    static let template = PageTemplate.loginPush
    var registration: Bool
    /// The number to choose or type on the phone (number matching).
    var number: Int?
    /// Where the request went: "your phone", "your browser", or both.
    var approver: String
}

/// Signing out at a client's request: the question (with the request's parameters carried in hidden fields,
/// `label` the name), or that it is done.
struct LoginLogoutPage: PageContext {
    static let template = PageTemplate.loginLogout
    var confirm: Bool
    var fields: [LabeledValue] = []
}

/// Signed in, and with what.
struct LoginDonePage: PageContext {
    static let template = PageTemplate.loginDone
    var methods: String
    /// The third-party sites the person allowed (`label` the name, `value` the client id), to take back.
    var consents: [LabeledValue] = []
    var hasConsents = false
}

/// A third-party client asks to be allowed.
struct LoginConsentPage: PageContext {
    static let template = PageTemplate.loginConsent
    var client: String
    /// What it may then know or do, in words.
    var scopes: [String]
    /// Whether someone other than the operator runs it (else it asked with `prompt=consent`).
    var thirdParty: Bool
}
