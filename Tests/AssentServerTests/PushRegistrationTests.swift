import AssentCrypto
import AssentModel
import AssentServer
import AssentTesting
import Foundation
import Testing

@testable import AssentServerTesting

@Suite("Push registration")
struct PushRegistrationTests {
    static let apnsToken = String(repeating: "a1b2", count: 16)

    @Test(
        "A device registers its token by MAC token or signature, replaces it, sees bad input refused; the operator sees the platform and never the token; removal deletes it",
        arguments: Backend.all)
    func registration(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let apns = try JSONEncoder().encode(
                RequestEnvelope(
                    PushRegistrationRequest(
                        platform: "ios", token: Self.apnsToken.uppercased(), environment: "development")))
            let registered = try await device.tokenPost(
                "/api/push/device/register/token", token: token, body: apns, acceptLanguage: "cs-CZ, en;q=0.5")
            #expect(registered.status == 200, "\(registered.text)")
            #expect(registered.text.contains(#""status":"OK""#))

            let stored = try #require(try await server.store.pushRegistration(activationId: device.activationId))
            #expect(stored.platform == .apns && stored.environment == .development)
            #expect(stored.token == Self.apnsToken && stored.language == "cs-CZ, en;q=0.5")
            let raw = try await client.send(
                "GET", "/api/v1/activations/\(device.activationId)",
                headers: ["Authorization": "Bearer \(server.apiKey)"])
            #expect(!raw.text.lowercased().contains(Self.apnsToken))
            let info = try OperatorJSON.decoder().decode(ActivationInfo.self, from: raw.body)
            #expect(info.push?.platform == "apns" && info.push?.environment == "development")
            #expect(info.push.map { abs($0.registeredAt.millis - stored.registeredAt) < 1000 } == true)
            let audit = try await server.store.audit(activationId: device.activationId, userId: nil, limit: 10)
            #expect(audit.contains { $0.type == "push.registered" && !$0.detail.contains(Self.apnsToken) })

            // The signature-based twin replaces the registration, with a later registration time.
            let fcm = try JSONEncoder().encode(
                RequestEnvelope(PushRegistrationRequest(platform: "android", token: "fcm:token-1_A")))
            let replaced = try await device.signedPost(
                "/api/push/device/register", uriId: "/push/device/register", body: fcm, type: .possession)
            #expect(replaced.status == 200, "\(replaced.text)")
            let second = try #require(try await server.store.pushRegistration(activationId: device.activationId))
            #expect(second.platform == .fcm && second.environment == nil && second.token == "fcm:token-1_A")
            #expect(second.registeredAt > stored.registeredAt)
            let list = try await server.operatorCall(
                client, "GET", "/api/v1/users/alice/activations", as: ActivationList.self)
            #expect(list.activations.first?.push?.platform == "fcm")

            // A signature over another URI id is refused and changes nothing.
            let wrongURI = try await device.signedPost(
                "/api/push/device/register", uriId: "/operation/authorize", body: apns, type: .possession)
            #expect(wrongURI.status == 401 && wrongURI.errorCode == "POWERAUTH_AUTH_FAIL")
            #expect(try await server.store.pushRegistration(activationId: device.activationId)?.platform == .fcm)

            for (platform, pushToken, environment) in [
                ("windows", "abc", nil), ("apns", "not-hex", nil), ("apns", Self.apnsToken, "staging"),
                ("fcm", "has space", nil), ("hms", "", nil), ("fcm", "token", "sandbox"),
            ] as [(String, String, String?)] {
                let body = try JSONEncoder().encode(
                    RequestEnvelope(
                        PushRegistrationRequest(platform: platform, token: pushToken, environment: environment)))
                let refused = try await device.tokenPost("/api/push/device/register/token", token: token, body: body)
                #expect(refused.status == 400, "\(platform) \(pushToken)")
                #expect(refused.errorCode == "PUSH_REGISTRATION_FAILED", "\(refused.text)")
            }
            let malformed = try await device.tokenPost(
                "/api/push/device/register/token", token: token, body: Data(#"{"requestObject":{}}"#.utf8))
            #expect(malformed.status == 400 && malformed.errorCode == "INVALID_REQUEST")
            let anonymous = try await client.send("POST", "/api/push/device/register/token", body: apns)
            #expect(anonymous.status == 401 && anonymous.errorCode == "POWERAUTH_AUTH_FAIL")

            _ = try await server.operatorCall(
                client, "DELETE", "/api/v1/activations/\(device.activationId)", as: ActivationInfo.self)
            #expect(try await server.store.pushRegistration(activationId: device.activationId) == nil)
        }
    }

    @Test("A device that removes its own activation loses its registration", arguments: Backend.all)
    func removedByDevice(backend: Backend) async throws {
        let server = try await TestServer.make(backend)
        defer { Task { await server.shutdown() } }
        try await server.live { client in
            var device = try await server.activatedDevice(client)
            let token = try await device.createToken()
            let body = try JSONEncoder().encode(
                RequestEnvelope(PushRegistrationRequest(platform: "hms", token: "huawei-token")))
            #expect(
                try await device.tokenPost("/api/push/device/register/token", token: token, body: body).status == 200)
            let header = try device.authorization(uriId: "/pa/activation/remove", body: Data())
            let removal = try await client.send(
                "POST", "/pa/v3/activation/remove", headers: [AuthorizationHeader.name: header])
            #expect(removal.status == 200, "\(removal.text)")
            #expect(try await server.store.pushRegistration(activationId: device.activationId) == nil)
        }
    }
}
