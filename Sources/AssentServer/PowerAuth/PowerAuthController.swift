import AssentModel
import Foundation
import Hummingbird

/// The PowerAuth 3.3 standard endpoints under `/pa/v3`.
struct PowerAuthController {
    let service: PowerAuthService

    func addRoutes(to router: APIRoutes) {
        let group = router.group("pa/v3")
            .post("keystore/create", use: createTemporaryKey)
            .post("activation/create", use: createActivation)
            .post("activation/status", use: status)
            .post("activation/remove", use: removeActivation)
            .post("token/create", use: createToken)
            .post("token/remove", use: removeToken)
            .post("vault/unlock", use: unlockVault)
        for method in [HTTPRequest.Method.get, .post, .put, .delete] {
            group.on("signature/validate", method: method, use: validateSignature)
        }
    }

    @Sendable func createTemporaryKey(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(RequestEnvelope<TemporaryKeyRequest>.self, from: request)
        return try HTTPSupport.json(ResponseEnvelope(try await service.createTemporaryKey(body.requestObject)))
    }

    @Sendable func createActivation(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(EncryptedRequest.self, from: request)
        return try HTTPSupport.json(
            try await service.createActivation(
                encryptionHeader: request.headers[HTTPSupport.encryption], body: body, client: context.clientLimitKey))
    }

    @Sendable func status(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(RequestEnvelope<ActivationStatusRequest>.self, from: request)
        return try HTTPSupport.json(ResponseEnvelope(try await service.status(body.requestObject)))
    }

    @Sendable func removeActivation(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let response = try await service.removeActivation(
            authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request))
        return try HTTPSupport.json(ResponseEnvelope(response))
    }

    @Sendable func createToken(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.json(
            try await service.createToken(
                authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request)))
    }

    @Sendable func removeToken(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let response = try await service.removeToken(
            authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request))
        return try HTTPSupport.json(ResponseEnvelope(response))
    }

    @Sendable func unlockVault(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.json(
            try await service.unlockVault(
                authorization: request.headers[HTTPSupport.authorization], body: try await HTTPSupport.body(request)))
    }

    @Sendable func validateSignature(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await service.validateSignature(
            authorization: request.headers[HTTPSupport.authorization], method: request.method.rawValue,
            body: try await HTTPSupport.body(request))
        return try HTTPSupport.json(StatusOnlyResponse())
    }
}
