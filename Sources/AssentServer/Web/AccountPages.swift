import AssentCrypto
import AssentModel
import AssentQR
import Foundation
import HTTPTypes
import Hummingbird

/// `/account`: a person's own security page on the hosted pages, in the sign-in's session. It opens only for a
/// sign-in with two factors in the last 15 minutes: otherwise the person signs in again (or, signed in with a
/// password alone, passes a second factor) and comes back. Forms carry the session's CSRF token and answer with a
/// 303 back to the page (post/redirect/get), except new backup codes, which are shown once in the answer itself.
struct AccountPages: Sendable {
    let login: LoginPages
    let account: AccountService
    /// Whether this server sends Web Push (browsers may subscribe for sign-in requests).
    let webPush: Bool
    var clock: WallClock { login.clock }
    let pages = WebPages.shared
    typealias Session = WebSessions<LoginState>.Session

    /// How recent the two-factor sign-in must be.
    static let freshness: Millis = 15 * 60 * 1000

    func addRoutes(to router: Router<AssentRequestContext>) {
        router.get("account", use: show)
        router.post("account/passkeys/options", use: passkeyOptions)
        router.post("account/passkeys", use: addPasskey)
        router.post("account/passkeys/rename", use: renamePasskey)
        router.post("account/factors/remove", use: removeFactor)
        router.post("account/browser-push", use: subscribeBrowser)
        router.post("account/browsers/revoke", use: revokeBrowser)
        router.post("account/phones/lost", use: lostPhone)
        router.post("account/phones/new", use: newPhone)
        router.post("account/password", use: changePassword)
        router.post("account/language", use: setLanguage)
        router.post("account/backup-codes", use: newBackupCodes)
    }

    // MARK: Handlers

    /// `POST /account/passkeys`: the browser's new passkey.
    @Sendable func addPasskey(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { _, application, userId, form in
            let credential = try JSONDecoder().decode(
                RegistrationCredential.self, from: Data((form["credential"] ?? "").utf8))
            try await account.addPasskey(application, userId: userId, credential: credential, name: form["name"])
            return "Passkey added."
        }
    }

    @Sendable func renamePasskey(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { _, application, userId, form in
            try await account.renamePasskey(
                application, userId: userId, factorId: form["id"] ?? "", name: form["name"] ?? "")
            return "Passkey renamed."
        }
    }

    @Sendable func removeFactor(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { _, application, userId, form in
            try await account.removeFactor(application, userId: userId, factorId: form["id"] ?? "")
            return "Removed."
        }
    }

    /// `POST /account/browser-push`: this browser's Web Push subscription, to approve sign-ins here.
    @Sendable func subscribeBrowser(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { _, application, userId, form in
            try await account.approvers.subscribe(
                application, userId: userId, endpoint: form["endpoint"] ?? "", p256dh: form["p256dh"] ?? "",
                auth: form["auth"] ?? "", userAgent: request.headers[.userAgent])
            return "This browser now gets your sign-in requests: approve them here with your passkey."
        }
    }

    @Sendable func revokeBrowser(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { _, application, userId, form in
            try await account.revokeBrowser(application, userId: userId, deviceId: form["id"] ?? "")
            return "That browser will ask for a second factor again."
        }
    }

