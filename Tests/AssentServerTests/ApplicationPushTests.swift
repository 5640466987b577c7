import AssentCrypto
import AssentModel
import AssentTesting
import Foundation
import SQLKit
import Testing

@testable import AssentServer
@testable import AssentServerTesting

/// Each application's own push credentials: a device is pushed with the APNs key and topic, the Firebase project or
/// the Huawei app of its application; the server's own (`serve --apns-*`) stay the first application's; an
/// application without credentials reaches no device with another's.
@Suite("Push credentials per application")
struct ApplicationPushTests {
    static func register(_ device: inout TestDevice, _ platform: String, token: String) async throws {
        let macToken = try await device.createToken()
        let body = try JSONEncoder().encode(
            RequestEnvelope(PushRegistrationRequest(platform: platform, token: token, environment: "production")))
        let response = try await device.tokenPost("/api/push/device/register/token", token: macToken, body: body)
        guard response.status == 200 else { throw TestFailure("register: \(response.status) \(response.text)") }
    }

    /// The push outbox message about `operationId` once it is no longer pending.
    static func settled(_ server: TestServer, _ operationId: String) async throws -> OutboxItem {
        try await PushDeliveryTests.settledPush(server, operationId)
    }

    @Test(
        "Two applications push with their own APNs and FCM credentials, the first with the server's; none borrows another's",
        arguments: Backend.all)
    func perApplication(_ backend: Backend) async throws {
        let mock = try PushServiceMock()
        try await mock.run { base in
            let serverKey = ECPrivateKey()
            var settings = PushSettings(apns: try PushContractTests.apnsSettings(base, key: serverKey))
            settings.additionalTrustRootsPEM = mock.certificates.caPEM
            settings.gateways = PushGateways(apns: base, fcm: base)
            let server = try await TestServer.make(backend, push: settings)
            defer { Task { await server.shutdown() } }
            try await server.live { client in
                func send(_ method: String, _ path: String, _ body: String = "") async throws -> HTTPClient.Response {
                    try await server.operatorSend(client, method, path, body)
                }
                let business = try await server.createApplication(client)
                let q = "?application=\(business.applicationId)"
                let pushPath = "/api/v1/applications/\(business.applicationId)/push"

                // The first application uses the server's APNs credentials; the second has none.
                let first = try await server.operatorCall(
                    client, "GET", "/api/v1/applications/\(server.application.id)/push", as: ApplicationPushInfo.self)
                #expect(first.apns?.source == .server && first.apns?.topic == "com.example.bank")
                #expect(first.fcm == nil && first.hms == nil)
                let none = try await server.operatorCall(client, "GET", pushPath, as: ApplicationPushInfo.self)
                #expect(none == ApplicationPushInfo(applicationId: business.applicationId))

                // A device of each application, both on APNs.
                var retail = try await server.activatedDevice(client)
                try await Self.register(&retail, "apns", token: String(repeating: "a1", count: 32))
                let code = try await server.operatorCall(
                    client, "POST", "/api/v1/activations\(q)",
                    body: try OperatorJSON.encoder().encode(
                        CreateActivationRequest(userId: "alice", commitMode: "auto")),
                    as: CreateActivationResponse.self)
                var biz = TestDevice(
                    client: client, configuration: try SDKConfiguration(parsing: business.sdkConfiguration))
                try await biz.activate(code: code.activationCode)
                let bizToken = String(repeating: "b2", count: 32)
                try await Self.register(&biz, "apns", token: bizToken)

                // Without credentials of its own the second application's device gets nothing: the server's key
                // and topic are the first application's.
                let unreached = try await server.operatorCall(
                    client, "POST", "/api/v1/operations\(q)",
                    body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")),
                    as: OperationInfo.self)
                let unreachedItem = try await Self.settled(server, unreached.id)
                #expect(unreachedItem.state == "abandoned", "\(unreachedItem)")
                let trace = try await server.operatorCall(
                    client, "GET", "/api/v1/activations/\(biz.activationId)/push-deliveries\(q)",
                    as: PushDeliveryList.self)
                #expect(trace.deliveries.first?.outcome == "failed")
                #expect(trace.deliveries.first?.reason?.contains("The application has no apns credentials") == true)
                #expect(mock.requests(.apns).isEmpty)
                // Unsent: the device's registration stays.
                #expect(try await server.store.pushRegistration(activationId: biz.activationId) != nil)

                // Bad credentials are refused with the sentence that says what is wrong.
                let badKey = try await send(
                    "PUT", "\(pushPath)/apns",
                    #"{"teamId":"BIZTEAM123","keyId":"BIZKEY1234","privateKey":"nope","topic":"com.example.business"}"#)
                #expect(badKey.status == 400 && badKey.text.contains("not a P-256 .p8"), "\(badKey.text)")
                let badAccount = try await send("PUT", "\(pushPath)/fcm", #"{"serviceAccount":"{}"}"#)
                #expect(badAccount.status == 400 && badAccount.text.contains("service account"))

                // The second application's own APNs key and topic, and its own Firebase project.
                let bizKey = ECPrivateKey()
                let apnsRequest = APNsCredentialsRequest(
                    teamId: "BIZTEAM123", keyId: "BIZKEY1234", privateKey: bizKey.pemRepresentation,
                    topic: "com.example.business")
                let setResponse = try await client.send(
                    "PUT", "\(pushPath)/apns", headers: ["Authorization": "Bearer \(server.apiKey)"],
                    body: try OperatorJSON.encoder().encode(apnsRequest))
                #expect(setResponse.status == 200)
                #expect(!setResponse.text.contains("PRIVATE KEY"), "the answer carries no secret")
                let fcmKey = try RSAPrivateKey()
                let account: [String: String] = [
                    "type": "service_account", "project_id": "business-project",
                    "private_key": fcmKey.pemRepresentation, "client_email": "push@business-project.example",
                    "token_uri": base.appendingPathComponent("token").absoluteString,
                ]
                let fcmRequest = FCMCredentialsRequest(
                    serviceAccount: String(
                        decoding: try JSONSerialization.data(withJSONObject: account), as: UTF8.self))
                let info = try await server.operatorCall(
                    client, "PUT", "\(pushPath)/fcm", body: try OperatorJSON.encoder().encode(fcmRequest),
                    as: ApplicationPushInfo.self)
                #expect(info.apns?.source == .application && info.apns?.topic == "com.example.business")
                #expect(info.apns?.keyId == "BIZKEY1234" && info.apns?.updatedAt != nil)
                #expect(info.fcm?.projectId == "business-project" && info.fcm?.source == .application)

                // Sealed in the database: neither key is readable there.
                let rows = try await server.store.database.raw(
                    "SELECT settings FROM application_push_credentials"
                ).all()
                #expect(rows.count == 2)
                for row in rows {
                    let stored = try row.decode(column: "settings", as: Data.self)
                    #expect(!String(decoding: stored, as: UTF8.self).contains("PRIVATE KEY"))
                }

                // Each device is pushed with its application's key and topic.
                let bizOperation = try await server.operatorCall(
                    client, "POST", "/api/v1/operations\(q)",
                    body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")),
                    as: OperationInfo.self)
                let bizPush = try #require(try await mock.wait(.apns, count: 1).first)
                #expect(bizPush.path == "/3/device/\(bizToken)")
                #expect(bizPush.headers["apns-topic"] == "com.example.business")
                let bizJWT = String(try #require(bizPush.headers["authorization"]).dropFirst("bearer ".count))
                _ = try CompactJWS.verify(bizJWT, with: .es256(bizKey.publicKey))
                #expect(throws: (any Error).self) { try CompactJWS.verify(bizJWT, with: .es256(serverKey.publicKey)) }
                let (bizHeader, bizClaims) = try PushContractTests.decodeJWT(bizJWT)
                #expect(bizHeader["kid"] as? String == "BIZKEY1234" && bizClaims["iss"] as? String == "BIZTEAM123")
                #expect(try await Self.settled(server, bizOperation.id).state == "delivered")

                let retailOperation = try await server.createOperation(
                    client, try OperationFixtures.payment(userId: "alice"))
                let retailPush = try #require(
                    try await mock.wait(.apns, count: 2).first {
                        $0.json["operationId"] as? String == retailOperation.id
                    })
                #expect(retailPush.headers["apns-topic"] == "com.example.bank")
                let retailJWT = String(try #require(retailPush.headers["authorization"]).dropFirst("bearer ".count))
                _ = try CompactJWS.verify(retailJWT, with: .es256(serverKey.publicKey))
                #expect(try PushContractTests.decodeJWT(retailJWT).header["kid"] as? String == "KEY98765AB")

                // An FCM device of the second application: its own project and service account.
                var android = TestDevice(
                    client: client, configuration: try SDKConfiguration(parsing: business.sdkConfiguration))
                let androidCode = try await server.operatorCall(
                    client, "POST", "/api/v1/activations\(q)",
                    body: try OperatorJSON.encoder().encode(CreateActivationRequest(userId: "bob", commitMode: "auto")),
                    as: CreateActivationResponse.self)
                try await android.activate(code: androidCode.activationCode)
                try await Self.register(&android, "fcm", token: "fcm-token-of-bob")
                let bobOperation = try await server.operatorCall(
                    client, "POST", "/api/v1/operations\(q)",
                    body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "bob")),
                    as: OperationInfo.self)
                let fcmPush = try #require(try await mock.wait(.fcm, count: 1).first)
                #expect(fcmPush.path == "/v1/projects/business-project/messages:send")
                let assertion = try #require(try await mock.wait(.googleToken, count: 1).first?.form["assertion"])
                _ = try CompactJWS.verify(assertion, with: .rs256(fcmKey.publicKey))
                #expect(
                    try PushContractTests.decodeJWT(assertion).claims["iss"] as? String
                        == "push@business-project.example")
                #expect(try await Self.settled(server, bobOperation.id).state == "delivered")

                // A key of the first application only does not see the second's credentials.
                let limited = try await server.operatorCall(
                    client, "POST", "/api/v1/api-keys",
                    body: try OperatorJSON.encoder().encode(
                        CreateAPIKeyRequest(name: "retail", scopes: nil, applications: [server.application.id])),
                    as: CreateAPIKeyResponse.self)
                let hidden = try await client.send(
                    "GET", pushPath, headers: ["Authorization": "Bearer \(limited.apiKey)"])
                #expect(hidden.status == 404)

                // Removed: the second application's devices are again unreached on APNs; removing twice is 404.
                let removed = try await send("DELETE", "\(pushPath)/apns")
                #expect(removed.status == 204, "\(removed.text)")
                #expect(try await send("DELETE", "\(pushPath)/apns").status == 404)
                #expect(try await send("DELETE", "\(pushPath)/webpush").status == 404)
                let after = try await server.operatorCall(client, "GET", pushPath, as: ApplicationPushInfo.self)
                #expect(after.apns == nil && after.fcm != nil)
                let later = try await server.operatorCall(
                    client, "POST", "/api/v1/operations\(q)",
                    body: try OperatorJSON.encoder().encode(try OperationFixtures.payment(userId: "alice")),
                    as: OperationInfo.self)
                #expect(try await Self.settled(server, later.id).state == "abandoned")

                // Every change is in the audit trail, naming who made it; no secret is.
                let pushEvents = try await server.store.auditEvents(
                    AuditFilter(typePrefix: "application.push_"), limit: 50)
                #expect(
                    pushEvents.map(\.type).sorted() == [
                        "application.push_removed", "application.push_set", "application.push_set",
                    ])
                #expect(pushEvents.allSatisfy { $0.actor.hasPrefix("key:") || $0.actor.hasPrefix("operator:") })
                #expect(!pushEvents.contains { $0.detail.contains("PRIVATE KEY") })
            }
        }
    }
}
