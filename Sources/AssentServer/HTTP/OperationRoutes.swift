import AssentModel
import Foundation
import Hummingbird

/// The operator API for operations and operation templates under `/api/v1`.
extension OperatorRoutes {
    func registerOperations(on api: RouterGroup<AssentRequestContext>) {
        let operations = OperationService(environment: environment)

        api.post("operations") { request, context in
            try require(.operationsWrite, context)
            let body = try await HTTPSupport.decode(
                CreateOperationRequest.self, from: request, decoder: OperationService.strictDecoder())
            let operation = try await operations.create(
                body, application: try await defaultApplication(), actor: actor(context))
            return try json(Self.info(operation), status: .created)
        }
        api.get("operations/:id") { _, context in
            try require(.operationsRead, context)
            return try json(Self.info(try await operations.get(id: try context.parameters.require("id"))))
        }
        api.get("users/:userId/operations") { request, context in
            try require(.operationsRead, context)
            let status = try HTTPSupport.operationStatus(request.uri.queryParameters.get("status"))
            let limit = try HTTPSupport.limit(request.uri.queryParameters.get("limit"))
            let list = try await operations.list(
                userId: try context.parameters.require("userId"), status: status, limit: limit)
            return try json(OperationList(operations: list.map(Self.info)))
        }
        api.post("operations/:id/cancel") { request, context in
            try require(.operationsWrite, context)
            let body = try await HTTPSupport.body(request)
            let reason =
                body.isEmpty
                ? nil : try HTTPSupport.decode(CancelOperationRequest.self, from: body).reason
            return try json(
                Self.info(
                    try await operations.cancel(
                        id: try context.parameters.require("id"), reason: reason, actor: actor(context))))
        }
        api.post("operations/:id/offline-qr") { request, context in
            try require(.operationsWrite, context)
            let body = try await HTTPSupport.decode(OfflineQRRequest.self, from: request)
            return try json(
                OfflineQRResponse(
                    qr: try await operations.offlineQR(id: try context.parameters.require("id"), request: body)))
        }
        api.post("operations/:id/approval-link") { request, context in
            try require(.operationsWrite, context)
            let body = try await HTTPSupport.decode(ApprovalLinkRequest.self, from: request)
            return try json(
                try await ApprovalLinks(environment: environment).link(
                    operationId: try context.parameters.require("id"), body))
        }
        api.post("operations/:id/offline-verify") { request, context in
            try require(.operationsWrite, context)
            let body = try await HTTPSupport.decode(OfflineVerifyRequest.self, from: request)
            let (valid, operation) = try await operations.verifyOffline(
                id: try context.parameters.require("id"), activationId: body.activationId, code: body.code)
            return try json(OfflineVerifyResponse(valid: valid, operation: Self.info(operation)))
        }
        api.get("operations/:id/proximity") { request, context in
            try require(.operationsRead, context)
            let scheme = request.uri.queryParameters.get("scheme") ?? "assent"
            guard let first = scheme.first, first.isLetter,
                scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
            else { throw AssentServerError.invalidRequest("scheme must be a URL scheme such as myapp.") }
            return try json(
                try await operations.proximityCode(id: try context.parameters.require("id"), scheme: String(scheme)))
        }

        api.put("operation-templates/:name") { request, context in
            try require(.operationsWrite, context)
            let name = try context.parameters.require("name")
            guard OperationService.isName(name) else {
                throw AssentServerError.invalidRequest("A template name is 1 to 64 letters, digits, '_', '.', '-'.")
            }
            let body = try await HTTPSupport.decode([String: JSONValue].self, from: request)
            do {
                try OperationTemplate.validate(body)
            } catch let error as OperationDataError {
                throw AssentServerError.invalidRequest(error.message)
            }
            let now = environment.nowMillis
            try await environment.store.putTemplate(
                name: name, body: String(decoding: try JSONEncoder().encode(body), as: UTF8.self), at: now)
            await environment.audit("operation_template.saved", actor: actor(context), "Template \(name) saved.")
            return try json(OperationTemplateInfo(name: name, body: body, updatedAt: Date(millis: now)))
        }
        api.get("operation-templates") { _, context in
            try require(.operationsRead, context)
            return try json(
                OperationTemplateList(
                    templates: try await environment.store.templates().map {
                        OperationTemplateInfo(
                            name: $0.name,
                            body: try JSONDecoder().decode([String: JSONValue].self, from: Data($0.body.utf8)),
                            updatedAt: Date(millis: $0.updatedAt))
                    }))
        }
        api.delete("operation-templates/:name") { _, context in
            try require(.operationsWrite, context)
            let name = try context.parameters.require("name")
            guard try await environment.store.deleteTemplate(name: name) else {
                throw AssentServerError.notFound("No operation template is named \(name).")
            }
            await environment.audit("operation_template.deleted", actor: actor(context), "Template \(name) deleted.")
            return Response(status: .noContent)
        }
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
            ui: operation.content.ui)
    }
}
