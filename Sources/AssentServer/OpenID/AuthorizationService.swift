import AssentCrypto
import AssentModel
import Crypto
import Foundation

/// How strongly a person signed in, as the authentication context classes (`acr`) the authorization endpoint
/// understands: a password alone, a password and a second factor, or a password and an approval on a phone.
enum SignInAssurance: Int, Codable, Sendable, Comparable, CaseIterable {
    case password = 1
    case secondFactor = 2
    case phone = 3

    /// The class's URN (in `acr_values` and the ID token's `acr`).
    var acr: String {
        switch self {
        case .password: "urn:assent:acr:password"
        case .secondFactor: "urn:assent:acr:mfa"
        case .phone: "urn:assent:acr:phone"
        }
    }

    init?(acr: String) {
        guard let match = Self.allCases.first(where: { $0.acr == acr }) else { return nil }
        self = match
    }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What the hosted pages' session knows of the sign-in it holds: who, when, how strongly and with what.
struct SignInFacts: Codable, Sendable, Equatable {
    var userId: String
    /// When the password was verified (milliseconds).
    var authTime: Millis
    var assurance: SignInAssurance
    /// RFC 8176 method references, e.g. `["pwd", "otp", "mfa"]`.
    var amr: [String]
    /// The session's id (`sid`): random, the same for every client served from this session.
    var sessionId: String

    /// The facts of a login token this server just signed: `amr` `pwd` and the second factor its `tfa` claim names;
    /// a passkey sign-in's own `amr` (no password; `mfa` when the passkey verified its user).
    init(loginToken: String, userId: String, at now: Millis) {
        var tfa: String?
        var signedAMR: [String] = []
        let parts = loginToken.split(separator: ".")
        if parts.count == 3, let payload = try? Base64URL.decode(String(parts[1])),
            let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        {
            tfa = claims["tfa"] as? String
            signedAMR = claims["amr"] as? [String] ?? []
        }
        self.userId = userId
        authTime = now
        sessionId = Base64URL.encode(Bytes.random(count: 18))
        if tfa == TFAProvider.passkey.rawValue {
            amr = signedAMR
            assurance = signedAMR.contains("mfa") ? .secondFactor : .password
            return
        }
        var amr = ["pwd"]
        switch tfa {
        case TFAProvider.totp.rawValue?, TFAProvider.email.rawValue?: amr.append("otp")
        case TFAProvider.phone.rawValue?: amr.append("sms")
        case TFAProvider.push.rawValue?: amr.append("hwk")
        case BrowserApprovers.provider?: amr.append("user")
        case "remembered-device"?: amr.append("swk")
        default: break
        }
        if tfa != nil { amr.append("mfa") }
        assurance = tfa == nil ? .password : tfa == TFAProvider.push.rawValue ? .phone : .secondFactor
        self.amr = amr
    }

    /// These facts of a step-up's factor on top of the sign-in `previous`: its session and authentication time
    /// (the first factor was not asked again), the methods of both without a password the step-up did not ask for,
    /// `mfa` once two methods stand, and the stronger assurance.
    func steppedUp(from previous: SignInFacts) -> SignInFacts {
        var facts = self
        facts.sessionId = previous.sessionId
        facts.authTime = previous.authTime
        var methods = previous.amr.filter { $0 != "mfa" }
        for method in amr where method != "pwd" && method != "mfa" && !methods.contains(method) {
            methods.append(method)
        }
        if previous.amr.contains("mfa") || methods.count >= 2 { methods.append("mfa") }
        facts.amr = methods
        facts.assurance = max(previous.assurance, assurance)
        return facts
    }
}

/// An authorization request the endpoint accepted (OpenID Connect Core §3.1.2.1), kept in the hosted pages' session
/// while the person signs in.
struct AuthorizationRequest: Codable, Sendable, Equatable {
    var clientId: String
    /// The client's name, as the sign-in page shows it.
    var clientName: String
    var applicationId: String
    var redirectUri: String
    var scope: String
    var state: String?
    var nonce: String?
    var codeChallenge: String?
    var prompt: [String]
    var maxAge: Int?
    /// The strongest sign-in among `acr_values` this provider knows, if any.
    var assurance: SignInAssurance?
    var loginHint: String?
    /// The person an `id_token_hint` names (§3.1.2.1): only their sign-in answers the request.
    var hintedUserId: String? = nil
    /// A third-party client: the person allows it first.
    var thirdParty: Bool?
    /// The languages the client would like the pages in (`ui_locales`, space-separated, most wanted first).
    var uiLocales: String? = nil

