import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

/// The Mobile Token API under `/api/auth/token/app/operation`: list, detail and claim with a MAC token; history,
/// authorize and cancel (reject) with a PowerAuth signature.
struct MobileTokenRoutes {
    let environment: ServerEnvironment
    let operations: OperationService
    let tokens: TokenAuthenticator
    let powerAuth: PowerAuthService

    init(environment: ServerEnvironment) {
        self.environment = environment
        operations = OperationService(environment: environment)
        tokens = TokenAuthenticator(environment: environment)
        powerAuth = PowerAuthService(environment: environment)
    }

    /// Signature types that may read the history.
    static let historyTypes: Set<SignatureType> = [.possessionKnowledge, .possessionBiometry]

    func register(on router: APIRoutes) {
        let group = router.group("api/auth/token/app/operation")
        group.post("list") { request, _ in
            let (_, device) = try await tokens.authenticate(request.headers[HTTPSupport.token])
            let pending = try await operations.pending(for: device)
            let language = request.headers[HTTPSupport.acceptLanguage]
            return try respond(pending.map { Self.view($0, language: language) }, timestamped: true)
        }
        for (path, read) in [
            ("detail", operations.detail(id:device:)), ("detail/claim", operations.claim(id:device:)),
        ] {
            group.post(RouterPath(path)) { request, _ in
                let (_, device) = try await tokens.authenticate(request.headers[HTTPSupport.token])
                let body = try await HTTPSupport.decode(RequestEnvelope<OperationIdRequest>.self, from: request)
                let operation = try await read(body.requestObject.id, device)
                return try respond(
                    Self.view(operation, language: request.headers[HTTPSupport.acceptLanguage]), timestamped: true)
            }
        }
        group.post("history") { request, _ in
            let body = try await HTTPSupport.body(request)
            let device = try await powerAuth.authenticate(
                authorization: request.headers[HTTPSupport.authorization], method: "POST",
                uriId: "/operation/history", body: body, allowed: Self.historyTypes)
            let history = try await operations.history(for: device.activation.principal)
            let language = request.headers[HTTPSupport.acceptLanguage]
            return try respond(history.map { Self.view($0, language: language) }, timestamped: true)
        }
        group.post("authorize") { request, _ in
            let body = try await HTTPSupport.body(request)
            let approval = try HTTPSupport.decode(
                RequestEnvelope<OperationAuthorizeRequest>.self, from: body, decoder: MobileTokenJSON.decoder()
            ).requestObject
            let authorization = request.headers[HTTPSupport.authorization]
            // A refusal is an answer, not a failure: what it wrote (the counter, a failed attempt) commits with it.
            let refusal = try await environment.inOneCommit { environment -> AssentServerError? in
                do {
                    _ = try await OperationService(environment: environment).approve(
                        approval, authorization: authorization, body: body)
                    return nil
                } catch let error as AssentServerError {
                    return error
                }
            }
            if let refusal { throw refusal }
            return try HTTPSupport.json(StatusOnlyResponse())
        }
        group.post("cancel") { request, _ in
            let body = try await HTTPSupport.body(request)
            let rejection = try HTTPSupport.decode(RequestEnvelope<OperationRejectRequest>.self, from: body)
                .requestObject
            let device = try await powerAuth.authenticate(
                authorization: request.headers[HTTPSupport.authorization], method: "POST", uriId: "/operation/cancel",
                body: body, allowed: Set(SignatureType.allCases))
            _ = try await operations.reject(rejection, device: device)
            return try HTTPSupport.json(StatusOnlyResponse())
        }
    }

    private func respond<T: Codable & Sendable>(_ value: T, timestamped: Bool) throws -> Response {
        try HTTPSupport.json(
            ResponseEnvelope(
                value,
                currentTimestamp: timestamped ? MobileTokenJSON.timestamp(environment.now()) : nil))
    }

    /// The device's view of an operation in the best language for `Accept-Language`.
    static func view(_ operation: OperationRecord, language: String?) -> MobileOperation {
        MobileOperation(
            id: operation.id, name: operation.name, data: operation.data, status: operation.status,
            statusReason: operation.statusReason,
            operationCreated: MobileTokenJSON.timestamp(Date(millis: operation.createdAt)),
            operationExpires: MobileTokenJSON.timestamp(Date(millis: operation.expiresAt)),
            ui: operation.content.ui, allowedSignatureType: operation.allowedSignatureType,
            formData: operation.content.form(acceptLanguage: language))
    }
}
