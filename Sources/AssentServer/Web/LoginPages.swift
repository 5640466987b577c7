import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Where a person is in the hosted login, kept sealed in the login session.
struct LoginState: Codable, Sendable {
    enum Step: String, Codable, Sendable {
        case signIn, chooseFactor, chooseDestination, enterCode, waitForPush, passkey, consent, signedIn

        /// The page that shows this step.
        var path: String {
            switch self {
            case .signIn: "/login"
            case .chooseFactor: "/login/factor"
            case .chooseDestination: "/login/destination"
            case .enterCode: "/login/code"
            case .waitForPush: "/login/push"
            case .passkey: "/login/passkey"
            case .consent: "/login/consent"
            case .signedIn: "/login/done"
            }
        }
    }

    /// The application's id.
    var application: String
    var step = Step.signIn
    var userId: String?
    var regToken: String?
    /// Whether the account registers its first factor (403102) rather than verifying one (403101).
    var registration = false
    /// The providers offered: the account's own when verifying, the registrable ones when registering.
    var providers: [TFAProvider] = []
    var provider: TFAProvider?
    var assertion: String?
    var phvToken: String?
    var sctToken: String?
    /// A TOTP registration's QR code (PNG data URL) and secret (Base32, for typing in).
    var qrCode: String?
    var secret: String?
    /// Where the code went, obfuscated.
    var destination: String?
    var operationId: String?
    /// The number the phone asks for (number matching).
    var number: Int?
    /// A passkey step's options for the browser (JSON of ``PasskeyOptionsResponse``).
    var passkeyOptions: String?
    /// After sign-in: what the login token was verified with, in words (``LoginPages/methods(of:)``).
    var methods: [String] = []
    /// A sentence for the next page (shown once).
    var message: String?
    /// A sentence that informs rather than warns, for the next page (shown once).
    var notice: String?
    /// After sign-in: what the session's single sign-on offers other clients.
    var signIn: SignInFacts?
    /// The OpenID client's request this sign-in serves, answered with a code once the person is signed in.
    var authorization: AuthorizationRequest?
    /// Where the browser goes next instead of the step's page (the client, told that the person declined).
    var pendingRedirect: String?
    /// A page of this server the person goes back to once signed in (only `/account`).
    var returnTo: String?
    /// The languages asked for (`ui_locales` of the client's request or of `/login`), before the browser's.
    var uiLocales: String?
    /// The language the signed-in account's owner chose (``TFAAccountRecord/language``), read at sign-in.
    var accountLanguage: String?
    /// The activation a person started on `/account` for a new phone, while its QR code is shown.
    var newPhone: String?
    /// Set while the signed-in person passes a further factor (``stepUp(regToken:providers:userId:notice:)``): the
    /// sign-in it ends in adds to the session's, it does not replace it.
    var steppingUp: Bool?

    init(application: String) { self.application = application }

    /// A fresh start at the password form of the same application, still serving the same client's request and
    /// keeping the session's sign-in for single sign-on until another replaces it.
    func restarted() -> LoginState {
        var state = LoginState(application: application)
        state.authorization = authorization
        state.signIn = signIn
        state.methods = methods
        state.returnTo = returnTo
        state.uiLocales = uiLocales
        return state
    }

    /// A step-up: the signed-in person passes one of `providers` (of the flow `regToken`) before going on; the
    /// password is not asked again.
    mutating func stepUp(regToken: String, providers: [TFAProvider], userId: String, notice: String) {
        step = .chooseFactor
        self.regToken = regToken
        registration = false
        self.providers = providers
        self.userId = userId
        self.notice = notice
        steppingUp = true
    }

    /// Forgets the chosen provider's part.
    mutating func clearFactor() {
        (provider, assertion, phvToken, sctToken, qrCode, secret, destination, operationId, number, passkeyOptions) =
            (nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)
    }
}