    /// What the browser is sent back to: an error.
    func errorLocation(_ error: OAuthErrorCode, _ description: String, issuer: String) -> String {
        AuthorizationService.location(
            redirectUri,
            [
                "error": error.rawValue, "error_description": OAuthError.printable(description), "state": state,
                "iss": issuer,
            ])
    }
}

/// Why an authorization request is refused: shown to the person when the client or its redirect URI cannot be
/// trusted (§3.1.2.6 forbids redirecting then), else sent back to the client.
enum AuthorizationFailure: Error, Sendable {
    case page(String)
    case redirect(String)
}

/// The authorization code flow (OpenID Connect Core §3.1, RFC 6749 §4.1, PKCE RFC 7636, RFC 9207's `iss`): checks
/// the authorization request, decides whether the session's sign-in serves it, issues the code, and redeems it at
/// the token endpoint for an access token and an ID token.
struct AuthorizationService: Sendable {
    /// The part of the store this sees.
    let store: any OpenIDStore
    let clock: WallClock
    let audit: Auditor
    let openID: OpenIDSettings
    let grants: GrantRevocation
    let keys: SigningKeyService

    static let prompts: Set<String> = ["none", "login", "consent", "select_account"]

    // MARK: Authorization request

    /// Checks an authorization request in the order §3.1.2.6 implies: the client and its redirect URI first (an
    /// error page when either fails), then everything else (an error sent back to the client, with `state`).
    /// `repeated` names a parameter the request carried twice.
    func validate(_ parameters: [String: String], repeated: String?) async throws -> AuthorizationRequest {
        guard let clientId = parameters["client_id"], (1...64).contains(clientId.utf8.count),
            let client = try await store.client(id: clientId)
        else {
            throw AuthorizationFailure.page(
                "The sign-in link names no client of this server: go back to the site you came from and try again.")
        }
        guard let redirectUri = parameters["redirect_uri"], ClientService.isRegistered(redirectUri, for: client) else {
            throw AuthorizationFailure.page(
                "The sign-in link asks to return to an address \(client.name) did not register: nothing was sent "
                    + "there. Go back to the site you came from and try again.")
        }
        var request = AuthorizationRequest(
            clientId: client.id, clientName: client.name, applicationId: client.applicationId, redirectUri: redirectUri,
            scope: "openid",
            state: parameters["state"], nonce: nil, codeChallenge: nil, prompt: [], maxAge: nil, assurance: nil,
            loginHint: nil, thirdParty: client.thirdParty)
        func refuse(_ error: OAuthErrorCode, _ description: String) -> AuthorizationFailure {
            .redirect(request.errorLocation(error, description, issuer: openID.issuer))
        }
        if let repeated { throw refuse(.invalidRequest, "Parameter \(repeated) is repeated.") }
        if let state = request.state, state.utf8.count > 2_048 {
            request.state = nil
            throw refuse(.invalidRequest, "state is longer than 2048 bytes.")
        }
        guard client.grantTypes.contains(OpenIDClientRecord.codeGrant) else {
            throw refuse(.unauthorizedClient, "This client is not registered for the authorization code flow.")
        }
        if parameters["request"] != nil {
            throw refuse(.requestNotSupported, "Request objects are not supported by this provider.")
        }
        if parameters["request_uri"] != nil {
            throw refuse(.requestURINotSupported, "request_uri is not supported by this provider.")
        }
        guard let responseType = parameters["response_type"] else {
            throw refuse(.invalidRequest, "response_type is missing.")
        }
        guard responseType == "code" else {
            throw refuse(.unsupportedResponseType, "This provider serves response_type code only.")
        }
        if let mode = parameters["response_mode"], mode != "query" {
            throw refuse(.invalidRequest, "This provider answers with response_mode query only.")
        }
        let scopes = Set((parameters["scope"] ?? "").split(separator: " ").map(String.init))
        guard scopes.contains("openid") else { throw refuse(.invalidScope, "scope must contain openid.") }
        if let unknown = scopes.subtracting(client.scopes + ["openid"]).sorted().first {
            throw refuse(.invalidScope, "Scope \(unknown) is not allowed for this client.")
        }
        request.scope = scopes.sorted().joined(separator: " ")
        let method = parameters["code_challenge_method"]
        if let challenge = parameters["code_challenge"] {
            guard method == "S256" else {
                throw refuse(.invalidRequest, "code_challenge_method must be S256 (plain is not accepted).")
            }
            guard challenge.utf8.count == 43, challenge.allSatisfy(Self.isBase64URLCharacter) else {
                throw refuse(
                    .invalidRequest, "code_challenge must be the 43-character Base64URL SHA-256 of a verifier.")
            }
            request.codeChallenge = challenge
        } else if method != nil {
            throw refuse(.invalidRequest, "code_challenge_method is given without code_challenge.")
        } else if client.isPublic {
            throw refuse(.invalidRequest, "A public client must send code_challenge (PKCE with S256).")
        }
        let prompt = (parameters["prompt"] ?? "").split(separator: " ").map(String.init)
        if let unknown = prompt.first(where: { !Self.prompts.contains($0) }) {
            throw refuse(.invalidRequest, "prompt \(unknown) is not one of none, login, consent, select_account.")
        }
        if prompt.contains("none"), prompt.count > 1 {
            throw refuse(.invalidRequest, "prompt none cannot be combined with other values.")
        }
        request.prompt = prompt
        if let text = parameters["max_age"] {
            guard let value = Int(text), value >= 0 else {
                throw refuse(.invalidRequest, "max_age is a whole number of seconds, 0 or more.")
            }
            request.maxAge = value
        }
        if let nonce = parameters["nonce"] {
            guard (1...512).contains(nonce.utf8.count) else {
                throw refuse(.invalidRequest, "nonce has 1 to 512 bytes.")
            }
            request.nonce = nonce
        }
        if let hint = parameters["login_hint"], (1...256).contains(hint.count) { request.loginHint = hint }
        if let locales = parameters["ui_locales"], (1...256).contains(locales.count) { request.uiLocales = locales }
        if let idToken = parameters["id_token_hint"] {
            guard let hinted = try await idTokenHint(idToken) else {
                throw refuse(.invalidRequest, "id_token_hint is not an ID token this provider issued.")
            }
            guard hinted.clientId == client.id else {
                throw refuse(.invalidRequest, "id_token_hint was issued to another client.")
            }
            request.hintedUserId = hinted.userId
        }
        request.assurance = (parameters["acr_values"] ?? "").split(separator: " ")
            .compactMap { SignInAssurance(acr: String($0)) }.max()
        return request
    }

