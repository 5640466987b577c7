import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// Relying parties of the OpenID provider: registered by the operator, authenticated by `client_secret_basic` or
/// `client_secret_post`. A secret is 32 random bytes shown once; only its SHA-256 is stored.
public struct ClientService: Sendable {
    /// The part of the store this sees.
    let store: any ReplayGuard & OpenIDStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings
    let egress: Egress
    let limiter: RateLimiter

    static let authMethods = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
    static let assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    static let idTokenAlgorithms = ["RS256", "ES256"]
    /// The scopes a client may be allowed besides `openid`.
    static let knownScopes = ["profile", "email", "phone", "offline_access"]

    /// Registers a client for the default application; returns it with its secret.
    public func create(_ request: CreateClientRequest, application: ApplicationRecord, actor: String) async throws
        -> (OpenIDClientRecord, secret: String?)
    {
        func invalid(_ message: String) -> AssentServerError { .invalidRequest(message) }
        guard let name = InputText.displayName(request.name) else {
            throw invalid("A client name has 1 to 100 characters, not only spaces.")
        }
        let mode = request.deliveryMode ?? CIBADeliveryMode.poll.rawValue
        guard let deliveryMode = CIBADeliveryMode(rawValue: mode) else {
            throw invalid("deliveryMode is poll, ping or push.")
        }
        var endpoint: String?
        if deliveryMode != .poll {
            guard let given = request.notificationEndpoint else {
                throw invalid("A \(mode) client needs a notificationEndpoint.")
            }
            endpoint = try Self.validatedEndpoint(given)
        } else if request.notificationEndpoint != nil {
            throw invalid("A poll client has no notificationEndpoint.")
        }
        let type = request.type ?? OpenIDClientRecord.confidential
        guard [OpenIDClientRecord.confidential, OpenIDClientRecord.publicType].contains(type) else {
            throw invalid("type is confidential or public.")
        }
        let isPublic = type == OpenIDClientRecord.publicType
        let redirectUris = try Self.validatedRedirectURIs(request.redirectUris ?? [])
        let grantTypes = Array(
            Set(
                request.grantTypes
                    ?? [redirectUris.isEmpty ? OpenIDClientRecord.cibaGrant : OpenIDClientRecord.codeGrant])
        ).sorted()
        for grant in grantTypes where !Self.grantTypes.contains(grant) {
            throw invalid("Grant type \(grant) is not offered; known: \(Self.grantTypes.joined(separator: ", ")).")
        }
        guard !grantTypes.isEmpty else { throw invalid("grantTypes names at least one grant type.") }
        if grantTypes.contains(OpenIDClientRecord.codeGrant), redirectUris.isEmpty {
            throw invalid("An authorization_code client needs redirectUris.")
        }
        if grantTypes.contains(OpenIDClientRecord.refreshGrant), !grantTypes.contains(OpenIDClientRecord.codeGrant) {
            throw invalid("refresh_token comes with authorization_code: refresh tokens are issued for codes.")
        }
        if !grantTypes.contains(OpenIDClientRecord.codeGrant), !redirectUris.isEmpty {
            throw invalid("redirectUris are only for authorization_code clients.")
        }
        let postLogoutRedirectUris = try Self.validatedRedirectURIs(request.postLogoutRedirectUris ?? [])
        let backchannelLogoutUri = try request.backchannelLogoutUri.map {
            try Self.validatedEndpoint($0, field: "backchannelLogoutUri")
        }
        if !grantTypes.contains(OpenIDClientRecord.codeGrant),
            !postLogoutRedirectUris.isEmpty || backchannelLogoutUri != nil
        {
            throw invalid("postLogoutRedirectUris and backchannelLogoutUri are for authorization_code clients.")
        }
        for (field, url) in [("notificationEndpoint", endpoint), ("backchannelLogoutUri", backchannelLogoutUri)] {
            guard let url else { continue }
            do {
                _ = try await egress.check(url)
            } catch {
                throw invalid("\(field) is refused: \(error.message)")
            }
        }
        if isPublic, grantTypes.contains(OpenIDClientRecord.cibaGrant) {
            throw invalid("A public client cannot use ciba: backchannel requests need client authentication.")
        }
        let method = isPublic ? "none" : request.tokenEndpointAuthMethod ?? "client_secret_basic"
        if isPublic, let asked = request.tokenEndpointAuthMethod, asked != "none" {
            throw invalid("A public client authenticates with none (it has no secret and no keys).")
        }
        guard isPublic || Self.authMethods.contains(method) else {
            throw invalid("tokenEndpointAuthMethod is client_secret_basic, client_secret_post or private_key_jwt.")
        }
        if method == "private_key_jwt" {
            guard let keys = request.jwks?.keys, (1...10).contains(keys.count),
                keys.allSatisfy({ (try? $0.verificationKey()) != nil })
            else { throw invalid("A private_key_jwt client needs jwks: 1 to 10 public ES256 (P-256) or RS256 keys.") }
        } else if request.jwks != nil {
            throw invalid("jwks is only for private_key_jwt clients.")
        }
        let algorithm = request.idTokenSignedResponseAlg ?? "RS256"
        guard Self.idTokenAlgorithms.contains(algorithm) else {
            throw invalid("idTokenSignedResponseAlg is RS256 or ES256.")
        }
        let scopes = Array(Set(request.scopes ?? ["profile"])).sorted()
        for scope in scopes where !Self.knownScopes.contains(scope) {
            throw invalid("Scope \(scope) is not offered; known scopes: \(Self.knownScopes.joined(separator: ", ")).")
        }
        // A key client gets no usable secret: its stored hash is of random bytes nobody ever sees.
        let secret = Base64URL.encode(Bytes.random(count: 32))
        let client = OpenIDClientRecord(
            id: "cl_" + Base64URL.encode(Bytes.random(count: 12)), name: name, secretHash: Self.hash(secret),
            authMethod: method, deliveryMode: deliveryMode.rawValue, notificationEndpoint: endpoint, scopes: scopes,
            idTokenAlgorithm: algorithm, applicationId: application.id, createdAt: clock.millis,
            jwks: method == "private_key_jwt" ? request.jwks : nil, redirectUris: redirectUris, type: type,
            grantTypes: grantTypes, postLogoutRedirectUris: postLogoutRedirectUris,
            backchannelLogoutUri: backchannelLogoutUri, thirdParty: request.thirdParty ?? false)
        try await store.insertClient(client)
        await audit(
            .clientCreated, application: application.id, actor: actor,
            "OpenID client \(client.id) (\(name), \(type)) registered for \(grantTypes.joined(separator: ", "))"
                + (grantTypes.contains(OpenIDClientRecord.cibaGrant) ? " with \(mode) delivery." : "."))
        return (client, method == "private_key_jwt" || isPublic ? nil : secret)
    }

