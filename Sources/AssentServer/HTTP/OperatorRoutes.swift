import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The operator API under `/api/v1`, authenticated with `Authorization: Bearer <api key>`.
struct OperatorRoutes {
    let environment: ServerEnvironment
    let applications: ApplicationService
    let activations: ActivationService
    let apiKeys: APIKeyService

    init(environment: ServerEnvironment) {
        self.environment = environment
        applications = ApplicationService(environment: environment)
        activations = ActivationService(environment: environment)
        apiKeys = APIKeyService(environment: environment)
    }

    func register(on router: Router<AssentRequestContext>) {
        router.get("api/v1/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.json)))
        }
        let api = router.group("api/v1").add(
            middleware: APIKeyMiddleware(apiKeys: apiKeys, limiter: RateLimiter(environment: environment)))

        api.get("application") { _, context in
            try require(.applicationRead, context)
            return try json(try Self.info(try await defaultApplication()))
        }
        api.patch("application") { request, context in
            try require(.applicationWrite, context)
            let body = try await HTTPSupport.decode(UpdateApplicationRequest.self, from: request)
            let renamed = try await applications.rename(
                id: try await defaultApplication().id, to: body.name, actor: actor(context))
            return try json(try Self.info(renamed))
        }
        api.post("activations") { request, context in
            try require(.activationsWrite, context)
            let body = try await HTTPSupport.decode(CreateActivationRequest.self, from: request)
            guard let mode = CommitMode(rawValue: body.commitMode ?? CommitMode.auto.rawValue) else {
                throw AssentServerError.invalidRequest("commitMode is auto or manual.")
            }
            let application = try await defaultApplication()
            let created = try await activations.create(
                application: application, userId: body.userId, commitMode: mode, actor: actor(context))
            let signature = created.codeSignature.base64EncodedString()
            return try json(
                CreateActivationResponse(
                    activationId: created.activation.id, activationCode: created.code.value,
                    activationSignature: signature, activationQRCode: "\(created.code.value)#\(signature)",
                    expiresAt: Date(millis: created.activation.codeExpiresAt)),
                status: .created)
        }
        api.get("activations/:id") { _, context in
            try require(.activationsRead, context)
            guard let activation = try await environment.store.activation(id: try context.parameters.require("id"))
            else { throw AssentServerError.activationNotFound() }
            return try json(try await info(activation))
        }
        api.get("users/:userId/activations") { _, context in
            try require(.activationsRead, context)
            let list = try await environment.store.activations(userId: try context.parameters.require("userId"))
            var infos: [ActivationInfo] = []
            for activation in list { infos.append(try await info(activation)) }
            return try json(ActivationList(activations: infos))
        }
        api.post("activations/:id/commit") { _, context in
            try require(.activationsWrite, context)
            return try json(
                try await info(
                    try await activations.commit(id: try context.parameters.require("id"), actor: actor(context)))
            )
        }
        api.post("activations/:id/block") { request, context in
            try require(.activationsWrite, context)
            // The body is optional; when present it must be {"reason": …}.
            let body = try await HTTPSupport.body(request)
            var reason: String?
            if !body.isEmpty {
                do {
                    reason = try JSONDecoder().decode(BlockActivationRequest.self, from: body).reason
                } catch {
                    throw AssentServerError.invalidRequest("The body must be {\"reason\": \"…\"} or empty.")
                }
            }
            return try json(
                try await info(
                    try await activations.block(
                        id: try context.parameters.require("id"), reason: reason, actor: actor(context))))
        }
        api.post("activations/:id/unblock") { _, context in
            try require(.activationsWrite, context)
            return try json(
                try await info(
                    try await activations.unblock(id: try context.parameters.require("id"), actor: actor(context))))
        }
        api.delete("activations/:id") { _, context in
            try require(.activationsWrite, context)
            return try json(
                try await info(
                    try await activations.remove(id: try context.parameters.require("id"), actor: actor(context)))
            )
        }
        registerOperations(on: api)
        registerClients(on: api)
        registerTFA(on: api)
        api.get("audit") { request, context in
            try require(.auditRead, context)
            let query = request.uri.queryParameters
            let limit = try HTTPSupport.limit(query.get("limit"))
            let events = try await environment.store.audit(
                activationId: query.get("activationId"), userId: query.get("userId"), limit: limit)
            return try json(
                AuditList(
                    events: events.map {
                        AuditEventInfo(
                            id: $0.id ?? 0, at: Date(millis: $0.at), type: $0.type, activationId: $0.activationId,
                            userId: $0.userId, actor: $0.actor, detail: $0.detail)
                    }))
        }
        api.post("api-keys") { request, context in
            try require(.apiKeysWrite, context)
            let body = try await HTTPSupport.decode(CreateAPIKeyRequest.self, from: request)
            let scopes = try Self.scopes(body.scopes ?? ["*"])
            let (record, key) = try await apiKeys.create(name: body.name, scopes: scopes, actor: actor(context))
            return try json(
                CreateAPIKeyResponse(
                    id: record.id, name: record.name, scopes: record.scopes.map(\.rawValue).sorted(), apiKey: key),
                status: .created)
        }
        api.get("api-keys") { _, context in
            try require(.apiKeysWrite, context)
            return try json(
                APIKeyList(
                    apiKeys: try await environment.store.apiKeys().map {
                        APIKeyInfo(
                            id: $0.id, name: $0.name, scopes: $0.scopes.map(\.rawValue).sorted(),
                            createdAt: Date(millis: $0.createdAt))
                    }))
        }
        api.delete("api-keys/:id") { _, context in
            try require(.apiKeysWrite, context)
            let id = try context.parameters.require("id")
            guard try await environment.store.deleteAPIKey(id: id) else {
                throw AssentServerError.notFound("No API key has this id.")
            }
            await environment.audit("api_key.revoked", actor: actor(context), "API key \(id) revoked.")
            return Response(status: .noContent)
        }
    }