    static func isBase64URLCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_")
    }

    /// Issues a code for the signed-in person and returns where the browser goes with it (§3.1.2.5: `code`,
    /// `state`, and RFC 9207's `iss`).
    func issueCode(_ request: AuthorizationRequest, _ signIn: SignInFacts) async throws -> String {
        let code = Base64URL.encode(Bytes.random(count: 32))
        let now = clock.millis
        try await store.insertAuthorizationCode(
            AuthorizationCodeRecord(
                codeHash: CIBAService.tokenHash(code), clientId: request.clientId, userId: signIn.userId,
                redirectUri: request.redirectUri, scope: request.scope, nonce: request.nonce,
                codeChallenge: request.codeChallenge, acr: signIn.assurance.acr, amr: signIn.amr,
                authTime: signIn.authTime, sessionId: signIn.sessionId, createdAt: now,
                expiresAt: now + Millis(openID.codeLifetime) * 1000))
        try await store.recordSessionClient(
            sessionId: signIn.sessionId, clientId: request.clientId, userId: signIn.userId, at: now)
        await audit(
            .openidCodeIssued, userId: signIn.userId, application: request.applicationId,
            actor: "user:\(signIn.userId)",
            "Authorization code issued to \(request.clientId) (\(signIn.assurance.acr)).")
        return Self.location(
            request.redirectUri, ["code": code, "state": request.state, "iss": openID.issuer])
    }

