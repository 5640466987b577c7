import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// `POST /api/device/pin/changed` (PowerAuth signature with the new PIN, URI id `/pin/changed`): a device reports
/// that its user changed the PIN, which restarts the PIN's age under the server's maximum PIN age (seed 003's password
/// expiry). The signature proves the device holds the new knowledge key; nothing else is accepted.
struct PINAgeRoutes {
    let environment: ServerEnvironment

    static let uriId = "/pin/changed"

    func register(on router: APIRoutes) {
        let powerAuth = PowerAuthService(environment: environment)
        router.post("api/device/pin/changed") { request, _ in
            let body = try await HTTPSupport.body(request)
            let device = try await powerAuth.authenticate(
                authorization: request.headers[HTTPSupport.authorization], method: "POST", uriId: Self.uriId,
                body: body, allowed: [.possessionKnowledge, .possessionKnowledgeBiometry])
            let now = environment.nowMillis
            let (activation, _) = try await environment.updateActivation(id: device.activation.id) {
                $0.pinChangedAt = now
            }
            await environment.audit(.activationPinChanged, activation: activation, actor: "device", "PIN changed.")
            return try HTTPSupport.json(StatusOnlyResponse())
        }
    }
}
