import AssentCrypto
import AssentModel
import AssentQR
import Foundation
import HTTPTypes
import Hummingbird

/// What the console's session remembers: which operator account (or, break-glass, which API key — never the key
/// itself) signed in, and a sentence for the next page.
struct ConsoleState: Codable, Sendable {
    var apiKeyId: String? = nil
    var operatorId: String? = nil
    /// The application the console works with (the switcher's choice); `nil`: the first one the operator may see.
    var applicationId: String? = nil
    /// A passkey sign-in whose password was right and whose passkey is still to come: signs nothing in.
    var pendingOperatorId: String? = nil
    /// The challenge of the passkey ceremony under way (Base64URL), and when it stops counting.
    var passkeyChallenge: String? = nil
    var passkeyChallengeExpiresAt: Millis? = nil
    /// The request on the operator's phone under way: linking it, or a sign-in.
    var phoneOperationId: String? = nil
    /// The sentence the last action left for the next page.
    var message: String?
    /// Whether that sentence says the action was refused.
    var failed: Bool?
    /// What the refused form held (without its token), so the page it goes back to shows it again.
    var form: [String: String]?
}

/// The operator console under `/console`: server-rendered pages over the same services as the operator API. An
/// operator signs in with an operator account (name, password, TOTP code; ``OperatorService``) — or, when the server
/// allows it (break-glass), with an API key; the session (a `__Host-` cookie, see ``WebSessions``) remembers the
/// account's or key's id, so a disabled account or revoked key ends every session it opened, and every page and
/// action checks the role's or key's scopes. Forms carry
/// the session's CSRF token and are answered with a 303 (post/redirect/get); the outcome of an action is shown once
/// on the next page. Statuses on a page follow the database live through ``ConsoleLive`` (the only script).
struct ConsolePages: Sendable {
    let clock: WallClock
    let auditor: Auditor
    /// Whether an operator API key may sign in (break-glass).
    let apiKeySignIn: Bool
    let rateLimits: RateLimits
    /// The server's own webhook, shown for applications without one.
    let webhook: WebhookSettings?
    /// How long push attempts stay in the trace.
    let pushTraceRetention: Duration
    let sessions: WebSessions<ConsoleState>
    let apiKeys: APIKeyService
    let activations: ActivationService
    let operations: OperationService
    let applications: ApplicationService
    let templates: OperationTemplateService
    let audit: AuditService
    let queries: ConsoleService
    let limiter: RateLimiter
    let pushDeliveries: PushDeliveryService
    let operators: OperatorService
    let operatorPasskeys: OperatorPasskeys
    let operatorPhones: OperatorPhones
    let accounts: TFAAccountService
    let pushFactor: PushFactor
    let versions: ApplicationVersionService
    let applicationPush: ApplicationPushService
    let branding: ApplicationBrandingService
    let webhooks: ApplicationWebhookService
    let applicationLimits: ApplicationRateLimitService
    let clients: ClientService
    let auditChain: AuditChainService
    let live: ConsoleLive
    let pages = WebPages.shared
    typealias Session = WebSessions<ConsoleState>.Session

    /// The sign-in form's CSRF token before a session exists (double-submit: the form carries the same value).
    let formToken = SignInFormToken(cookie: "__Host-assent-console-csrf", lifetime: 1800)
    static let signInPath = "/console/sign-in"

    /// Takes from the composition root the services the pages call, and the settings they read.
    init(_ services: Services, _ environment: ServerEnvironment) {
        clock = services.clock
        auditor = services.audit
        apiKeySignIn = environment.consoleAPIKeySignIn
        rateLimits = environment.rateLimits
        webhook = environment.webhook
        pushTraceRetention = environment.push?.traceRetention ?? PushSettings.defaultTraceRetention
        let lifetimes = environment.consoleSessions
        var sessions = WebSessions<ConsoleState>(
            store: services.webStore, clock: services.clock, cookieName: "__Host-assent-console", kind: "console",
            lifetime: lifetimes.idleTimeout, cookieLifetime: lifetimes.maxLifetime, maxLifetime: lifetimes.maxLifetime)
        // An operator's sessions are kept under their account, so a reset, a disable or a password change ends them.
        sessions.owner = { $0.operatorId.map(OperatorService.sessionOwner) }
        self.sessions = sessions
        apiKeys = services.apiKeys
        activations = services.activations
        operations = services.operations
        applications = services.applications
        templates = services.templates
        audit = services.auditTrail
        queries = services.console
        limiter = services.limiter
        pushDeliveries = services.pushDeliveries
        operators = services.operators
        operatorPasskeys = services.operatorPasskeys
        operatorPhones = services.operatorPhones
        accounts = services.accounts
        pushFactor = services.pushFactor
        versions = services.versions
        applicationPush = services.applicationPush
        branding = services.branding
        webhooks = services.webhooks
        applicationLimits = services.applicationLimits
        clients = services.clients
        auditChain = services.auditChain
        live = ConsoleLive(
            activations: services.activations, operations: services.operations, events: environment.events)
    }