    /// `uri` with `parameters` added to its query (the redirect URI's own query is kept, RFC 6749 §3.1.2).
    static func location(_ uri: String, _ parameters: [String: String?]) -> String {
        let fields = parameters.compactMapValues { $0 }
        guard !fields.isEmpty else { return uri }
        let query = String(decoding: FormEncoding.encode(fields), as: UTF8.self)
        guard let fragment = uri.firstIndex(of: "#") else { return uri + (uri.contains("?") ? "&" : "?") + query }
        return String(uri[..<fragment]) + (uri.contains("?") ? "&" : "?") + query
    }

    /// The CSP `form-action` source that lets a page's last form lead the browser to the redirect URI: its origin,
    /// or a native app's scheme.
    static func formTarget(_ redirectUri: String) -> String? {
        if let origin = WebPages.origin(of: redirectUri) { return origin }
        guard let scheme = URLComponents(string: redirectUri)?.scheme?.lowercased(),
            scheme.allSatisfy({ $0.isLetter || $0.isNumber || ".+-".contains($0) })
        else { return nil }
        return "\(scheme):"
    }

    // MARK: Consent

    /// Whether the person must allow the client first: any client that asks with `prompt=consent` (OpenID Connect
    /// Core §3.1.2.1), and a third-party client unless they allowed it every scope it asks for now.
    func needsConsent(_ request: AuthorizationRequest, userId: String) async throws -> Bool {
        if request.prompt.contains("consent") { return true }
        guard request.thirdParty == true else { return false }
        if request.prompt.contains("consent") { return true }
        guard let allowed = try await store.consent(userId: userId, clientId: request.clientId) else { return true }
        return !Set(request.scope.split(separator: " ")).isSubset(of: Set(allowed.split(separator: " ")))
    }

    /// Remembers that the person allowed the client the request's scopes (with those allowed before).
    func grantConsent(_ request: AuthorizationRequest, userId: String) async throws {
        // A first-party client asked with prompt=consent: confirmed for this request, nothing to remember.
        guard request.thirdParty == true else {
            await audit(
                .openidConsentGranted, userId: userId, application: request.applicationId, actor: "user:\(userId)",
                "Confirmed \(request.clientId) the scopes \(request.scope) (prompt=consent).")
            return
        }
        let before = try await store.consent(userId: userId, clientId: request.clientId) ?? ""
        let scope = Set(before.split(separator: " ") + request.scope.split(separator: " ")).sorted()
            .joined(separator: " ")
        try await store.saveConsent(userId: userId, clientId: request.clientId, scope: scope, at: clock.millis)
        await audit(
            .openidConsentGranted, userId: userId, application: request.applicationId, actor: "user:\(userId)",
            "Allowed \(request.clientId) the scopes \(scope).")
    }

    /// The clients of `application` the person allowed, with their names and scopes.
    func consents(userId: String, application: String) async throws -> [(client: OpenIDClientRecord, scope: String)] {
        var result: [(OpenIDClientRecord, String)] = []
        for (clientId, scope) in try await store.consents(applicationId: application, userId: userId) {
            if let client = try await store.client(id: clientId) { result.append((client, scope)) }
        }
        return result
    }

