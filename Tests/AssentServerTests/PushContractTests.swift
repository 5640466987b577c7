import AssentCrypto
import AssentModel
import AssentSDK
import AssentTesting
import Foundation
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// The push senders against local HTTP/2 TLS stand-ins of APNs, FCM and HMS: what each request carries, and what
/// each scripted answer makes the sender do (deliver, retry, renew credentials, or declare the token dead).
@Suite("Push services: APNs, FCM and HMS contracts")
struct PushContractTests {
    static let apnsToken = String(repeating: "0f1e", count: 16)

    static func apnsSettings(_ base: URL, key: ECPrivateKey) throws -> APNsSettings {
        var apns = try APNsSettings(
            teamId: "TEAM123456", keyId: "KEY98765AB", privateKeyPEM: key.pemRepresentation, topic: "com.example.bank")
        apns.productionURL = base
        apns.developmentURL = base
        return apns
    }

    static func transport(_ mock: PushServiceMock) throws -> PushTransport {
        var settings = PushSettings()
        settings.additionalTrustRootsPEM = mock.certificates.caPEM
        // Generous: the first request's TLS handshakes share two cores with the whole parallel test run, and a
        // loaded machine makes them wait long for a thread.
        settings.timeout = .seconds(120)
        return try PushTransport(settings: settings)
    }

    static func content(alert: Bool = true) -> PushContent {
        PushContent(
            message: alert
                ? .operationCreated(
                    id: "op-1", name: "authorize_payment", activationId: "act-1", title: "Confirm payment",
                    body: "Pay 100 CZK?")
                : .operationFinished(id: "op-1", name: "authorize_payment", result: .success, activationId: "act-1"),
            category: "authorize_payment", title: alert ? "Confirm payment" : nil, body: alert ? "Pay 100 CZK?" : nil,
            expiresAt: Date(timeIntervalSince1970: 1_900_000_000), collapseKey: "op-1")
    }

    static func registration(_ platform: PushPlatform, token: String, at: Millis = 1_000) -> PushRegistrationRecord {
        PushRegistrationRecord(
            activationId: "act-1", platform: platform, environment: platform == .apns ? .production : nil,
            token: token, language: nil, registeredAt: at)
    }

