import AssentModel
import Foundation
import Hummingbird

/// The console's application page: the application the console works with (its name, keys and SDK configuration,
/// its versions — created, supported or not — which push credentials reach its devices, its pages' accent colour, its
/// webhook and its rate limits), the applications the operator may switch to, and a new application for an operator
/// who may work with every one.
extension ConsolePages {
    func addApplicationRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        console.requiring(.applicationRead).get("application", use: applicationPage)
        let write = console.requiring(.applicationWrite)
        write.post("applications", use: createApplication)
        write.post("application/versions", use: createVersion)
        write.post("application/versions/{id}/support", use: supportVersion)
        write.post("application/versions/{id}/unsupport", use: supportVersion)
        // The chosen application's settings, through the services the operator API uses (checked, audited the same).
        write.post("application/branding", use: setAccentColor)
        write.post("application/language", use: setLanguage)
        write.post("application/webhook", use: setWebhook)
        write.post("application/webhook/remove", use: removeWebhook)
        write.post("application/rate-limits", use: setRateLimits)
    }

    /// `POST /console/applications`: a new application (for an operator who may work with every one); the console
    /// then works with it.
    @Sendable func createApplication(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        var session = visit.session
        do {
            guard visit.principal.applications == nil else {
                throw AssentServerError(
                    .forbidden, "Your account is limited to some applications: it cannot create one.")
            }
            let created = try await applications.create(named: visit.form["name"] ?? "", actor: visit.actor)
            session.state.applicationId = created.id
            session.state.message =
                "Application \(created.name) created: the console now works with it. Configure its app with "
                + "the SDK configuration below."
        } catch let error as AssentServerError where error.status < 500 {
            (session.state.message, session.state.failed) = (error.message, true)
            session.state.form = visit.form.filter { $0.key != "csrf" }
        }
        _ = try await sessions.save(&session)
        return WebPages.redirect("/console/application")
    }

    /// `POST /console/application/versions`: a new version of the application's app, supported.
    @Sendable func createVersion(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console/application") { visit in
            let version = try await versions.create(
                applicationId: visit.application.id, name: visit.form["name"] ?? "", actor: visit.actor)
            return ("/console/application", "Version \(version.name) created, supported.")
        }
    }

    /// `POST /console/application/versions/{id}/support|unsupport` (unsupporting asks first, naming the version).
    @Sendable func supportVersion(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let id = try context.parameter("id")
        let supported = request.uri.path.hasSuffix("/support")
        let confirmUnsupport: Ask = { visit in
            let versions = try await self.versions.versions(
                applicationId: visit.application.id)
            guard let version = versions.first(where: { $0.id == id }) else {
                throw AssentServerError.notFound("This application has no version with this id.")
            }
            return Confirmation(
                title: "Stop serving a version",
                question: "Stop serving the devices of \(visit.application.name) version \(version.name)?",
                consequence: "Every device whose app uses it is refused (APPLICATION_VERSION_UNSUPPORTED) until "
                    + "the version is supported again.",
                button: "Stop serving version \(version.name)")
        }
        return try await act(context, back: "/console/application", ask: supported ? nil : confirmUnsupport) {
            visit in
            let version = try await versions.setSupported(
                applicationId: visit.application.id, versionId: id, supported: supported, actor: visit.actor)
            return (
                "/console/application",
                "Version \(version.name) is \(supported ? "supported again" : "no longer supported")."
            )
        }
    }

    /// `GET /console/application`: the application the console works with.
    @Sendable func applicationPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let application = visit.application
        let write = visit.allows(.applicationWrite)
        let versions = try await self.versions.versions(
            applicationId: application.id)
        let push = try await applicationPush.info(application)
        func source(_ source: ApplicationPushInfo.Source) -> String {
            source == .server ? "the server's (assent serve)" : "its own"
        }
        var services: [LabeledValue] = []
        services.append(
            LabeledValue(
                label: "APNs",
                value: push.apns.map { "topic \($0.topic), team \($0.teamId), key \($0.keyId) — \(source($0.source))" }
                    ?? "none: its iOS devices get no push"))
        services.append(
            LabeledValue(
                label: "FCM",
                value: push.fcm.map { "project \($0.projectId), \($0.clientEmail) — \(source($0.source))" }
                    ?? "none: its Android devices get no push"))
        services.append(
            LabeledValue(
                label: "HMS", value: push.hms.map { "app \($0.appId) — \(source($0.source))" } ?? "none"))
        let others = visit.applications.filter { $0.id != application.id }.map {
            ConsoleFrame.ApplicationChoice(id: $0.id, name: $0.name, selected: false)
        }
        let page = ConsoleApplicationPage(
            applicationId: application.id, name: application.name,
            details: Self.details([
                ("Application id", .text(application.id)), ("Application key", .text(application.applicationKey)),
                ("Master public key", .text(application.masterPublicKey.x963.base64EncodedString())),
                ("Created", .time(application.createdAt)),
            ]),
            sdkConfiguration: try ApplicationService.sdkConfiguration(of: application),
            canWrite: write,
            versions: try versions.map { version in
                ConsoleApplicationPage.Version(
                    id: version.id, name: version.name, key: version.applicationKey,
                    supported: version.supported, state: version.supported ? "supported" : "unsupported",
                    created: Self.time(version.createdAt), createdIso: Self.iso(version.createdAt),
                    sdkConfiguration: try ApplicationVersionService.sdkConfiguration(
                        of: version, application: application))
            },
            push: services,
            settings: try await settings(application, visit),
            others: others, hasOthers: !others.isEmpty,
            canCreate: write && visit.principal.applications == nil,
            newName: kept(visit, "name") ?? "")
        return try await show(page, title: "Application \(application.name)", visit)
    }
}