    func defaultApplication() async throws -> ApplicationRecord {
        try await applications.defaultApplication()
    }

    func require(_ scope: APIScope, _ context: AssentRequestContext) throws {
        guard let key = context.apiKey else { throw AssentServerError.unauthorized() }
        guard key.allows(scope) else { throw AssentServerError.forbidden(scope) }
    }

    static func info(_ application: ApplicationRecord) throws -> ApplicationInfo {
        ApplicationInfo(
            applicationId: application.id, name: application.name, applicationKey: application.applicationKey,
            applicationSecret: application.applicationSecret,
            masterServerPublicKey: application.masterPublicKey.x963.base64EncodedString(),
            sdkConfiguration: try ApplicationService.sdkConfiguration(of: application))
    }

    func actor(_ context: AssentRequestContext) -> String { "operator:\(context.apiKey?.name ?? "?")" }

    func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        try HTTPSupport.json(value, status: status, encoder: OperatorJSON.encoder())
    }

    static func scopes(_ names: [String]) throws -> Set<APIScope> {
        try Set(
            names.map { name in
                guard let scope = APIScope(rawValue: name) else {
                    throw AssentServerError.invalidRequest(
                        "Unknown scope \(name); known: \(APIScope.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                return scope
            })
    }

    /// The operator's view of an activation with its push registration (platform and time, never the token).
    func info(_ activation: ActivationRecord) async throws -> ActivationInfo {
        var info = try Self.info(activation)
        if let registration = try await environment.store.pushRegistration(activationId: activation.id) {
            info.push = PushRegistrationInfo(
                platform: registration.platform.rawValue, environment: registration.environment?.rawValue,
                registeredAt: Date(millis: registration.registeredAt))
        }
        return info
    }

    static func info(_ activation: ActivationRecord) throws -> ActivationInfo {
        ActivationInfo(
            activationId: activation.id, userId: activation.userId, status: activation.state.name,
            commitMode: activation.commitMode.rawValue, failedAttempts: activation.failedAttempts,
            maxFailedAttempts: activation.maxFailedAttempts, blockedReason: activation.blockedReason,
            platform: activation.platform, deviceInfo: activation.deviceInfo,
            activationName: activation.activationName, fingerprint: try activation.fingerprint(),
            createdAt: Date(millis: activation.createdAt), lastUsedAt: activation.lastUsedAt.map(Date.init(millis:)))
    }
}

/// Authenticates `Authorization: Bearer <api key>` and puts the key into the context. Wrong keys count against the
/// client's address; over the limit, its requests are refused with 429 until the window ends.
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let apiKeys: APIKeyService
    let limiter: RateLimiter

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw AssentServerError.unauthorized()
        }
        let rule = limiter.environment.rateLimits.operatorKeyFailuresPerAddress
        let client = context.clientLimitKey
        if let client { try await limiter.check(rule, "operator.key", client) }
        guard let key = try await apiKeys.authenticate(String(header.dropFirst("Bearer ".count))) else {
            if let client { await limiter.recordFailure(rule, "operator.key", client) }
            throw AssentServerError.apiKeyRefused()
        }
        var context = context
        context.apiKey = key
        return try await next(request, context)
    }
}
