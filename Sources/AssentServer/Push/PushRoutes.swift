import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// `POST /api/push/device/register/token` (MAC token) and `POST /api/push/device/register` (PowerAuth signature,
/// URI id `/push/device/register`): a device tells the server its push token.
struct PushRoutes {
    let environment: ServerEnvironment

    func register(on router: APIRoutes) {
        let registrations = PushRegistrationService(environment: environment)
        let tokens = TokenAuthenticator(environment: environment)
        let powerAuth = PowerAuthService(environment: environment)
        let group = router.group("api/push/device")
        group.post("register/token") { request, _ in
            let (_, device) = try await tokens.authenticate(request.headers[HTTPSupport.token])
            let body = try await HTTPSupport.decode(RequestEnvelope<PushRegistrationRequest>.self, from: request)
            try await registrations.register(
                body.requestObject, device: device, language: request.headers[HTTPSupport.acceptLanguage])
            return try HTTPSupport.json(StatusOnlyResponse())
        }
        group.post("register") { request, _ in
            let body = try await HTTPSupport.body(request)
            let device = try await powerAuth.authenticate(
                authorization: request.headers[HTTPSupport.authorization], method: "POST",
                uriId: "/push/device/register", body: body, allowed: Set(SignatureType.allCases))
            let registration = try HTTPSupport.decode(RequestEnvelope<PushRegistrationRequest>.self, from: body)
            try await registrations.register(
                registration.requestObject, device: device.activation.principal,
                language: request.headers[HTTPSupport.acceptLanguage])
            return try HTTPSupport.json(StatusOnlyResponse())
        }
    }
}
