import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// A device's endpoints outside PowerAuth's own: `GET /api/device/configuration` (what it reads before it
/// activates: code format, PIN rules, enabled methods — no secret, but only for a known application key) and
/// `POST /api/device/pin/changed` (PowerAuth signature with the new PIN, URI id `/pin/changed`: the user changed
/// the PIN, which restarts its age under the server's maximum PIN age — seed 003's password expiry).
struct DeviceController {
    let policy: SecurityPolicy
    let applications: ApplicationService
    let powerAuth: PowerAuthService
    let activations: ActivationService

    static let pinChangedURIId = "/pin/changed"

    func addRoutes(to router: APIRoutes) {
        router.group("api/device")
            .get("configuration", use: configuration)
            .post("pin/changed", use: pinChanged)
    }

    @Sendable func configuration(_ request: Request, context: AssentRequestContext) async throws -> Response {
        guard let key = request.uri.queryParameters.get("applicationKey") else {
            throw AssentServerError.invalidRequest("The query parameter applicationKey is missing.")
        }
        _ = try await applications.application(key: key)
        return try HTTPSupport.json(ResponseEnvelope(policy.deviceConfiguration))
    }

    @Sendable func pinChanged(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.body(request)
        // The signature proves the device holds the new knowledge key; nothing else is accepted.
        let device = try await powerAuth.authenticate(
            authorization: request.headers[HTTPSupport.authorization], method: "POST", uriId: Self.pinChangedURIId,
            body: body, allowed: [.possessionKnowledge, .possessionKnowledgeBiometry])
        try await activations.recordPINChange(activationId: device.activation.id)
        return try HTTPSupport.json(StatusOnlyResponse())
    }
}
