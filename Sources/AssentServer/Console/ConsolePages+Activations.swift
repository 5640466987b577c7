import AssentCrypto
import AssentModel
import AssentQR
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's users and activations: find a user, see their activations (state, failed attempts, fingerprint,
/// push registration, last use), create one — with its activation QR code to scan — and commit, block, unblock or
/// remove them.
extension ConsolePages {
    func addActivationRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        let read = console.requiring(.activationsRead)
        read.get("users", use: users)
        read.get("users/{user}", use: user)
        read.get("activations/{id}", use: activation)
        let write = console.requiring(.activationsWrite)
        write.post("activations", use: createActivation)
        // The activation QR code as a PNG for the screen, or as SVG to print (one path, any size).
        write.get("activations/{id}/qr.png", use: activationQRCode)
        write.get("activations/{id}/qr.svg", use: activationQRCode)
        write.post("activations/{id}/{change}", use: changeActivation)
        // The person's login account, for support: sign them out everywhere, disable or enable it (the first two ask
        // first, naming the person); clear the wrong-password counters, remove a second factor they lost (asked
        // first, naming it), forget a remembered browser. Each audited with the operator.
        let support = console.requiring(.tfaWrite)
        support.post("users/{user}/unlock", use: unlockUser)
        support.post("users/{user}/factors/{id}/remove", use: removeFactor)
        support.post("users/{user}/browsers/{id}/forget", use: forgetBrowser)
        support.post("users/{user}/{change}", use: changeLoginAccount)
    }

    /// `GET /console/users[?q=prefix]`: the users of the application with activations or a login account.
    @Sendable func users(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let prefix = visit.query("q")
        let users = try await queries.users(in: visit.application, prefix: prefix, limit: 100)
        let page = ConsoleUsersPage(
            q: prefix ?? "", empty: users.isEmpty, canCreate: visit.allows(.activationsWrite),
            users: users.map {
                ConsoleUsersPage.User(
                    user: $0.userId, url: Self.userPath($0.userId), activations: $0.activations,
                    active: $0.active, latest: Self.time($0.latest), latestIso: Self.iso($0.latest),
                    login: $0.loginAccount ? "yes" : "—")
            })
        return try await show(page, title: "Users", visit)
    }

    /// `POST /console/users/{user}/sign-out|disable|enable`: the person's login account.
    @Sendable func changeLoginAccount(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let userId = try context.parameter("user")
        let verb = try context.parameter("change")
        let confirm: Confirmation?
        switch verb {
        case "sign-out":
            confirm = Confirmation(
                title: "Sign \(userId) out everywhere", question: "Sign \(userId) out everywhere?",
                consequence: "Every site and app \(userId) signed in to with this application loses its "
                    + "tokens, and every browser session of theirs ends: they sign in again.",
                button: "Sign \(userId) out everywhere")
        case "disable":
            confirm = Confirmation(
                title: "Disable \(userId)'s login account", question: "Disable \(userId)'s login account?",
                consequence: "\(userId) can no longer sign in anywhere until an operator enables the "
                    + "account again; every token and session of theirs ends now.",
                button: "Disable \(userId)'s account")
        case "enable": confirm = nil
        default: throw AssentServerError.notFound("The console has no such action.")
        }
        return try await act(context, back: Self.userPath(userId), confirm: confirm) { visit in
            switch verb {
            case "sign-out":
                let ended = try await accounts.signOutEverywhere(
                    userId: userId, in: visit.application, actor: visit.actor)
                return (
                    Self.userPath(userId),
                    "\(userId) is signed out everywhere: \(ended.refreshTokens) refresh token(s) revoked, "
                        + "\(ended.sessions) browser session(s) ended."
                )
            default:
                try await accounts.setDisabled(
                    verb == "disable", userId: userId, in: visit.application, actor: visit.actor)
                return (
                    Self.userPath(userId),
                    verb == "disable"
                        ? "\(userId)'s login account is disabled: every token and session of theirs ended."
                        : "\(userId)'s login account is enabled again."
                )
            }
        }
    }

    /// `POST /console/users/{user}/unlock`: forgets the person's wrong passwords.
    @Sendable func unlockUser(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let userId = try context.parameter("user")
        return try await act(context, back: Self.userPath(userId)) { visit in
            try await accounts.unlock(
                userId: userId, in: visit.application, actor: visit.actor)
            return (Self.userPath(userId), "\(userId)'s wrong passwords are forgotten: they can sign in at once.")
        }
    }

    /// `POST /console/users/{user}/factors/{id}/remove`: removes a second factor the person lost (asked first).
    @Sendable func removeFactor(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let userId = try context.parameter("user")
        let id = try context.parameter("id")
        let ask: Ask = { visit in
            let account = try await accounts.get(
                userId: userId, in: visit.application)
            guard let factor = account.factors.first(where: { $0.id == id }) else {
                throw AssentServerError.notFound("\(userId)'s login account has no such factor.")
            }
            return Confirmation(
                title: "Remove a second factor",
                question: "Remove \(Self.factorLabel(factor)) from \(userId)'s account?",
                consequence:
                    "It no longer signs \(userId) in. Remove a factor only for a person whose identity you "
                    + "have checked: a stranger asking for it would get past the second factor.",
                button: "Remove it")
        }
        return try await act(context, back: Self.userPath(userId), ask: ask) { visit in
            try await accounts.removeFactor(
                id: id, userId: userId, in: visit.application, actor: visit.actor)
            return (Self.userPath(userId), "The factor is removed from \(userId)'s account.")
        }
    }

    /// `POST /console/users/{user}/browsers/{id}/forget`: a remembered browser asks for a second factor again.
    @Sendable func forgetBrowser(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let userId = try context.parameter("user")
        let id = try context.parameter("id")
        return try await act(context, back: Self.userPath(userId)) { visit in
            guard
                try await accounts.rememberedDevices(userId: userId, in: visit.application).contains(where: {
                    $0.id == id
                })
            else { throw AssentServerError.notFound("\(userId) has no such remembered browser.") }
            try await accounts.revokeDevice(id: id, in: visit.application, actor: visit.actor)
            return (Self.userPath(userId), "That browser of \(userId) asks for a second factor again.")
        }
    }

    /// `POST /console/activations`: a new activation for a user, with its QR code on the next page.
    @Sendable func createActivation(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console/users") { visit in
            let userId = (visit.form["user"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard let mode = CommitMode(rawValue: visit.form["commitMode"] ?? CommitMode.auto.rawValue) else {
                throw AssentServerError.invalidRequest("The commit mode is auto or manual.")
            }
            let created = try await activations.create(
                application: visit.application, userId: userId, commitMode: mode,
                actor: visit.actor)
            return (
                Self.activationPath(created.activation.id),
                "Activation created: scan the QR code with the app, or type the code."
            )
        }
    }

    /// `GET /console/activations/{id}/qr.png|qr.svg`: the pending activation's QR code.
    @Sendable func activationQRCode(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let id = try context.parameter("id")
        guard try await activations.find(id: id)?.applicationId == visit.application.id,
            let text = try await activations.pendingQRText(id: id)
        else {
            return Response(status: .notFound, headers: WebPages.securityHeaders)
        }
        let code = try QRCode(text: text, errorCorrection: .medium)
        guard request.uri.path.hasSuffix(".svg") else { return Self.png(code.png(scale: 6)) }
        var headers = WebPages.securityHeaders
        headers[.contentType] = "image/svg+xml"
        headers[.contentDisposition] = "attachment; filename=\"activation-\(id.prefix(8)).svg\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: code.svg())))
    }

    /// `POST /console/activations/{id}/commit|block|unblock|remove` (blocking and removing ask first, naming the
    /// device and its user).
    @Sendable func changeActivation(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameter("id")
        let verb = try context.parameter("change")
        guard ["commit", "block", "unblock", "remove"].contains(verb) else {
            throw AssentServerError.notFound("The console has no such action.")
        }
        let question: Ask = { visit in
            let activation = try await ownActivation(id, visit)
            let device = "\(activation.userId)'s \(activation.deviceLabel)"
            return verb == "block"
                ? Confirmation(
                    title: "Block the activation", question: "Block \(device)?",
                    consequence: "The phone can no longer approve anything until an operator unblocks it.",
                    button: "Block \(activation.userId)'s phone")
                : Confirmation(
                    title: "Remove the activation", question: "Remove \(device) for good?",
                    consequence: "The phone can never approve anything again; this cannot be undone. "
                        + "\(activation.userId) must activate the phone anew with a new activation code.",
                    button: "Remove \(activation.userId)'s phone for good")
        }
        let ask = verb == "block" || verb == "remove" ? question : nil
        return try await act(context, back: Self.activationPath(id), ask: ask) { visit in
            _ = try await ownActivation(id, visit)
            switch verb {
            case "commit": _ = try await activations.commit(id: id, actor: visit.actor)
            case "block":
                _ = try await activations.block(id: id, reason: visit.form["reason"], actor: visit.actor)
            case "unblock": _ = try await activations.unblock(id: id, actor: visit.actor)
            default: _ = try await activations.remove(id: id, actor: visit.actor)
            }
            let done = ["commit": "committed", "block": "blocked", "unblock": "unblocked"][verb] ?? "removed"
            return (Self.activationPath(id), "Activation \(done).")
        }
    }

    static func userPath(_ userId: String) -> String { "/console/users/\(FormEncoding.escape(userId))" }

    /// A second factor as support reads it: what it is, and where it sends (obfuscated).
    static func factorLabel(_ factor: TFAFactorRecord) -> String {
        switch factor.provider {
        case .totp: "Authenticator app"
        case .email: "E-mail \(CodeFactor.obfuscateEmail(factor.destination ?? ""))"
        case .phone: "Phone \(CodeFactor.obfuscatePhone(factor.destination ?? ""))"
        case .push where BrowserApprovers.isBrowser(factor): "Approval in a browser"
        case .push: "Approval on the phone \(factor.destination.map { String($0.prefix(8)) } ?? "")"
        case .passkey: "Passkey \(factor.destination ?? "")"
        case .backup: "Backup codes"
        }
    }
    static func activationPath(_ id: String) -> String { "/console/activations/\(FormEncoding.escape(id))" }

    /// `GET /console/users/{user}`: the user's activations and login account.
    @Sendable func user(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let userId = try context.parameter("user")
        let list = try await activations.list(userId: userId).filter { $0.0.applicationId == visit.application.id }
            .reversed()
        var rows: [ConsoleUserPage.Activation] = []
        for (activation, push) in list {
            rows.append(
                ConsoleUserPage.Activation(
                    id: activation.id, url: Self.activationPath(activation.id), state: activation.state.name,
                    stateClass: activation.state.name.lowercased(),
                    name: activation.activationName ?? activation.platform ?? "—",
                    fingerprint: try activation.fingerprint() ?? "—", push: push?.platform.rawValue ?? "—",
                    failed: "\(activation.failedAttempts) of \(activation.maxFailedAttempts)",
                    lastUsed: activation.lastUsedAt.map(Self.time) ?? "never",
                    lastUsedIso: activation.lastUsedAt.map(Self.iso)))
        }
        var page = ConsoleUserPage(
            user: userId, canCreate: visit.allows(.activationsWrite), activations: rows, empty: list.isEmpty)
        if let (until, operationId) = try await pushFactor.suspension(
            applicationId: visit.application.id, userId: userId)
        {
            page.fraudNotice =
                "\(userId) reported a sign-in as fraud on their phone (operation \(operationId)): push sign-ins are "
                + "suspended until \(PushFactor.clock(until)) UTC."
        }
        if visit.allows(.tfaRead), let found = try await accounts.find(userId: userId, in: visit.application) {
            let account = found.record
            let path = Self.userPath(userId)
            var login = ConsoleUserPage.LoginAccount(
                name: account.displayName,
                state: account.disabledAt.map { "disabled since \(Self.time($0))" } ?? "enabled",
                stateClass: account.disabledAt == nil ? "active" : "blocked", enabled: account.disabledAt == nil,
                canWrite: visit.allows(.tfaWrite), signOutUrl: path + "/sign-out", disableUrl: path + "/disable",
                enableUrl: path + "/enable", unlockUrl: path + "/unlock")
            login.factors = found.factors.map { factor in
                ConsoleUserPage.Item(
                    id: factor.id, label: Self.factorLabel(factor),
                    detail: "added \(Self.time(factor.createdAt))"
                        + (factor.lastVerifiedAt.map { ", last used \(Self.time($0))" } ?? ""),
                    url: path + "/factors/\(FormEncoding.escape(factor.id))/remove")
            }
            let now = clock.millis
            login.browsers = try await accounts.rememberedDevices(userId: userId, in: visit.application)
                .filter { $0.revokedAt == nil && $0.expiresAt > now }.map { device in
                    ConsoleUserPage.Item(
                        id: device.id, label: "Remembered \(Self.time(device.createdAt))",
                        detail:
                            "last used \(device.lastUsedAt.map(Self.time) ?? "never"), until \(Self.time(device.expiresAt))",
                        url: path + "/browsers/\(FormEncoding.escape(device.id))/forget")
                }
            if let failures = try await accounts.signInFailures(userId: userId, in: visit.application) {
                login.failures =
                    "\(failures.count) wrong password\(failures.count == 1 ? "" : "s") from any address until "
                    + Self.time(failures.until)
            }
            page.account = login
        }
        var live = Self.liveURL(activations: list.map(\.0.id))
        if visit.allows(.operationsRead) {
            let recent = try await queries.recentOperations(
                in: visit.application, userId: userId, status: nil, before: nil, limit: 10)
            page.operations = recent.map(Self.operationRow)
            page.operationsUrl = Self.link("/console/operations", ["user": userId])
            page.showOperations = true
            live = Self.liveURL(activations: list.map(\.0.id), operations: recent.map(\.id))
        }
        return try await show(page, title: userId, live: live, visit)
    }

    /// `GET /console/activations/{id}`: one activation, with its QR code while it waits for the phone.
    @Sendable func activation(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let id = try context.parameter("id")
        let activation = try await ownActivation(id, visit)
        let write = visit.allows(.activationsWrite)
        var page = ConsoleActivationPage(
            id: activation.id, user: activation.userId, userUrl: Self.userPath(activation.userId),
            state: activation.state.name, stateClass: activation.state.name.lowercased(),
            details: Self.details([
                ("Name", .text(activation.activationName)), ("Platform", .text(activation.platform)),
                ("Device", .text(activation.deviceInfo)), ("Commit mode", .text(activation.commitMode.rawValue)),
                ("Failed attempts", .text("\(activation.failedAttempts) of \(activation.maxFailedAttempts)")),
                (
                    activation.state == .removed ? "Removed because" : "Blocked because",
                    .text(activation.blockedReason)
                ),
                ("Created", .time(activation.createdAt)),
                ("Last used", activation.lastUsedAt == nil ? .text("never") : .time(activation.lastUsedAt)),
            ]),
            canCommit: write && activation.state == .pendingCommit,
            canBlock: write && activation.state == .active,
            canUnblock: write && activation.state == .blocked,
            canRemove: write && activation.state != .removed,
            fingerprint: try activation.fingerprint())
        if activation.state == .removed, activation.blockedReason == ActivationService.codeExpiredReason {
            page.expired =
                "The activation code expired unused at \(Self.time(activation.codeExpiresAt)): create a new "
                + "activation for \(activation.userId)."
        }
        if let registration = try await activations.pushRegistration(of: activation.id) {
            page.push =
                [registration.platform.rawValue, registration.environment?.rawValue].compactMap { $0 }
                .joined(separator: ", ") + ", registered \(Self.time(registration.registeredAt))"
        }
        page.deliveries = ConsolePushDelivery.rows(
            try await pushDeliveries.deliveries(activationId: activation.id), about: \.operationId,
            path: Self.operationPath)
        page.hasDeliveries = !page.deliveries.isEmpty
        page.retention = ConsolePushDelivery.retention(pushTraceRetention)
        if write, let code = activation.activationCode, activation.state == .created,
            activation.codeExpiresAt > clock.millis
        {
            page.code = code
            page.codeExpires = Self.time(activation.codeExpiresAt)
            page.qrUrl = "\(Self.activationPath(activation.id))/qr.png"
            page.svgUrl = "\(Self.activationPath(activation.id))/qr.svg"
        }
        return try await show(page, title: "Activation", live: Self.liveURL(activations: [activation.id]), visit)
    }

    /// A PNG image answer that is never cached.
    static func png(_ bytes: Data) -> Response {
        var headers = WebPages.securityHeaders
        headers[.contentType] = "image/png"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The live statuses' event stream of a page showing these activations and operations.
    static func liveURL(activations: [String] = [], operations: [String] = []) -> String? {
        guard !activations.isEmpty || !operations.isEmpty else { return nil }
        return link(
            "/console/live",
            [
                "activations": activations.prefix(ConsoleLive.limit).joined(separator: ","),
                "operations": operations.prefix(ConsoleLive.limit).joined(separator: ","),
            ])
    }
}
