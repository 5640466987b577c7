import AssentCrypto
import Foundation

/// How a CIBA client receives the result (CIBA Core §5).
public enum CIBADeliveryMode: String, Codable, Sendable, CaseIterable {
    /// The client polls the token endpoint.
    case poll
    /// The provider posts `{"auth_req_id"}` to the client's notification endpoint; the client then fetches the tokens.
    case ping
    /// The provider posts the tokens themselves to the client's notification endpoint.
    case push
}

/// `POST /oauth2/bc-authorize` success (CIBA Core §7.3).
public struct CIBAAcknowledgement: Codable, Sendable, Equatable {
    public var authReqId: String
    public var expiresIn: Int
    /// Seconds between token requests (poll and ping clients only).
    public var interval: Int?

    enum CodingKeys: String, CodingKey {
        case authReqId = "auth_req_id"
        case expiresIn = "expires_in"
        case interval
    }

    public init(authReqId: String, expiresIn: Int, interval: Int?) {
        self.authReqId = authReqId
        self.expiresIn = expiresIn
        self.interval = interval
    }
}

/// A token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3); also the body of a CIBA push delivery, with
/// `auth_req_id`.
public struct OAuthTokenResponse: Codable, Sendable, Equatable {
    public var accessToken: String
    public var tokenType: String
    public var expiresIn: Int
    public var idToken: String
    public var scope: String?
    /// Only in a push delivery (CIBA Core §10.3.1).
    public var authReqId: String?
    /// With `offline_access`: single use, a new one with every refresh (RFC 6749 §6).
    public var refreshToken: String?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case idToken = "id_token"
        case scope
        case authReqId = "auth_req_id"
        case refreshToken = "refresh_token"
    }

    public init(
        accessToken: String, tokenType: String = "Bearer", expiresIn: Int, idToken: String, scope: String?,
        authReqId: String? = nil, refreshToken: String? = nil
    ) {
        self.refreshToken = refreshToken
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.idToken = idToken
        self.scope = scope
        self.authReqId = authReqId
    }
}

/// An OAuth error (RFC 6749 §5.2, CIBA Core §11 and §13); also the body of a CIBA push error delivery (§12), with
/// `auth_req_id`.
public struct OAuthErrorResponse: Codable, Sendable, Equatable, Error {
    public var error: String
    public var errorDescription: String?
    /// Only in a push error delivery.
    public var authReqId: String?

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
        case authReqId = "auth_req_id"
    }

    public init(error: String, errorDescription: String?, authReqId: String? = nil) {
        self.error = error
        self.errorDescription = errorDescription
        self.authReqId = authReqId
    }
}

/// The body of a CIBA ping callback (§10.2).
public struct CIBAPing: Codable, Sendable, Equatable {
    public var authReqId: String
    enum CodingKeys: String, CodingKey { case authReqId = "auth_req_id" }
    public init(authReqId: String) { self.authReqId = authReqId }
}

/// The transaction claim of an Assent ID token: what the user approved.
public struct ApprovedTransaction: Codable, Sendable, Equatable {
    /// The operation that carried the request to the user's device.
    public var operationId: String
    /// The operation data string the device signed.
    public var data: String
    /// Base64URL SHA-256 of the texts and attributes the device showed (the operation's form data as JSON with
    /// sorted keys).
    public var contentHash: String
    /// `APPROVED`.
    public var status: String
    /// The Base64 data the app signed together with the approval, if it sent any.
    public var mobileContext: String?

    public init(operationId: String, data: String, contentHash: String, status: String, mobileContext: String? = nil) {
        self.operationId = operationId
        self.data = data
        self.contentHash = contentHash
        self.status = status
        self.mobileContext = mobileContext
    }
}

/// `GET /oauth2/introspect` answer (RFC 7662 §2.2).
public struct TokenIntrospection: Codable, Sendable, Equatable {
    public var active: Bool
    public var scope: String?
    public var clientId: String?
    public var sub: String?
    public var exp: Int64?
    public var iat: Int64?
    public var tokenType: String?
    public var iss: String?

    enum CodingKeys: String, CodingKey {
        case active, scope, sub, exp, iat, iss
        case clientId = "client_id"
        case tokenType = "token_type"
    }

    public init(
        active: Bool, scope: String? = nil, clientId: String? = nil, sub: String? = nil, exp: Int64? = nil,
        iat: Int64? = nil, tokenType: String? = nil, iss: String? = nil
    ) {
        self.active = active
        self.scope = scope
        self.clientId = clientId
        self.sub = sub
        self.exp = exp
        self.iat = iat
        self.tokenType = tokenType
        self.iss = iss
    }
}