    /// Who is signed in: an operator account (its role's scopes, its applications) or an API key (its scopes).
    struct Principal: Sendable {
        var name: String
        var scopes: Set<APIScope>
        /// The operator account's role; `nil` for an API key.
        var role: OperatorRole?
        /// The applications an operator account is limited to; `nil`: every one.
        var applications: [String]?

        init(_ record: OperatorRecord) {
            (name, scopes, role, applications) = (record.name, record.role.scopes, record.role, record.applications)
        }

        init(_ key: APIKeyRecord) {
            (name, scopes, role, applications) = (key.name, key.scopes, nil, key.applications)
        }

        /// How the audit trail names them.
        var actor: String { role == nil ? "key:\(name)" : "operator:\(name)" }
        /// What the page's header shows.
        var label: String { role.map { "\(name) (\($0.rawValue))" } ?? "\(name) (API key)" }
        func allows(_ scope: APIScope) -> Bool { scopes.contains(.all) || scopes.contains(scope) }
    }

    /// A signed-in request: its session, the operator key behind it, the application it works with, and (for a
    /// POST) its form.
    struct Visit: Sendable {
        var session: Session
        var principal: Principal
        var form: [String: String]
        var request: Request
        /// The application every page and action of this visit works with.
        var application: ApplicationRecord
        /// The applications the operator may switch to (the current one among them).
        var applications: [ApplicationRecord]

        var actor: String { principal.actor }
        func allows(_ scope: APIScope) -> Bool { principal.allows(scope) }
        func query(_ name: String) -> String? {
            request.uri.queryParameters[Substring(name)].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// The pages before a session (sign in, set up an account, sign out) on the server's router; every other page
    /// in a group whose ``ConsoleSessionMiddleware`` admits signed-in operators, each with the scope it needs.
    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("console/sign-in", use: signInForm)
        router.post("console/sign-in", use: signInPosted)
        router.post("console/sign-out", use: signOut)
        router.get("console/setup", use: setupForm)
        router.post("console/setup", use: setUp)
        addSignInSecondFactorRoutes(to: router)
        let console = router.group("console", context: ConsoleRequestContext.self)
            .add(middleware: ConsoleSessionMiddleware(console: self))
        console.get(use: dashboard)
        console.get("me", use: me)
        console.post("me/password", use: changePassword)
        console.post("switch-application", use: switchApplication)
        console.requiring(.applicationWrite).post("application", use: renameApplication)
        console.requiring(.auditRead).get("audit", use: audit)
        addActivationRoutes(to: console)
        addClientRoutes(to: console)
        addApplicationRoutes(to: console)
        addOperatorRoutes(to: console)
        addPasskeyRoutes(to: console)
        addPhoneRoutes(to: console)
        addOperationRoutes(to: console)
        // The page's stream, not the person: it keeps no session alive.
        router.group("console/live", context: ConsoleRequestContext.self)
            .add(middleware: ConsoleSessionMiddleware(console: self, touches: false))
            .get(use: live)
    }

    // MARK: Handlers before a session

    @Sendable func signInForm(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await signInPage(request)
    }

    @Sendable func signInPosted(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await signIn(request, address: context.clientLimitKey)
    }

    /// `POST /console/sign-out`: ends the session (audited with who it was).
    @Sendable func signOut(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request), let session = try await sessions.load(request),
            WebSessions<ConsoleState>.validToken(form, session)
        else { return WebPages.redirect(Self.signInPath) }
        let cookie = try await sessions.end(session)
        if let principal = try await principal(session.state) {
            await auditor(.consoleSignedOut, actor: principal.actor, "Signed out of the console.")
        }
        return WebPages.redirect(Self.signInPath, cookies: [cookie])
    }

    @Sendable func setupForm(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await setupPage(request, token: request.uri.queryParameters["t"].map(String.init) ?? "")
    }

