import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import AsyncHTTPClient
import Crypto
import Foundation
import JWTKit
import NIOCore
import Testing

/// The claims a relying party reads from an Assent ID token, verified by jwt-kit (an implementation we did not
/// write) with the keys of the provider's JWKS.
struct VerifiedIDToken: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var atHash: String
    var authReqId: String
    var amr: [String]
    var acr: String?
    var bindingMessage: String?
    var transaction: ApprovedTransaction

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, amr, acr, transaction
        case atHash = "at_hash"
        case authReqId = "urn:openid:params:jwt:claim:auth_req_id"
        case bindingMessage = "binding_message"
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// A relying party of the test server: a registered client that speaks form-encoded OAuth.
struct TestRelyingParty: Sendable {
    let client: AssentTesting.HTTPClient
    let clientId: String
    let secret: String
    var basic = true

    static func register(
        _ server: TestServer, _ client: AssentTesting.HTTPClient, mode: String = "poll", endpoint: String? = nil,
        authMethod: String? = nil, algorithm: String? = nil
    ) async throws -> TestRelyingParty {
        let created = try await server.operatorCall(
            client, "POST", "/api/v1/clients",
            body: try OperatorJSON.encoder().encode(
                CreateClientRequest(
                    name: "Bank", deliveryMode: mode, notificationEndpoint: endpoint,
                    tokenEndpointAuthMethod: authMethod,
                    idTokenSignedResponseAlg: algorithm)),
            as: CreateClientResponse.self)
        return TestRelyingParty(
            client: client, clientId: created.client.clientId, secret: created.clientSecret ?? "",
            basic: authMethod != "client_secret_post")
    }

    /// An OAuth answer.
    struct Answer: Sendable {
        var status: Int
        var body: Data
        var headers: [String: String]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    /// Posts a form with the client's authentication. AsyncHTTPClient, not URLSession: Foundation's URLSession on
    /// Linux never completes a request answered 401 with `WWW-Authenticate: Basic`.
    func post(_ path: String, _ fields: [String: String], rawBody: Data? = nil) async throws -> Answer {
        var fields = fields
        var request = HTTPClientRequest(url: client.base.absoluteString + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        if basic {
            request.headers.add(
                name: "Authorization", value: "Basic " + Data("\(clientId):\(secret)".utf8).base64EncodedString())
        } else {
            fields["client_id"] = clientId
            fields["client_secret"] = secret
        }
        request.body = .bytes(ByteBuffer(bytes: rawBody ?? FormEncoding.encode(fields)))
        let response = try await AsyncHTTPClient.HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: Int(response.status.code), body: Data(body.readableBytesView),
            headers: Dictionary(
                response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a }))
    }

    func authorize(_ fields: [String: String]) async throws -> CIBAAcknowledgement {
        let response = try await post("/oauth2/bc-authorize", fields)
        guard response.status == 200 else { throw TestFailure("bc-authorize: \(response.status) \(response.text)") }
        return try JSONDecoder().decode(CIBAAcknowledgement.self, from: response.body)
    }

    func token(_ authReqId: String) async throws -> Answer {
        try await post("/oauth2/token", ["grant_type": "urn:openid:params:grant-type:ciba", "auth_req_id": authReqId])
    }

    /// The OAuth error of a response with `status`.
    static func error(_ response: Answer) -> String? {
        (try? JSONDecoder().decode(OAuthErrorResponse.self, from: response.body))?.error
    }

    /// Verifies an ID token twice — jwt-kit with the published JWKS, and AssentCrypto's JWS code — and checks the
    /// claims a CIBA client must check.
    func verify(_ idToken: String, accessToken: String, authReqId: String, issuer: String) async throws
        -> VerifiedIDToken
    {
        let jwks = try await client.send("GET", "/oauth2/jwks")
        let keys = try await JWTKeyCollection().add(jwksJSON: jwks.text)
        let claims = try await keys.verify(idToken, as: VerifiedIDToken.self)
        _ = try CompactJWS.verify(idToken, keys: try JSONDecoder().decode(JWKSet.self, from: jwks.body))
        #expect(claims.iss.value == issuer)
        #expect(claims.aud.value == [clientId])
        #expect(claims.authReqId == authReqId)
        let digest = Data(SHA256.hash(data: Data(accessToken.utf8))).prefix(16)
        #expect(claims.atHash == Base64URL.encode(Data(digest)))
        return claims
    }
}
