import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/operation-templates`: save, list and delete the selected application's operation templates.
struct OperationTemplateController {
    let templates: OperationTemplateService
    let applications: ApplicationService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.operationsRead).get("operation-templates", use: list)
        api.requiring(.operationsWrite)
            .put("operation-templates/{name}", use: save)
            .delete("operation-templates/{name}", use: delete)
    }

    @Sendable func save(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode([String: JSONValue].self, from: request)
        let saved = try await templates.save(
            name: try context.parameter("name"), body: body, in: try await applications.selected(context),
            actor: context.actor)
        return try HTTPSupport.operatorJSON(Self.info(saved))
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(
            OperationTemplateList(
                templates: try await templates.all(in: try await applications.selected(context)).map(Self.info)))
    }

    @Sendable func delete(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await templates.delete(
            name: try context.parameter("name"), in: try await applications.selected(context), actor: context.actor)
        return Response(status: .noContent)
    }

    static func info(_ template: OperationTemplateService.Template) -> OperationTemplateInfo {
        OperationTemplateInfo(name: template.name, body: template.body, updatedAt: Date(millis: template.updatedAt))
    }
}