/// `POST /api/v1/clients`: registers a relying party of the OpenID provider.
public struct CreateClientRequest: Codable, Sendable, Equatable {
    public var name: String
    /// `poll` (default), `ping` or `push`.
    public var deliveryMode: String?
    /// Where ping and push callbacks go: HTTPS (HTTP only to a loopback address). Required for ping and push.
    public var notificationEndpoint: String?
    /// The scopes the client may ask for besides `openid` (default `profile`).
    public var scopes: [String]?
    /// `client_secret_basic` (default), `client_secret_post` or `private_key_jwt`.
    public var tokenEndpointAuthMethod: String?
    /// `RS256` (default, as OpenID Connect Registration says) or `ES256`.
    public var idTokenSignedResponseAlg: String?
    /// The public keys (ES256 or RS256) a `private_key_jwt` client signs its assertions with.
    public var jwks: JWKSet?
    /// Where the authorization endpoint may send the browser back (compared exactly; 1 to 10 URIs): `https`, `http`
    /// only to a loopback host, or a native app's private-use scheme (`com.example.app:/callback`, RFC 8252 §7.1).
    public var redirectUris: [String]?
    /// `confidential` (default: it authenticates at the token endpoint) or `public` (a native or browser app that
    /// cannot keep a secret: no secret, PKCE required, authentication method `none`).
    public var type: String?
    /// What the client may do: `ciba` (backchannel authentication), `authorization_code` (the browser sign-in).
    /// Default: `authorization_code` when `redirectUris` are given, else `ciba`.
    public var grantTypes: [String]?
    /// Where RP-initiated logout may send the browser afterwards (the same rules as `redirectUris`).
    public var postLogoutRedirectUris: [String]?
    /// Where a logout token is POSTed when a session the client signed in with ends (Back-Channel Logout 1.0):
    /// HTTPS, HTTP only to a loopback address.
    public var backchannelLogoutUri: String?
    /// A client of another party than the operator: the person is asked to allow it (once per scope set; they may
    /// take it back). First-party clients (the default) are not asked.
    public var thirdParty: Bool?

    public init(
        name: String, deliveryMode: String? = nil, notificationEndpoint: String? = nil, scopes: [String]? = nil,
        tokenEndpointAuthMethod: String? = nil, idTokenSignedResponseAlg: String? = nil, jwks: JWKSet? = nil,
        redirectUris: [String]? = nil, type: String? = nil, grantTypes: [String]? = nil,
        postLogoutRedirectUris: [String]? = nil, backchannelLogoutUri: String? = nil, thirdParty: Bool? = nil
    ) {
        self.thirdParty = thirdParty
        self.postLogoutRedirectUris = postLogoutRedirectUris
        self.backchannelLogoutUri = backchannelLogoutUri
        self.redirectUris = redirectUris
        self.type = type
        self.grantTypes = grantTypes
        self.jwks = jwks
        self.name = name
        self.deliveryMode = deliveryMode
        self.notificationEndpoint = notificationEndpoint
        self.scopes = scopes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.idTokenSignedResponseAlg = idTokenSignedResponseAlg
    }
}

/// A registered client as listed (never its secret).
public struct ClientInfo: Codable, Sendable, Equatable {
    public var clientId: String
    public var name: String
    public var deliveryMode: String
    public var notificationEndpoint: String?
    public var scopes: [String]
    public var tokenEndpointAuthMethod: String
    public var idTokenSignedResponseAlg: String
    public var redirectUris: [String]
    /// `confidential` or `public`.
    public var type: String
    public var grantTypes: [String]
    public var postLogoutRedirectUris: [String]
    public var backchannelLogoutUri: String?
    public var thirdParty: Bool
    public var createdAt: Date

    public init(
        clientId: String, name: String, deliveryMode: String, notificationEndpoint: String?, scopes: [String],
        tokenEndpointAuthMethod: String, idTokenSignedResponseAlg: String, redirectUris: [String] = [],
        type: String = "confidential", grantTypes: [String] = ["ciba"], postLogoutRedirectUris: [String] = [],
        backchannelLogoutUri: String? = nil, thirdParty: Bool = false, createdAt: Date
    ) {
        self.thirdParty = thirdParty
        self.postLogoutRedirectUris = postLogoutRedirectUris
        self.backchannelLogoutUri = backchannelLogoutUri
        self.redirectUris = redirectUris
        self.type = type
        self.grantTypes = grantTypes
        self.clientId = clientId
        self.name = name
        self.deliveryMode = deliveryMode
        self.notificationEndpoint = notificationEndpoint
        self.scopes = scopes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.idTokenSignedResponseAlg = idTokenSignedResponseAlg
        self.createdAt = createdAt
    }
}

/// `POST /api/v1/clients` answer: the client and its secret, shown once (none for a `private_key_jwt` client).
public struct CreateClientResponse: Codable, Sendable, Equatable {
    public var client: ClientInfo
    public var clientSecret: String?

    public init(client: ClientInfo, clientSecret: String?) {
        self.client = client
        self.clientSecret = clientSecret
    }
}

/// `GET /api/v1/clients`.
public struct ClientList: Codable, Sendable, Equatable {
    public var clients: [ClientInfo]
    public init(clients: [ClientInfo]) { self.clients = clients }
}
