import AssentModel
import Foundation
import Hummingbird

/// The console's operators page (scope `operators:write`, the admin role's): every operator account with its role,
/// applications and state; a new account and its one-time set-up link; disable, enable, and a new set-up link for
/// one who lost their authenticator. The roles' scopes are listed beside.
extension ConsolePages {
    func addOperatorRoutes(to console: RouterGroup<ConsoleRequestContext>) {
        let admin = console.requiring(.operatorsWrite)
        admin.get("operators", use: operatorsPage)
        admin.post("operators", use: createOperator)
        admin.post("operators/{name}/{change}", use: changeOperator)
    }

    /// `POST /console/operators`: a new operator account and its one-time set-up link.
    @Sendable func createOperator(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await act(context, back: "/console/operators") { visit in
            guard visit.principal.applications == nil else {
                throw AssentServerError(
                    .forbidden, "Your account is limited to some applications: it cannot manage operators.")
            }
            guard let role = OperatorRole(rawValue: visit.form["role"] ?? "") else {
                throw AssentServerError.invalidRequest("Choose a role: admin, operator, auditor or support.")
            }
            let name = (visit.form["name"] ?? "").trimmingCharacters(in: .whitespaces)
            let limited = visit.form["application"].flatMap { $0.isEmpty ? nil : [$0] }
            let (_, link) = try await operators.create(
                name: name, role: role, applications: limited, actor: visit.actor)
            return ("/console/operators", "Operator \(name) created. Their one-time set-up link (24 hours): \(link)")
        }
    }

    /// `POST /console/operators/{name}/disable|enable|reset` (disabling and resetting ask first, naming the
    /// operator and their role).
    @Sendable func changeOperator(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let name = try context.parameter("name")
        let verb = try context.parameter("change")
        guard ["disable", "enable", "reset"].contains(verb) else {
            throw AssentServerError.notFound("The console has no such action.")
        }
        let question: Ask = { _ in
            let record = try await operators.named(name)
            let who = "\(record.name) (\(record.role.rawValue))"
            return verb == "disable"
                ? Confirmation(
                    title: "Disable the operator", question: "Disable \(who)?",
                    consequence: "\(record.name) can no longer sign in, and their console sessions end now.",
                    button: "Disable \(record.name)")
                : Confirmation(
                    title: "A new set-up link", question: "Give \(who) a new set-up link?",
                    consequence: "Their password, authenticator, passkeys and linked phone stop working now; "
                        + "they set up the account again with the new link, which you get on the next page.",
                    button: "Make a new link for \(record.name)")
        }
        return try await act(context, back: "/console/operators", ask: verb == "enable" ? nil : question) { visit in
            guard visit.principal.applications == nil else {
                throw AssentServerError(
                    .forbidden, "Your account is limited to some applications: it cannot manage operators.")
            }
            if verb == "reset" {
                let (_, link) = try await operators.reset(name, actor: visit.actor)
                return ("/console/operators", "New one-time set-up link for \(name) (24 hours): \(link)")
            }
            guard name != visit.principal.name || visit.principal.role == nil else {
                throw AssentServerError.invalidRequest("You cannot disable your own account.")
            }
            _ = try await operators.setDisabled(name, verb == "disable", actor: visit.actor)
            return ("/console/operators", "Operator \(name) \(verb)d.")
        }
    }

    /// `GET /console/operators`: every operator account, and the roles' scopes.
    @Sendable func operatorsPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let visit = try context.visit
        let names = Dictionary(visit.applications.map { ($0.id, $0.name) }) { first, _ in first }
        let accounts = try await operators.all()
        let page = ConsoleOperatorsPage(
            operators: accounts.map { record in
                ConsoleOperatorsPage.Account(
                    name: record.name, role: record.role.rawValue,
                    applications: record.applications.map { $0.map { names[$0] ?? $0 }.joined(separator: ", ") }
                        ?? "every one",
                    state: record.disabledAt != nil ? "disabled" : record.isSetUp ? "active" : "set-up pending",
                    stateClass: record.disabledAt != nil ? "blocked" : record.isSetUp ? "active" : "pending",
                    lastSignIn: record.lastSignInAt.map(Self.time) ?? "never",
                    lastSignInIso: record.lastSignInAt.map(Self.iso),
                    canDisable: record.disabledAt == nil && record.name != visit.principal.name,
                    canEnable: record.disabledAt != nil,
                    // One's own new link would end one's session before it was seen: another admin makes it.
                    canReset: record.name != visit.principal.name)
            },
            roles: OperatorRole.allCases.map { role in
                ConsoleOperatorsPage.Role(
                    name: role.rawValue, scopes: role.scopes.map(\.rawValue).sorted(),
                    // The least-privileged role (it changes nothing) unless a refused form chose another.
                    selected: role.rawValue == (kept(visit, "role") ?? OperatorRole.auditor.rawValue))
            },
            applicationChoices: visit.applications.map {
                ConsoleFrame.ApplicationChoice(id: $0.id, name: $0.name, selected: false)
            },
            canManage: visit.principal.applications == nil, name: kept(visit, "name") ?? "")
        return try await show(page, title: "Operators", visit)
    }
}

/// The operator accounts and the roles' scopes.
struct ConsoleOperatorsPage: PageContext {
    static let template = PageTemplate.consoleOperators
    struct Account: Sendable {
        var name: String
        var role: String
        var applications: String
        var state: String
        var stateClass: String
        var lastSignIn: String
        var lastSignInIso: String?
        var canDisable: Bool
        var canEnable: Bool
        var canReset: Bool
    }
    struct Role: Sendable {
        var name: String
        var scopes: [String]
        /// Whether the new-operator form starts with it.
        var selected: Bool
    }
    var operators: [Account]
    var roles: [Role]
    var applicationChoices: [ConsoleFrame.ApplicationChoice]
    /// Whether the signed-in operator may work with every application (and so manage operators).
    var canManage: Bool
    var name: String
}
