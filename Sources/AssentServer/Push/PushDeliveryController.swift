import AssentModel
import Foundation
import Hummingbird

/// `GET /api/v1/activations/{id}/push-deliveries` and `GET /api/v1/operations/{id}/push-deliveries`: the delivery
/// trace of an activation or an operation.
struct PushDeliveryController {
    let applications: ApplicationService
    let activations: ActivationService
    let operations: OperationService
    let deliveries: PushDeliveryService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.activationsRead).get("activations/{id}/push-deliveries", use: ofActivation)
        api.requiring(.operationsRead).get("operations/{id}/push-deliveries", use: ofOperation)
    }

    @Sendable func ofActivation(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let activation = try await activations.get(id: try context.parameter("id"))
        try await applications.require(
            activation.applicationId, in: context, else: AssentServerError.activationNotFound())
        let list = try await deliveries.deliveries(activationId: activation.id)
        return try HTTPSupport.operatorJSON(PushDeliveryList(deliveries: list.map(PushDeliveryService.info)))
    }

    @Sendable func ofOperation(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let operation = try await operations.get(id: try context.parameter("id"))
        try await applications.require(
            operation.applicationId, in: context, else: AssentServerError.operationNotFound())
        let list = try await deliveries.deliveries(operationId: operation.id)
        return try HTTPSupport.operatorJSON(PushDeliveryList(deliveries: list.map(PushDeliveryService.info)))
    }
}
