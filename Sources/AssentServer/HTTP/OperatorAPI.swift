import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The operator API under `/api/v1`, authenticated with `Authorization: Bearer <api key>`: one controller per
/// resource, each admitting its routes by scope (``ScopeMiddleware``) and leaving the rules to its service.
struct OperatorAPI {
    /// The composition root's services the controllers call.
    let services: Services

    func addRoutes(to router: APIRoutes) {
        router.get("api/v1/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.json)))
        }
        let apiKeys = services.apiKeys
        let applications = services.applications
        let api = router.group("api/v1")
            .add(
                middleware: APIKeyMiddleware(
                    apiKeys: apiKeys, limiter: services.limiter, audit: services.audit)
            )
            .add(middleware: ApplicationSelection(applications: applications))
        ApplicationController(applications: applications).addRoutes(to: api)
        ApplicationVersionController(
            applications: applications, versions: services.versions
        ).addRoutes(to: api)
        ApplicationSettingsController(
            applications: applications, push: services.applicationPush,
            branding: services.branding,
            webhooks: services.webhooks,
            rateLimits: services.applicationLimits
        ).addRoutes(to: api)
        ActivationController(
            applications: applications, activations: services.activations
        ).addRoutes(to: api)
        OperationController(
            applications: applications, operations: services.operations,
            links: services.links
        ).addRoutes(to: api)
        OperationTemplateController(
            templates: services.templates, applications: applications
        ).addRoutes(to: api)
        ClientController(
            applications: applications, clients: services.clients,
            signingKeys: services.signingKeys
        ).addRoutes(to: api)
        TFAOperatorController(
            applications: applications, accounts: services.accounts,
            flows: services.tfa
        ).addRoutes(to: api)
        PushDeliveryController(
            applications: applications, activations: services.activations,
            operations: services.operations,
            deliveries: services.pushDeliveries
        ).addRoutes(to: api)
        AuditController(
            audit: services.auditTrail, chain: services.auditChain,
            applications: applications
        ).addRoutes(to: api)
        HostAccessController(applications: applications, access: services.access).addRoutes(to: api)
        RADIUSController(
            applications: applications, access: services.access, clients: services.radiusClients
        ).addRoutes(to: api)
        APIKeyController(apiKeys: apiKeys).addRoutes(to: api)
        OperatorController(operators: services.operators).addRoutes(to: api)
    }
}

/// Admits a request whose API key has `scope`; the routes of a controller are grouped by the scope they need.
struct ScopeMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let scope: APIScope

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let key = context.apiKey else { throw AssentServerError.unauthorized() }
        guard key.allows(scope) else { throw AssentServerError.forbidden(scope) }
        return try await next(request, context)
    }
}

extension RouterGroup<AssentRequestContext> {
    /// A group at the same path whose routes need `scope`.
    func requiring(_ scope: APIScope) -> RouterGroup<AssentRequestContext> {
        group().add(middleware: ScopeMiddleware(scope: scope))
    }
}

extension AssentRequestContext {
    /// Who acts, as the audit trail names them: the API key's name (an operator account is `operator:<name>`).
    var actor: String { "key:\(apiKey?.name ?? "?")" }

    /// The path parameter `name`.
    func parameter(_ name: String) throws -> String { try parameters.require(name) }
}

extension HTTPSupport {
    /// A JSON response of the operator API (ISO 8601 dates, sorted keys, slashes as they are).
    static func operatorJSON<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        try json(value, status: status, encoder: OperatorJSON.encoder())
    }

    /// An optional JSON body: `nil` when the request has none, else `T` or a 400 saying what was expected.
    static func optionalBody<T: Decodable>(_ type: T.Type, from request: Request, expected: String) async throws -> T? {
        let body = try await body(request)
        guard !body.isEmpty else { return nil }
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw AssentServerError.invalidRequest("The body must be \(expected) or empty.")
        }
    }
}

/// Authenticates `Authorization: Bearer <api key>` and puts the key into the context. Wrong keys count against the
/// client's address, each one counted written to the audit as `api_key.refused` (never the key); over the limit, its
/// requests are refused with 429 until the window ends, and not written.
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = AssentRequestContext
    let apiKeys: APIKeyService
    let limiter: RateLimiter
    let audit: Auditor

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            throw AssentServerError.unauthorized()
        }
        let rule = limiter.rateLimits.operatorKeyFailuresPerAddress
        let client = context.clientLimitKey
        if let client { try await limiter.check(rule, "operator.key", client) }
        guard let key = try await apiKeys.authenticate(String(header.dropFirst("Bearer ".count))) else {
            if let client { await limiter.recordFailure(rule, "operator.key", client) }
            await audit(
                .apiKeyRefused, actor: "anonymous",
                "An operator API request with an unknown or revoked key was refused (\(request.method) "
                    + "\(request.uri.path.prefix(200))\(client.map { ", from \($0)" } ?? ""))."
            )
            throw AssentServerError.apiKeyRefused()
        }
        var context = context
        context.apiKey = key
        return try await next(request, context)
    }
}