    /// The grant types a client may be registered for.
    static let grantTypes = [
        OpenIDClientRecord.codeGrant, OpenIDClientRecord.refreshGrant, OpenIDClientRecord.cibaGrant,
    ]

    /// The longest redirect URI accepted, in characters, and how many a client may have.
    static let redirectURIMaximumLength = 2_048
    static let redirectURILimit = 10

    /// Redirect URIs as RFC 6749 §3.1.2 and RFC 8252 allow them: absolute, no fragment, no user information;
    /// `https`, `http` only to a loopback host (`localhost`, `127.0.0.1`, `[::1]`), or a private-use scheme with a
    /// dot (a native app's reverse domain name, RFC 8252 §7.1).
    static func validatedRedirectURIs(_ uris: [String]) throws -> [String] {
        guard uris.count <= redirectURILimit else {
            throw AssentServerError.invalidRequest("A client has at most \(redirectURILimit) redirectUris.")
        }
        for uri in uris {
            let refused = AssentServerError.invalidRequest(
                "Redirect URI \(uri.prefix(100)) is not allowed: an absolute https URL (http only to localhost, "
                    + "127.0.0.1 or [::1]) or a native app's reverse-domain scheme, without a fragment or user "
                    + "information, at most \(redirectURIMaximumLength) characters.")
            guard uri.utf8.count <= redirectURIMaximumLength, !uri.contains(where: { $0.isWhitespace }),
                uri.allSatisfy(\.isASCII), let components = URLComponents(string: uri),
                let scheme = components.scheme?.lowercased(), components.fragment == nil, components.user == nil,
                components.password == nil
            else { throw refused }
            switch scheme {
            case "https":
                guard let host = components.host, !host.isEmpty else { throw refused }
            case "http":
                guard let host = components.host, Self.loopbackHosts.contains(host.lowercased()) else { throw refused }
            default:
                guard scheme.contains("."), !["javascript", "data", "file", "vbscript"].contains(scheme) else {
                    throw refused
                }
            }
        }
        return Array(NSOrderedSet(array: uris)) as? [String] ?? uris
    }

