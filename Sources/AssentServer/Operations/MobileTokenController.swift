import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// The Mobile Token API under `/api/auth/token/app/operation`: list, detail and claim with a MAC token; history,
/// authorize and cancel (reject) with a PowerAuth signature.
struct MobileTokenController {
    let clock: WallClock
    let operations: OperationService
    let tokens: TokenAuthenticator
    let powerAuth: PowerAuthService

    /// Signature types that may read the history.
    static let historyTypes: Set<SignatureType> = [.possessionKnowledge, .possessionBiometry]

    func addRoutes(to router: APIRoutes) {
        router.group("api/auth/token/app/operation")
            .post("list", use: list)
            .post("detail", use: detail)
            .post("detail/claim", use: claim)
            .post("history", use: history)
            .post("authorize", use: authorize)
            .post("cancel", use: cancel)
    }

    @Sendable func list(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let (_, device, newest) = try await tokens.authenticateReadingPending(request.headers[HTTPSupport.token])
        let pending = try await operations.pending(for: device, among: newest)
        let language = request.headers[HTTPSupport.acceptLanguage]
        return try respond(pending.map { Self.view($0, language: language) })
    }

    @Sendable func detail(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await one(request, operations.detail(id:device:))
    }

    @Sendable func claim(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await one(request, operations.claim(id:device:))
    }

    @Sendable func history(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.body(request)
        let device = try await powerAuth.authenticate(
            authorization: request.headers[HTTPSupport.authorization], method: "POST",
            uriId: "/operation/history", body: body, allowed: Self.historyTypes)
        let history = try await operations.history(for: device.activation.principal)
        let language = request.headers[HTTPSupport.acceptLanguage]
        return try respond(history.map { Self.view($0, language: language) })
    }

    @Sendable func authorize(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.body(request)
        let approval = try HTTPSupport.decode(
            RequestEnvelope<OperationAuthorizeRequest>.self, from: body, decoder: MobileTokenJSON.decoder()
        ).requestObject
        try await operations.approveInOneCommit(
            approval, authorization: request.headers[HTTPSupport.authorization], body: body)
        return try HTTPSupport.json(StatusOnlyResponse())
    }

    @Sendable func cancel(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.body(request)
        let rejection = try HTTPSupport.decode(RequestEnvelope<OperationRejectRequest>.self, from: body)
            .requestObject
        let device = try await powerAuth.authenticate(
            authorization: request.headers[HTTPSupport.authorization], method: "POST", uriId: "/operation/cancel",
            body: body, allowed: Set(SignatureType.allCases))
        _ = try await operations.reject(rejection, device: device)
        return try HTTPSupport.json(StatusOnlyResponse())
    }

    /// One operation by id for a MAC-token device: its detail, or its claim.
    private func one(
        _ request: Request, _ read: (String, DevicePrincipal) async throws -> OperationRecord
    ) async throws -> Response {
        let (_, device) = try await tokens.authenticate(request.headers[HTTPSupport.token])
        let body = try await HTTPSupport.decode(RequestEnvelope<OperationIdRequest>.self, from: request)
        let operation = try await read(body.requestObject.id, device)
        return try respond(Self.view(operation, language: request.headers[HTTPSupport.acceptLanguage]))
    }

    /// The answer with the server's current time, as the Mobile Token API's list and detail carry it.
    private func respond<T: Codable & Sendable>(_ value: T) throws -> Response {
        try HTTPSupport.json(ResponseEnvelope(value, currentTimestamp: MobileTokenJSON.timestamp(clock.now())))
    }

    /// The device's view of an operation in the best language for `Accept-Language`.
    static func view(_ operation: OperationRecord, language: String?) -> MobileOperation {
        MobileOperation(
            id: operation.id, name: operation.name, data: operation.data, status: operation.status,
            statusReason: operation.statusReason,
            operationCreated: MobileTokenJSON.timestamp(Date(millis: operation.createdAt)),
            operationExpires: MobileTokenJSON.timestamp(Date(millis: operation.expiresAt)),
            ui: operation.content.ui, allowedSignatureType: operation.allowedSignatureType,
            formData: operation.content.form(acceptLanguage: language),
            numberMatching: operation.numberMatching.map { NumberMatching(mode: $0, choices: operation.numberChoices) })
    }
}