/// The hosted login under `/login`: sign in with a password, choose a second factor, enter the code (e-mail, text
/// message or call, authenticator app — with its QR code when registering) or approve on the phone, then the
/// signed-in page. Server-rendered HTML that works without JavaScript; only the wait for a push approval uses a
/// small script (an event stream), with a Continue button when scripts are off.
///
/// Every step goes through the same services as `/api/tfa`, so the rate limits, tries, lifetimes and audit
/// entries are the same. Forms are POSTed with the session's CSRF token and answered with a 303 to the next step's
/// page (post/redirect/get); the session lives in a `__Host-` cookie (see ``WebSessions``).
struct LoginPages: Sendable {
    let environment: ServerEnvironment
    let flows: TFAService
    let totp: TOTPFactor
    let codes: CodeFactor
    let push: PushFactor
    let passkey: PasskeyFactor
    let backup: BackupCodeFactor
    let sessions: WebSessions<LoginState>
    let authorizations: AuthorizationService
    let pages = WebPages.shared
    typealias Session = WebSessions<LoginState>.Session

    /// The remembered-device cookie (set when a person ticks "remember this browser").
    static let deviceCookie = "__Host-assent-device"
    /// The sign-in form's CSRF token before a session exists (double-submit: the form carries the same value).
    let formToken = SignInFormToken(cookie: "__Host-assent-csrf", lifetime: 900)

    init(environment: ServerEnvironment) {
        self.environment = environment
        flows = TFAService(environment: environment)
        totp = TOTPFactor(environment: environment)
        codes = CodeFactor(environment: environment)
        push = PushFactor(environment: environment)
        passkey = PasskeyFactor(environment: environment)
        backup = BackupCodeFactor(environment: environment)
        var sessions = WebSessions<LoginState>(
            environment: environment, cookieName: "__Host-assent-login", kind: "login", lifetime: 900,
            sameSite: "Lax", cookieLifetime: environment.openID.sessionLifetime)
        sessions.owner = { state in state.signIn.map { GrantRevocation.owner(state.application, $0.userId) } }
        self.sessions = sessions
        authorizations = AuthorizationService(environment: environment)
    }

