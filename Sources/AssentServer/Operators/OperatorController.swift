import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/operators` (scope `operators:write`): create, list, disable, enable and reset operator accounts.
struct OperatorController {
    let operators: OperatorService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.operatorsWrite)
            .get("operators", use: list)
            .post("operators", use: create)
            .post("operators/{name}/disable", use: disable)
            .post("operators/{name}/enable", use: enable)
            .post("operators/{name}/reset", use: reset)
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        return try HTTPSupport.operatorJSON(OperatorList(operators: try await operators.all().map(Self.info)))
    }

    @Sendable func create(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        let body = try await HTTPSupport.decode(CreateOperatorRequest.self, from: request)
        guard let role = OperatorRole(rawValue: body.role) else {
            throw AssentServerError.invalidRequest(
                "role is one of \(OperatorRole.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        let (record, link) = try await operators.create(
            name: body.name, role: role, applications: body.applications, actor: context.actor)
        return try HTTPSupport.operatorJSON(
            OperatorSetup(operator: Self.info(record), setupLink: link), status: .created)
    }

    @Sendable func disable(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        return try HTTPSupport.operatorJSON(
            Self.info(try await operators.setDisabled(try context.parameter("name"), true, actor: context.actor)))
    }

    @Sendable func enable(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        return try HTTPSupport.operatorJSON(
            Self.info(try await operators.setDisabled(try context.parameter("name"), false, actor: context.actor)))
    }

    @Sendable func reset(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        let (record, link) = try await operators.reset(try context.parameter("name"), actor: context.actor)
        return try HTTPSupport.operatorJSON(OperatorSetup(operator: Self.info(record), setupLink: link))
    }

    static func info(_ record: OperatorRecord) -> OperatorInfo {
        OperatorInfo(
            name: record.name, role: record.role.rawValue, scopes: record.role.scopes.map(\.rawValue).sorted(),
            applications: record.applications,
            state: record.disabledAt != nil ? "DISABLED" : record.isSetUp ? "ACTIVE" : "SETUP_PENDING",
            createdAt: Date(millis: record.createdAt), lastSignInAt: record.lastSignInAt.map(Date.init(millis:)),
            setupExpiresAt: record.setupExpiresAt.map(Date.init(millis:)))
    }
}
