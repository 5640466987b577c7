import AssentModel
import Foundation
import Hummingbird

/// The console's application page: the application the console works with (its name, keys and SDK configuration,
/// its versions — created, supported or not — which push credentials reach its devices, its pages' accent colour, its
/// webhook and its rate limits), the applications the operator may switch to, and a new application for an operator
/// who may work with every one.
extension ConsolePages {
    func addApplicationRoutes(to router: Router<AssentRequestContext>) {
        router.get("console/application") { request, _ in
            try await page(request, scope: .applicationRead) { visit in try await applicationPage(visit) }
        }
        router.post("console/applications") { request, _ in
            try await form(request, scope: .applicationWrite, back: "/console/application") { visit in
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
        }
        router.post("console/application/versions") { request, _ in
            try await action(request, scope: .applicationWrite, back: "/console/application") { visit in
                let version = try await ApplicationVersionService(environment: environment).create(
                    applicationId: visit.application.id, name: visit.form["name"] ?? "", actor: visit.actor)
                return ("/console/application", "Version \(version.name) created, supported.")
            }
        }
        addApplicationSettingsRoutes(to: router)
        /// The question before unsupporting, naming the version and its application.
        @Sendable func confirmUnsupport(_ id: String) -> Ask {
            { visit in
                let versions = try await ApplicationVersionService(environment: environment).versions(
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
        }
        for supported in [true, false] {
            let verb = supported ? "support" : "unsupport"
            router.post("console/application/versions/{id}/\(verb)") { request, context in
                let id = try context.parameters.require("id")
                return try await action(
                    request, scope: .applicationWrite, back: "/console/application",
                    ask: supported ? nil : confirmUnsupport(id)
                ) { visit in
                    let version = try await ApplicationVersionService(environment: environment).setSupported(
                        applicationId: visit.application.id, versionId: id, supported: supported, actor: visit.actor)
                    return (
                        "/console/application",
                        "Version \(version.name) is \(supported ? "supported again" : "no longer supported")."
                    )
                }
            }
        }
    }

    private func applicationPage(_ visit: Visit) async throws -> Response {
        let application = visit.application
        let write = visit.allows(.applicationWrite)
        let versions = try await ApplicationVersionService(environment: environment).versions(
            applicationId: application.id)
        let push = try await ApplicationPushService(environment: environment).info(application)
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
    /// `POST /console/application/branding|webhook|webhook/remove|rate-limits`: the chosen application's settings,
    /// through the services the operator API uses (checked, audited the same).
    func addApplicationSettingsRoutes(to router: Router<AssentRequestContext>) {
        let back = "/console/application"
        router.post("console/application/branding") { request, _ in
            try await action(request, scope: .applicationWrite, back: back) { visit in
                let color = visit.form["default"] == "yes" ? "" : (visit.form["accentColor"] ?? "")
                let branding = try await ApplicationBrandingService(environment: environment).update(
                    UpdateApplicationBrandingRequest(accentColor: color), for: visit.application, actor: visit.actor)
                return (
                    back,
                    branding.accentColor.map { "The hosted pages of \(visit.application.name) use the accent \($0)." }
                        ?? "The hosted pages of \(visit.application.name) use the default colour again."
                )
            }
        }
        router.post("console/application/language") { request, _ in
            try await action(request, scope: .applicationWrite, back: back) { visit in
                let branding = try await ApplicationBrandingService(environment: environment).update(
                    UpdateApplicationBrandingRequest(language: visit.form["language"] ?? ""), for: visit.application,
                    actor: visit.actor)
                let name = Languages.names[branding.language ?? "en"] ?? "English"
                return (
                    back,
                    "The hosted pages of \(visit.application.name) speak \(name) to people whose browser asks for no "
                        + "language they are written in."
                )
            }
        }
        router.post("console/application/webhook") { request, _ in
            try await action(request, scope: .applicationWrite, back: back) { visit in
                let url = (visit.form["url"] ?? "").trimmingCharacters(in: .whitespaces)
                let set = try await ApplicationWebhookService(environment: environment).set(
                    SetApplicationWebhookRequest(url: url), for: visit.application, actor: visit.actor)
                return (
                    back,
                    "The status changes of \(visit.application.name)'s operations go to \(set.url), signed with the key "
                        + "\(set.secret ?? "") — shown once: give it to the receiver now."
                )
            }
        }
        let confirmRemove: Ask = { visit in
            Confirmation(
                title: "Remove the webhook", question: "Remove \(visit.application.name)'s own webhook?",
                consequence: "Its operations' status changes go to the server's webhook (serve --webhook-url), or "
                    + "nowhere when the server has none.",
                button: "Remove \(visit.application.name)'s webhook")
        }
        router.post("console/application/webhook/remove") { request, _ in
            try await action(request, scope: .applicationWrite, back: back, ask: confirmRemove) { visit in
                try await ApplicationWebhookService(environment: environment).remove(
                    visit.application, actor: visit.actor)
                return (back, "\(visit.application.name) has no webhook of its own now.")
            }
        }
        router.post("console/application/rate-limits") { request, _ in
            try await action(request, scope: .applicationWrite, back: back) { visit in
                // Every limit the form shows: a value is the application's own, an empty one the server's again.
                var changes: [String: String] = [:]
                for name in ApplicationRateLimitService.names {
                    changes[name] = (visit.form["limit-\(name)"] ?? "").trimmingCharacters(in: .whitespaces)
                }
                let info = try await ApplicationRateLimitService(environment: environment).update(
                    changes, for: visit.application, actor: visit.actor)
                let own = info.limits.filter { $0.source == "application" }.map(\.name)
                return (
                    back,
                    own.isEmpty
                        ? "\(visit.application.name) follows the server's rate limits."
                        : "\(visit.application.name) has its own \(own.joined(separator: ", ")); the server's others."
                )
            }
        }
    }

    /// The settings section of the application page (with what a refused form of `visit` held).
    func settings(_ application: ApplicationRecord, _ visit: Visit) async throws -> ConsoleApplicationSettings {
        let branding = try await ApplicationBrandingService(environment: environment).info(application)
        let webhooks = ApplicationWebhookService(environment: environment)
        let own = try await webhooks.info(application)
        let webhook: String
        if let own {
            webhook = "its own: \(own.url)"
        } else if let server = environment.webhook {
            webhook = "the server's (serve --webhook-url): \(server.url.absoluteString)"
        } else {
            webhook = "none: its operations' status changes go nowhere"
        }
        let limits = try await ApplicationRateLimitService(environment: environment).info(application)
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
                let server = environment.rateLimits[keyPath: path]
                return ConsoleApplicationSettings.Limit(
                    name: limit.name, own: limit.source == "application" ? "\(limit.limit)/\(limit.window)" : "",
                    server: "\(server.limit)/\(server.window)")
            })
    }
}
