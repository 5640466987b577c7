import AssentModel
import Foundation
import Hummingbird

/// The PowerAuth 3.3 standard endpoints under `/pa/v3`.
struct DeviceRoutes {
    let service: PowerAuthService

    /// Registers the configuration on `plain` and the PowerAuth endpoints on `powerAuth`.
    func register(plain router: APIRoutes, powerAuth: APIRoutes) {
        // What a device reads before it activates: code format, PIN rules, enabled methods (no secret in it, but
        // only for a known application key).
        router.get("api/device/configuration") { request, _ in
            guard let key = request.uri.queryParameters.get("applicationKey") else {
                throw AssentServerError.invalidRequest("The query parameter applicationKey is missing.")
            }
            _ = try await ApplicationService(environment: service.environment).application(key: key)
            return try HTTPSupport.json(ResponseEnvelope(service.environment.policy.deviceConfiguration))
        }
        let group = powerAuth.group("pa/v3")
        group.post("keystore/create") { request, _ in
            let body = try await HTTPSupport.decode(RequestEnvelope<TemporaryKeyRequest>.self, from: request)
            return try HTTPSupport.json(ResponseEnvelope(try await service.createTemporaryKey(body.requestObject)))
        }
        group.post("activation/create") { request, context in
            let body = try await HTTPSupport.decode(EncryptedRequest.self, from: request)
            let response = try await service.createActivation(
                encryptionHeader: request.headers[HTTPSupport.encryption], body: body,
                client: context.clientLimitKey)
            return try HTTPSupport.json(response)
        }
        group.post("activation/status") { request, _ in
            let body = try await HTTPSupport.decode(RequestEnvelope<ActivationStatusRequest>.self, from: request)
            return try HTTPSupport.json(ResponseEnvelope(try await service.status(body.requestObject)))
        }
        group.post("activation/remove") { request, _ in
            let response = try await service.removeActivation(
                authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request))
            return try HTTPSupport.json(ResponseEnvelope(response))
        }
        group.post("token/create") { request, _ in
            let response = try await service.createToken(
                authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request))
            return try HTTPSupport.json(response)
        }
        group.post("token/remove") { request, _ in
            let response = try await service.removeToken(
                authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request))
            return try HTTPSupport.json(ResponseEnvelope(response))
        }
        group.post("vault/unlock") { request, _ in
            let response = try await service.unlockVault(
                authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request))
            return try HTTPSupport.json(response)
        }
        for method in [HTTPRequest.Method.get, .post, .put, .delete] {
            group.on("signature/validate", method: method) { request, _ in
                try await service.validateSignature(
                    authorization: request.headers[HTTPSupport.authorization], method: request.method.rawValue,
                    body: try await HTTPSupport.body(request))
                return try HTTPSupport.json(StatusOnlyResponse())
            }
        }
    }
}