    /// Takes back what the person allowed a client of `application`: the refresh and access tokens it holds end
    /// now, and it asks again next time.
    func revokeConsent(userId: String, clientId: String, application: String) async throws -> Bool {
        guard try await store.deleteConsent(applicationId: application, userId: userId, clientId: clientId) else {
            return false
        }
        let revoked = try await grants.revoke(
            applicationId: application, userId: userId, clientId: clientId)
        await audit(
            .openidConsentRevoked, userId: userId, application: application, actor: "user:\(userId)",
            "Took back what \(clientId) was allowed; \(revoked) refresh token(s) revoked.")
        return true
    }

    /// What a scope lets a client know or do, as the consent page says it.
    static func describe(scope: String) -> String? {
        switch scope {
        case "openid": "Know that it is you when you sign in"
        case "profile": "See your name and user name"
        case "email": "See your e-mail address"
        case "phone": "See your phone number"
        case "offline_access": "Stay connected to your account while you are away"
        default: nil
        }
    }

    // MARK: Logout

    /// What an `id_token_hint` names (at the authorization endpoint and in RP-Initiated Logout): an ID token this
    /// provider signed (its expiry does not matter: Core §3.1.2.1, Logout §2), or `nil`. Only an ID token: the same keys sign logout tokens (`typ` `logout+jwt`, `events`),
    /// two-factor tokens (`use`) and approval links, none of which has an ID token's `auth_time` and `azp`.
    func idTokenHint(_ idToken: String) async throws -> (userId: String, clientId: String, sessionId: String?)? {
        struct Claims: Decodable {
            let iss: String
            let sub: String
            let aud: String
            let azp: String?
            let auth_time: Int64
            let sid: String?
            let use: String?
            let events: [String: [String: String]]?
        }
        guard idToken.utf8.count <= 16_384, let header = try? CompactJWS.header(of: idToken),
            header.typ == nil || header.typ == "JWT",
            let payload = try? CompactJWS.verify(idToken, keys: try await keys.jwks()),
            let claims = try? JSONDecoder().decode(Claims.self, from: payload), claims.iss == openID.issuer,
            claims.use == nil, claims.events == nil, claims.azp == nil || claims.azp == claims.aud
        else { return nil }
        return (claims.sub, claims.aud, claims.sid)
    }

    /// Ends a single-sign-on session for the clients it served: each that registered a back-channel logout URI gets
    /// a logout token through the outbox.
    func endSession(_ signIn: SignInFacts?, application: String) async throws {
        guard let signIn else { return }
        try await store.endOpenIDSession(sessionId: signIn.sessionId, at: clock.millis)
        await audit(
            .openidSessionEnded, userId: signIn.userId, application: application, actor: "user:\(signIn.userId)",
            "Single-sign-on session ended; back-channel logouts queued.")
    }

    // MARK: Token request