    static func decodeJWT(_ token: String) throws -> (header: [String: Any], claims: [String: Any]) {
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let header = try JSONSerialization.jsonObject(with: try Base64URL.decode(parts[0])) as? [String: Any]
        let claims = try JSONSerialization.jsonObject(with: try Base64URL.decode(parts[1])) as? [String: Any]
        return (try #require(header), try #require(claims))
    }

    @Test(
        "APNs: an ES256 provider token, every header, the payload, over HTTP/2; one token and one connection for 100 pushes"
    )
    func apnsRequest() async throws {
        let mock = try PushServiceMock()
        try await mock.run { base in
            let key = ECPrivateKey()
            let transport = try Self.transport(mock)
            let apns = APNsClient(settings: try Self.apnsSettings(base, key: key), transport: transport)
            defer { Task { await transport.shutdown() } }
            let registration = Self.registration(.apns, token: Self.apnsToken)
            #expect(await apns.send(Self.content(), to: registration) == .delivered)
            let request = try #require(mock.requests(.apns).first)
            #expect(request.path == "/3/device/\(Self.apnsToken)")
            #expect(request.http2StreamId != nil, "the request did not arrive over HTTP/2")
            let bearer = try #require(request.headers["authorization"])
            #expect(bearer.hasPrefix("bearer "))
            let jwt = String(bearer.dropFirst("bearer ".count))
            _ = try CompactJWS.verify(jwt, with: .es256(key.publicKey))
            #expect(throws: (any Error).self) { try CompactJWS.verify(jwt, with: .es256(ECPrivateKey().publicKey)) }
            let (header, claims) = try Self.decodeJWT(jwt)
            #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "KEY98765AB")
            #expect(claims["iss"] as? String == "TEAM123456" && claims["exp"] == nil)
            let iat = try #require(claims["iat"] as? Int)
            #expect(abs(iat - Int(Date().timeIntervalSince1970)) < 60)
            #expect(request.headers["apns-topic"] == "com.example.bank")
            #expect(request.headers["apns-push-type"] == "alert" && request.headers["apns-priority"] == "10")
            #expect(request.headers["apns-expiration"] == "1900000000")
            #expect(request.headers["apns-collapse-id"] == "op-1")
            #expect(request.headers["content-type"] == "application/json")
            let payload = request.json
            let aps = try #require(payload["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "Confirm payment" && alert["body"] as? String == "Pay 100 CZK?")
            #expect(aps["sound"] as? String == "default" && aps["category"] as? String == "authorize_payment")
            #expect(payload["messageType"] as? String == "mtoken.operationInit")
            #expect(
                payload["operationId"] as? String == "op-1"
                    && payload["operationName"] as? String == "authorize_payment")
            #expect(payload["activationId"] as? String == "act-1")

            // A finished operation is a silent background push with priority 5.
            #expect(await apns.send(Self.content(alert: false), to: registration) == .delivered)
            let silent = try #require(mock.requests(.apns).last)
            #expect(silent.headers["apns-push-type"] == "background" && silent.headers["apns-priority"] == "5")
            let silentPayload = silent.json
            #expect((silentPayload["aps"] as? [String: Any])?["content-available"] as? Int == 1)
            #expect((silentPayload["aps"] as? [String: Any])?["alert"] == nil)
            #expect(silentPayload["mtokenOperationResult"] as? String == "authentication.success")

            // 100 more pushes, concurrently: the same provider token and the same connection.
            await withTaskGroup(of: PushDelivery.self) { group in
                for _ in 0..<100 { group.addTask { await apns.send(Self.content(), to: registration) } }
                for await result in group { #expect(result == .delivered) }
            }
            let all = mock.requests(.apns)
            #expect(all.count == 102)
            #expect(Set(all.map { $0.headers["authorization"] ?? "" }).count == 1)
            #expect(Set(all.compactMap(\.connection)).count == 1)
            #expect(apns.tokens.mintedCount == 1)
        }
    }

    @Test("APNs: which answers delete the token, retry, renew the provider token, or fail")
    func apnsAnswers() async throws {
        let mock = try PushServiceMock()
        try await mock.run { base in
            let transport = try Self.transport(mock)
            let apns = APNsClient(settings: try Self.apnsSettings(base, key: ECPrivateKey()), transport: transport)
            defer { Task { await transport.shutdown() } }
            let registration = Self.registration(.apns, token: Self.apnsToken)
            func answer(_ status: Int, _ body: String, headers: [String: String] = [:]) async -> PushDelivery {
                mock.script(.apns, .init(status: status, body: body, headers: headers))
                return await apns.send(Self.content(), to: registration)
            }
            func isTokenInvalid(_ delivery: PushDelivery, since: Millis? = nil) -> Bool {
                if case .tokenInvalid(_, let reported) = delivery { return reported == since }
                return false
            }
            func isRetry(_ delivery: PushDelivery, after: Duration? = nil) -> Bool {
                if case .retry(_, let delay) = delivery { return delay == after }
                return false
            }
            func isFailure(_ delivery: PushDelivery) -> Bool {
                if case .failed = delivery { return true }
                return false
            }
            #expect(isTokenInvalid(await answer(400, #"{"reason":"BadDeviceToken"}"#)))
            #expect(isTokenInvalid(await answer(400, #"{"reason":"DeviceTokenNotForTopic"}"#)))
            #expect(
                isTokenInvalid(
                    await answer(410, #"{"reason":"Unregistered","timestamp":1700000000000}"#), since: 1_700_000_000_000
                ))
            #expect(isTokenInvalid(await answer(410, #"{"reason":"ExpiredToken"}"#)))
            // Our own credentials are at fault: never the device's token.
            for reason in ["InvalidProviderToken", "MissingProviderToken", "BadEnvironmentKeyInToken"] {
                #expect(isRetry(await answer(403, #"{"reason":"\#(reason)"}"#)), "\(reason)")
            }
            #expect(
                isRetry(
                    await answer(429, #"{"reason":"TooManyRequests"}"#, headers: ["retry-after": "7"]),
                    after: .seconds(7)))
            #expect(isRetry(await answer(500, #"{"reason":"InternalServerError"}"#)))
            #expect(isRetry(await answer(503, #"{"reason":"ServiceUnavailable"}"#)))
            #expect(isFailure(await answer(400, #"{"reason":"BadTopic"}"#)))
            #expect(isFailure(await answer(413, #"{"reason":"PayloadTooLarge"}"#)))
            #expect(apns.tokens.mintedCount == 1)

            // ExpiredProviderToken: a new token at once, and the push is sent again with it.
            let before = mock.requests(.apns).count
            mock.script(.apns, .init(status: 403, body: #"{"reason":"ExpiredProviderToken"}"#))
            #expect(await apns.send(Self.content(), to: registration) == .delivered)
            let resent = mock.requests(.apns).dropFirst(before)
            #expect(resent.count == 2)
            #expect(Set(resent.map { $0.headers["authorization"] ?? "" }).count == 2)
            #expect(apns.tokens.mintedCount == 2)
        }
    }

    static func fcmSettings(_ base: URL, key: RSAPrivateKey) throws -> FCMSettings {
        let account: [String: String] = [
            "type": "service_account", "project_id": "assent-test", "private_key_id": "kid-1",
            "private_key": key.pemRepresentation, "client_email": "push@assent-test.iam.gserviceaccount.com",
            "token_uri": base.appendingPathComponent("token").absoluteString,
        ]
        var settings = try FCMSettings(serviceAccountJSON: try JSONSerialization.data(withJSONObject: account))
        settings.baseURL = base
        return settings
    }

    @Test("FCM: an RS256 assertion for an access token cached across pushes, string data, and every answer's rule")
    func fcm() async throws {
        let mock = try PushServiceMock()
        try await mock.run { base in
            let key = try RSAPrivateKey()
            let transport = try Self.transport(mock)
            let fcm = FCMClient(settings: try Self.fcmSettings(base, key: key), transport: transport)
            defer { Task { await transport.shutdown() } }
            #expect(await fcm.send(Self.content(), to: "fcm-token-1") == .delivered)
            let tokenRequest = try #require(mock.requests(.googleToken).first)
            #expect(tokenRequest.headers["content-type"] == "application/x-www-form-urlencoded")
            #expect(tokenRequest.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
            let assertion = try #require(tokenRequest.form["assertion"])
            _ = try CompactJWS.verify(assertion, with: .rs256(key.publicKey))
            #expect(throws: (any Error).self) {
                try CompactJWS.verify(assertion, with: .rs256(try RSAPrivateKey().publicKey))
            }
            let (header, claims) = try Self.decodeJWT(assertion)
            #expect(header["alg"] as? String == "RS256" && header["kid"] as? String == "kid-1")
            #expect(claims["iss"] as? String == "push@assent-test.iam.gserviceaccount.com")
            #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
            #expect(claims["aud"] as? String == base.appendingPathComponent("token").absoluteString)
            let iat = try #require(claims["iat"] as? Int)
            #expect(claims["exp"] as? Int == iat + 3600)

            let send = try #require(mock.requests(.fcm).first)
            #expect(send.path == "/v1/projects/assent-test/messages:send")
            #expect(send.http2StreamId != nil)
            #expect(send.headers["authorization"] == "Bearer access-1")
            let message = try #require(send.json["message"] as? [String: Any])
            #expect(message["token"] as? String == "fcm-token-1")
            let data = try #require(message["data"] as? [String: Any])
            #expect(data.values.allSatisfy { $0 is String })
            #expect(
                data["messageType"] as? String == "mtoken.operationInit" && data["operationId"] as? String == "op-1")
            let android = try #require(message["android"] as? [String: Any])
            #expect(android["priority"] as? String == "high")
            let ttl = try #require(android["ttl"] as? String)
            #expect(ttl.hasSuffix("s") && Int(ttl.dropLast()) != nil)
            #expect((android["notification"] as? [String: Any])?["title"] as? String == "Confirm payment")

            // Cached: ten more pushes, no new token.
            for _ in 0..<10 { #expect(await fcm.send(Self.content(), to: "fcm-token-1") == .delivered) }
            #expect(mock.requests(.googleToken).count == 1)

            // 401: a new access token and the push again.
            mock.script(.fcm, .init(status: 401, body: #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#))
            #expect(await fcm.send(Self.content(), to: "fcm-token-1") == .delivered)
            #expect(mock.requests(.googleToken).count == 2)
            #expect(mock.requests(.fcm).last?.headers["authorization"] == "Bearer access-2")

            func fcmError(_ status: Int, _ code: String, extra: String = "", headers: [String: String] = [:])
                -> PushServiceMock.Answer
            {
                .init(
                    status: status,
                    body:
                        #"{"error":{"code":\#(status),"message":"m","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}\#(extra)]}}"#,
                    headers: headers)
            }
            func answer(_ reply: PushServiceMock.Answer) async -> PushDelivery {
                mock.script(.fcm, reply)
                return await fcm.send(Self.content(), to: "fcm-token-1")
            }
            // UNREGISTERED arrives with status INVALID_ARGUMENT: the errorCode decides.
            if case .tokenInvalid = await answer(fcmError(404, "UNREGISTERED")) {} else { Issue.record("UNREGISTERED") }
            let badToken =
                #",{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"bad"}]}"#
            if case .tokenInvalid = await answer(fcmError(400, "INVALID_ARGUMENT", extra: badToken)) {
            } else {
                Issue.record("INVALID_ARGUMENT on message.token")
            }
            let badField =
                #",{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.android.ttl"}]}"#
            if case .failed = await answer(fcmError(400, "INVALID_ARGUMENT", extra: badField)) {
            } else {
                Issue.record("INVALID_ARGUMENT on another field must not drop the token")
            }
            for code in ["SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR"] {
                if case .failed = await answer(fcmError(403, code)) {} else { Issue.record("\(code)") }
            }
            #expect(
                await answer(fcmError(429, "QUOTA_EXCEEDED", headers: ["retry-after": "30"]))
                    == .retry("FCM: QUOTA_EXCEEDED (HTTP 429)", after: .seconds(30)))
            if case .retry = await answer(fcmError(503, "UNAVAILABLE")) {} else { Issue.record("UNAVAILABLE") }
            if case .retry = await answer(fcmError(500, "INTERNAL")) {} else { Issue.record("INTERNAL") }
            #expect(mock.requests(.googleToken).count == 2)
        }
    }

    @Test("HMS: client-credentials token, a token array and string data, and Push Kit's result codes")
    func hms() async throws {
        let mock = try PushServiceMock()
        try await mock.run { base in
            var settings = try HMSSettings(appId: "104857600", appSecret: "app-secret")
            settings.baseURL = base
            settings.tokenURL = base.appendingPathComponent("oauth2/v3/token")
            let transport = try Self.transport(mock)
            let hms = HMSClient(settings: settings, transport: transport)
            defer { Task { await transport.shutdown() } }
            #expect(await hms.send(Self.content(), to: "hms-token-1") == .delivered)
            let tokenRequest = try #require(mock.requests(.huaweiToken).first)
            #expect(tokenRequest.form["grant_type"] == "client_credentials")
            #expect(tokenRequest.form["client_id"] == "104857600" && tokenRequest.form["client_secret"] == "app-secret")
            let send = try #require(mock.requests(.hms).first)
            #expect(send.path == "/v1/104857600/messages:send" && send.headers["authorization"] == "Bearer access-1")
            let message = try #require(send.json["message"] as? [String: Any])
            #expect(message["token"] as? [String] == ["hms-token-1"])
            let data = try #require(message["data"] as? String)
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: String])
            #expect(fields["messageType"] == "mtoken.operationInit" && fields["operationId"] == "op-1")
            #expect((message["android"] as? [String: Any])?["urgency"] as? String == "HIGH")

            func answer(_ status: Int, _ body: String) async -> PushDelivery {
                mock.script(.hms, .init(status: status, body: body))
                return await hms.send(Self.content(), to: "hms-token-1")
            }
            let partial =
                #"{"code":"80100000","msg":"{\"success\":0,\"failure\":1,\"illegal_tokens\":[\"hms-token-1\"]}","requestId":"2"}"#
            if case .tokenInvalid = await answer(200, partial) {} else { Issue.record("illegal_tokens") }
            let otherPartial = #"{"code":"80100000","msg":"{\"illegal_tokens\":[\"someone-else\"]}","requestId":"3"}"#
            #expect(await answer(200, otherPartial) == .delivered)
            if case .tokenInvalid = await answer(200, #"{"code":"80300007","msg":"All the tokens are invalid"}"#) {
            } else {
                Issue.record("80300007")
            }
            if case .failed = await answer(400, #"{"code":"80100001","msg":"bad parameters"}"#) {
            } else {
                Issue.record("80100001")
            }
            if case .retry = await answer(503, #"{"code":"81000001","msg":"internal"}"#) {} else { Issue.record("5xx") }
            #expect(mock.requests(.huaweiToken).count == 1)
            // An expired token is renewed and the push sent again.
            #expect(await answer(401, #"{"code":"80200003","msg":"OAuth token expired"}"#) == .delivered)
            #expect(mock.requests(.huaweiToken).count == 2)
            #expect(mock.requests(.hms).last?.headers["authorization"] == "Bearer access-2")
        }
    }
}

@Suite("Push in the SDK")
struct SDKPushTests {
    @Test("The SDK registers an APNs token from its bytes, and parses what the server sends", arguments: Backend.all)
    func registerAndParse(backend: Backend) async throws {
        try await SDKClients.withActivatedClient(backend) { server, _, client, _ in
            let push = PushService(client: client)
            let bytes = Data((0..<32).map { UInt8($0 * 7 % 256) })
            try await push.registerForPush(token: bytes, environment: .development, language: "de")
            let activationId = try #require(await client.registrationId)
            let stored = try #require(try await server.store.pushRegistration(activationId: activationId))
            #expect(stored.platform == .apns && stored.environment == .development && stored.language == "de")
            #expect(stored.token == bytes.map { String(format: "%02x", $0) }.joined())
            await #expect(throws: AssentError.self) {
                try await push.registerForPush(token: "not hex", platform: .apns)
            }
            try await push.registerForPush(token: "fcm-registration-token", platform: .fcm)
            #expect(try await server.store.pushRegistration(activationId: activationId)?.platform == .fcm)

            // What the server's APNs payload and FCM data carry, the SDK reads back.
            let content = PushContractTests.content()
            #expect(PushService.message(fromAPNs: content.apnsPayload()) == content.message)
            let fcm = content.fcmMessage(token: "t", now: Date())
            let data = try #require((fcm["message"] as? [String: Any])?["data"] as? [String: String])
            #expect(
                PushService.message(fromData: data, title: "Confirm payment", body: "Pay 100 CZK?") == content.message)
            let finished = PushContractTests.content(alert: false)
            #expect(PushService.message(fromAPNs: finished.apnsPayload()) == finished.message)
        }
    }
}
