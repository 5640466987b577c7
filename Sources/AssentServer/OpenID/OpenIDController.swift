import AssentCrypto
import AssentModel
import Foundation
import HTTPTypes
import Hummingbird

/// The OpenID provider's endpoints: discovery, JWKS, the CIBA backchannel authentication endpoint, the token
/// endpoint, userinfo and token introspection. They answer in OAuth's own JSON (`{"error","error_description"}`),
/// never cached. The authorization endpoint is a page (``LoginPages``): the person signs in there.
struct OpenIDController {
    let openID: OpenIDSettings
    let clients: ClientService
    let ciba: CIBAService
    let authorization: AuthorizationService
    let userInfo: UserInfoService
    let keys: SigningKeyService

    func addRoutes(to router: APIRoutes) {
        router.get(".well-known/openid-configuration", use: discoveryDocument)
        router.group("oauth2")
            .get("jwks", use: jwks)
            .post("bc-authorize", use: backchannelAuthorize)
            .post("token", use: token)
            .post("introspect", use: introspect)
            .get("userinfo", use: userinfo)
            .post("userinfo", use: userinfo)
    }

    @Sendable func discoveryDocument(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try Self.json(discovery, cache: "public, max-age=300")
    }

    @Sendable func jwks(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try Self.json(try await keys.jwks(), cache: "public, max-age=300")
    }

    @Sendable func backchannelAuthorize(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await oauth(request, context) { form, client in
            guard client.grantTypes.contains(OpenIDClientRecord.cibaGrant) else {
                throw OAuthError(.unauthorizedClient, "This client is not registered for backchannel authentication.")
            }
            return try Self.json(try await ciba.authenticationRequest(form, client: client))
        }
    }

    /// The token endpoint: the grant type chooses the flow.
    @Sendable func token(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await oauth(request, context) { form, client in
            switch form["grant_type"] {
            case CIBAService.grantType?:
                guard client.grantTypes.contains(OpenIDClientRecord.cibaGrant) else {
                    throw OAuthError(
                        .unauthorizedClient, "This client is not registered for backchannel authentication.")
                }
                return try Self.json(try await ciba.tokenRequest(form, client: client))
            case OpenIDClientRecord.codeGrant?:
                return try Self.json(try await authorization.tokenRequest(form, client: client))
            case OpenIDClientRecord.refreshGrant?:
                return try Self.json(try await authorization.refresh(form, client: client))
            case nil:
                throw OAuthError.invalidRequest("grant_type is missing.")
            case let other?:
                throw OAuthError(
                    .unsupportedGrantType,
                    "grant_type \(other.prefix(100)) is not served; this endpoint serves authorization_code, "
                        + "refresh_token and \(CIBAService.grantType).")
            }
        }
    }

    @Sendable func introspect(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await oauth(request, context) { form, client in
            // As discovery says (introspection_endpoint_auth_methods_supported): a client that authenticates, never
            // a public one, which proves nothing but its id.
            guard !client.isPublic else {
                throw OAuthError.invalidClient(
                    "Introspection needs client authentication (client_secret_basic, client_secret_post or "
                        + "private_key_jwt); a public client has none.")
            }
            return try Self.json(try await introspection(form, client: client))
        }
    }

