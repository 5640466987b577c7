import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// `POST /api/push/device/register/token` (MAC token) and `POST /api/push/device/register` (PowerAuth signature,
/// URI id `/push/device/register`): a device tells the server its push token; `GET /api/push/webpush/key`: the
/// VAPID key a Web Push subscription is made for.
struct PushController {
    let registrations: PushRegistrationService
    let tokens: TokenAuthenticator
    let powerAuth: PowerAuthService
    let deliveries: PushDeliveryService

    func addRoutes(to router: APIRoutes) {
        router.group("api/push/device")
            .post("register/token", use: registerWithToken)
            .post("register", use: registerWithSignature)
        router.group("api/push/webpush").get("key", use: webPushKey)
    }

    /// The key a Web Push subscription is made for (`?application=` id or key; default the first application);
    /// public, like the endpoint a browser would read it from.
    @Sendable func webPushKey(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let name = request.uri.queryParameters["application"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let key = try await deliveries.applicationServerKey(application: name)
        return try HTTPSupport.json(
            ResponseEnvelope(WebPushKeyResponse(applicationServerKey: Base64URL.encode(key.x963))))
    }

    @Sendable func registerWithToken(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let (_, device) = try await tokens.authenticate(request.headers[HTTPSupport.token])
        let body = try await HTTPSupport.decode(RequestEnvelope<PushRegistrationRequest>.self, from: request)
        try await registrations.register(
            body.requestObject, device: device, language: request.headers[HTTPSupport.acceptLanguage])
        return try HTTPSupport.json(StatusOnlyResponse())
    }

    @Sendable func registerWithSignature(_ request: Request, context: AssentRequestContext) async throws -> Response {
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