    /// Hosts an `http` redirect URI may name (as `URLComponents.host` spells them).
    static let loopbackHosts: Set<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]

    /// Whether `uri` is one of the client's redirect URIs: the same string, or — for a public client's loopback IP
    /// literal (RFC 8252 §7.3) — the same but for the port.
    static func isRegistered(_ uri: String, for client: OpenIDClientRecord) -> Bool {
        if client.redirectUris.contains(uri) { return true }
        guard client.isPublic, let given = URLComponents(string: uri), given.scheme == "http",
            ["127.0.0.1", "::1", "[::1]"].contains(given.host ?? "")
        else { return false }
        return client.redirectUris.contains { registered in
            guard var candidate = URLComponents(string: registered), candidate.scheme == "http",
                candidate.host == given.host
            else { return false }
            candidate.port = given.port
            return candidate.string == uri
        }
    }

    /// Every registered client.
    public func all() async throws -> [OpenIDClientRecord] { try await store.clients() }

    /// The client with `id`, if there is one (`id` of any length: it may come from a link).
    func find(id: String) async throws -> OpenIDClientRecord? {
        guard (1...64).contains(id.utf8.count) else { return nil }
        return try await store.client(id: id)
    }

    /// The client with `id`, or `NOT_FOUND`.
    public func get(id: String) async throws -> OpenIDClientRecord {
        guard let client = try await store.client(id: id) else {
            throw AssentServerError.notFound("No OpenID client has id \(id).")
        }
        return client
    }

    /// Deletes a client; its outstanding requests can no longer be redeemed.
    public func remove(_ client: OpenIDClientRecord, actor: String) async throws {
        let id = client.id
        guard try await store.deleteClient(id: id) else {
            throw AssentServerError.notFound("No OpenID client has id \(id).")
        }
        await audit(
            .clientRemoved, application: client.applicationId, actor: actor, "OpenID client \(id) removed.")
    }

    /// What a notification endpoint may be: an `https` URL to a host name or IPv4 address (ASCII letters, digits,
    /// hyphens and dots), or `http` to `localhost`, `127.0.0.1` or `[::1]` for development; an optional port 1–65535,
    /// a path and a query of RFC 3986 characters with valid `%` escapes, no fragment. The OpenAPI document states the
    /// same pattern (`OpenAPIPatternTests` checks that they agree).
    static let endpointPattern =
        #"^(https://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*|http://(localhost|127\.0\.0\.1|\[::1\]))"# + endpointTail

    /// An optional port 1–65535, a path and a query of RFC 3986 characters with valid `%` escapes, no fragment.
    static let endpointTail =
        #"(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"#
        + #"(/([A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*"#
        + #"(\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"#

    /// The destinations a server without `--egress-allow` takes from anyone (notification, back-channel logout and
    /// webhook URLs), as the OpenAPI document states them: ``endpointPattern`` narrowed to `https` and a host name
    /// whose last label starts with a letter (so no IP address in any spelling) and that is not `localhost` or a name
    /// under it. The egress policy still judges what the name resolves to, at registration and at every request.
    static let documentedDestinationPattern =
        #"^https://(?!([A-Za-z0-9-]+\.)*[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]([:/?]|$))"#
        + #"([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*"# + endpointTail

    /// The longest notification endpoint accepted, in characters (all ASCII).
    static let endpointMaximumLength = 2_048

    /// A notification endpoint as ``endpointPattern`` allows.
    static func validatedEndpoint(_ text: String, field: String = "notificationEndpoint") throws -> String {
        let pattern = try Regex(endpointPattern).matchingSemantics(.unicodeScalar)
        guard text.utf8.count <= endpointMaximumLength, text.wholeMatch(of: pattern) != nil,
            URLComponents(string: text)?.host != nil
        else {
            throw AssentServerError.invalidRequest(
                "\(field) must be an https URL (http only to localhost, 127.0.0.1 or [::1]) of URL "
                    + "characters, without a fragment, at most \(endpointMaximumLength) characters.")
        }
        return text
    }

    static func hash(_ secret: String) -> Data { Data(SHA256.hash(data: Data(secret.utf8))) }

    /// Authenticates the client of a token or backchannel request by the method it registered: HTTP Basic with the
    /// form-encoded id and secret, or `client_id` and `client_secret` in the body. Failures are counted per address.
    func authenticate(form: [String: String], authorization: String?, address: String) async throws
        -> OpenIDClientRecord
    {
        let rule = limiter.rateLimits.clientAuthenticationFailures
        try await limiter.check(rule, "client-auth.address", address)
        if form["client_assertion"] != nil || form["client_assertion_type"] != nil {
            guard authorization == nil, form["client_secret"] == nil else {
                throw OAuthError.invalidRequest("Use one client authentication method, not several.")
            }
            guard form["client_assertion_type"] == Self.assertionType, let assertion = form["client_assertion"] else {
                throw OAuthError.invalidRequest("client_assertion_type must be \(Self.assertionType).")
            }
            do {
                return try await assertedClient(assertion, claimedId: form["client_id"])
            } catch let error as OAuthError {
                await limiter.recordFailure(rule, "client-auth.address", address)
                throw error
            }
        }
        let presented: (id: String, secret: String, method: String)
        if let authorization {
            guard form["client_secret"] == nil, let basic = Self.basicCredentials(authorization) else {
                await limiter.recordFailure(rule, "client-auth.address", address)
                throw OAuthError.invalidClient("The Authorization header is not Basic client credentials.")
            }
            if let formId = form["client_id"], formId != basic.id {
                throw OAuthError.invalidRequest("client_id differs from the Basic credentials.")
            }
            presented = (basic.id, basic.secret, "client_secret_basic")
        } else if let id = form["client_id"], let secret = form["client_secret"] {
            presented = (id, secret, "client_secret_post")
        } else if let id = form["client_id"] {
            // A public client has nothing to present; a confidential one must.
            guard id.utf8.count <= 64, let client = try await store.client(id: id), client.isPublic else {
                await limiter.recordFailure(rule, "client-auth.address", address)
                throw OAuthError.invalidClient()
            }
            return client
        } else {
            throw OAuthError.invalidClient("No client authentication: use HTTP Basic or client_id and client_secret.")
        }
        guard let client = try await store.client(id: presented.id),
            Bytes.constantTimeEqual(client.secretHash, Self.hash(presented.secret))
        else {
            await limiter.recordFailure(rule, "client-auth.address", address)
            throw OAuthError.invalidClient()
        }
        guard client.authMethod == presented.method, !client.isPublic else {
            throw OAuthError.invalidClient("This client authenticates with \(client.authMethod).")
        }
        return client
    }

    /// The client of a `private_key_jwt` assertion (RFC 7523 §3, OpenID Connect Core §9): signed with one of the
    /// client's registered keys; `iss` and `sub` its id; `aud` the issuer or one of its endpoints; `exp` within the
    /// next hour; `jti` never seen before (remembered until `exp`).
    func assertedClient(_ assertion: String, claimedId: String?) async throws -> OpenIDClientRecord {
        struct Claims: Decodable {
            let iss: String
            let sub: String
            let aud: Audience
            let exp: Double
            let jti: String
        }
        enum Audience: Decodable {
            case one(String)
            case many([String])
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let one = try? container.decode(String.self) {
                    self = .one(one)
                } else {
                    self = .many(try container.decode([String].self))
                }
            }
            var values: [String] {
                switch self {
                case .one(let value): [value]
                case .many(let values): values
                }
            }
        }
        let refused = OAuthError.invalidClient("The client assertion is not valid.")
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, assertion.utf8.count <= 16_384, let payload = try? Base64URL.decode(String(parts[1])),
            let unverified = try? JSONDecoder().decode(Claims.self, from: payload),
            claimedId == nil || claimedId == unverified.iss,
            let client = try await store.client(id: unverified.iss), client.authMethod == "private_key_jwt",
            let keys = client.jwks, let verified = try? CompactJWS.verify(assertion, keys: keys),
            let claims = try? JSONDecoder().decode(Claims.self, from: verified)
        else { throw refused }
        let base = openID.base
        let audiences = [
            openID.issuer, base, "\(base)/oauth2/token", "\(base)/oauth2/bc-authorize",
            "\(base)/oauth2/introspect",
        ]
        let now = Double(clock.millis) / 1000
        guard claims.iss == client.id, claims.sub == client.id, claims.aud.values.contains(where: audiences.contains),
            claims.exp > now, claims.exp <= now + 3_600, (1...256).contains(claims.jti.count)
        else { throw refused }
        guard
            try await store.claimUnique(
                kind: "client_assertion:\(client.id)", value: claims.jti, expiresAt: Millis(claims.exp * 1000) + 1)
        else { throw OAuthError.invalidClient("The client assertion was used before.") }
        return client
    }

    /// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
    static func basicCredentials(_ header: String) -> (id: String, secret: String)? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic", let decoded = Data(base64Encoded: String(parts[1])),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        let id = String(text[..<colon]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        let secret = String(text[text.index(after: colon)...]).replacingOccurrences(of: "+", with: " ")
            .removingPercentEncoding
        guard let id, let secret, !id.isEmpty else { return nil }
        return (id, secret)
    }

    /// The operator API's view of a client.
    static func info(_ client: OpenIDClientRecord) -> ClientInfo {
        ClientInfo(
            clientId: client.id, name: client.name, deliveryMode: client.deliveryMode,
            notificationEndpoint: client.notificationEndpoint, scopes: client.scopes,
            tokenEndpointAuthMethod: client.authMethod, idTokenSignedResponseAlg: client.idTokenAlgorithm,
            redirectUris: client.redirectUris, type: client.type, grantTypes: client.grantTypes,
            postLogoutRedirectUris: client.postLogoutRedirectUris, backchannelLogoutUri: client.backchannelLogoutUri,
            thirdParty: client.thirdParty, createdAt: Date(millis: client.createdAt))
    }
}