    /// `POST /account/phones/lost` (asked first, naming the phone): blocks it and ends the other sessions.
    @Sendable func lostPhone(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request, ask: lostPhoneQuestion) { session, application, userId, form in
            let phone = try await account.lostPhone(
                application, userId: userId, activationId: form["id"] ?? "", keeping: session.idHash)
            return "The phone \(phone.deviceLabel) is blocked: it can no longer approve anything, and you are "
                + "signed out everywhere else."
        }
    }

    /// `POST /account/phones/new`: an activation for a new phone, its QR code shown on the page.
    @Sendable func newPhone(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { session, application, userId, _ in
            let activation = try await account.newPhone(application, userId: userId)
            session.state.newPhone = activation.id
            return "Scan the QR code below with the Assent app on your new phone."
        }
    }

    /// `POST /account/password`: the current password and a new one; the other sessions end.
    @Sendable func changePassword(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { session, application, userId, form in
            guard let new = form["new"], new == form["confirm"] else {
                throw AssentServerError.invalidRequest("The new password and its repetition differ.")
            }
            try await account.changePassword(
                application, userId: userId, current: form["current"] ?? "", new: new,
                address: context.clientLimitKey, keeping: session.idHash)
            return "Password changed: you are signed out everywhere else."
        }
    }

    /// `POST /account/language`: the person's own language, which wins over what a client asks for from now on.
    @Sendable func setLanguage(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await change(request) { session, application, userId, form in
            let language = form["language"].flatMap { $0.isEmpty ? nil : $0 }
            try await account.setLanguage(application, userId: userId, language: language)
            session.state.accountLanguage = language
            session.state.uiLocales = nil
            return "Language saved."
        }
    }

    // MARK: The gate

    /// Whether the page opens.
    enum Gate {
        case success((Session, ApplicationRecord, String))
        case failure(Response)
    }

    /// The session, its application and the person, when the session holds a fresh two-factor sign-in; otherwise
    /// the redirect that gets one (a new sign-in, or a second factor after a password).
    private func fresh(_ request: Request) async throws -> Gate {
        guard var session = try await login.sessions.load(request) else {
            return .failure(WebPages.redirect("/login?return=account"))
        }
        let application = try await login.flows.applicationRecord(id: session.state.application)
        let gate = try await LoginFlow.accountGate(
            session.state, now: clock.millis, freshness: Self.freshness
        ) { userId in
            try await login.flows.stepUp(applicationId: application.id, userId: userId)
        }
        switch gate {
        case .open(let userId):
            return .success((session, application, userId))
        case .secondFactor(let state):
            session.state = state
            _ = try await login.sessions.save(&session, lifetime: login.lifetime(session.state))
            return .failure(WebPages.redirect(LoginState.Step.chooseFactor.path))
        case .signInAgain(let state):
            session.state = state
            _ = try await login.sessions.save(&session, lifetime: login.lifetime(session.state))
            return .failure(WebPages.redirect("/login?application=\(FormEncoding.escape(application.id))"))
        }
    }

    // MARK: Pages

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let (session, application, userId): (Session, ApplicationRecord, String)
        switch try await fresh(request) {
        case .success(let granted): (session, application, userId) = granted
        case .failure(let redirect): return redirect
        }
        var shown = session
        // The account's language as stored now (another session may have changed it).
        let overview = try await account.overview(application, userId: userId)
        var frame = try await login.frame(
            application, csrf: session.csrfToken, userId: userId, uiLocales: session.state.uiLocales,
            account: overview.language)
        frame.title = "Your account's security"
        frame.message = shown.state.message
        frame.notice = shown.state.notice
        if frame.message != nil || frame.notice != nil || shown.state.accountLanguage != overview.language {
            shown.state.message = nil
            shown.state.notice = nil
            shown.state.accountLanguage = overview.language
            _ = try await login.sessions.save(&shown, lifetime: login.lifetime(shown.state))
        }
        var content = AccountPage(overview, userId: userId, texts: Texts(frame.language))
        content.webPush = webPush
        content.webPushKeyURL = "/api/push/webpush/key?application=\(FormEncoding.escape(application.id))"
        if let id = shown.state.newPhone {
            if let text = try await account.newPhoneQR(id, userId: userId) {
                content.newPhoneQR = try QRCode(text: text, errorCorrection: .medium).pngDataURL(scale: 5)
                content.newPhoneCode = String(text.prefix { $0 != "#" })
            } else {
                // Used (or expired): the phone is in the list now.
                shown.state.newPhone = nil
                _ = try await login.sessions.save(&shown, lifetime: login.lifetime(shown.state))
            }
        }
        return pages.page(content, frame: frame)
    }

    /// `POST /account/passkeys/options`: creation options for a new passkey, as JSON.
    @Sendable func passkeyOptions(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let form = try await WebForm.read(request),
            case .success(let (session, application, userId)) = try await fresh(request),
            WebSessions<LoginState>.validToken(form, session)
        else {
            return try TFAController.json(
                ["code": "FORBIDDEN", "message": "Your session expired or this page is stale: reload it."],
                status: .forbidden)
        }
        return try TFAController.json(try await account.passkeys.creationOptions(application, userId: userId))
    }

    /// A form posted to the page: the gate and the token, then `body` with the session, application and person.
    private func posted(
        _ request: Request, _ body: (Session, ApplicationRecord, String, [String: String]) async throws -> Response
    ) async throws -> Response {
        guard let form = try await WebForm.read(request) else {
            return pages.error(.unsupportedMediaType, "This page takes an HTML form: go back and submit it again.")
        }
        switch try await fresh(request) {
        case .failure(let redirect):
            return redirect
        case .success(let (session, application, userId)):
            guard WebSessions<LoginState>.validToken(form, session) else {
                return pages.error(
                    .forbidden, "This form is stale or did not come from this site: open the page again.")
            }
            return try await body(session, application, userId, form)
        }
    }

    /// The question asked before a change that cannot be undone: `nil` when there is nothing to ask about (the change
    /// itself then says what is wrong).
    typealias Question = @Sendable (ApplicationRecord, String, [String: String]) async throws -> Confirmation?

    /// What a question says.
    struct Confirmation {
        var title: String
        var question: String
        var consequence: String
        var button: String
        var action: String
        var fields: [String: String] = [:]
    }

    /// "I lost this phone" names the phone and says what blocking it does.
    private func lostPhoneQuestion(
        _ application: ApplicationRecord, _ userId: String, _ form: [String: String]
    ) async throws -> Confirmation? {
        guard
            let phone = try await account.overview(application, userId: userId).phones.first(where: {
                $0.id == form["id"]
            })
        else { return nil }
        return Confirmation(
            title: "Block a phone", question: "Block \(phone.deviceLabel)?",
            consequence: "It can no longer approve anything, what waits for its answer is cancelled, and you are "
                + "signed out everywhere else. This cannot be undone: a phone you find again is added anew.",
            button: "Block \(phone.deviceLabel)", action: "/account/phones/lost", fields: ["id": phone.id])
    }

    /// The question page of `confirm`, on the hosted pages' frame.
    private func ask(_ confirm: Confirmation, session: Session, application: ApplicationRecord, userId: String)
        async throws -> Response
    {
        var frame = try await login.frame(
            application, csrf: session.csrfToken, userId: userId, uiLocales: session.state.uiLocales,
            account: session.state.accountLanguage)
        frame.title = confirm.title
        let texts = Texts(frame.language)
        return pages.page(
            ConfirmPage<InAccount>(
                question: texts(confirm.question), consequence: texts(confirm.consequence), action: confirm.action,
                button: texts(confirm.button), back: "/account", fields: confirm.fields),
            frame: frame)
    }

    /// A form that changes something: its sentence (or the refusal's) is shown on the page it leads back to. With
    /// `ask`, a form posted without `confirm=yes` gets the question first.
    private func change(
        _ request: Request, ask question: Question? = nil,
        _ body: (inout Session, ApplicationRecord, String, [String: String]) async throws -> String
    ) async throws -> Response {
        try await posted(request) { session, application, userId, form in
            if let question, form["confirm"] != "yes",
                let confirm = try await question(application, userId, form)
            {
                return try await ask(confirm, session: session, application: application, userId: userId)
            }
            var updated = session
            do {
                updated.state.notice = try await body(&updated, application, userId, form)
            } catch let error as TFAError {
                updated.state.message = error.message
            } catch let error as AssentServerError where error.status < 500 {
                updated.state.message = LoginPages.sentence(error)
            } catch is DecodingError {
                updated.state.message = "Your browser sent no passkey: try again."
            }
            _ = try await login.sessions.save(&updated, lifetime: login.lifetime(updated.state))
            return WebPages.redirect("/account")
        }
    }

    /// `POST /account/backup-codes`: a new set, shown once (printable); the old set stops working — asked first
    /// while it has unused codes.
    @Sendable func newBackupCodes(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await posted(request) { session, application, userId, form in
            if form["confirm"] != "yes",
                let left = try await account.overview(application, userId: userId).backupCodesLeft,
                left > 0
            {
                return try await ask(
                    Confirmation(
                        title: "New backup codes", question: "Make new backup codes?",
                        consequence: left == 1
                            ? "Your 1 unused backup code stops working at once; the new ones are shown once."
                            : "Your \(left) unused backup codes stop working at once; the new ones are shown once.",
                        button: "Make new codes", action: "/account/backup-codes"),
                    session: session, application: application, userId: userId)
            }
            let codes = try await account.newBackupCodes(application, userId: userId)
            var frame = try await login.frame(
                application, csrf: session.csrfToken, userId: userId, uiLocales: session.state.uiLocales,
                account: session.state.accountLanguage)
            frame.title = "Your backup codes"
            return pages.page(AccountCodesPage(codes: codes), frame: frame)
        }
    }
}