    /// The discovery document (OpenID Connect Discovery 1.0 §3, CIBA Core §4).
    var discovery: [String: JSONValue] {
        let base = openID.base
        func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }
        return [
            "issuer": .string(openID.issuer),
            "authorization_endpoint": .string("\(base)/oauth2/authorize"),
            "end_session_endpoint": .string("\(base)/oauth2/logout"),
            "backchannel_logout_supported": .bool(true),
            "backchannel_logout_session_supported": .bool(true),
            "token_endpoint": .string("\(base)/oauth2/token"),
            "userinfo_endpoint": .string("\(base)/oauth2/userinfo"),
            "introspection_endpoint": .string("\(base)/oauth2/introspect"),
            "jwks_uri": .string("\(base)/oauth2/jwks"),
            "backchannel_authentication_endpoint": .string("\(base)/oauth2/bc-authorize"),
            "backchannel_token_delivery_modes_supported": strings(["poll", "ping", "push"]),
            "backchannel_user_code_parameter_supported": .bool(false),
            "grant_types_supported": strings([
                OpenIDClientRecord.codeGrant, OpenIDClientRecord.refreshGrant, CIBAService.grantType,
            ]),
            "response_types_supported": strings(["code"]),
            "response_modes_supported": strings(["query"]),
            "code_challenge_methods_supported": strings(["S256"]),
            "authorization_response_iss_parameter_supported": .bool(true),
            // select_account is accepted but changes nothing (one account per sign-in), so it is not advertised.
            "prompt_values_supported": strings(["consent", "login", "none"]),
            "ui_locales_supported": strings(Languages.supported),
            "request_parameter_supported": .bool(false),
            "request_uri_parameter_supported": .bool(false),
            "subject_types_supported": strings(["public"]),
            "id_token_signing_alg_values_supported": strings(["RS256", "ES256"]),
            "token_endpoint_auth_methods_supported": strings(ClientService.authMethods + ["none"]),
            "introspection_endpoint_auth_methods_supported": strings(ClientService.authMethods),
            "token_endpoint_auth_signing_alg_values_supported": strings(["ES256", "RS256"]),
            "scopes_supported": strings(["openid"] + ClientService.knownScopes),
            "acr_values_supported": strings(
                SignInAssurance.allCases.map(\.acr) + CIBAService.acrFactors.keys.sorted()),
            "claims_supported": strings(
                [
                    "iss", "aud", "azp", "exp", "iat", "auth_time", "nonce", "at_hash", "amr", "acr", "sid",
                    "binding_message", "transaction",
                ] + UserInfoService.claims + [CIBAService.authReqIdClaim]),
        ]
    }

    /// Reads the form, authenticates the client and runs `body` (failures answer as OAuth errors: the routes speak
    /// ``ErrorDialect/oauth``).
    private func oauth(
        _ request: Request, _ context: AssentRequestContext,
        _ body: ([String: String], OpenIDClientRecord) async throws -> Response
    ) async throws -> Response {
        let form = try await Self.form(request)
        let client = try await clients.authenticate(
            form: form, authorization: request.headers[.authorization], address: context.clientLimitKey ?? "unknown")
        return try await body(form, client)
    }

    /// RFC 7662: the token's state for the client that owns it; any other client learns only `active: false`.
    private func introspection(_ form: [String: String], client: OpenIDClientRecord) async throws
        -> TokenIntrospection
    {
        guard let token = form["token"], !token.isEmpty else { throw OAuthError.invalidRequest("token is missing.") }
        guard let record = try await ciba.validAccessToken(token), record.clientId == client.id else {
            return TokenIntrospection(active: false)
        }
        return TokenIntrospection(
            active: true, scope: record.scope, clientId: record.clientId, sub: record.userId,
            exp: record.expiresAt / 1000, iat: record.createdAt / 1000, tokenType: "Bearer",
            iss: openID.issuer)
    }

    /// OpenID Connect Core §5.3 with a bearer access token (RFC 6750 §3 errors).
    @Sendable func userinfo(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let header = request.headers[.authorization] ?? ""
        let token = header.lowercased().hasPrefix("bearer ") ? String(header.dropFirst(7)) : ""
        guard let record = try await ciba.validAccessToken(token) else {
            var response = OAuthError(
                .invalidToken, "The access token is missing, unknown or expired.", status: .unauthorized
            ).response
            response.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
            return response
        }
        return try Self.json(try await userInfo.claims(for: record))
    }

    /// The `application/x-www-form-urlencoded` body; a repeated parameter is an error (RFC 6749 §3.1).
    static func form(_ request: Request) async throws -> [String: String] {
        let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
        guard type?.lowercased() == "application/x-www-form-urlencoded" else {
            throw OAuthError.invalidRequest("The body must be application/x-www-form-urlencoded.")
        }
        do {
            return try FormEncoding.decode(try await HTTPSupport.body(request))
        } catch let error as FormEncoding.DecodingError {
            switch error {
            case .invalidEncoding:
                throw OAuthError.invalidRequest("The form body is not valid percent-encoded UTF-8.")
            case .repeated(let name):
                throw OAuthError.invalidRequest("Parameter \(name) is repeated.")
            }
        }
    }

    static func json<T: Encodable>(_ value: T, cache: String = "no-store") throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: cache]
        if cache == "no-store" { headers[OAuthError.pragma] = "no-cache" }
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}
