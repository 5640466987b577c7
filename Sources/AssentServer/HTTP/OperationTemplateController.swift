import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/operation-templates`: save, list and delete operation templates.
struct OperationTemplateController {
    let templates: OperationTemplateService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.operationsRead).get("operation-templates", use: list)
        api.requiring(.operationsWrite)
            .put("operation-templates/:name", use: save)
            .delete("operation-templates/:name", use: delete)
    }

    @Sendable func save(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode([String: JSONValue].self, from: request)
        let saved = try await templates.save(name: try context.parameter("name"), body: body, actor: context.actor)
        return try HTTPSupport.operatorJSON(Self.info(saved))
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(OperationTemplateList(templates: try await templates.all().map(Self.info)))
    }

    @Sendable func delete(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await templates.delete(name: try context.parameter("name"), actor: context.actor)
        return Response(status: .noContent)
    }

    static func info(_ template: OperationTemplateService.Template) -> OperationTemplateInfo {
        OperationTemplateInfo(name: template.name, body: template.body, updatedAt: Date(millis: template.updatedAt))
    }
}