/// The security page's lists.
struct AccountPage: PageContext {
    static let template = PageTemplate.account

    struct Passkey: Sendable {
        var id: String
        var name: String
        var added: String
        var lastUsed: String
        var kind: String
        var blocked: Bool
    }

    struct Item: Sendable {
        var id: String
        var label: String
        var detail: String
        var removable: Bool
    }

    var passkeys: [Passkey]
    var hasPasskeys: Bool
    var factors: [Item]
    var hasFactors: Bool
    /// Browsers that get the account's sign-in requests.
    var approvingBrowsers: [Item]
    var hasApprovingBrowsers: Bool
    /// Whether this server sends Web Push (a browser can subscribe), and where the application's key is read.
    var webPush = false
    var webPushKeyURL = ""
    var emails: [Item]
    var hasEmails: Bool
    var backupLeft: String
    var browsers: [Item]
    var hasBrowsers: Bool
    var phones: [Item]
    var hasPhones: Bool
    /// The new phone's activation QR code (PNG data URL) and code, while no phone has used it.
    var newPhoneQR: String?
    var newPhoneCode: String?
    /// The languages to choose from (each in its own name), the chosen one checked; none checked follows the browser.
    var languages: [Choice]
    var followsBrowser: Bool

    init(_ overview: AccountService.Overview, userId: String, texts: Texts) {
        let names = Dictionary(overview.factors.map { ($0.id, $0.destination ?? texts("Passkey")) }) { first, _ in
            first
        }
        let date = texts.date
        let never = texts("never")
        passkeys = overview.passkeys.map {
            Passkey(
                id: $0.factorId, name: names[$0.factorId] ?? texts("Passkey"), added: date($0.createdAt),
                lastUsed: $0.lastUsedAt.map(date) ?? never,
                kind: texts(
                    $0.multiDevice ? (($0.backedUp ? "synced" : "can be synced")) : "on this device or key only"),
                blocked: $0.flaggedAt != nil)
        }
        hasPasskeys = !passkeys.isEmpty
        factors = overview.factors.compactMap { factor in
            switch factor.provider {
            case .totp:
                Item(
                    id: factor.id, label: texts("Authenticator app"),
                    detail: texts("added {{date}}", ["date": date(factor.createdAt)]), removable: true)
            case .phone:
                Item(
                    id: factor.id,
                    label: texts("Phone {{number}}", ["number": CodeFactor.obfuscatePhone(factor.destination ?? "")]),
                    detail: texts("codes by text message or call"), removable: true)
            case .push where BrowserApprovers.isBrowser(factor):
                nil
            case .push:
                Item(
                    id: factor.id, label: texts("Approval on your phone"),
                    detail: overview.phones.contains { $0.id == factor.destination && $0.state == .active }
                        ? texts("added {{date}}", ["date": date(factor.createdAt)])
                        : texts("not yet: it works once a phone has scanned its activation code"),
                    removable: true)
            default: nil
            }
        }
        hasFactors = !factors.isEmpty
        approvingBrowsers = overview.factors.compactMap { factor in
            BrowserApprovers.subscription(of: factor).map {
                Item(
                    id: factor.id, label: $0.label,
                    detail: texts(
                        "added {{date}}, last approved {{approved}}",
                        ["date": date(factor.createdAt), "approved": factor.lastVerifiedAt.map(date) ?? never]),
                    removable: true)
            }
        }
        hasApprovingBrowsers = !approvingBrowsers.isEmpty
        emails = overview.factors.filter { $0.provider == .email }.map {
            Item(
                id: $0.id, label: CodeFactor.obfuscateEmail($0.destination ?? ""), detail: texts("set by the service"),
                removable: false)
        }
        hasEmails = !emails.isEmpty
        backupLeft =
            overview.backupCodesLeft.map {
                texts("{{left}} of {{total}} unused", ["left": "\($0)", "total": "\(BackupCodeFactor.count)"])
            } ?? texts("none yet")
        browsers = overview.browsers.map {
            Item(
                id: $0.id, label: texts("Remembered {{date}}", ["date": date($0.createdAt)]),
                detail: texts(
                    "last used {{used}}, until {{until}}",
                    ["used": $0.lastUsedAt.map(date) ?? never, "until": date($0.expiresAt)]),
                removable: true)
        }
        hasBrowsers = !browsers.isEmpty
        phones = overview.phones.map {
            Item(
                id: $0.id, label: $0.deviceLabel,
                detail: ($0.state == .blocked
                    ? texts("blocked ({{reason}})", ["reason": $0.blockedReason ?? "BLOCKED"]) + ", " : "")
                    + texts(
                        "{{platform}}, last used {{used}}",
                        ["platform": $0.platform ?? texts("phone"), "used": $0.lastUsedAt.map(date) ?? never]),
                removable: $0.state == .active)
        }
        hasPhones = !phones.isEmpty
        languages = Languages.supported.map {
            Choice(id: $0, label: Languages.names[$0] ?? $0, checked: $0 == overview.language)
        }
        followsBrowser = overview.language == nil
    }
}

/// New backup codes, shown once.
struct AccountCodesPage: PageContext {
    static let template = PageTemplate.accountCodes
    var codes: [String]
}
