import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/operations` and a user's operations: create, read, cancel, offline QR codes and their answers,
/// approval links, proximity codes.
struct OperationController {
    let applications: ApplicationService
    let operations: OperationService
    let links: ApprovalLinks

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.operationsRead)
            .get("operations/{id}", use: show)
            .get("users/{userId}/operations", use: list)
            .get("operations/{id}/proximity", use: proximity)
        api.requiring(.operationsWrite)
            .post("operations", use: create)
            .post("operations/{id}/cancel", use: cancel)
            .post("operations/{id}/offline-qr", use: offlineQR)
            .post("operations/{id}/offline-verify", use: offlineVerify)
            .post("operations/{id}/approval-link", use: approvalLink)
    }

    @Sendable func create(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(
            CreateOperationRequest.self, from: request, decoder: OperationService.strictDecoder())
        let operation = try await operations.create(
            body, application: try await applications.selected(context), actor: context.actor)
        return try HTTPSupport.operatorJSON(Self.info(operation), status: .created)
    }

    @Sendable func show(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(Self.info(try await operation(context)))
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let application = try await applications.selected(context)
        let list = try await operations.list(
            userId: try context.parameter("userId"), status: try HTTPSupport.operationStatus(query.get("status")),
            limit: try HTTPSupport.limit(query.get("limit"))
        ).filter { $0.applicationId == application.id }
        return try HTTPSupport.operatorJSON(OperationList(operations: list.map(Self.info)))
    }

    @Sendable func cancel(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.optionalBody(
            CancelOperationRequest.self, from: request, expected: "{\"reason\": \"…\"}")
        let operation = try await operations.cancel(
            id: try operation(context).id, reason: body?.reason, actor: context.actor)
        return try HTTPSupport.operatorJSON(Self.info(operation))
    }

    @Sendable func offlineQR(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(OfflineQRRequest.self, from: request)
        return try HTTPSupport.operatorJSON(
            OfflineQRResponse(qr: try await operations.offlineQR(id: try operation(context).id, request: body)))
    }

    @Sendable func offlineVerify(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(OfflineVerifyRequest.self, from: request)
        let (valid, operation) = try await operations.verifyOffline(
            id: try operation(context).id, activationId: body.activationId, code: body.code, actor: context.actor)
        return try HTTPSupport.operatorJSON(OfflineVerifyResponse(valid: valid, operation: Self.info(operation)))
    }

    @Sendable func approvalLink(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(ApprovalLinkRequest.self, from: request)
        return try HTTPSupport.operatorJSON(try await links.link(operationId: try operation(context).id, body))
    }

    @Sendable func proximity(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let scheme = request.uri.queryParameters.get("scheme").map { String($0) } ?? "assent"
        return try HTTPSupport.operatorJSON(
            try await operations.proximityCode(id: try operation(context).id, scheme: scheme))
    }

    /// The operation the path names, when it belongs to the request's application.
    private func operation(_ context: AssentRequestContext) async throws -> OperationRecord {
        let operation = try await operations.get(id: try context.parameter("id"))
        try await applications.require(
            operation.applicationId, in: context, else: AssentServerError.operationNotFound())
        return operation
    }

    static func info(_ operation: OperationRecord) -> OperationInfo {
        OperationInfo(
            id: operation.id, userId: operation.userId, name: operation.name, data: operation.data,
            status: operation.status, statusReason: operation.statusReason,
            createdAt: Date(millis: operation.createdAt),
            expiresAt: Date(millis: operation.expiresAt), finishedAt: operation.finishedAt.map(Date.init(millis:)),
            activationId: operation.activationId, failedAttempts: operation.failedAttempts,
            maxFailedAttempts: operation.maxFailedAttempts, allowedSignatureType: operation.allowedSignatureType,
            proximityCheck: operation.proximitySeed != nil, template: operation.template,
            defaultLanguage: operation.content.defaultLanguage, formData: operation.content.formData,
            ui: operation.content.ui, numberMatching: operation.numberMatching, number: operation.matchingNumber)
    }
}
