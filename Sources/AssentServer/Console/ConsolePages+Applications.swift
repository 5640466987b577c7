import AssentModel
import Foundation
import Hummingbird

/// The console's application page: the application the console works with (its name, keys and SDK configuration,
/// its versions — created, supported or not — and which push credentials reach its devices), the applications the
/// operator may switch to, and a new application for an operator who may work with every one.
extension ConsolePages {
    func registerApplications(on router: Router<AssentRequestContext>) {
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
        let confirmUnsupport = Confirmation(
            title: "Stop serving a version", question: "Stop serving this version's devices?",
            consequence: "Every device whose app uses it is refused (APPLICATION_VERSION_UNSUPPORTED) until the "
                + "version is supported again.",
            button: "Stop serving it")
        for supported in [true, false] {
            let verb = supported ? "support" : "unsupport"
            router.post("console/application/versions/{id}/\(verb)") { request, context in
                let id = try context.parameters.require("id")
                return try await action(
                    request, scope: .applicationWrite, back: "/console/application",
                    confirm: supported ? nil : confirmUnsupport
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
    /// The other applications the operator may switch to.
    var others: [ConsoleFrame.ApplicationChoice]
    var hasOthers: Bool
    var canCreate: Bool
    var newName: String
}
