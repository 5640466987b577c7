import AssentCrypto
import Foundation
import SQLKit

/// A signing key of the OpenID provider. The private key is sealed at rest.
public struct SigningKeyRecord: Sendable {
    public enum Material: Sendable {
        case es256(ECPrivateKey)
        case rs256(RSAPrivateKey)
    }

    /// The key id: the RFC 7638 thumbprint of the public key.
    public var kid: String
    public var material: Material
    public var createdAt: Millis
    /// When a newer key replaced it for signing; it stays published while tokens it signed are alive.
    public var retiredAt: Millis?

    public var algorithm: String {
        switch material {
        case .es256: "ES256"
        case .rs256: "RS256"
        }
    }

    /// The public half as a JWK.
    public func jwk() throws -> JWK {
        switch material {
        case .es256(let key): JWK(es256: key.publicKey, kid: kid)
        case .rs256(let key): try JWK(rs256: key.publicKey, kid: kid)
        }
    }

    var signingKey: CompactJWS.Key {
        switch material {
        case .es256(let key): .es256(key)
        case .rs256(let key): .rs256(key)
        }
    }
}

/// A relying party registered with the OpenID provider; only the SHA-256 of its secret is stored.
public struct OpenIDClientRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var secretHash: Data
    /// `client_secret_basic` or `client_secret_post`.
    public var authMethod: String
    public var deliveryMode: CIBADeliveryModeValue
    public var notificationEndpoint: String?
    /// Scopes besides `openid` it may request.
    public var scopes: [String]
    /// `RS256` or `ES256`.
    public var idTokenAlgorithm: String
    public var applicationId: String
    public var createdAt: Millis
    /// The public keys of a `private_key_jwt` client.
    public var jwks: JWKSet? = nil
    /// Where the authorization endpoint may send the browser back (exact strings).
    public var redirectUris: [String] = []
    /// `confidential` or `public` (authentication method `none`, PKCE required).
    public var type: String = OpenIDClientRecord.confidential
    /// `ciba`, `authorization_code`, `refresh_token`.
    public var grantTypes: [String] = [OpenIDClientRecord.cibaGrant]
    /// Where RP-initiated logout may send the browser afterwards (exact strings).
    public var postLogoutRedirectUris: [String] = []
    /// Where a logout token goes when a session it signed in to ends (OpenID Connect Back-Channel Logout 1.0).
    public var backchannelLogoutUri: String? = nil
    /// Of another party than the operator: people are asked to allow it.
    public var thirdParty = false

    public static let confidential = "confidential"
    public static let publicType = "public"
    public static let cibaGrant = "ciba"
    public static let codeGrant = "authorization_code"
    public static let refreshGrant = "refresh_token"

    public var isPublic: Bool { type == Self.publicType }
}

/// The delivery modes as stored (the model's ``CIBADeliveryMode`` raw values).
public typealias CIBADeliveryModeValue = String

/// A backchannel authentication request and the operation that carries it to the user's devices.
public struct CIBARequestRecord: Sendable, Equatable {
    public var id: String
    /// The `auth_req_id` the client holds (sealed at rest; looked up by its SHA-256).
    public var authReqId: String
    public var clientId: String
    public var userId: String
    public var operationId: String
    public var scope: String
    public var acrValues: String?
    public var bindingMessage: String?
    /// The bearer token the client gave for its callbacks (sealed at rest).
    public var notificationToken: String?
    public var deliveryMode: CIBADeliveryModeValue
    /// Seconds between token requests; `slow_down` raises it.
    public var pollInterval: Int
    public var lastPollAt: Millis?
    public var expiresAt: Millis
    public var createdAt: Millis
    /// When the tokens were issued (token request or push delivery); a request is redeemed once.
    public var redeemedAt: Millis?
}

/// An issued access token; only its SHA-256 is stored.
public struct AccessTokenRecord: Sendable, Equatable {
    public var tokenHash: Data
    public var clientId: String
    public var userId: String
    public var scope: String
    public var cibaRequestId: String?
    public var createdAt: Millis
    public var expiresAt: Millis
    /// The SHA-256 of the authorization code it was issued for (revoked if that code is presented again).
    public var codeHash: Data? = nil
}

/// An authorization code (OpenID Connect Core §3.1.2.5): single use, short-lived, bound to its client, redirect URI
/// and PKCE challenge; only its SHA-256 is stored.
public struct AuthorizationCodeRecord: Sendable, Equatable {
    public var codeHash: Data
    public var clientId: String
    public var userId: String
    public var redirectUri: String
    public var scope: String
    public var nonce: String?
    /// The PKCE `code_challenge` (S256).
    public var codeChallenge: String?
    /// What the sign-in achieved: its class and methods (RFC 8176), when it happened, and the session's id.
    public var acr: String
    public var amr: [String]
    public var authTime: Millis
    public var sessionId: String
    public var createdAt: Millis
    public var expiresAt: Millis
}