/// The application the console works with, its versions and push credentials.
struct ConsoleApplicationPage: PageContext {
    static let template = PageTemplate.consoleApplication
    struct Version: Sendable {
        var id: String
        var name: String
        var key: String
        var supported: Bool
        var state: String
        var created: String
        var createdIso: String
        var sdkConfiguration: String
    }
    var applicationId: String
    var name: String
    var details: [LabeledValue]
    var sdkConfiguration: String
    var canWrite: Bool
    var versions: [Version]
    var push: [LabeledValue]
    var settings: ConsoleApplicationSettings
    /// The other applications the operator may switch to.
    var others: [ConsoleFrame.ApplicationChoice]
    var hasOthers: Bool
    var canCreate: Bool
    var newName: String
}

/// The application's own settings as its page shows them: the accent colour of its hosted pages and its logo, its
/// webhook, and its rate limits (its own, or the server's as placeholders).
struct ConsoleApplicationSettings: Sendable {
    struct Limit: Sendable {
        var name: String
        /// Its own `LIMIT/SECONDS`, empty when the server's applies.
        var own: String
        /// The server's, as `LIMIT/SECONDS`.
        var server: String
    }
    var accentColor: String
    var ownAccent: Bool
    /// The colour the form shows: a refused one stays in it, with why beside it.
    var accentChoice: String
    var accentRefused: String?
    var logoUrl: String?
    /// The hosted pages' default language, each offered in its own name, the current one checked.
    var languages: [Choice]
    var languageName: String
    var webhook: String
    var ownWebhook: Bool
    var webhookUrl: String
    var limits: [Limit]
}