    /// `grant_type=authorization_code` (§3.1.3): the code is spent at once; it must be this client's, unexpired,
    /// presented with the redirect URI it was issued for and the PKCE verifier of its challenge. A code presented
    /// a second time revokes the access token it issued (RFC 6749 §4.1.2).
    func tokenRequest(_ form: [String: String], client: OpenIDClientRecord) async throws -> OAuthTokenResponse {
        guard client.grantTypes.contains(OpenIDClientRecord.codeGrant) else {
            throw OAuthError(.unauthorizedClient, "This client is not registered for the authorization code flow.")
        }
        guard let code = form["code"], (1...256).contains(code.utf8.count) else {
            throw OAuthError.invalidRequest("code is missing.")
        }
        guard let redirectUri = form["redirect_uri"] else {
            throw OAuthError.invalidRequest("redirect_uri is missing.")
        }
        let now = clock.millis
        let record: AuthorizationCodeRecord
        switch try await store.redeemAuthorizationCode(hash: CIBAService.tokenHash(code), clientId: client.id, at: now)
        {
        case .unknown:
            throw OAuthError.invalidGrant("The code is not valid.")
        case .replayed(let owner):
            await audit(
                .openidCodeReplayed, application: client.applicationId, actor: "client:\(client.id)",
                "Authorization code of \(owner) presented again: the tokens it issued are revoked.")
            throw OAuthError.invalidGrant("The code was used before; the tokens it issued are revoked.")
        case .redeemed(let redeemed):
            record = redeemed
        }
        guard record.clientId == client.id else { throw OAuthError.invalidGrant("The code is not valid.") }
        guard now < record.expiresAt else { throw OAuthError.invalidGrant("The code has expired.") }
        guard record.redirectUri == redirectUri else {
            throw OAuthError.invalidGrant("redirect_uri differs from the authorization request's.")
        }
        let verifier = form["code_verifier"]
        if let challenge = record.codeChallenge {
            guard let verifier, (43...128).contains(verifier.utf8.count),
                verifier.allSatisfy({ Self.isBase64URLCharacter($0) || $0 == "." || $0 == "~" })
            else { throw OAuthError.invalidGrant("code_verifier is missing or malformed (RFC 7636 §4.1).") }
            let computed = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
            guard Bytes.constantTimeEqual(Data(computed.utf8), Data(challenge.utf8)) else {
                throw OAuthError.invalidGrant("code_verifier does not match the code_challenge.")
            }
        } else if verifier != nil {
            throw OAuthError.invalidGrant("The authorization request had no code_challenge.")
        }
        return try await issueTokens(
            TokenGrant(
                codeHash: record.codeHash, userId: record.userId, scope: record.scope, nonce: record.nonce,
                acr: record.acr, amr: record.amr, authTime: record.authTime, sessionId: record.sessionId),
            client: client, for: "an authorization code")
    }

    /// `grant_type=refresh_token` (RFC 6749 §6, OpenID Connect Core §12): the token is spent and a new one issued
    /// with the new access token (rotation); a spent or revoked token presented again revokes its whole family — the
    /// refresh and access tokens that came from the same code — since either its holder or a thief used it before.
    func refresh(_ form: [String: String], client: OpenIDClientRecord) async throws -> OAuthTokenResponse {
        guard client.grantTypes.contains(OpenIDClientRecord.refreshGrant) else {
            throw OAuthError(.unauthorizedClient, "This client is not registered for refresh tokens.")
        }
        guard let token = form["refresh_token"], (1...256).contains(token.utf8.count) else {
            throw OAuthError.invalidRequest("refresh_token is missing.")
        }
        let now = clock.millis
        let record: RefreshTokenRecord
        switch try await store.rotateRefreshToken(hash: CIBAService.tokenHash(token), clientId: client.id, at: now) {
        case .unknown:
            throw OAuthError.invalidGrant("The refresh token is not valid.")
        case .reused(let owner):
            await audit(
                .openidRefreshReused, application: client.applicationId, actor: "client:\(client.id)",
                "A spent refresh token of \(owner) was presented again: its family is revoked.")
            throw OAuthError.invalidGrant("The refresh token was used before; every token issued with it is revoked.")
        case .rotated(let rotated):
            record = rotated
        }
        guard record.clientId == client.id else { throw OAuthError.invalidGrant("The refresh token is not valid.") }
        guard now < record.expiresAt else { throw OAuthError.invalidGrant("The refresh token has expired.") }
        var scope = record.scope
        if let asked = form["scope"] {
            // RFC 6749 §6: the same scopes or fewer; openid and offline_access stay, or no successor could follow.
            let wanted = Set(asked.split(separator: " ").map(String.init))
            let granted = Set(record.scope.split(separator: " ").map(String.init))
            guard wanted.isSubset(of: granted) else {
                throw OAuthError(.invalidScope, "A refresh cannot add scopes the sign-in did not grant.")
            }
            scope = wanted.union(["openid", "offline_access"]).sorted().joined(separator: " ")
        }
        return try await issueTokens(
            TokenGrant(
                codeHash: record.codeHash, userId: record.userId, scope: scope, nonce: nil, acr: record.acr,
                amr: record.amr, authTime: record.authTime, sessionId: record.sessionId),
            client: client, for: "a refresh token")
    }

