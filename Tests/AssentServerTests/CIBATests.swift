import AssentCrypto
import AssentModel
import AssentSDK
import AssentServer
import AssentTesting
import AsyncHTTPClient
import Crypto
import Foundation
import JWTKit
import NIOCore
import Testing

@testable import AssentServerTesting

@Suite("OpenID CIBA")
struct CIBATests {
    static func operation(_ device: TestDevice, _ token: TokenCreateResponse) async throws -> MobileOperation {
        let list = try await device.listOperations(token: token)
        return try #require(list.first)
    }

    @Test("Discovery and JWKS: the required fields, RS256 listed, every published key usable", arguments: Backend.all)
    func discovery(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            let response = try await client.send("GET", "/.well-known/openid-configuration")
            #expect(response.status == 200)
            let document = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            for field in [
                "issuer", "authorization_endpoint", "token_endpoint", "jwks_uri", "response_types_supported",
                "subject_types_supported", "id_token_signing_alg_values_supported",
                "backchannel_authentication_endpoint",
                "backchannel_token_delivery_modes_supported",
            ] {
                #expect(document[field] != nil, "\(field)")
            }
            #expect((document["id_token_signing_alg_values_supported"] as? [String])?.contains("RS256") == true)
            #expect(
                document["grant_types_supported"] as? [String] == [
                    "authorization_code", "refresh_token", "urn:openid:params:grant-type:ciba",
                ])
            #expect(document["backchannel_token_delivery_modes_supported"] as? [String] == ["poll", "ping", "push"])
            #expect(
                document["acr_values_supported"] as? [String] == [
                    "urn:assent:acr:password", "urn:assent:acr:mfa", "urn:assent:acr:phone",
                    "urn:assent:acr:device", "urn:assent:acr:pin", "urn:assent:acr:pin-or-biometry",
                ])
            let jwks = try JSONDecoder().decode(JWKSet.self, from: try await client.send("GET", "/oauth2/jwks").body)
            #expect(Set(jwks.keys.compactMap(\.alg)) == ["ES256", "RS256"])
            for key in jwks.keys {
                #expect(key.kid == key.thumbprint)
                _ = try key.verificationKey()
            }
            // Rotation: new keys sign, the old ones stay published for a day, then disappear.
            let rotated = try await server.operatorCall(
                client, "POST", "/api/v1/openid/keys/rotate", as: [String: [String]].self)
            let newKeys = Set(try #require(rotated["keyIds"]))
            let both = try JSONDecoder().decode(JWKSet.self, from: try await client.send("GET", "/oauth2/jwks").body)
            #expect(Set(both.keys.compactMap(\.kid)) == newKeys.union(jwks.keys.compactMap(\.kid)))
            #expect(both.keys.count == 4)
            server.clock.advance(by: 86_401)
            let later = try JSONDecoder().decode(JWKSet.self, from: try await client.send("GET", "/oauth2/jwks").body)
            #expect(Set(later.keys.compactMap(\.kid)) == newKeys)
        }
    }

    @Test(
        "Poll: pending, slow_down, the device approves, tokens verified by jwt-kit, single use", arguments: Backend.all)
    func poll(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client, userId: "alice")
            let token = try await device.createToken()
            let rp = try await TestRelyingParty.register(server, client)
            let ack = try await rp.authorize([
                "scope": "openid profile", "login_hint": "alice", "binding_message": "W4SK",
                "transaction": #"{"amount":"400.00","currency":"EUR","account":"DE89370400440532013000"}"#,
            ])
            #expect(ack.interval == 5)
            #expect(ack.expiresIn == 300)
            #expect(try Base64URL.decode(ack.authReqId).count * 8 >= 160)

            let first = try await rp.token(ack.authReqId)
            #expect(first.status == 400)
            #expect(TestRelyingParty.error(first) == "authorization_pending")
            #expect(first.header("Cache-Control") == "no-store")
            let tooSoon = try await rp.token(ack.authReqId)
            #expect(TestRelyingParty.error(tooSoon) == "slow_down")

            let operation = try await Self.operation(device, token)
            #expect(operation.data == "A1*A400.00EUR*QDE89370400440532013000*TW4SK")
            #expect(operation.formData.title.contains("W4SK"))
            #expect(operation.formData.attributes.contains { $0.value == "DE89370400440532013000" })
            #expect(try await device.authorizeOperation(id: operation.id, data: operation.data).status == 200)

            let granted = try await rp.token(ack.authReqId)
            #expect(granted.status == 200, "\(granted.text)")
            let tokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: granted.body)
            #expect(tokens.tokenType == "Bearer")
            let claims = try await rp.verify(
                tokens.idToken, accessToken: tokens.accessToken, authReqId: ack.authReqId,
                issuer: server.environment.openID.issuer)
            #expect(claims.sub.value == "alice")
            #expect(claims.amr == ["hwk", "pin", "mfa"])
            #expect(claims.bindingMessage == "W4SK")
            #expect(claims.transaction.data == operation.data)
            #expect(claims.transaction.operationId == operation.id)
            #expect(try CompactJWS.header(of: tokens.idToken).alg == "RS256")

            let again = try await rp.token(ack.authReqId)
            #expect(again.status == 400)
            #expect(TestRelyingParty.error(again) == "invalid_grant")

            let userinfo = try await client.send(
                "GET", "/oauth2/userinfo", headers: ["Authorization": "Bearer \(tokens.accessToken)"])
            #expect(userinfo.status == 200)
            // Scope profile: the user id as preferred_username (alice has no login account, so no name).
            #expect(
                try JSONDecoder().decode([String: String].self, from: userinfo.body) == [
                    "sub": "alice", "preferred_username": "alice",
                ])
            let introspection = try JSONDecoder().decode(
                TokenIntrospection.self,
                from: try await rp.post("/oauth2/introspect", ["token": tokens.accessToken]).body)
            #expect(introspection.active && introspection.sub == "alice" && introspection.clientId == rp.clientId)
            let other = try await TestRelyingParty.register(server, client)
            let foreign = try JSONDecoder().decode(
                TokenIntrospection.self,
                from: try await other.post("/oauth2/introspect", ["token": tokens.accessToken]).body)
            #expect(!foreign.active)
            let bad = try await client.send("GET", "/oauth2/userinfo", headers: ["Authorization": "Bearer at_nothing"])
            #expect(bad.status == 401)
            #expect(bad.header("WWW-Authenticate")?.contains("invalid_token") == true)
        }
    }

    @Test(
        "Rejection is access_denied, expiry is expired_token, an ES256 client with client_secret_post",
        arguments: Backend.all)
    func denialAndExpiry(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client, userId: "bob")
            let token = try await device.createToken()
            let rp = try await TestRelyingParty.register(
                server, client, authMethod: "client_secret_post", algorithm: "ES256")
            let rejected = try await rp.authorize(["scope": "openid", "login_hint": "bob"])
            let operation = try await Self.operation(device, token)
            #expect(try await device.rejectOperation(id: operation.id).status == 200)
            let denied = try await rp.token(rejected.authReqId)
            #expect(denied.status == 400)
            #expect(TestRelyingParty.error(denied) == "access_denied")

            let expiring = try await rp.authorize(["scope": "openid", "login_hint": "bob", "requested_expiry": "30"])
            #expect(expiring.expiresIn == 30)
            server.clock.advance(by: 31)
            #expect(TestRelyingParty.error(try await rp.token(expiring.authReqId)) == "expired_token")

            // ES256 ID tokens for this client.
            let approved = try await rp.authorize(["scope": "openid", "login_hint": "bob"])
            let pending = try await device.listOperations(token: token)
            let second = try #require(pending.first)
            #expect(
                try await device.authorizeOperation(id: second.id, data: second.data, type: .possessionBiometry).status
                    == 200)
            let tokens = try JSONDecoder().decode(
                OAuthTokenResponse.self, from: try await rp.token(approved.authReqId).body)
            #expect(try CompactJWS.header(of: tokens.idToken).alg == "ES256")
            let claims = try await rp.verify(
                tokens.idToken, accessToken: tokens.accessToken, authReqId: approved.authReqId,
                issuer: server.environment.openID.issuer)
            #expect(claims.amr == ["hwk", "user", "mfa"])
        }
    }

    @Test("Every error of the backchannel and token endpoints with its status", arguments: Backend.all)
    func errors(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            _ = try await server.activatedDevice(client, userId: "carol")
            let rp = try await TestRelyingParty.register(server, client)
            let pingRP = try await TestRelyingParty.register(
                server, client, mode: "ping", endpoint: "https://rp.example/cb")
            let expiredHint =
                Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "."
                + Base64URL.encode(Data(#"{"sub":"carol","exp":1000}"#.utf8)) + "."
            let validHint =
                Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "."
                + Base64URL.encode(Data(#"{"usercode":"carol"}"#.utf8)) + "."
            let cases: [(TestRelyingParty, [String: String], Int, String)] = [
                (rp, ["login_hint": "carol"], 400, "invalid_scope"),
                (rp, ["scope": "openid email", "login_hint": "carol"], 400, "invalid_scope"),
                (rp, ["scope": "openid"], 400, "invalid_request"),
                (rp, ["scope": "openid", "login_hint": "carol", "id_token_hint": "x.y.z"], 400, "invalid_request"),
                (rp, ["scope": "openid", "login_hint": "nobody"], 400, "unknown_user_id"),
                (rp, ["scope": "openid", "id_token_hint": "x.y.z"], 400, "unknown_user_id"),
                (rp, ["scope": "openid", "login_hint_token": expiredHint], 400, "expired_login_hint_token"),
                (
                    rp,
                    ["scope": "openid", "login_hint": "carol", "binding_message": String(repeating: "x", count: 129)],
                    400, "invalid_binding_message"
                ),
                (
                    rp, ["scope": "openid", "login_hint": "carol", "binding_message": "a\nb"], 400,
                    "invalid_binding_message"
                ),
                (rp, ["scope": "openid", "login_hint": "carol", "requested_expiry": "0"], 400, "invalid_request"),
                (rp, ["scope": "openid", "login_hint": "carol", "user_code": "1234"], 400, "invalid_request"),
                (rp, ["scope": "openid", "login_hint": "carol", "transaction": "[1]"], 400, "invalid_request"),
                (pingRP, ["scope": "openid", "login_hint": "carol"], 400, "invalid_request"),
                (
                    pingRP, ["scope": "openid", "login_hint": "carol", "client_notification_token": "bad token"], 400,
                    "invalid_request"
                ),
                (
                    TestRelyingParty(client: client, clientId: rp.clientId, secret: "wrong"), ["scope": "openid"], 401,
                    "invalid_client"
                ),
                (
                    TestRelyingParty(client: client, clientId: rp.clientId, secret: rp.secret, basic: false),
                    ["scope": "openid", "login_hint": "carol"], 401, "invalid_client"
                ),
            ]
            for (party, fields, status, error) in cases {
                let response = try await party.post("/oauth2/bc-authorize", fields)
                #expect(response.status == status, "\(fields): \(response.text)")
                #expect(TestRelyingParty.error(response) == error, "\(fields): \(response.text)")
                if status == 401 { #expect(response.header("WWW-Authenticate")?.hasPrefix("Basic") == true) }
            }
            // The login hint token (HID's usercode claim) and a repeated parameter.
            #expect(try await rp.authorize(["scope": "openid", "login_hint_token": validHint]).expiresIn == 300)
            let repeated = try await rp.post(
                "/oauth2/bc-authorize", [:], rawBody: Data("scope=openid&login_hint=carol&login_hint=carol".utf8))
            #expect(TestRelyingParty.error(repeated) == "invalid_request")
            // Token endpoint.
            #expect(TestRelyingParty.error(try await rp.token("unknown")) == "invalid_grant")
            // A grant this client is not registered for, and one the provider does not serve (RFC 6749 §5.2).
            let otherGrant = try await rp.post("/oauth2/token", ["grant_type": "authorization_code", "code": "x"])
            #expect(TestRelyingParty.error(otherGrant) == "unauthorized_client")
            let wrongGrant = try await rp.post("/oauth2/token", ["grant_type": "password", "username": "x"])
            #expect(TestRelyingParty.error(wrongGrant) == "unsupported_grant_type")
            #expect(
                TestRelyingParty.error(
                    try await rp.post("/oauth2/token", ["grant_type": "urn:openid:params:grant-type:ciba"]))
                    == "invalid_request")
            let theirs = try await rp.authorize(["scope": "openid", "login_hint": "carol"])
            #expect(TestRelyingParty.error(try await pingRP.token(theirs.authReqId)) == "invalid_grant")
            // A user whose devices are all blocked: the provider refuses up front (403).
            let carols = try await server.operatorCall(
                client, "GET", "/api/v1/users/carol/activations", as: ActivationList.self)
            for activation in carols.activations {
                _ = try await server.operatorCall(
                    client, "POST", "/api/v1/activations/\(activation.activationId)/block", as: ActivationInfo.self)
            }
            let blocked = try await rp.post("/oauth2/bc-authorize", ["scope": "openid", "login_hint": "carol"])
            #expect(blocked.status == 403 && TestRelyingParty.error(blocked) == "access_denied")
            // Registration: callbacks go over HTTPS (HTTP only to a loopback address).
            for body in [
                #"{"name":"P","deliveryMode":"push","notificationEndpoint":"http://example.com/cb"}"#,
                #"{"name":"P","deliveryMode":"ping"}"#, #"{"name":"P","deliveryMode":"fax"}"#,
                #"{"name":"P","idTokenSignedResponseAlg":"HS256"}"#,
            ] {
                let refused = try await client.send(
                    "POST", "/api/v1/clients", headers: ["Authorization": "Bearer \(server.apiKey)"],
                    body: Data(body.utf8))
                #expect(refused.status == 400, "\(body)")
            }
        }
    }

    @Test(
        "Ping and push: callbacks carry the notification token; push delivers tokens or the error, retried",
        arguments: Backend.all)
    func pingAndPush(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let pings = WebhookReceiver(answer: .noContent)
        let pushes = WebhookReceiver(failFirst: 1)
        try await pings.run { pingURL in
            try await pushes.run { pushURL in
                try await server.live { client in
                    // The user approves with the SDK.
                    let directory = SDKClients.directory()
                    defer { try? FileManager.default.removeItem(at: directory) }
                    let operations = OperationsService(
                        client: try await SDKClients.activatedClient(
                            server, client, directory: directory, userId: "dave"))
                    let issuer = server.environment.openID.issuer

                    let pingRP = try await TestRelyingParty.register(
                        server, client, mode: "ping", endpoint: pingURL.absoluteString)
                    let ack = try await pingRP.authorize([
                        "scope": "openid", "login_hint": "dave", "client_notification_token": "ping-token-1",
                    ])
                    #expect(ack.interval == 5)
                    var operation = try #require(try await operations.pending().value.first)
                    try await operations.authorize(operation, factor: .pin("1234"))
                    let ping = try await pings.wait(for: 1)
                    #expect(ping[0].authorization == "Bearer ping-token-1")
                    #expect(try JSONDecoder().decode(CIBAPing.self, from: ping[0].body).authReqId == ack.authReqId)
                    let granted = try await pingRP.token(ack.authReqId)
                    #expect(granted.status == 200)
                    let pingTokens = try JSONDecoder().decode(OAuthTokenResponse.self, from: granted.body)
                    _ = try await pingRP.verify(
                        pingTokens.idToken, accessToken: pingTokens.accessToken, authReqId: ack.authReqId,
                        issuer: issuer)

                    let pushRP = try await TestRelyingParty.register(
                        server, client, mode: "push", endpoint: pushURL.absoluteString)
                    let pushAck = try await pushRP.authorize([
                        "scope": "openid", "login_hint": "dave", "client_notification_token": "push-token-2",
                        "binding_message": "K7Q2",
                    ])
                    #expect(pushAck.interval == nil)
                    #expect(TestRelyingParty.error(try await pushRP.token(pushAck.authReqId)) == "unauthorized_client")
                    operation = try #require(try await operations.pending().value.first)
                    try await operations.authorize(operation, factor: .pin("1234"))
                    // The first delivery is answered 500 and retried; the retry carries fresh tokens.
                    let delivered = try await pushes.wait(for: 2)
                    #expect(delivered.allSatisfy { $0.authorization == "Bearer push-token-2" })
                    let pushed = try JSONDecoder().decode(OAuthTokenResponse.self, from: delivered[1].body)
                    #expect(pushed.authReqId == pushAck.authReqId)
                    let claims = try await pushRP.verify(
                        pushed.idToken, accessToken: pushed.accessToken, authReqId: pushAck.authReqId, issuer: issuer)
                    #expect(claims.bindingMessage == "K7Q2")

                    let rejectedAck = try await pushRP.authorize([
                        "scope": "openid", "login_hint": "dave", "client_notification_token": "push-token-3",
                    ])
                    operation = try #require(try await operations.pending().value.first)
                    try await operations.reject(id: operation.id)
                    let all = try await pushes.wait(for: 3)
                    let error = try JSONDecoder().decode(OAuthErrorResponse.self, from: all[2].body)
                    #expect(error.error == "access_denied")
                    #expect(error.authReqId == rejectedAck.authReqId)
                    #expect(all[2].authorization == "Bearer push-token-3")
                    try await Task.sleep(for: .milliseconds(300))
                    #expect(pushes.deliveries.withLock { $0.count } == 3)
                }
            }
        }
    }

    @Test("Secrets at rest: no client secret, auth_req_id, notification token or signing key in the SQLite file")
    func secretsAtRest() async throws {
        let server = try await TestServer.make(.sqlite)
        defer { Task { await server.shutdown() } }
        let (secret, authReqId) = try await server.live { client in
            _ = try await server.activatedDevice(client, userId: "erin")
            #expect(try await client.send("GET", "/oauth2/jwks").status == 200)  // creates the signing keys
            let rp = try await TestRelyingParty.register(
                server, client, mode: "ping", endpoint: "https://rp.example/cb")
            let ack = try await rp.authorize([
                "scope": "openid", "login_hint": "erin", "client_notification_token": "notify-secret-4711",
            ])
            return (rp.secret, ack.authReqId)
        }
        var stored = Data()
        for suffix in ["", "-wal"] {
            stored.append((try? Data(contentsOf: URL(fileURLWithPath: server.location + suffix))) ?? Data())
        }
        #expect(!stored.isEmpty)
        for needle in [secret, authReqId, "notify-secret-4711", "BEGIN PRIVATE KEY"] {
            #expect(stored.range(of: Data(needle.utf8)) == nil, "\(needle) is stored in clear")
        }
    }

    @Test(
        "private_key_jwt: a signed assertion authenticates once; replay, wrong audience, expiry or key refused",
        arguments: Backend.all)
    func privateKeyJWT(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            _ = try await server.activatedDevice(client, userId: "frank")
            let key = ECPrivateKey()
            let jwks = JWKSet(keys: [JWK(es256: key.publicKey)])
            let created = try await server.operatorCall(
                client, "POST", "/api/v1/clients",
                body: try OperatorJSON.encoder().encode(
                    CreateClientRequest(name: "Keyed", tokenEndpointAuthMethod: "private_key_jwt", jwks: jwks)),
                as: CreateClientResponse.self)
            #expect(created.clientSecret == nil)
            let id = created.client.clientId
            let issuer = server.environment.openID.issuer
            func assertion(
                audience: String? = nil, expiresIn: Double = 60, jti: String = UUID().uuidString,
                signer: ECPrivateKey? = nil
            ) throws -> String {
                let exp = Int64(server.clock.now.timeIntervalSince1970 + expiresIn)
                let claims =
                    #"{"iss":"\#(id)","sub":"\#(id)","aud":"\#(audience ?? issuer)","exp":\#(exp),"jti":"\#(jti)"}"#
                return try CompactJWS.sign(
                    payload: Data(claims.utf8), with: .es256(signer ?? key), keyId: jwks.keys[0].kid)
            }
            let rp = TestRelyingParty(client: client, clientId: id, secret: "", basic: false)
            func send(_ path: String, _ fields: [String: String]) async throws -> TestRelyingParty.Answer {
                var fields = fields
                fields["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
                return try await rp.post(path, [:], rawBody: FormEncoding.encode(fields))
            }
            let request = ["scope": "openid", "login_hint": "frank"]
            let first = try assertion(jti: "once")
            let accepted = try await send("/oauth2/bc-authorize", request.merging(["client_assertion": first]) { $1 })
            #expect(accepted.status == 200, "\(accepted.text)")
            let ack = try JSONDecoder().decode(CIBAAcknowledgement.self, from: accepted.body)
            let replayed = try await send("/oauth2/bc-authorize", request.merging(["client_assertion": first]) { $1 })
            #expect(replayed.status == 401 && TestRelyingParty.error(replayed) == "invalid_client")
            for bad in [
                try assertion(audience: "https://elsewhere.example"), try assertion(expiresIn: -10),
                try assertion(expiresIn: 7_200), try assertion(signer: ECPrivateKey()),
            ] {
                let refused = try await send("/oauth2/bc-authorize", request.merging(["client_assertion": bad]) { $1 })
                #expect(refused.status == 401 && TestRelyingParty.error(refused) == "invalid_client", "\(refused.text)")
            }
            let mixed = try await send(
                "/oauth2/bc-authorize",
                request.merging(["client_assertion": try assertion(), "client_secret": "x"]) { $1 })
            #expect(TestRelyingParty.error(mixed) == "invalid_request")
            let polled = try await send(
                "/oauth2/token",
                [
                    "grant_type": "urn:openid:params:grant-type:ciba", "auth_req_id": ack.authReqId,
                    "client_assertion": try assertion(audience: "\(issuer)/oauth2/token"),
                ])
            #expect(TestRelyingParty.error(polled) == "authorization_pending")
        }
    }

    @Test("A callback answered with a redirect is not followed and not retried", arguments: Backend.all)
    func redirectNotFollowed(_ backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        let target = WebhookReceiver()
        try await target.run { targetURL in
            let redirecting = WebhookReceiver(redirect: targetURL.absoluteString)
            try await redirecting.run { redirectingURL in
                try await server.live { client in
                    var device = try await server.activatedDevice(client, userId: "gina")
                    let token = try await device.createToken()
                    let rp = try await TestRelyingParty.register(
                        server, client, mode: "ping", endpoint: redirectingURL.absoluteString)
                    _ = try await rp.authorize([
                        "scope": "openid", "login_hint": "gina", "client_notification_token": "t-1",
                    ])
                    let operation = try await Self.operation(device, token)
                    #expect(try await device.rejectOperation(id: operation.id).status == 200)
                    _ = try await redirecting.wait(for: 1)
                    let deadline = ContinuousClock.now + .seconds(10)
                    var items: [OutboxItem] = []
                    while ContinuousClock.now < deadline {
                        items = try await Self.cibaItems(server, operationId: operation.id)
                        if items.first?.state == "abandoned" { break }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    #expect(items.map(\.state) == ["abandoned"])
                    #expect(items.first?.lastError?.contains("redirect") == true)
                    #expect(redirecting.deliveries.withLock { $0.count } == 1)
                    #expect(target.deliveries.withLock { $0.isEmpty })
                }
            }
        }
    }

    /// The CIBA outbox messages of the request behind an operation.
    static func cibaItems(_ server: TestServer, operationId: String) async throws -> [OutboxItem] {
        var result: [OutboxItem] = []
        // The message's subject is the request id.
        for request in try await server.store.cibaRequests(operationId: operationId) {
            result += try await server.store.outboxItems(subject: request.id).filter { $0.channel == .ciba }
        }
        return result
    }
}