extension ConsolePages {
    /// `POST /console/application/branding`: the hosted pages' accent colour (or the default again).
    @Sendable func setAccentColor(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: Self.applicationPath) { visit in
            let color = visit.form["default"] == "yes" ? "" : (visit.form["accentColor"] ?? "")
            let branding = try await self.branding.update(
                UpdateApplicationBrandingRequest(accentColor: color), for: visit.application, actor: visit.actor)
            return (
                Self.applicationPath,
                branding.accentColor.map { "The hosted pages of \(visit.application.name) use the accent \($0)." }
                    ?? "The hosted pages of \(visit.application.name) use the default colour again."
            )
        }
    }

    /// `POST /console/application/language`: the hosted pages' default language.
    @Sendable func setLanguage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: Self.applicationPath) { visit in
            let branding = try await self.branding.update(
                UpdateApplicationBrandingRequest(language: visit.form["language"] ?? ""), for: visit.application,
                actor: visit.actor)
            let name = Languages.names[branding.language ?? "en"] ?? "English"
            return (
                Self.applicationPath,
                "The hosted pages of \(visit.application.name) speak \(name) to people whose browser asks for no "
                    + "language they are written in."
            )
        }
    }

    /// `POST /console/application/webhook`: the application's own webhook (its key shown once).
    @Sendable func setWebhook(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: Self.applicationPath) { visit in
            let url = (visit.form["url"] ?? "").trimmingCharacters(in: .whitespaces)
            let set = try await webhooks.set(
                SetApplicationWebhookRequest(url: url), for: visit.application, actor: visit.actor)
            return (
                Self.applicationPath,
                "The status changes of \(visit.application.name)'s operations go to \(set.url), signed with the key "
                    + "\(set.secret ?? "") — shown once: give it to the receiver now."
            )
        }
    }

    /// `POST /console/application/webhook/remove` (asked first).
    @Sendable func removeWebhook(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let confirmRemove: Ask = { visit in
            Confirmation(
                title: "Remove the webhook", question: "Remove \(visit.application.name)'s own webhook?",
                consequence: "Its operations' status changes go to the server's webhook (serve --webhook-url), or "
                    + "nowhere when the server has none.",
                button: "Remove \(visit.application.name)'s webhook")
        }
        return try await act(context, back: Self.applicationPath, ask: confirmRemove) { visit in
            try await webhooks.remove(visit.application, actor: visit.actor)
            return (Self.applicationPath, "\(visit.application.name) has no webhook of its own now.")
        }
    }

    /// `POST /console/application/rate-limits`: every limit the form shows — a value is the application's own, an
    /// empty one the server's again.
    @Sendable func setRateLimits(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: Self.applicationPath) { visit in
            var changes: [String: String] = [:]
            for name in ApplicationRateLimitService.names {
                changes[name] = (visit.form["limit-\(name)"] ?? "").trimmingCharacters(in: .whitespaces)
            }
            let info = try await applicationLimits.update(
                changes, for: visit.application, actor: visit.actor)
            let own = info.limits.filter { $0.source == "application" }.map(\.name)
            return (
                Self.applicationPath,
                own.isEmpty
                    ? "\(visit.application.name) follows the server's rate limits."
                    : "\(visit.application.name) has its own \(own.joined(separator: ", ")); the server's others."
            )
        }
    }

    static let applicationPath = "/console/application"

    /// The settings section of the application page (with what a refused form of `visit` held).
    func settings(_ application: ApplicationRecord, _ visit: Visit) async throws -> ConsoleApplicationSettings {
        let branding = try await self.branding.info(application)
        let own = try await webhooks.info(application)
        let webhook: String
        if let own {
            webhook = "its own: \(own.url)"
        } else if let server = self.webhook {
            webhook = "the server's (serve --webhook-url): \(server.url.absoluteString)"
        } else {
            webhook = "none: its operations' status changes go nowhere"
        }
        let limits = try await applicationLimits.info(application)
        return ConsoleApplicationSettings(
            accentColor: branding.accentColor ?? "#1f5fbf", ownAccent: branding.accentColor != nil,
            accentChoice: kept(visit, "accentColor") ?? branding.accentColor ?? "#1f5fbf",
            accentRefused: kept(visit, "accentColor") == nil ? nil : visit.session.state.message,
            logoUrl: branding.logo == nil ? nil : "/web/brand/\(application.id)/logo",
            languages: Languages.supported.map {
                Choice(id: $0, label: Languages.names[$0] ?? $0, checked: $0 == (branding.language ?? "en"))
            },
            languageName: Languages.names[branding.language ?? "en"] ?? "English",
            webhook: webhook, ownWebhook: own != nil, webhookUrl: own?.url ?? "",
            limits: limits.limits.compactMap { limit in
                guard let path = RateLimits.names[limit.name] else { return nil }
                let server = rateLimits[keyPath: path]
                return ConsoleApplicationSettings.Limit(
                    name: limit.name, own: limit.source == "application" ? "\(limit.limit)/\(limit.window)" : "",
                    server: "\(server.limit)/\(server.window)")
            })
    }
}
