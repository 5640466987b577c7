import AssentModel
import Foundation
import Hummingbird

/// `GET /api/v1/audit`: the audit trail, newest first, of an activation or a user.
struct AuditController {
    let audit: AuditService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.auditRead).get("audit", use: list)
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let events = try await audit.events(
            AuditFilter(activationId: query.get("activationId"), userId: query.get("userId")),
            limit: try HTTPSupport.limit(query.get("limit")))
        return try HTTPSupport.operatorJSON(
            AuditList(
                events: events.map {
                    AuditEventInfo(
                        id: $0.id ?? 0, at: Date(millis: $0.at), type: $0.type, activationId: $0.activationId,
                        userId: $0.userId, actor: $0.actor, detail: $0.detail)
                }))
    }
}