    // MARK: Handlers of the signed-in console

    /// `POST /console/me/password`: an operator account changes its password (the current one and a code), ending
    /// its other sessions.
    @Sendable func changePassword(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console/me") { visit in
            guard let id = visit.session.state.operatorId,
                let record = try await operators.record(id: id)
            else { throw AssentServerError.invalidRequest("An API key has no password to change.") }
            guard let new = visit.form["new"], new == visit.form["confirm"] else {
                throw AssentServerError.invalidRequest("The new password and its repetition differ.")
            }
            let ended = try await operators.changePassword(
                record, current: visit.form["current"] ?? "", new: new, code: visit.form["code"] ?? "",
                address: context.clientLimitKey, keeping: visit.session.idHash)
            return (
                "/console/me",
                ended == 0 ? "Password changed." : "Password changed; your \(ended) other session(s) ended."
            )
        }
    }

    /// `POST /console/switch-application`: the console works with another of the operator's applications.
    @Sendable func switchApplication(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        guard let chosen = visit.applications.first(where: { $0.id == visit.form["application"] }) else {
            throw AssentServerError.notFound("Your account may not work with this application.")
        }
        var session = visit.session
        session.state.applicationId = chosen.id
        session.state.message = "The console now works with \(chosen.name)."
        _ = try await sessions.save(&session)
        // Back to the page the switch was made on, unless it shows one resource of the other application.
        let back = visit.form["back"] ?? "/console"
        let stays = [
            "/console", "/console/users", "/console/operations", "/console/clients",
            "/console/audit", "/console/application", "/console/operators", "/console/me",
        ].contains(back)
        return WebPages.redirect(stays ? back : "/console")
    }

    /// `POST /console/application`: renames the application people see.
    @Sendable func renameApplication(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console") { visit in
            let renamed = try await applications.rename(
                id: visit.application.id, to: visit.form["name"] ?? "", actor: visit.actor)
            return ("/console", "People now see the application as \(renamed.name).")
        }
    }

    /// `GET /console/live`: the page's live statuses (``ConsoleLive``).
    @Sendable func live(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await live.stream(try context.visit)
    }

    // MARK: Signing in

    /// The sign-in form; after a refusal it keeps the operator `name` typed (never the password or the code).
    func signInPage(
        _ request: Request, message: String? = nil, name: String = "", status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        if message == nil, try await signedIn(request) != nil { return WebPages.redirect("/console") }
        let (csrf, cookie) = formToken.issue(request)
        let expired = request.uri.queryParameters["expired"] != nil ? "Your session ended: sign in again." : nil
        var response = pages.page(
            ConsoleSignInPage(csrf: csrf, apiKeySignIn: apiKeySignIn, name: name),
            frame: LayoutFrame(
                title: "Sign in to the console", application: "Assent console", message: message ?? expired),
            status: status)
        response.headers.append(cookie)
        return response
    }

    /// `POST /console/sign-in`: an operator's name, password and TOTP code — or, when the server allows it, an API
    /// key; failures counted against the address like the operator API's wrong keys, and against the account named.
    private func signIn(_ request: Request, address: String?) async throws -> Response {
        guard let form = try await WebForm.read(request) else {
            return pages.error(.unsupportedMediaType, "This page takes an HTML form.", next: Self.signInPath)
        }
        guard formToken.matches(form, request) else {
            return pages.error(
                .forbidden, "This form is stale or did not come from this site: open the sign-in page again.",
                next: Self.signInPath)
        }
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let apiKey = form["apiKey"]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let account = apiKey.isEmpty || !apiKeySignIn ? name : ""
        if let refused = try await overSignInLimit(request, address: address, account: account) { return refused }
        let state: ConsoleState
        let principal: Principal
        if !apiKey.isEmpty, apiKeySignIn {
            guard let key = try await apiKeys.authenticate(apiKey) else {
                await refuseSignIn(address: address, account: nil, "the key is not valid")
                return try await signInPage(
                    request, message: "This API key is not valid: check it, or ask for a new one.",
                    status: .unauthorized)
            }
            (state, principal) = (ConsoleState(apiKeyId: key.id), Principal(key))
        } else if let method = form["method"], method == "phone" || method == "passkey" {
            // The password first; the passkey or the phone on the next page.
            guard let record = try await operators.checkPassword(name: name, password: form["password"] ?? "") else {
                await refuseSignIn(address: address, account: name, "wrong name or password")
                return try await signInPage(
                    request, message: "The name or password is not right: check them and try again.", name: name,
                    status: .unauthorized)
            }
            return method == "phone"
                ? try await phoneStep(request, record, address: address) : try await passkeyStep(request, record)
        } else {
            guard
                let record = try await operators.signIn(
                    name: name, password: form["password"] ?? "", code: form["code"] ?? "")
            else {
                await refuseSignIn(address: address, account: name, "wrong name, password or code")
                return try await signInPage(
                    request,
                    message: "The name, password or code is not right (a code works once): check them and try "
                        + "again.",
                    name: name, status: .unauthorized)
            }
            (state, principal) = (ConsoleState(operatorId: record.id), Principal(record))
        }
        return try await startSession(request, state, principal)
    }

    /// The sign-in page with 429 and `Retry-After` while `address` has used up its wrong sign-ins, or its wrong
    /// sign-ins to the operator `account`; `nil` otherwise. An account over its failures from every address is slowed
    /// down here, never refused.
    func overSignInLimit(_ request: Request, address: String?, account: String?) async throws -> Response? {
        let limits = rateLimits
        do {
            if let address { try await limiter.check(limits.operatorKeyFailuresPerAddress, "operator.key", address) }
            if let account, !account.isEmpty {
                try await limiter.checkAccount(
                    limits.operatorSignInFailuresPerAccount, limits.operatorSignInFailuresPerAccountAndAddress,
                    "operator.account", account: account, address: address)
            }
            return nil
        } catch let error as AssentServerError where error.status == 429 {
            var response = try await signInPage(request, message: error.message, status: .tooManyRequests)
            if let retryAfter = error.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }
    }

    /// A wrong sign-in: counted against the client's address and the operator account it named, and written to the
    /// audit as `console.sign_in_refused` (an auditor asks for every refused access, not only the ones that got in).
    /// The row names the account only when one has that name: a name that is none may be a password typed into the
    /// wrong field, and it never reaches the audit. Sign-ins refused for being over a limit are not written (they are
    /// not bounded, the counted ones are).
    func refuseSignIn(address: String?, account: String?, _ reason: String) async {
        let limits = rateLimits
        if let address { await limiter.recordFailure(limits.operatorKeyFailuresPerAddress, "operator.key", address) }
        if let account, !account.isEmpty {
            await limiter.recordAccountFailure(
                limits.operatorSignInFailuresPerAccount, limits.operatorSignInFailuresPerAccountAndAddress,
                "operator.account", account: account, address: address)
        }
        var known: OperatorRecord?
        if let account, OperatorService.isName(account) {
            known = try? await operators.record(name: account)
        }
        let who =
            known.map { "operator \($0.name)" }
            ?? (account.map { $0.isEmpty ? "a name left empty" : "a name that is no operator's" } ?? "an API key")
        await auditor(
            .consoleSignInRefused, actor: known.map { "operator:\($0.name)" } ?? "anonymous",
            "A console sign-in with \(who) was refused: \(reason)" + (address.map { " (from \($0))" } ?? "") + ".")
    }

    /// A new console session for `principal` (ending the browser's old one), and on to the dashboard.
    func startSession(_ request: Request, _ state: ConsoleState, _ principal: Principal) async throws
        -> Response
    {
        if let old = try await sessions.load(request) { _ = try await sessions.end(old) }
        let (_, cookie) = try await sessions.create(state)
        await auditor(.consoleSignedIn, actor: principal.actor, "Signed in to the console.")
        return WebPages.redirect("/console", cookies: [cookie, formToken.removal])
    }

    /// `GET /console/setup?t=…`: the one-time set-up of an operator account — the TOTP key to add (QR code and
    /// text), a password, and a first code.
    private func setupPage(
        _ request: Request, token: String, message: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        guard let (record, uri) = try await operators.setup(token: token) else {
            return pages.error(
                .forbidden, "This set-up link is invalid, used or expired: ask an admin for a new one.",
                next: Self.signInPath)
        }
        let (csrf, cookie) = formToken.issue(request)
        let secret = URLComponents(string: uri)?.queryItems?.first { $0.name == "secret" }?.value ?? ""
        var response = pages.page(
            ConsoleSetupPage(
                csrf: csrf, token: token, name: record.name, role: record.role.rawValue,
                qrCode: try QRCode(text: uri, errorCorrection: .medium).pngDataURL(),
                secret: LoginPages.grouped(secret, separator: " ")),
            frame: LayoutFrame(title: "Set up your console account", application: "Assent console", message: message),
            status: status)
        response.headers.append(cookie)
        return response
    }

    /// `POST /console/setup`: the password twice and a code; right → signed in.
    @Sendable func setUp(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request), formToken.matches(form, request) else {
            return pages.error(
                .forbidden, "This form is stale or did not come from this site: open the set-up link again.",
                next: Self.signInPath)
        }
        let token = form["t"] ?? ""
        guard let password = form["password"], password == form["confirm"] else {
            return try await setupPage(
                request, token: token, message: "The password and its repetition differ.", status: .badRequest)
        }
        do {
            let record = try await operators.completeSetup(token: token, password: password, code: form["code"] ?? "")
            return try await startSession(request, ConsoleState(operatorId: record.id), Principal(record))
        } catch let error as AssentServerError where error.status < 500 {
            return try await setupPage(
                request, token: token, message: error.message, status: HTTPResponse.Status(code: error.status))
        }
    }

    /// Who a session's state names, while the account is set up and enabled or the key exists (and keys may still
    /// sign in).
    private func principal(_ state: ConsoleState) async throws -> Principal? {
        if let id = state.operatorId {
            guard let record = try await operators.record(id: id), record.isSetUp,
                record.disabledAt == nil
            else { return nil }
            return Principal(record)
        }
        guard apiKeySignIn, let id = state.apiKeyId, let key = try await apiKeys.key(id: id) else {
            return nil
        }
        return Principal(key)
    }

    /// The request's session and who it is for, if they still may.
    private func signedIn(_ request: Request) async throws -> (Session, Principal)? {
        guard let session = try await sessions.load(request) else { return nil }
        guard let principal = try await principal(session.state) else {
            _ = try await sessions.end(session)
            return nil
        }
        return (session, principal)
    }

    // MARK: Pages and actions

    /// Whether a request enters the signed-in console.
    enum Admission: Sendable {
        case admitted(Visit)
        case refused(Response)
    }

    /// Checks the session and, for a form, its token; keeps the session alive when `touches`; finds the
    /// application the visit works with (``ConsoleSessionMiddleware``).
    func admit(_ request: Request, touches: Bool) async throws -> Admission {
        guard let (signedInSession, principal) = try await signedIn(request) else {
            // "Your session ended" only for a browser that had one; a first visit just signs in.
            let hadSession = request.cookies[sessions.cookieName] != nil
            return .refused(WebPages.redirect(hadSession ? "\(Self.signInPath)?expired=1" : Self.signInPath))
        }
        var form: [String: String] = [:]
        if request.method != .get && request.method != .head {
            guard let posted = try await WebForm.read(request),
                WebSessions<ConsoleState>.validToken(posted, signedInSession)
            else {
                return .refused(
                    pages.error(
                        .forbidden,
                        "This form is stale or did not come from this console: open the page again from the console.",
                        next: "/console"))
            }
            form = posted
        }
        var session = signedInSession
        if touches { try await sessions.touch(&session) }
        let permitted = try await applications.all().filter { principal.applications?.contains($0.id) ?? true }
        guard let first = permitted.first else {
            return .refused(
                pages.error(
                    .forbidden, "Your account is limited to applications this server no longer has: ask an admin.",
                    next: Self.signInPath))
        }
        let current = permitted.first { $0.id == session.state.applicationId } ?? first
        return .admitted(
            Visit(
                session: session, principal: principal, form: form, request: request, application: current,
                applications: permitted))
    }

    /// A form whose `body` acts and names the page to go to and the sentence to show there (post/redirect/get); a
    /// refused action goes to `back` with the reason.
    /// With `confirm`, the form first leads to a page that asks for it (``confirmation(_:_:action:back:fields:)``),
    /// whose button posts the same fields again with `confirm=yes`.
    func act(
        _ context: ConsoleRequestContext, back: String, confirm: Confirmation? = nil, ask: Ask? = nil,
        _ body: (Visit) async throws -> (location: String, message: String)
    ) async throws -> Response {
        let visit = try context.visit
        if visit.form["confirm"] != "yes", let confirm = try await ask?(visit) ?? confirm {
            return try await confirmation(
                visit, confirm, action: visit.request.uri.path, back: back,
                fields: visit.form.filter { $0.key != "csrf" && $0.key != "confirm" })
        }
        var session = visit.session
        var location = back
        do {
            let outcome = try await body(visit)
            (location, session.state.message) = (outcome.location, outcome.message)
        } catch let error as AssentServerError where error.status < 500 {
            session.state.message = error.message
            session.state.failed = true
            session.state.form = visit.form.filter { $0.key != "csrf" }
        }
        _ = try await sessions.save(&session)
        return WebPages.redirect(location)
    }

    /// The 403 page of a visit whose role or key lacks `scope` (``ConsoleScopeMiddleware``).
    static func missing(_ scope: APIScope, _ visit: Visit) -> Response {
        render(
            ConsoleErrorPage(
                detail: visit.principal.role.map {
                    "Your role (\($0.rawValue)) does not allow this: it needs the scope \(scope.rawValue)."
                } ?? "The API key \(visit.principal.name) you signed in with lacks the scope \(scope.rawValue) "
                    + "this page needs."),
            title: "Not allowed", visit, status: .forbidden)
    }

    /// A console page: the navigation the key's scopes allow, the operator's name, the form token, and the
    /// sentence an action left (shown once: the caller's session is saved without it) — unless the page brings an
    /// `error` of its own, which is then the only one shown.
    func render<Content: PageContext>(
        _ content: Content, title: String, live: String? = nil, error: String? = nil, _ visit: Visit,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        Self.render(content, title: title, live: live, error: error, visit, status: status)
    }

    static func render<Content: PageContext>(
        _ content: Content, title: String, live: String? = nil, error: String? = nil, _ visit: Visit,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        var frame = ConsoleFrame(
            title: title, operator: visit.principal.label, csrf: visit.session.csrfToken,
            navActivations: visit.allows(.activationsRead), navOperations: visit.allows(.operationsRead),
            navAudit: visit.allows(.auditRead), navClients: visit.allows(.clientsRead),
            navApplication: visit.allows(.applicationRead), navOperators: visit.allows(.operatorsWrite),
            currentApplication: visit.application.name,
            applications: visit.applications.count < 2
                ? []
                : visit.applications.map {
                    .init(id: $0.id, name: $0.name, selected: $0.id == visit.application.id)
                },
            back: visit.request.method == .get ? visit.request.uri.path : "/console", error: error, live: live)
        frame.hasChoices = !frame.applications.isEmpty
        if error == nil, let message = visit.session.state.message {
            if visit.session.state.failed == true { frame.error = message } else { frame.message = message }
        }
        return WebPages.shared.page(content, frame: frame, status: status)
    }

    /// What a destructive action asks before it acts.
    struct Confirmation {
        var title: String
        var question: String
        var consequence: String
        var button: String
    }

    /// The question of an action, naming what it touches (the user, device, operation or operator), looked up
    /// for the visit; a thrown refusal (not found) is shown as the action's would be.
    typealias Ask = @Sendable (Visit) async throws -> Confirmation

    /// A second step for an action that cannot be undone or stops a person: the question, what follows, and a
    /// form that posts `fields` again to `action` with `confirm=yes` (no script needed); Back returns to `back`.
    func confirmation(
        _ visit: Visit, _ confirm: Confirmation, action: String, back: String, fields: [String: String]
    ) async throws -> Response {
        try await show(
            ConfirmPage<InConsole>(
                question: confirm.question, consequence: confirm.consequence, action: action, button: confirm.button,
                back: back, fields: fields), title: confirm.title, visit)
    }

    /// The activation `id` of the visit's application.
    /// - Throws: `ACTIVATION_NOT_FOUND` when there is none, or it is another application's.
    func ownActivation(_ id: String, _ visit: Visit) async throws -> ActivationRecord {
        guard let activation = try await activations.find(id: id), activation.applicationId == visit.application.id
        else { throw AssentServerError.activationNotFound() }
        return activation
    }

    /// The operation `id` of the visit's application.
    /// - Throws: `OPERATION_NOT_FOUND` when there is none, or it is another application's.
    func ownOperation(_ id: String, _ visit: Visit) async throws -> OperationRecord {
        guard let operation = try await operations.find(id: id), operation.applicationId == visit.application.id
        else { throw AssentServerError.operationNotFound() }
        return operation
    }

    /// What a refused form held, for the page it went back to.
    func kept(_ visit: Visit, _ field: String) -> String? {
        visit.session.state.failed == true ? visit.session.state.form?[field] : nil
    }

    /// Renders a page and forgets the sentence it showed.
    func show<Content: PageContext>(
        _ content: Content, title: String, live: String? = nil, _ visit: Visit, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let response = render(content, title: title, live: live, visit, status: status)
        if visit.session.state.message != nil || visit.session.state.form != nil {
            var session = visit.session
            session.state.message = nil
            session.state.failed = nil
            session.state.form = nil
            _ = try await sessions.save(&session)
        }
        return response
    }

    // MARK: Dashboard and audit

    /// `/console/me`: who is signed in (role, scopes, applications, last sign-in) and, for an operator account, the
    /// form that changes its password.
    @Sendable func me(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        var page = ConsoleMePage(
            name: visit.principal.name,
            kind: visit.principal.role.map { "operator account, role \($0.rawValue)" }
                ?? "API key (break-glass)",
            scopes: visit.principal.scopes.map(\.rawValue).sorted(),
            applications: visit.principal.applications?.joined(separator: ", ") ?? "every one", lastSignIn: nil,
            account: visit.principal.role != nil)
        if let id = visit.session.state.operatorId, let record = try await operators.record(id: id) {
            page.lastSignIn = record.lastSignInAt.map(Self.time)
            page.passkeys = try await passkeys.all(operatorId: id).map {
                .init(
                    id: Base64URL.encode($0.credentialId), name: $0.name, added: Self.time($0.createdAt),
                    used: $0.lastUsedAt.map { "last used \(Self.time($0))" } ?? "not used yet")
            }
            page.hasPasskeys = !page.passkeys.isEmpty
            if let phone = try await phones.phone(record) {
                page.phone = "\(phone.deviceLabel), user \(phone.userId) (activation \(phone.id))"
            }
            page.linkPending = visit.session.state.phoneOperationId != nil
            page.applicationChoices = visit.applications.map {
                .init(id: $0.id, name: $0.name, selected: $0.id == visit.application.id)
            }
            page.linkUser = kept(visit, "user") ?? ""
        }
        return try await show(page, title: "Your account", visit)
    }

    @Sendable func dashboard(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        var page = ConsoleDashboardPage()
        if visit.allows(.activationsRead) {
            let counts = try await queries.activationCounts(in: visit.application)
            page.showActivations = true
            page.activationCounts = ActivationState.allCases.map { .init(state: $0.name, count: counts[$0] ?? 0) }
        }
        if visit.allows(.operationsRead) {
            let now = clock.millis
            let hour = now / 3_600_000
            let rows = try await queries.finishedOperationsPerHour(
                in: visit.application, since: (hour - 23) * 3_600_000)
            page.showChart = true
            page.chart = DashboardChart.svg(rows, lastHour: hour)
            let totals = Dictionary(grouping: rows, by: \.status).mapValues { $0.reduce(0) { $0 + $1.count } }
            page.totals = DashboardChart.statuses.map { .init(status: $0.rawValue, count: totals[$0] ?? 0) }
        }
        if visit.allows(.applicationRead) {
            page.showApplication = true
            page.applicationName = visit.application.name
            page.canRename = visit.allows(.applicationWrite)
        }
        page.nothing = !visit.allows(.activationsRead) && !visit.allows(.operationsRead)
        return try await show(page, title: "Dashboard", visit)
    }

    /// "Rows 1 to 412 are sealed in the hash chain; the last checkpoint signs row 400 (…); 12 rows since; the newest
    /// 37 verified against the audit key."
    static func chainSentence(_ chain: AuditChainInfo) -> String {
        guard let sealed = chain.sealedThrough else { return "No audit row is sealed in the hash chain yet." }
        var text = "Rows \(chain.firstSeq ?? 1) to \(sealed) are sealed in the hash chain"
        if let checkpoint = chain.lastCheckpointSeq, let at = chain.lastCheckpointAt {
            text += "; the last checkpoint signs row \(checkpoint) (\(time(at.millis)))"
            if sealed > checkpoint { text += ", \(sealed - checkpoint) rows since" }
        } else {
            text += "; no checkpoint is signed yet"
        }
        if chain.unsealed > 0 { text += "; \(chain.unsealed) new rows wait to be sealed" }
        if let verified = chain.verified { text += "; the newest \(verified) verified against the audit key" }
        return text + "."
    }

    @Sendable func audit(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        // The date range is of whole days in UTC, both ends included (as the dates are typed: YYYY-MM-DD).
        let from = visit.query("from"), until = visit.query("until")
        guard from.map({ Self.dayStart($0) != nil }) ?? true, until.map({ Self.dayStart($0) != nil }) ?? true else {
            throw AssentServerError.invalidRequest("Dates are written YYYY-MM-DD.")
        }
        let filter = AuditFilter(
            activationId: visit.query("activation"), userId: visit.query("user"), typePrefix: visit.query("type"),
            beforeId: visit.query("before").flatMap { Int64($0) }, from: from.flatMap(Self.dayStart),
            until: until.flatMap(Self.dayStart).map { $0 + 86_400_000 },
            // The chain links every application's rows: an operator limited to applications reads the chosen one's.
            applications: visit.principal.applications == nil ? nil : [visit.application.id])
        let pageSize = 50
        let events = try await audit.events(filter, limit: pageSize + 1)
        let names = Dictionary(visit.applications.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        var page = ConsoleAuditPage(
            wholeChain: filter.applications == nil, applicationName: visit.application.name,
            user: filter.userId ?? "", activation: filter.activationId ?? "", type: filter.typePrefix ?? "",
            from: from ?? "", until: until ?? "",
            events: events.prefix(pageSize).map { event in
                ConsoleAuditPage.Event(
                    id: event.id ?? 0, at: Self.time(event.at), atIso: Self.iso(event.at), type: event.type,
                    application: event.applicationId.map { names[$0] ?? $0 } ?? "", user: event.userId ?? "",
                    activation: event.activationId ?? "",
                    activationShort: event.activationId.map { "\($0.prefix(8))…" } ?? "", actor: event.actor,
                    detail: event.detail, userUrl: event.userId.map(Self.userPath),
                    activationUrl: event.activationId.map(Self.activationPath))
            },
            empty: events.isEmpty)
        let kept: [String: String?] = [
            "user": filter.userId, "activation": filter.activationId, "type": filter.typePrefix, "from": from,
            "until": until,
        ]
        if events.count > pageSize, let last = events[pageSize - 1].id {
            page.next = Self.link("/console/audit", kept.merging(["before": String(last)]) { $1 })
        }
        if filter.beforeId != nil { page.first = Self.link("/console/audit", kept) }
        guard page.wholeChain else { return try await show(page, title: "Audit log", visit) }
        let chain = try await auditChain.status()
        page.chain = Self.chainSentence(chain)
        page.chainProblem = chain.problem
        page.chainIntact = chain.problem == nil
        page.keyFingerprint = chain.keyFingerprint
        return try await show(page, title: "Audit log", visit)
    }

    /// Midnight UTC of a `YYYY-MM-DD` day, in milliseconds.
    static func dayStart(_ text: String) -> Millis? {
        guard text.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil,
            let date = try? Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().parse(text)
        else { return nil }
        return Millis(date.timeIntervalSince1970 * 1000)
    }

    // MARK: Helpers

    /// A time as the console shows it without a script: UTC to the second. The page's script shows it in the
    /// browser's time zone, keeping this in the element's title (``iso(_:)`` is the machine-readable form).
    static func time(_ millis: Millis) -> String {
        Date(millis: millis).formatted(.iso8601).replacingOccurrences(of: "T", with: " ")
            .replacingOccurrences(of: "Z", with: " UTC")
    }

    /// A time as ISO 8601, for a `<time datetime>` the page's script shows in the browser's time zone.
    static func iso(_ millis: Millis) -> String { Date(millis: millis).formatted(.iso8601) }

    /// A value of a details list: text, or a time.
    enum Detail {
        case text(String?)
        case time(Millis?)
    }

    /// The rows of a details list (`iso` for a time), leaving out what has no value.
    static func details(_ entries: [(String, Detail)]) -> [LabeledValue] {
        entries.compactMap { label, detail in
            switch detail {
            case .text(let value): value.map { LabeledValue(label: label, value: $0) }
            case .time(let millis): millis.map { LabeledValue(label: label, value: time($0), iso: iso($0)) }
            }
        }
    }

    /// `path` with the non-empty `query` values.
    static func link(_ path: String, _ query: [String: String?]) -> String {
        let items = query.compactMapValues { $0.flatMap { $0.isEmpty ? nil : $0 } }.sorted { $0.key < $1.key }
        guard !items.isEmpty else { return path }
        return path + "?" + items.map { "\($0.key)=\(FormEncoding.escape($0.value))" }.joined(separator: "&")
    }
}