    /// How long a session lives after this save: a signed-in one as long as single sign-on lasts, one still
    /// signing in fifteen minutes.
    func lifetime(_ state: LoginState) -> Int? {
        state.step == .signedIn ? environment.openID.sessionLifetime : nil
    }

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("login") { request, _ in try await signInPage(request) }
        router.post("login") { request, context in
            guard try await sessions.load(request) != nil else {
                return try await firstSignIn(request, address: context.clientLimitKey)
            }
            return try await submit(request, expecting: [.signIn]) { session, form in
                try await signIn(&session.state, form, request: request, address: context.clientLimitKey)
                return []
            }
        }
        router.get("login/factor") { request, _ in try await show(request, .chooseFactor) }
        router.post("login/factor") { request, context in
            try await submit(
                request, expecting: [.chooseFactor, .chooseDestination, .enterCode, .waitForPush, .passkey]
            ) {
                session, form in
                try await choose(
                    &session.state, form, userAgent: request.headers[.userAgent], address: context.clientLimitKey)
                return []
            }
        }
        router.get("login/destination") { request, _ in try await show(request, .chooseDestination) }
        router.post("login/destination") { request, _ in
            try await submit(request, expecting: [.chooseDestination]) { session, form in
                try await send(&session.state, form)
                return []
            }
        }
        router.get("login/code") { request, _ in try await show(request, .enterCode) }
        router.post("login/code") { request, _ in
            try await submit(request, expecting: [.enterCode]) { session, form in
                try await verifyCode(&session.state, form)
            }
        }
        router.get("login/push") { request, _ in try await show(request, .waitForPush) }
        router.post("login/push") { request, _ in
            try await submit(request, expecting: [.waitForPush]) { session, form in
                try await verifyPush(&session.state, form)
            }
        }
        router.get("login/push/events") { request, _ in try await pushEvents(request) }
        router.get("login/passkey") { request, _ in try await show(request, .passkey) }
        router.post("login/passkey") { request, _ in
            try await submit(request, expecting: [.passkey]) { session, form in
                try await usePasskey(&session.state, form)
            }
        }
        router.post("login/passkey/options") { request, context in
            try await passkeySignInOptions(request, address: context.clientLimitKey)
        }
        router.post("login/passkey/sign-in") { request, _ in try await passkeySignIn(request) }
        router.get("login/done") { request, _ in try await show(request, .signedIn) }
        router.get("login/consent") { request, _ in try await show(request, .consent) }
        router.post("login/consent") { request, _ in
            try await submit(request, expecting: [.consent]) { session, form in
                try await decide(&session.state, allow: form["decision"] == "allow")
                return []
            }
        }
        router.post("login/consents/revoke") { request, _ in try await revokeConsent(request) }
        router.get("oauth2/authorize") { request, _ in try await authorize(request) }
        router.post("oauth2/authorize") { request, _ in try await authorize(request) }
        router.get("oauth2/logout") { request, _ in try await endSession(request) }
        router.post("oauth2/logout") { request, _ in try await endSession(request) }
        router.post("login/logout") { request, _ in
            guard let form = try await WebForm.read(request), let session = try await sessions.load(request),
                WebSessions<LoginState>.validToken(form, session)
            else { return WebPages.redirect("/login") }
            let cookie = try await sessions.end(session)
            try await authorizations.endSession(session.state.signIn, application: session.state.application)
            return WebPages.redirect(
                "/login?application=\(FormEncoding.escape(session.state.application))", cookies: [cookie])
        }
    }

    // MARK: Pages

    /// `GET /login[?application=ID]`: a fresh sign-in form (or the signed-in page for a signed-in session).
    private func signInPage(_ request: Request) async throws -> Response {
        let name = request.uri.queryParameters["application"].map(String.init)
        let application: ApplicationRecord
        do {
            application = try await flows.application(name)
        } catch let error as AssentServerError where error.status == 400 {
            return pages.error(.notFound, "This sign-in page belongs to no application: check the link you followed.")
        }
        let expired = request.uri.queryParameters["expired"] != nil ? "The page expired: sign in again." : nil
        let toAccount = request.uri.queryParameters["return"] == "account"
        let uiLocales = request.uri.queryParameters["ui_locales"].map(String.init).flatMap {
            (1...256).contains($0.count) ? $0 : nil
        }
        guard var session = try await sessions.load(request) else {
            // No session yet, and none is stored until a password is right: the form's token is a cookie's value.
            let (csrf, cookie) = formToken.issue(request)
            var frame = try await frame(application, csrf: csrf, userId: nil, uiLocales: uiLocales)
            frame.message = expired
            frame.returnTo = toAccount ? "account" : nil
            var response = pages.page(try await signInContent(application), frame: frame)
            response.headers.append(cookie)
            return response
        }
        if session.state.step == .signedIn && session.state.application == application.id {
            return WebPages.redirect(LoginState.Step.signedIn.path)
        }
        let (message, userId) = (session.state.message, session.state.userId)
        let sameApplication = session.state.application == application.id
        session.state = sameApplication ? session.state.restarted() : LoginState(application: application.id)
        session.state.message = message ?? expired
        // The name typed belongs to this application's sign-in: another application's page starts empty.
        if sameApplication { session.state.userId = userId }
        if let uiLocales { session.state.uiLocales = uiLocales }
        if toAccount { session.state.returnTo = "/account" }
        return try await render(&session, application: application, changed: true)
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
            let application = try await ApplicationService(environment: environment).application(id: id)
        else {
            return pages.error(.notFound, "This sign-in page belongs to no application: check the link you followed.")
        }
        var state = LoginState(application: application.id)
        if form["return"] == "account" { state.returnTo = "/account" }
        state.uiLocales = form["ui_locales"].flatMap { (1...256).contains($0.count) ? $0 : nil }
        var status = HTTPResponse.Status.badRequest
        var retryAfter: Int?
        do {
            try await signIn(&state, form, request: request, address: address)
        } catch let error as TFAError {
            Self.absorb(error, into: &state)
            status = error.status
        } catch let error as AssentServerError where error.status < 500 {
            state.message = Self.sentence(error)
            status = HTTPResponse.Status(code: error.status)
            retryAfter = error.retryAfter
        }
        guard state.step != .signIn else {
            var frame = try await frame(
                application, csrf: form["csrf"] ?? "", userId: state.userId, uiLocales: state.uiLocales)
            frame.message = state.message
            frame.returnTo = state.returnTo == nil ? nil : "account"
            var response = pages.page(try await signInContent(application), frame: frame, status: status)
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }
        let location = try await continueAuthorization(&state)
        let (_, cookie) = try await sessions.create(state, lifetime: lifetime(state))
        return WebPages.redirect(location, cookies: [cookie, formToken.removal])
    }

    /// `GET` of a step's page: the page when the session is at that step, else a redirect to where it is.
    private func show(_ request: Request, _ step: LoginState.Step) async throws -> Response {
        guard var session = try await sessions.load(request) else { return WebPages.redirect("/login?expired=1") }
        var changed = false
        if step == .chooseFactor, [.chooseDestination, .enterCode, .waitForPush, .passkey].contains(session.state.step)
        {
            // "Use another method": back to the choice; the abandoned part expires on its own.
            session.state.clearFactor()
            session.state.step = .chooseFactor
            changed = true
        }
        guard session.state.step == step else { return WebPages.redirect(session.state.step.path) }
        let application = try await flows.applicationRecord(id: session.state.application)
        return try await render(&session, application: application, changed: changed)
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
                : try await TFAAccountService(environment: environment).find(
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
        let brand = try await ApplicationBrandingService(environment: environment).pageBrand(application.id)
        return LoginFrame(
            title: "Sign in", application: application.name, applicationId: application.id, csrf: csrf,
            userId: userId ?? "", rememberDays: environment.tfa.rememberedDeviceLifetime / 86_400, brand: brand,
            language: Languages.choose(uiLocales: uiLocales, account: account, application: brand?.language),
            uiLocales: uiLocales)
    }

    /// The language of this sign-in's pages, for what it sends (a code's e-mail or SMS).
    func language(_ state: LoginState) async throws -> String {
        let brand = try await ApplicationBrandingService(environment: environment).pageBrand(state.application)
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
            let devices = try await ActivationService(environment: environment).active(
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

    // MARK: Steps

    /// `POST /login`: the password; then the signed-in page, or the choice of a second factor.
    private func signIn(_ state: inout LoginState, _ form: [String: String], request: Request, address: String?)
        async throws
    {
        let userId = (form["userId"] ?? "").trimmingCharacters(in: .whitespaces)
        state.userId = userId
        guard !userId.isEmpty, let password = form["password"], !password.isEmpty else {
            state.message = "Enter your user name and your password."
            return
        }
        let outcome = try await flows.login(
            TFALoginRequest(
                application: state.application, userId: userId, password: password,
                deviceToken: request.cookies[Self.deviceCookie]?.value),
            address: address)
        switch outcome {
        case .success(let success):
            try await signedIn(&state, success)
        case .interruption(let interruption):
            // The password was right: the second factor's pages speak the account's language.
            state.accountLanguage = try await TFAAccountService(environment: environment).language(
                userId: userId, applicationId: state.application)
            state.regToken = interruption.regToken
            state.registration = interruption.errorCode == TFAErrorCode.pendingRegistration
            state.providers = (state.registration ? interruption.inactiveProviders : interruption.activeProviders)
                .map(\.name).filter { Self.meets($0, state.authorization?.assurance) }
            state.step = .chooseFactor
            if state.providers.isEmpty {
                state.message = "This account has no second factor this application accepts: ask the service's support."
            }
        }
    }

    /// `POST /login/factor`: starts the chosen provider's part; a push sign-in tells the phone about this browser.
    private func choose(_ state: inout LoginState, _ form: [String: String], userAgent: String?, address: String?)
        async throws
    {
        guard let regToken = state.regToken,
            let provider = form["provider"].flatMap(TFAProvider.init(rawValue:)),
            state.providers.contains(provider)
        else {
            state.message = "Choose one of the methods shown."
            return
        }
        let registration = state.registration
        let started = try await flows.start(
            TFAInitRequest(regToken: regToken, provider: provider, mode: registration ? .register : .verify))
        state.clearFactor()
        state.provider = provider
        state.assertion = started.assertion
        switch (provider, registration) {
        case (.totp, false), (.backup, _):
            state.step = .enterCode
        case (.totp, true):
            let issued = try await totp.register(TOTPRegisterRequest(assertion: started.assertion))
            state.qrCode = issued.qrCode
            state.sctToken = issued.sctToken
            state.secret = URLComponents(string: issued.uri)?.queryItems?.first { $0.name == "secret" }?.value
            state.step = .enterCode
        case (.push, false):
            let client = state.authorization?.clientName
            let sent = try await push.send(TFAAssertionRequest(assertion: started.assertion)) { application in
                LoginContext(
                    site: client ?? application, userAgent: userAgent, address: address, at: environment.now())
            }
            state.operationId = sent.operationId
            state.number = sent.number
            state.step = .waitForPush
        case (.passkey, _):
            let options = try await passkey.options(TFAAssertionRequest(assertion: started.assertion))
            state.passkeyOptions = String(decoding: try JSONEncoder().encode(options), as: UTF8.self)
            state.step = .passkey
        default:
            state.step = .chooseDestination
        }
    }

    /// `POST /login/destination`: sends the code to the chosen address or number, or asks the chosen device.
    private func send(_ state: inout LoginState, _ form: [String: String]) async throws {
        guard let assertion = state.assertion else { return }
        switch state.provider {
        case .email:
            let emails = try await codes.emails(TFAAssertionRequest(assertion: assertion)).emails
            guard let email = emails.first(where: { $0.id == form["emailId"] }) else {
                state.message = "Choose one of the addresses shown."
                return
            }
            state.phvToken = try await codes.sendEmail(
                TFAEmailSendRequest(
                    assertion: assertion, emailId: email.id, lang: try await language(state))
            ).phvToken
            state.destination = email.obfuscated
            state.step = .enterCode
        case .phone:
            let method = form["method"].flatMap(TFAPhoneMethod.init(rawValue:)) ?? .sms
            var request = TFAPhoneSendRequest(
                assertion: assertion, method: method, lang: try await language(state))
            if state.registration {
                let number = (form["phone"] ?? "").filter { !" -()".contains($0) }
                guard CodeFactor.isE164(number) else {
                    state.message =
                        "Enter the number in international form: + and the country code, e.g. +420 601 234 567."
                    return
                }
                request.phone = number
                state.destination = CodeFactor.obfuscatePhone(number)
            } else {
                let phones = try await codes.phones(TFAAssertionRequest(assertion: assertion)).phones
                guard let phone = phones.first(where: { $0.id == form["phoneId"] }) else {
                    state.message = "Choose one of the numbers shown."
                    return
                }
                request.phoneId = phone.id
                state.destination = phone.obfuscated
            }
            state.phvToken = try await codes.sendPhone(request).phvToken
            state.step = .enterCode
        case .push:
            guard let activationId = form["activationId"], !activationId.isEmpty else {
                state.message = "Choose the phone that will approve your sign-ins."
                return
            }
            state.operationId = try await push.optIn(
                TFAPushOptInRequest(assertion: assertion, activationId: activationId)
            ).operationId
            state.step = .waitForPush
        case .totp, .passkey, .backup, nil:
            state.step = .chooseFactor
        }
    }

    /// `POST /login/code`: checks the code; right → signed in.
    private func verifyCode(_ state: inout LoginState, _ form: [String: String]) async throws -> [String] {
        guard let assertion = state.assertion, let provider = state.provider else { return [] }
        let code = (form["code"] ?? "").filter { !$0.isWhitespace }
        guard !code.isEmpty else {
            state.message = "Enter the code."
            return []
        }
        let proof: String
        switch provider {
        case .totp:
            proof = try await totp.verify(
                TOTPVerifyRequest(assertion: assertion, code: code, sctToken: state.sctToken)
            ).providerAssertion
        case .email, .phone:
            guard let phvToken = state.phvToken else { return [] }
            proof = try await codes.verify(
                TFACodeVerifyRequest(assertion: assertion, phvToken: phvToken, code: code), provider: provider
            ).providerAssertion
        case .backup:
            let passed = try await backup.verify(BackupCodeVerifyRequest(assertion: assertion, code: code))
            let cookies = try await finish(&state, proof: passed.providerAssertion, remember: form["remember"] != nil)
            if passed.remaining <= BackupCodeFactor.lowWater {
                state.notice =
                    passed.remaining == 0
                    ? "That was your last backup code: make new ones now, so that you are not locked out."
                    : "Only \(passed.remaining) backup \(passed.remaining == 1 ? "code is" : "codes are") left: make new ones soon."
            }
            return cookies
        case .push, .passkey:
            return []
        }
        return try await finish(&state, proof: proof, remember: form["remember"] != nil)
    }

    /// `POST /login/push`: the approval's state; approved → signed in.
    private func verifyPush(_ state: inout LoginState, _ form: [String: String]) async throws -> [String] {
        guard let assertion = state.assertion else { return [] }
        let status = try await push.verify(TFAAssertionRequest(assertion: assertion))
        guard let proof = status.providerAssertion else {
            state.message = "Not approved yet: approve the request on your phone, then continue."
            return []
        }
        return try await finish(&state, proof: proof, remember: form["remember"] != nil)
    }

    /// Finalizes the flow with a passed factor's proof; the device cookie when the browser is to be remembered.
    func finish(_ state: inout LoginState, proof: String, remember: Bool) async throws -> [String] {
        guard let regToken = state.regToken, let assertion = state.assertion else { return [] }
        let success = try await flows.finalize(
            TFAFinalizeRequest(
                regToken: regToken, assertion: assertion, providerAssertion: proof, rememberDevice: remember))
        try await signedIn(&state, success)
        guard let token = success.deviceToken, let expiresAt = success.deviceTokenExpiresAt else { return [] }
        let maxAge = max(0, Int(expiresAt.timeIntervalSince(environment.now())))
        return [hostCookie(Self.deviceCookie, token, maxAge: maxAge)]
    }

    func signedIn(_ state: inout LoginState, _ success: TFALoginSuccess) async throws {
        let userId = success.userId
        let previous = state.signIn
        let steppedUp = state.steppingUp == true
        let previousMethods = state.methods
        state = state.restarted()
        state.userId = userId
        state.step = .signedIn
        state.methods = Self.methods(of: success.loginToken)
        if steppedUp, previous?.userId == userId {
            state.methods =
                previousMethods + state.methods.filter { $0 != "password" && !previousMethods.contains($0) }
        }
        var facts = SignInFacts(loginToken: success.loginToken, userId: userId, at: environment.nowMillis)
        // The same person again stays the same session for the clients it serves; a step-up adds its factor to the
        // sign-in it stepped up (no password was asked: a passkey sign-in stepped up is still no `pwd`).
        if let previous, previous.userId == userId {
            facts = steppedUp ? facts.steppedUp(from: previous) : facts
            facts.sessionId = previous.sessionId
        }
        state.signIn = facts
        state.accountLanguage = try await TFAAccountService(environment: environment).language(
            userId: userId, applicationId: state.application)
    }

    /// Whether verifying `provider` gives a sign-in the strength a client asks for: approval on a phone is the only
    /// factor that meets ``SignInAssurance/phone``; any factor meets the others.
    static func meets(_ provider: TFAProvider, _ wanted: SignInAssurance?) -> Bool {
        wanted != .phone || provider == .push
    }

    /// Where a signed-in session goes for the client's request it carries: on to the client with a code when the
    /// sign-in is strong enough; else to a second factor that makes it so (a step-up: the password is not asked
    /// again), or back to the client with `access_denied` when the account has no such factor.
    func continueAuthorization(_ state: inout LoginState) async throws -> String {
        if let redirect = state.pendingRedirect {
            state.pendingRedirect = nil
            return redirect
        }
        if state.step == .signedIn, state.authorization == nil, let target = state.returnTo {
            state.returnTo = nil
            return target
        }
        guard state.step == .signedIn, let request = state.authorization, let signIn = state.signIn else {
            return state.step.path
        }
        if let hinted = request.hintedUserId, hinted != signIn.userId {
            // Core §3.1.2.1: the person the hint names did not sign in.
            state.authorization = nil
            return request.errorLocation(
                .loginRequired, "The person who signed in is not the one id_token_hint names.",
                issuer: environment.openID.issuer)
        }
        if let wanted = request.assurance, signIn.assurance < wanted {
            let (regToken, active) = try await flows.stepUp(applicationId: state.application, userId: signIn.userId)
            let providers = active.filter { Self.meets($0, wanted) }
            guard !providers.isEmpty else {
                state.authorization = nil
                return request.errorLocation(
                    .accessDenied, "The account has no second factor that meets \(wanted.acr).",
                    issuer: environment.openID.issuer)
            }
            state.stepUp(
                regToken: regToken, providers: providers, userId: signIn.userId,
                notice: wanted == .phone
                    ? "\(request.clientName) asks you to approve this sign-in on your phone."
                    : "\(request.clientName) asks for a second factor.")
            return state.step.path
        }
        if try await authorizations.needsConsent(request, userId: signIn.userId) {
            state.step = .consent
            return state.step.path
        }
        state.authorization = nil
        return try await authorizations.issueCode(request, signIn)
    }

    /// `POST /login/consent`: allowed → remembered, and on to the client with a code; declined → back to the client
    /// with `access_denied`.
    private func decide(_ state: inout LoginState, allow: Bool) async throws {
        guard let request = state.authorization, let signIn = state.signIn else { return }
        state.step = .signedIn
        if allow {
            try await authorizations.grantConsent(request, userId: signIn.userId)
            // Asked as prompt=consent wanted: not again for this request.
            state.authorization?.prompt.removeAll { $0 == "consent" }
        } else {
            state.authorization = nil
            state.pendingRedirect = request.errorLocation(
                .accessDenied, "The person did not allow this client.", issuer: environment.openID.issuer)
        }
    }

    /// `POST /login/consents/revoke`: the signed-in person takes back what they allowed a client.
    private func revokeConsent(_ request: Request) async throws -> Response {
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
    private func pushEvents(_ request: Request) async throws -> Response {
        guard let session = try await sessions.load(request), session.state.step == .waitForPush,
            let operationId = session.state.operationId
        else {
            return Response(status: .notFound, headers: WebPages.securityHeaders)
        }
        return WebPages.waitForAnswer(environment, operationId: operationId, userId: session.state.userId)
    }

    // MARK: Forms

    /// A form POST at one of `steps`: checks the session and its CSRF token, runs `body`, stores the state and
    /// answers 303 to the page of the step the session is at then. Failures a person can act on become the next
    /// page's message.
    private func submit(
        _ request: Request, expecting steps: Set<LoginState.Step>,
        _ body: (inout Session, [String: String]) async throws -> [String]
    ) async throws -> Response {
        guard let form = try await WebForm.read(request) else {
            return pages.error(.unsupportedMediaType, "This page takes an HTML form: go back and submit it again.")
        }
        guard var session = try await sessions.load(request) else { return WebPages.redirect("/login?expired=1") }
        guard WebSessions<LoginState>.validToken(form, session) else {
            return pages.error(
                .forbidden, "This form is stale or did not come from this site: open the sign-in page again.")
        }
        var cookies: [String] = []
        if steps.contains(session.state.step) {
            do {
                cookies = try await body(&session, form)
            } catch let error as TFAError {
                Self.absorb(error, into: &session.state)
            } catch let error as AssentServerError where error.status < 500 {
                session.state.message = Self.sentence(error)
            }
        }
        // Signed in for a client: the browser goes on to it with a code (or to a stronger factor first); the session
        // stays for single sign-on.
        let location = try await continueAuthorization(&session.state)
        guard try await sessions.save(&session, lifetime: lifetime(session.state)) else {
            return WebPages.redirect("/login?expired=1")
        }
        return WebPages.redirect(location, cookies: cookies)
    }

    /// Turns a flow error into the message of the step the person continues at.
    static func absorb(_ error: TFAError, into state: inout LoginState) {
        switch error.error {
        case .invalidRegToken:
            state = state.restarted()
            state.message = "Your sign-in expired: sign in again."
        case .invalidLogin:
            // The form asks for a user name.
            state.message = "The user name or the password is wrong."
        case .assertionSpent, .invalidAssertion, .pushNotSent, .totpNotRegistered:
            state.clearFactor()
            state.step = .chooseFactor
            state.message = "That verification expired or used all its tries: choose a method again."
        case .pushRejected, .pushNotApproved, .pushDeviceNotOptedIn:
            state.clearFactor()
            state.step = .chooseFactor
            // The API speaks to a relying party about its user; the page speaks to the person.
            let answerer = error.message.contains("a browser") ? "in your browser" : "on your phone"
            state.message =
                switch error.error {
                case .pushRejected:
                    error.message.contains("fraud")
                        ? "You reported this sign-in as fraud on your phone: it was stopped."
                        : error.message.contains("another number")
                            ? "The number chosen \(answerer) was not the one shown here: the sign-in was stopped."
                            : "You rejected the sign-in \(answerer)."
                case .pushNotApproved: "The request on your phone expired or was withdrawn: choose a method again."
                default: "A phone that does not approve your sign-ins answered: approve on the phone you set up."
                }
        default:
            state.message = error.message
            if error.attemptsLeft == 0 {
                state.clearFactor()
                state.step = .chooseFactor
            }
        }
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