    /// What a grant issues tokens for: the sign-in's facts and the family they belong to.
    struct TokenGrant {
        var codeHash: Data
        var userId: String
        var scope: String
        var nonce: String?
        var acr: String
        var amr: [String]
        var authTime: Millis
        var sessionId: String
    }

    /// An access token, an ID token with the sign-in's facts, and — with `offline_access` for a client registered
    /// for it — a refresh token; all of the code's family.
    private func issueTokens(_ grant: TokenGrant, client: OpenIDClientRecord, for what: String) async throws
        -> OAuthTokenResponse
    {
        let now = clock.millis
        let settings = openID
        let lifetime = settings.tokenLifetime
        let accessToken = "at_" + Base64URL.encode(Bytes.random(count: 32))
        try await store.insertAccessToken(
            AccessTokenRecord(
                tokenHash: CIBAService.tokenHash(accessToken), clientId: client.id, userId: grant.userId,
                scope: grant.scope, cibaRequestId: nil, createdAt: now, expiresAt: now + Millis(lifetime) * 1000,
                codeHash: grant.codeHash))
        var refreshToken: String?
        if grant.scope.split(separator: " ").contains("offline_access"),
            client.grantTypes.contains(OpenIDClientRecord.refreshGrant)
        {
            let token = "rt_" + Base64URL.encode(Bytes.random(count: 32))
            try await store.insertRefreshToken(
                RefreshTokenRecord(
                    tokenHash: CIBAService.tokenHash(token), codeHash: grant.codeHash, clientId: client.id,
                    userId: grant.userId, scope: grant.scope, acr: grant.acr, amr: grant.amr,
                    authTime: grant.authTime, sessionId: grant.sessionId, createdAt: now,
                    expiresAt: now + Millis(settings.refreshTokenLifetime) * 1000))
            refreshToken = token
        }
        let claims = CodeFlowIDTokenClaims(
            iss: settings.issuer, sub: grant.userId, aud: client.id, azp: client.id, iat: now / 1000,
            exp: now / 1000 + Int64(lifetime), authTime: grant.authTime / 1000, nonce: grant.nonce, acr: grant.acr,
            amr: grant.amr, atHash: CIBAService.leftHalfHash(accessToken), sid: grant.sessionId)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let signer = try await keys.signer(client.idTokenAlgorithm)
        let idToken = try CompactJWS.sign(
            payload: try encoder.encode(claims), with: signer.signingKey, keyId: signer.kid)
        await audit(
            .openidTokensIssued, userId: grant.userId, application: client.applicationId, actor: "client:\(client.id)",
            "Tokens issued to \(client.id) for \(what)" + (refreshToken == nil ? "." : ", with a refresh token."))
        return OAuthTokenResponse(
            accessToken: accessToken, expiresIn: lifetime, idToken: idToken, scope: grant.scope,
            refreshToken: refreshToken)
    }
}

/// The claims of an ID token from the authorization code flow (OpenID Connect Core §2, §3.1.3.6).
struct CodeFlowIDTokenClaims: Codable {
    let iss: String
    let sub: String
    let aud: String
    let azp: String
    let iat: Int64
    let exp: Int64
    let authTime: Int64
    let nonce: String?
    let acr: String
    let amr: [String]
    let atHash: String
    let sid: String

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, azp, iat, exp, nonce, acr, amr, sid
        case authTime = "auth_time"
        case atHash = "at_hash"
    }
}
