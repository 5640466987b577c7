import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/api-keys`: create, list and revoke operator API keys (with a key for every application: a key limited to
/// some cannot make or revoke keys).
struct APIKeyController {
    let apiKeys: APIKeyService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.apiKeysWrite)
            .post("api-keys", use: create)
            .get("api-keys", use: list)
            .delete("api-keys/{id}", use: revoke)
    }

    @Sendable func create(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        let body = try await HTTPSupport.decode(CreateAPIKeyRequest.self, from: request)
        let (record, key) = try await apiKeys.create(
            name: body.name, scopes: try APIKeyService.scopes(body.scopes ?? ["*"]), applications: body.applications,
            actor: context.actor)
        return try HTTPSupport.operatorJSON(
            CreateAPIKeyResponse(
                id: record.id, name: record.name, scopes: record.scopes.map(\.rawValue).sorted(), apiKey: key,
                applications: record.applications),
            status: .created)
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        return try HTTPSupport.operatorJSON(
            APIKeyList(
                apiKeys: try await apiKeys.all().map {
                    APIKeyInfo(
                        id: $0.id, name: $0.name, scopes: $0.scopes.map(\.rawValue).sorted(),
                        createdAt: Date(millis: $0.createdAt), applications: $0.applications)
                }))
    }

    @Sendable func revoke(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try context.requireEveryApplication()
        try await apiKeys.revoke(id: try context.parameter("id"), actor: context.actor)
        return Response(status: .noContent)
    }
}