/// A refresh token (RFC 6749 §6): single use — each refresh rotates it — and one of a family that began with an
/// authorization code; only its SHA-256 is stored.
public struct RefreshTokenRecord: Sendable, Equatable {
    public var tokenHash: Data
    /// The family: the hash of the code it began with (a replayed code or a reused token revokes the family).
    public var codeHash: Data
    public var clientId: String
    public var userId: String
    public var scope: String
    public var acr: String
    public var amr: [String]
    public var authTime: Millis
    public var sessionId: String
    public var createdAt: Millis
    public var expiresAt: Millis
}

/// What presenting a refresh token came to.
public enum RefreshRotation: Sendable, Equatable {
    /// The token, now spent: its successor may be issued.
    case rotated(RefreshTokenRecord)
    /// The token was spent or revoked before: its whole family is revoked now.
    case reused(clientId: String)
    /// No such token.
    case unknown
}

/// What presenting a code came to.
public enum CodeRedemption: Sendable, Equatable {
    /// The code, now spent.
    case redeemed(AuthorizationCodeRecord)
    /// The code was spent before: what it issued has been revoked.
    case replayed(clientId: String)
    /// No such code.
    case unknown
}

/// What the OpenID provider persists, in its own tables.
public protocol OpenIDStore: Sendable {
    func insertSigningKey(_ key: SigningKeyRecord) async throws
    /// Every stored key, newest first.
    func signingKeys() async throws -> [SigningKeyRecord]
    /// Marks the keys of `algorithm` that are still signing as retired at `now`, except `keep`.
    func retireSigningKeys(algorithm: String, except keep: String, at now: Millis) async throws
    /// Deletes keys retired before `before`.
    func deleteSigningKeys(retiredBefore before: Millis) async throws

    func insertClient(_ client: OpenIDClientRecord) async throws
    func client(id: String) async throws -> OpenIDClientRecord?
    func clients() async throws -> [OpenIDClientRecord]
    func deleteClient(id: String) async throws -> Bool

    func insertCIBARequest(_ request: CIBARequestRecord) async throws
    func cibaRequest(authReqId: String) async throws -> CIBARequestRecord?
    func cibaRequest(id: String) async throws -> CIBARequestRecord?
    /// The requests an operation carries (one, for operations a request created).
    func cibaRequests(operationId: String) async throws -> [CIBARequestRecord]
    /// Records a token request at `now` if the request's interval has passed since the previous one and returns
    /// `true`; otherwise raises the interval by `penalty` seconds, records the poll and returns `false`.
    func recordPoll(id: String, now: Millis, penalty: Int) async throws -> Bool
    /// Marks the request redeemed at `now` unless it already was; returns whether this call did.
    func redeemCIBARequest(id: String, at now: Millis) async throws -> Bool

    func insertAccessToken(_ token: AccessTokenRecord) async throws
    func accessToken(hash: Data) async throws -> AccessTokenRecord?

    func insertAuthorizationCode(_ code: AuthorizationCodeRecord) async throws
    /// Spends `clientId`'s code at `now` in one statement; a code of another client is untouched (`unknown`); one
    /// spent before by the same client revokes the access and refresh tokens issued for it.
    func redeemAuthorizationCode(hash: Data, clientId: String, at now: Millis) async throws -> CodeRedemption

    /// The scopes `userId` allowed `clientId` (space-separated), if they did.
    func consent(userId: String, clientId: String) async throws -> String?
    /// Stores what `userId` allowed `clientId` (replacing what they allowed before).
    func saveConsent(userId: String, clientId: String, scope: String, at now: Millis) async throws
    /// The clients of `applicationId` that `userId` allowed, with the scopes, oldest first.
    func consents(applicationId: String, userId: String) async throws -> [(clientId: String, scope: String)]
    /// Takes back what `userId` allowed `clientId` of `applicationId`; `false` when there was nothing.
    func deleteConsent(applicationId: String, userId: String, clientId: String) async throws -> Bool
    /// Revokes the refresh tokens and deletes the access tokens `userId` holds at the clients of `applicationId`
    /// (`clientId`'s only, when given); returns how many refresh tokens were live.
    func revokeGrants(applicationId: String, userId: String, clientId: String?, at now: Millis) async throws -> Int
    /// Ends `userId`'s single-sign-on sessions at the clients of `applicationId` as ``endOpenIDSession(sessionId:at:)``
    /// does: a back-channel logout queued for each client that registered one.
    func endOpenIDSessions(applicationId: String, userId: String, at now: Millis) async throws

    /// Records that the single-sign-on session `sessionId` signed `userId` in to `clientId` (once per pair).
    func recordSessionClient(sessionId: String, clientId: String, userId: String, at now: Millis) async throws
    /// Ends the session for its clients: queues a back-channel logout in the outbox for each that registered a
    /// logout URI, and forgets them all.
    func endOpenIDSession(sessionId: String, at now: Millis) async throws

    func insertRefreshToken(_ token: RefreshTokenRecord) async throws
    /// Spends `clientId`'s refresh token at `now` in one statement; a token of another client is untouched
    /// (`unknown`); one spent or revoked before, presented by its client, revokes its family (refresh and access
    /// tokens).
    func rotateRefreshToken(hash: Data, clientId: String, at now: Millis) async throws -> RefreshRotation

    /// Deletes CIBA requests, authorization codes and access tokens that expired before `before`.
    func purgeOpenID(before: Millis) async throws
}
